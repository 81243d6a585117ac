// nvlslice — the libslurm calls of job_calls.hpp and slurm_features.hpp
// that only the helper and the tools make (not linked into the plugin).
#include "config.h"

#include "job_calls.hpp"
#include "slurm_features.hpp"

#include <cerrno>

namespace nvl {

int slurm_calls::requeue(uint32_t job_id, uint32_t flags) {
#ifdef NVL_SLURM_STEP_ID_API
    return slurm_requeue(job_step_id(job_id), flags);
#else
    return slurm_requeue(job_id, flags);
#endif
}

int slurm_calls::update_job(job_desc_msg_t& d) {
#ifdef HAVE_JOB_DESC_MSG_T_JOB_ID
    return slurm_update_job(&d);
#else
    job_array_resp_msg_t* resp = nullptr;
    int rc = slurm_update_job2(&d, &resp);
    if (resp) {
        for (uint32_t i = 0; rc == SLURM_SUCCESS && i < resp->job_array_count; ++i)
            if (resp->error_code[i] != SLURM_SUCCESS) {
                errno = int(resp->error_code[i]);
                rc = SLURM_ERROR;
            }
        slurm_free_job_array_resp(resp);
    }
    return rc;
#endif
}

std::vector<bool> ping_controllers(size_t n) {
    std::vector<bool> up(n, false);
    for (size_t i = 0; i < n; ++i) up[i] = slurm_ping(int(i)) == SLURM_SUCCESS;
    return up;
}

} // namespace nvl
