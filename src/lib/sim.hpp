// nvlslice — a seeded discrete-event simulation of a GPU cluster under
// four placement policies, on the real engine (nvl-sim trace).
//
// One trace (job arrivals, sizes, durations, checkpointable share, node
// failures and repairs) is generated from the seed and replayed under each
// policy, so differences come from placement alone:
//  first_fit    rack-blind: the lowest-numbered free nodes (Slurm's default)
//  whole_racks  slice jobs (>= one slice) get whole racks (ceil(N/18)), the
//               rest of a rack idles; smaller jobs are packed best fit into
//               racks already in use
//  block        one rack per slice, best fit, no spares (topology/block)
//  nvlslice     the engine with spares as each rack's failure budget,
//               repairs from them, moves, smaller slices on degraded racks,
//               small jobs packed into broken racks, spares lent to
//               preemptible work, and defragmentation. Lending and
//               defragmentation are the helper's own code (defrag.hpp).
// A job runs at `split_speed` (0.57: the published 43 % tensor-parallel loss
// over InfiniBand) only when one of its slices crosses a rack. A failure
// loses the work since the job's last checkpoint (or all of it, if not
// checkpointable). Every restart (a requeue after a failure, a repair in
// place, a lent spare taken back, a defragmentation) costs every policy the
// same `restart_hours` before work resumes. Other policies requeue a failed
// job at the head of the queue; nvlslice repairs it in place when its rack
// or another rack has room.
#pragma once

#include "defrag.hpp"

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
    double restart_hours = 0.25; // requeue, startup and communicator setup, paid by every restart
    LendScope lend = LendScope::Checkpointable;
    // nvlslice's defragmentation pace, as the helper is configured
    // (defaults: the helper's own, HelperConfig).
    bool defrag = true;
    int defrag_after_s = -1;    // -1: the helper's default
    int defrag_interval_s = -1; // -1: the helper's default
    uint64_t seed = 1;
};

struct PolicyResult {
    std::string policy;
    double goodput = 0;       // useful node-hours (speed-weighted) / cluster node-hours
    double slice_goodput = 0; // the same for jobs of >= one slice
    double utilization = 0;   // allocated node-hours / cluster node-hours
    double mean_wait_h = 0;   // of jobs that started
    double mean_recovery_h = 0; // node failure -> working again (requeue wait + restart delay)
    int jobs_done = 0;
    int jobs_started = 0;
    int split_slices = 0;       // slices started across racks
    int repairs = 0;            // nvlslice: repaired in place (each also a restart)
    int moves = 0;              // nvlslice: slices moved to another rack
    int restarts = 0;           // every restart: failure, repair, lent spare taken back, defragmentation
    double busy_healthy = 0;    // allocated node-hours / healthy node-hours (simulated, not assumed)
    int defrag_preemptions = 0; // nvlslice: checkpointable jobs requeued to free a rack
    double lost_gpu_hours = 0;  // work lost to failures (GPUs x hours)
};

std::vector<PolicyResult> run_trace(const SimParams& p);

} // namespace nvl
