// nvlslice — a seeded discrete-event simulation of a GPU cluster under
// five placement policies, on the real engine (nvl-sim trace).
//
// One trace (job arrivals, sizes, durations, checkpointable share, node
// failures and repairs) is generated from the seed and replayed under each
// policy, so differences come from placement alone:
//  first_fit    rack-blind: the lowest-numbered free nodes (Slurm's default)
//  whole_racks  slice jobs (>= one slice) get whole racks (ceil(N/18)), the
//               rest of a rack idles; smaller jobs are packed best fit into
//               racks already in use
//  block        one rack per slice, best fit, no spares (topology/block),
//               Slurm's plain requeue after a failure
//  block_expedite  the same with Slurm's expedited requeue (25.11+)
//  nvlslice     the engine with spares as each rack's failure budget,
//               repairs from them, moves, smaller slices on degraded racks,
//               small jobs packed into broken racks, spares lent to
//               preemptible work, and defragmentation. Each job's request
//               (make_request, the plugin's; slice_request, the helper's),
//               placement and lending (place_or_borrow), repair plans
//               (plan_repair) and defragmentation (decide_defrag) are the
//               product's own code.
// A job runs at `split_speed` (0.57: the published 43 % tensor-parallel loss
// over InfiniBand) only when one of its slices crosses a rack. A failure
// loses the work since the job's last checkpoint (or all of it, if not
// checkpointable). Every start, the first one too, and every restart (a
// requeue after a failure, a repair in place, a lent spare taken back, a
// defragmentation) costs every policy the same `restart_hours` before work
// begins (startup: loading, initialisation). How a failed job comes back:
//  plain requeue (first_fit, whole_racks, block), as Slurm 24.11 and 26.05
//    do it (job_mgr.c batch_requeue_fini): the old nodes are released, the
//    job may start again only `requeue_delay_s` later (begin time = now +
//    cred_expire + 1, 121 s by default; 26.05 SchedulerParameters=
//    requeue_delay), and its submit time is reset (the age factor starts
//    again from zero), so it queues behind the jobs already waiting;
//  expedited requeue (block_expedite; 25.11+, --requeue=expedite with
//    SlurmctldParameters=enable_expedited_requeue): no begin-time delay, the
//    old nodes are held until it is requeued, and it sorts before every
//    other job (job_scheduler.c sort_job_queue2): first pick, at once;
//  nvlslice: repaired in place when its rack or another rack has room (the
//    helper's repair); when none has, a rack is freed from checkpointable
//    work at once and the slice moves there (the helper's defragmentation
//    for repairs, defrag.for_repairs); otherwise the nodes that free
//    soonest by the running jobs' time limits, checkpointable work there
//    requeued at once, are held for it with its healthy slices, and it
//    starts when the last one frees (the helper's held repair:
//    plan_repair() with LaterRoom, within repair_hold_max); otherwise it
//    goes back to the head of the queue (the helper places a requeued
//    slice job before new ones, without the begin-time delay).
// How each failure reaches its job is modelled from the bench (SimParams:
// dead_share, slurmd_timeout_s, probe_s, complete_*): the job's nodes stay
// its own until its requeue, then the policy acts. Not modelled: the
// reverse-tree position of a dead node (one figure for all).
#pragma once

#include "defrag.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nvl {

// A decision of the nvlslice policy, as the simulator makes it with the
// helper's functions: a job started (on which nodes, on lent spares or
// not), or a defragmentation (the rack freed, the jobs requeued). Job ids
// are trace indexes + 1. Tests replay the same state through the helper's
// cycle and compare.
struct SimDecision {
    enum Kind { Start, Defrag } kind = Start;
    double hours = 0;
    JobId job = 0;              // started, or blocked (defragmentation)
    std::vector<NodeId> nodes;  // started on
    bool lent = false;          // on lent spares
    DomainId rack = kNoDomain;  // freed
    std::vector<JobId> victims; // requeued to free it
};

struct SimParams {
    int racks = 128;
    int nodes_per_rack = 18;
    int slice = 16;
    int spares = 2;
    double days = 30;
    double mtbf_days = 490; // per node
    double node_repair_hours = 24;
    double mean_job_hours = 6;
    double load = 1.3;            // offered node-hours / cluster node-hours: >1 keeps the queue full
    double checkpointable = 0.5;  // share of jobs that checkpoint
    double checkpoint_hours = 1;  // interval
    bool checkpoint_known = true; // jobs say it (--nvl-checkpoint-every): defragmentation's cost uses it
    double split_speed = 0.57;
    double restart_hours = 0.25;  // startup and communicator setup, paid by every start and restart
    double requeue_delay_s = 121; // plain requeue: Slurm's begin-time delay (cred_expire 120 s + 1)
    // How a failure reaches its job (seconds; assumptions, measured on the
    // busy bench, tests/cluster/bench_busy.out, Slurm 26.05). A failure is
    // a drain (a health check) or a dead node (silent, or its slurmd gone),
    // `dead_share` of them, drawn per failure from the seed, the same for
    // every policy. The job stops working at the failure; its nodes stay
    // its own (completing, or held for it) until it is requeued: at once
    // for a drain; a dead node after Slurm's SlurmdTimeout, or nvlslice's
    // probe; then after its nodes complete.
    double dead_share = 0.5;
    double slurmd_timeout_s = 300; // Slurm's default; the bench ran 60
    double probe_s = 6;            // nvlslice: silent_after (5 s) and the DOWN
    double complete_s = 2;         // a drain's requeue to the job's nodes free (bench: 1.6-2.6 s in all)
    double complete_dead_s = 11;   // nvlslice, a dead node: its steps aborted (bench: 6-23 s)
    // The same drawn per failure from these (seconds; empty: complete_dead_s):
    // the bench's own trials, whose step teardown sometimes waits a minute
    std::vector<double> complete_dead_draws;
    double complete_dead_slurm_s = 60; // Slurm alone: slurmstepd's wait for the dead node's step
    LendScope lend = LendScope::Checkpointable;
    // nvlslice's defragmentation pace, as the helper is configured
    // (defaults: the helper's own, HelperConfig).
    bool defrag = true;
    int defrag_after_s = -1;    // -1: the helper's default
    int defrag_interval_s = -1; // -1: the helper's default
    bool defrag_repairs = true; // a repair with no room frees a rack at once (helper defrag.for_repairs)
    // Slurm's queue: FIFO by submit time, the first `lookahead` eligible
    // jobs tried at every event (every policy alike).
    int lookahead = 8;
    // Slurm's backfill (every policy alike): the first eligible job that
    // cannot start holds the nodes it will get, by its policy's placement,
    // when running jobs end by their time limits; a later job may take
    // them only if its own limit ends before then (EASY backfill, one
    // reservation). Off: later jobs take any free node (pure look-ahead).
    bool backfill = true;
    // Jobs' time limits as the backfill reads them, seconds: each job's
    // own run (restart included) or this, whichever is longer (0: the run
    // exactly, as if every job gave its run time as its limit).
    double time_limit_s = 0;
    // The first `top_jobs` jobs of the trace sort before every other
    // waiting job (a higher priority: the busy bench's measured job);
    // each priority is FIFO by submit time.
    int top_jobs = 0;
    // Only the top jobs ask for slices; every other job asks for nodes
    // alone and is packed best fit, across racks where no rack has room
    // (as topology/block places a job without --segment; the busy bench's
    // backlog), except nvlslice's lendable work, which asks for a slice
    // of its size (the bench's --nvl-slice=SIZE --nvl-checkpointable).
    bool sliced_top_only = false;
    // A `failjob` fails every node of the rack of the job's node at once
    // (one NVLink switch fault takes a whole rack), each as the line says.
    bool failjob_rack = false;
    // A `failjob` waits until no node is idle but the kept spares, at most
    // this many seconds (the busy bench's protocol: it fails the node of a
    // saturated cluster; 0: at its time).
    double failjob_busy_wait_s = 0;
    // nvlslice: after them, every other of the first `lend_depth` eligible
    // waiting jobs that may borrow spares and fits whole in one rack's idle
    // kept spares starts there (0: none; kAnyDepth: the whole queue). The
    // helper tries every waiting job each cycle (cycle.cpp) and lends spares
    // first (place_or_borrow); the job waits for its spare in a reservation
    // of its own, and Slurm sorts a job in a reservation before every other
    // (job_scheduler.c, sort_job_queue2) and tests it apart from its
    // partition's queue: its next scheduling pass starts it. Without that
    // reservation Slurm would reach only the first bf_max_job_test jobs (500
    // by default, backfill.c), and its main scheduler would stop in the
    // partition at the first job that does not fit.
    static constexpr int kAnyDepth = 2147483647;
    int lend_depth = kAnyDepth;
    uint64_t seed = 1;
    // Called with each decision of the nvlslice policy (none: not recorded).
    std::function<void(const SimDecision&)> on_decision;
};

// A distribution over the failures of one run (seconds), nearest-rank.
struct Percentiles {
    double p50 = 0, p90 = 0, p99 = 0, max = 0;
    int n = 0;
};

struct PolicyResult {
    std::string policy;
    double goodput = 0;         // useful node-hours (speed-weighted) / cluster node-hours
    double slice_goodput = 0;   // the same for jobs of >= one slice
    double utilization = 0;     // allocated node-hours / cluster node-hours
    double mean_wait_h = 0;     // of jobs that started
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
    // Per failure that stopped a running job: from the failure to the job
    // running again (restart cost excluded) and to it working again
    // (included); all jobs, and jobs of 64 nodes and more. A job still
    // waiting at the end counts with its wait so far (a lower bound).
    Percentiles resume_s, resume_work_s, resume_big_s, resume_big_work_s;
    // The same for slice jobs (of at least one slice; with sliced_top_only,
    // the top jobs), per failure kind.
    Percentiles resume_slice_drain_s, resume_slice_dead_s;
    int failures_hit = 0; // failures that stopped a running job
    int unresumed = 0;    // of them, still not running at the end
    double lost_gpu_hours_per_failure = 0;
};

// One trace: what every policy replays.
struct TraceJob {
    double arrival = 0; // hours from the start
    int nodes = 1;
    double hours = 0; // work at full speed
    bool ckpt = false;
};
// A failure of a given job's node, whichever node that is then (the
// bench's: a node of the measured job); nothing fails if it does not run.
struct TraceJobFailure {
    double time = 0; // hours from the start
    int job = 0;     // index into Trace::jobs (arrival order)
    int k = 0;       // its k-th node (modulo its node count)
    bool dead = false;
};
struct Trace {
    std::vector<TraceJob> jobs;                      // by arrival
    std::vector<std::pair<double, NodeId>> failures; // hours from the start, node (rack-major index)
    std::vector<TraceJobFailure> job_failures;
};

// The trace generated from p.seed (arrivals, sizes, durations, failures).
Trace make_trace(const SimParams& p);
std::vector<PolicyResult> run_trace(const SimParams& p);
// The same on a given trace (one written by write_trace, or replayed on a
// cluster): its nodes must fit p's racks x nodes_per_rack.
std::vector<PolicyResult> run_trace(const SimParams& p, const Trace& t);

// A trace as text, one line each, so that a cluster replay and the
// simulator run the same one:
//   # comment
//   job ARRIVAL_H NODES HOURS CKPT(0|1)
//   fail TIME_H NODE
//   failjob TIME_H JOB K drain|dead   (JOB: the job's index in arrival order, from 0)
std::string write_trace(const Trace& t);
// Throws nvl::Error naming `where`:line and what was expected.
Trace read_trace(const std::string& text, const std::string& where);

} // namespace nvl
