// nvlslice — the libslurm calls the SPANK plugin shares with the helper's
// adapter, and those whose prototypes changed between releases. Compiled
// once (slurm_calls.cpp, libnvlslurmcalls.la: the plugin's; helper_calls.cpp:
// the helper's and the tools' only) into the helper's adapter, the tools
// and the plugin; the plugin is not linked with libslurm (the
// Slurm process that loads it provides the symbols) and makes no libslurm
// call of its own. configure detects each difference with a feature test:
// the step-id API (NVL_SLURM_STEP_ID_API, 26.05+), slurm_free_conf
// (HAVE_DECL_SLURM_FREE_CONF, 26.05+), job_desc_msg_t.job_id
// (HAVE_JOB_DESC_MSG_T_JOB_ID, gone in 25.11).
#pragma once

#include "config.h"

extern "C" {
#include <slurm/slurm.h>
}

#include <cstdint>
#include <optional>
#include <string>

namespace nvl::slurm_calls {

#ifdef NVL_SLURM_STEP_ID_API
// The whole job `job_id` as a slurm_step_id_t (26.05+), as slurm.h's
// SLURM_STEP_ID_INITIALIZER (a C compound literal) sets it: field by field,
// for C++; the rest (the sluid) zero.
inline slurm_step_id_t job_step_id(uint32_t job_id) {
    slurm_step_id_t step = {};
    step.job_id = job_id;
    step.step_id = NO_VAL;
    step.step_het_comp = NO_VAL;
    return step;
}
#endif

// One job's record (SHOW_DETAIL); 0 on success, as slurm_load_job.
int load_job(job_info_msg_t** msg, uint32_t job_id);

// Requeue a job (flags: 0 or JOB_REQUEUE_HOLD); 0 on success. The helper's
// and the tools' only (helper_calls.cpp).
int requeue(uint32_t job_id, uint32_t flags);

// Free what slurm_load_ctl_conf returned (slurm_free_conf in 26.05+,
// slurm_free_ctl_conf before).
void free_ctl_conf(slurm_conf_t* conf);

// Name the job a job_desc_msg_t updates (slurm_update_job). 25.11+ has no
// job_id field: job_id_str, the decimal id, which `storage` holds and must
// outlive the update. Before, job_id, as this always set it.
inline void set_update_job_id(job_desc_msg_t& d, uint32_t job_id, std::string& storage) {
#ifdef HAVE_JOB_DESC_MSG_T_JOB_ID
    (void)storage;
    d.job_id = job_id;
#else
    storage = std::to_string(job_id);
    d.job_id_str = storage.data();
#endif
}

// Send a job update (as slurm_update_job); 0 on success, else the error in
// last_error(). 25.11+ names the job by job_id_str, which
// slurm_update_job() accepts only with an error line in the caller's log per
// call ("Use slurm_update_job2() ..."): there slurm_update_job2(), whose
// per-task errors (a job array's) count as the call's. The helper's and the
// tools' only (helper_calls.cpp).
int update_job(job_desc_msg_t& d);

// The error of the last failed call: slurm_get_errno() where libslurm still
// has it, errno where it is gone (24.11 and later).
int last_error();

// What the last failed call's error says (slurm_strerror).
std::string error_text();

// A job's admin_comment (where the helper keeps its record): nullopt when
// the job cannot be read, "" when it has none.
std::optional<std::string> load_admin_comment(uint32_t job_id);

// Set a node's state (NODE_STATE_DRAIN, NODE_STATE_DOWN, ...) with a reason,
// as `scontrol update nodename=... state=... reason=...`; 0 on success. The
// reason's user is the caller (26.05+ has no reason_uid: slurmctld records
// the sender).
int set_node_state(const std::string& node, uint32_t state, const std::string& reason);

} // namespace nvl::slurm_calls
