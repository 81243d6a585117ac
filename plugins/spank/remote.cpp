// Remote context (slurmstepd): per-task slice environment and the node's GPU
// check. The slices are derived from SLURM_JOB_NODELIST, the rack map and
// the slice size (SPEC §3), with no RPC to slurmctld; only a placement that
// does not cut into whole per-rack slices (prefer mode's split fallback)
// needs the helper's record from the job's admin_comment.
#include "plugin.hpp"

#include "config.h"

#include "gpu_count.hpp"
#include "hostlist.hpp"
#include "job_calls.hpp"

#include <fmt/format.h>

extern "C" {
#include <slurm/slurm.h>
}

#include <cstdint>
#include <vector>

namespace nvl::spank {
namespace {

std::string getenv_job(spank_t sp, const char* name) {
    char buf[8192];
    if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return {};
    return buf;
}

// This node's Slurm name. Only valid from task init on: before that the
// job environment still carries SLURMD_NODENAME of the node that launched
// the step (e.g. the batch host), which is why every node-side check runs
// in slurm_spank_task_init.
std::string node_name(spank_t sp) {
    return getenv_job(sp, "SLURMD_NODENAME");
}

void setenv_task(spank_t sp, const char* name, const std::string& value) {
    if (spank_setenv(sp, name, value.c_str(), 1) != ESPANK_SUCCESS)
        throw Error(fmt::format("cannot set {} in the task environment", name));
}

// The helper's record, read with the public API (slurm_load_job).
std::optional<PlacementRecord> load_record(uint32_t job_id) {
    job_info_msg_t* msg = nullptr;
    if (slurm_calls::load_job(&msg, job_id) != 0 || !msg) return std::nullopt;
    std::optional<PlacementRecord> rec;
    if (msg->record_count > 0 && msg->job_array[0].admin_comment)
        rec = PlacementRecord::parse(msg->job_array[0].admin_comment);
    slurm_free_job_info_msg(msg);
    return rec;
}

int slice_size_of(const RackMap& map, const SliceOptions& o, int job_nodes) {
    if (o.slice > 0) return o.slice;
    int k = auto_slice_size(job_nodes, map.max_slice(), map.defaults().slice_sizes);
    if (k == 0) throw Error(fmt::format("--nvl-slice=auto: {} nodes cannot be cut into equal slices", job_nodes));
    return k;
}

} // namespace

void set_task_env(spank_t sp) {
    State& st = state();
    if (!st.options.slice_set) return;
    const RackMap& map = rack_map();
    const std::string nodelist = getenv_job(sp, "SLURM_JOB_NODELIST");
    const std::string host = node_name(sp);
    if (nodelist.empty() || host.empty()) throw Error("SLURM_JOB_NODELIST or the node name is missing in the job");
    const auto nodes = hostlist_expand(nodelist);
    std::vector<std::vector<std::string>> slices;
    try {
        for (const auto& s : derive_slices(map, nodes, slice_size_of(map, st.options, int(nodes.size()))))
            slices.push_back(map.node_names(s));
    } catch (const Error& derive_error) {
        uint32_t job_id = 0;
        spank_get_item(sp, S_JOB_ID, &job_id);
        auto rec = load_record(job_id);
        if (!rec || rec->slices.empty())
            throw Error(fmt::format("job {}: {}; and no nvlsliced placement record: NVL_* not set", job_id,
                                    derive_error.what()));
        for (const auto& hl : rec->slices) slices.push_back(hostlist_expand(hl));
    }
    SliceEnv e = slice_env_for(map, slices, host);
    setenv_task(sp, "NVL_SLICE_INDEX", std::to_string(e.index));
    setenv_task(sp, "NVL_SLICE_COUNT", std::to_string(e.count));
    setenv_task(sp, "NVL_SLICE_SIZE", std::to_string(e.size));
    setenv_task(sp, "NVL_SLICE_RANK", std::to_string(e.rank));
    setenv_task(sp, "NVL_DOMAIN", e.domain);
    setenv_task(sp, "NVL_SLICE_NODELIST", e.nodelist);
    setenv_task(sp, "NVL_SLICE_LEADER", e.leader);
}

bool check_node_gpus(spank_t sp) {
    State& st = state();
    if (!st.options.slice_set || st.config.check_gpus == GpuCheck::Off) return true;
    const std::string host = node_name(sp);
    const RackMap& map = rack_map();
    auto id = map.find_node(host);
    if (!id) {
        log_error(fmt::format("node {} is not in the rack map {}", host, st.config.map));
        return st.config.check_gpus != GpuCheck::Fail;
    }
    const int expected = map.domain(map.domain_of(*id)).gpus_per_node;
    std::string xml = st.config.hwloc_xml;
    if (auto at = xml.find("%n"); at != std::string::npos) xml.replace(at, 2, host);
    const int found = count_nvidia_gpus(xml);
    const std::string msg = gpu_check_message(host, expected, found);
    if (msg.empty()) return true;
    log_error(msg);
    return st.config.check_gpus != GpuCheck::Fail;
}

} // namespace nvl::spank
