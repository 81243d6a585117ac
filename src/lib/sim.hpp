// nvlslice — a seeded discrete-event simulation of a GPU cluster under
// four placement policies, on the real engine (SPEC §2, nvl-sim trace).
//
// One trace (job arrivals, sizes, durations, checkpointable share, node
// failures and repairs) is generated from the seed and replayed under each
// policy, so differences come from placement alone:
//  first_fit    rack-blind: the lowest-numbered free nodes (Slurm's default)
//  whole_racks  jobs get whole racks (ceil(N/18)), the rest of a rack idles
//  block        one rack per 16-node slice, best fit, no spares (block-style)
//  nvlslice     the engine with spares: repairs from spares, moves, smaller
//               slices on degraded racks, small jobs packed into broken racks,
//               spares lent to checkpointable single-node jobs, and
//               defragmentation (checkpointable jobs requeued to free a rack)
// A job whose slice spans racks runs at `split_speed` (0.57: the published
// 43 % tensor-parallel loss over InfiniBand). A failure loses the work since
// the job's last checkpoint (or all of it, if not checkpointable); other
// policies requeue the job at the head of the queue, nvlslice repairs it in
// place when a spare or another rack has room.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nvl {

struct SimParams {
    int racks = 128;
    int nodes_per_rack = 18;
    int slice = 16;
    int spares = 2;
    double days = 30;
    double mtbf_days = 490; // per node
    double node_repair_hours = 24;
    double mean_job_hours = 6;
    double load = 1.3;           // offered node-hours / cluster node-hours: >1 keeps the queue full
    double checkpointable = 0.5; // share of jobs that checkpoint
    double checkpoint_hours = 1; // interval
    double split_speed = 0.57;
    uint64_t seed = 1;
};

struct PolicyResult {
    std::string policy;
    double goodput = 0;       // useful node-hours (speed-weighted) / cluster node-hours
    double slice_goodput = 0; // the same for jobs of >= one slice
    double utilization = 0;   // allocated node-hours / cluster node-hours
    double mean_wait_h = 0;   // of jobs that started
    int jobs_done = 0;
    int jobs_started = 0;
    int split_slices = 0;       // slices started across racks
    int repairs = 0;            // nvlslice: repaired in place
    int moves = 0;              // nvlslice: slices moved to another rack
    int restarts = 0;           // requeued after a failure, a lent spare taken back, or defragmentation
    int defrag_preemptions = 0; // nvlslice: checkpointable jobs requeued to free a rack
    double lost_gpu_hours = 0;  // work lost to failures (GPUs x hours)
};

std::vector<PolicyResult> run_trace(const SimParams& p);

} // namespace nvl
