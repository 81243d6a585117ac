// nvlslice SPANK plugin — state shared by the per-context modules. Only
// spank_nvlslice.cpp holds SPANK_PLUGIN and the slurm_spank_* symbols; it
// switches on the context into alloc.cpp (sbatch/salloc/srun submitting)
// and remote.cpp (slurmstepd on the nodes). Every function here may throw
// nvl::Error; the boundary catches.
#pragma once

#include "model.hpp"
#include "plugin_config.hpp"
#include "slice_job.hpp"

extern "C" {
#include <slurm/spank.h>
}

#include <memory>
#include <string>

namespace nvl::spank {

struct State {
    PluginConfig config;
    SliceOptions options;
    std::unique_ptr<RackMap> map; // loaded on first use
    bool task_killed = false;     // remote: a task of this step ended by SIGKILL
};

State& state();
const RackMap& rack_map(); // loads config.map once; throws with the file's error

// Allocator context (sbatch, salloc, srun creating an allocation): validate
// and hand the request to the helper: the job is submitted held and tagged.
void submit_hand_off(spank_t sp);

// Remote context (slurmstepd): the NVL_* variables of one task.
void set_task_env(spank_t sp);
// Remote context, in each task before its env: compare the node's GPUs with the map.
// Returns false when the step must fail on this node (check_gpus=fail).
bool check_node_gpus(spank_t sp);
// Remote context, in each task: the node's NVLink fabric (check_fabric).
// Returns false when the step must fail on this node (check_fabric=fail).
bool check_node_fabric(spank_t sp);
// Remote context, as a task exits (slurmstepd, root): with fabric_drain=yes,
// a failed task on a node whose fabric check fails drains the node.
void drain_on_fabric_failure(spank_t sp);

// Remote context, a task's end: whether SIGKILL ended it (note_task_exit),
// and at the step's end, after such a kill, a slice job's slurmstepd with
// children in the step's reverse tree waits for their reports
// (wait_for_tree_children; plugstack abort_wait).
void note_task_exit(spank_t sp);
void wait_for_tree_children(spank_t sp);
// Remote context, the batch step's end (slurmstepd, root): a slice job's
// sruns on the node that outlived its batch script are killed where a task
// of its step was killed here (an aborted srun would cancel step 0 of the
// job's next run before Slurm 26.05); forget_abort() (the job epilog)
// removes the mark note_task_exit() left.
void end_stray_sruns(spank_t sp);
void forget_abort(spank_t sp);

// Logging through Slurm with one prefix ("nvlslice: ").
void log_error(const std::string& msg);
void log_info(const std::string& msg);
void log_verbose(const std::string& msg);

} // namespace nvl::spank
