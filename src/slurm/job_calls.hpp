// nvlslice — the libslurm calls whose prototypes changed between releases,
// each behind one inline function, so that the helper's adapter and the
// SPANK plugin (which is not linked with libslurm: the Slurm process that
// loads it provides the symbols) share one version of each. configure
// detects the step-id API (NVL_SLURM_STEP_ID_API) with a feature test.
#pragma once

#include "config.h"

extern "C" {
#include <slurm/slurm.h>
}

#include <cerrno>
#include <cstdint>

namespace nvl::slurm_calls {

// One job's record (SHOW_DETAIL); 0 on success, as slurm_load_job.
inline int load_job(job_info_msg_t** msg, uint32_t job_id) {
#ifdef NVL_SLURM_STEP_ID_API
    slurm_step_id_t step = {};
    step.job_id = job_id;
    step.step_id = NO_VAL;
    step.step_het_comp = NO_VAL;
    return slurm_load_job(msg, &step, SHOW_DETAIL);
#else
    return slurm_load_job(msg, job_id, SHOW_DETAIL);
#endif
}

// Requeue a job (flags: 0 or JOB_REQUEUE_HOLD); 0 on success.
inline int requeue(uint32_t job_id, uint32_t flags) {
#ifdef NVL_SLURM_STEP_ID_API
    slurm_step_id_t step = {};
    step.job_id = job_id;
    step.step_id = NO_VAL;
    step.step_het_comp = NO_VAL;
    return slurm_requeue(&step, flags);
#else
    return slurm_requeue(job_id, flags);
#endif
}

// The error of the last failed call: slurm_get_errno() where libslurm still
// has it, errno where it is gone (24.11 and later).
inline int last_error() {
#ifdef HAVE_SLURM_GET_ERRNO
    return slurm_get_errno();
#else
    return errno;
#endif
}

} // namespace nvl::slurm_calls
