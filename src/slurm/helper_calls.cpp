// nvlslice — the libslurm calls of job_calls.hpp and slurm_features.hpp
// that only the helper and the tools make (not linked into the plugin).
#include "config.h"

#include "job_calls.hpp"
#include "slurm_features.hpp"

namespace nvl {

int slurm_calls::requeue(uint32_t job_id, uint32_t flags) {
#ifdef NVL_SLURM_STEP_ID_API
    return slurm_requeue(job_step_id(job_id), flags);
#else
    return slurm_requeue(job_id, flags);
#endif
}

std::vector<bool> ping_controllers(size_t n) {
    std::vector<bool> up(n, false);
    for (size_t i = 0; i < n; ++i) up[i] = slurm_ping(int(i)) == SLURM_SUCCESS;
    return up;
}

} // namespace nvl
