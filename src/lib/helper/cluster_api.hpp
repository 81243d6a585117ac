// nvlslice — the cluster as the helper sees it, and the few operations it
// performs. The one implementation over libslurm lives in src/slurm/; unit
// tests use a fake. Records mirror what Slurm reports, already decoded.
#pragma once

#include "model.hpp"
#include "slurm_reason.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvl {

struct SlurmNode {
    std::string name;
    NodeState state = NodeState::Unknown; // drain folded in: Draining / Drained
    bool failed = false;                  // DOWN or FAIL: always repaired
    bool completing = false;              // a job is still finishing there
    std::string reason;                   // admin's drain/down reason
    std::string features;                 // available features (AvailableFeatures), comma-separated
    uint32_t weight = 0;                  // Slurm's scheduling weight; 0 = not reported
    bool not_responding = false;          // NOT_RESPONDING: slurmctld's pings go unanswered
    // Slurm's UNKNOWN: slurmctld started (a restart, a backup taking
    // control back from it) and has not heard from this node's slurmd since;
    // it registers within seconds, or turns DOWN after SlurmdTimeout.
    bool unregistered = false;
    // Where its slurmd listens (NodeAddr, its port), for the helper's own
    // probe; and for how long that probe has gone unanswered (seconds;
    // 0: it answers, or it is not probed).
    std::string addr;
    uint16_t port = 0;
    int64_t unanswered_s = 0;
};

enum class JobState { Pending, Running, Suspended, Completing, Finished };

struct SlurmJob {
    JobId id = 0;
    JobState state = JobState::Pending;
    bool held = false;       // priority 0 (user or admin hold)
    bool admin_held = false; // JobHeldAdmin: users cannot release it
    PendingReason reason;    // Slurm's pending reason: its name (as squeue prints it) and kind
    std::string comment;
    std::string admin_comment;
    std::vector<std::string> nodes; // allocated nodes (running / completing)
    std::string req_nodes;          // required node list (hostlist), "" if none
    std::string exc_nodes;          // excluded node list (hostlist), "" if none
    int num_nodes = 0;
    int64_t submit_time = 0;
    int64_t start_time = 0;
    int restarts = 0;       // times requeued
    int64_t begin_time = 0; // pending: earliest start (StartTime= / BeginTime); 0 = unknown
    bool batch = true;
    bool requeue = true; // may be requeued (--requeue or the cluster default)
    std::string name;
    std::string partition;
    uint32_t priority = 0; // Slurm's (multifactor) priority; 0 = held
    std::string licenses;  // as requested, e.g. "nvlslice_gate:1,matlab:2"
    // The TRES it asks for as Slurm counts them for its limits
    // (tres_req_str): "cpu=16,mem=64G,node=16,billing=16,gres/gpu=64"
    std::string tres_req;
    int64_t end_time = 0;   // running: expected end (start + time limit); 0 = unknown
    int64_t time_limit = 0; // seconds; 0 = none (partition maximum or unlimited)
    // Its association and QOS, for the limits Slurm tests only when it
    // places a job (eligibility.hpp); 0 / "" when accounting is off.
    uint32_t assoc_id = 0;
    uint32_t user_id = 0;
    std::string qos;
    std::string reservation; // the reservation it runs or waits in ("" = none)
    // An array's task: the array's id and its throttle (%N: at most N of its
    // tasks run at once; 0 = none). 0 / 0 for a job outside an array.
    JobId array_id = 0;
    uint32_t array_throttle = 0;
};

struct Reservation {
    std::string name;
    std::string nodes;      // hostlist
    int64_t start_time = 0; // epoch seconds
    int64_t end_time = 0;
};

// What Slurm tests before it starts a job besides its reason: a gated job
// (gate mode) shows Licenses whatever else holds it, and a job not looked
// at yet shows None. The helper reads these where a slice job waits.
struct SlurmPartition {
    std::string name;
    bool runs_jobs = true;  // not DOWN or INACTIVE (a DRAIN partition still starts its jobs)
    int64_t max_nodes = -1; // -1: unlimited
    int64_t min_nodes = 0;
    int64_t max_time_s = -1; // -1: unlimited
    bool inactive = false;   // INACTIVE (not running jobs): Slurm refuses every update of its jobs too
};
struct SlurmLicense {
    std::string name;
    int64_t total = 0, in_use = 0, reserved = 0; // reserved: held by reservations
};
struct SlurmGates {
    std::vector<SlurmPartition> partitions;
    std::vector<SlurmLicense> licenses;
    std::vector<Reservation> reservations; // every reservation (a job's own: has it started?)
};

// The contract of every call: it either does what it says, or throws
// nvl::Error with Slurm's reason and changes nothing the helper relies on
// (Slurm applies an update's fields in order, so a failed update may have
// applied some; the next cycle sees what is there and converges). Loads
// return Slurm's view at the time of the call; jobs in a final state are
// left out. Updates need a Slurm operator (root or SlurmUser).
class ClusterApi {
  public:
    virtual ~ClusterApi() = default;
    virtual std::vector<SlurmNode> load_nodes() = 0;
    virtual std::vector<SlurmJob> load_jobs() = 0;
    // nullopt when no reservation of that name exists.
    virtual std::optional<Reservation> load_reservation(const std::string& name) = 0;

    // Required node list and, when start_at > 0, StartTime (epoch seconds).
    virtual void pin_job(JobId id, const std::string& nodes, int64_t start_at) = 0;
    // The job's license request, replaced as a whole ("" = none): how the
    // gate license is put on a job and taken off it.
    // Native mode's pin: every node but the target excluded (ExcNodeList),
    // and StartTime when start_at > 0; "" clears the exclusion. Slurm
    // 24.05-25.05 refuse a ReqNodeList on a job of several segments.
    virtual void exclude_nodes(JobId id, const std::string& nodes, int64_t start_at) = 0;
    virtual void set_licenses(JobId id, const std::string& licenses) = 0;
    // The helper's record into the job's AdminComment, in place of the one
    // there, the site's text around it kept as it stands (with_record);
    // "" takes the record out.
    virtual void set_record(JobId id, const std::string& record) = 0;
    virtual void hold(JobId id) = 0; // admin hold (priority 0)
    virtual void release(JobId id) = 0;
    // Requeue a running batch job, held / not held. Slurm refuses
    // interactive allocations and --no-requeue jobs.
    virtual void requeue_hold(JobId id) = 0;
    virtual void requeue(JobId id) = 0;
    // Lets Slurm requeue the job again (Requeue=1): the terms on which a
    // job borrows a rack's spare, which its owner may not withdraw.
    virtual void allow_requeue(JobId id) = 0;
    // Creates, updates or (nodes empty) deletes a node reservation for root
    // (IGNORE_JOBS: nodes may still run jobs). start_at/end_at 0: from now,
    // without end; a start in the future keeps off the nodes only the jobs
    // that would still run then (Slurm's own rule). An existing one is
    // given end_at too (when not 0).
    virtual void set_reservation(const std::string& name, const std::string& nodes, int64_t start_at = 0,
                                 int64_t end_at = 0) = 0;
    // Lending: a reservation `name` on `nodes` (a spare) for
    // the job's owner alone (OVERLAP: made while the spare reservation
    // still holds the nodes, which leave it next), and the job moved into
    // it. Until the job starts there, no other job may take the nodes,
    // and Slurm's scheduler sorts it first and tests it apart from its
    // partition's queue.
    // An existing reservation of that name is given these nodes. It ends
    // at end_at (epoch seconds; 0: without end).
    virtual void lend_nodes(JobId id, uint32_t user_id, const std::string& name, const std::string& nodes,
                            int64_t end_at) = 0;
    // Ends it: job `id` (0: none) and the `others` in it (a task its job
    // array split off, a job its owner put there) leave the reservation
    // (Reservation=""; a job that ended meanwhile is no error), then the
    // reservation is deleted; one already gone is no error.
    virtual void end_lend(JobId id, const std::vector<JobId>& others, const std::string& name) = 0;
    // Creates, if missing, the license-only reservation that holds every
    // `license` for root, so that jobs requesting it wait (Reason=Licenses)
    // with their priority computed, until the helper takes it off them;
    // until end_at (0: far on), which an existing one is given too.
    virtual void ensure_gate(const std::string& reservation, const std::string& license, int64_t end_at) = 0;
    // Sets Slurm's scheduling weight of the nodes (a hostlist): Slurm gives
    // a job the lowest-weight nodes that fit.
    virtual void set_node_weight(const std::string& nodes, uint32_t weight) = 0;
    // Drains a node and marks it DOWN, with a reason: Slurm lets go of its
    // jobs at once (requeued if they may be), as for a node it marks DOWN
    // itself, and the node stays out until an admin resumes it.
    virtual void set_node_down(const std::string& node, const std::string& reason) = 0;
    // Aborts the job's steps (not its batch script) on every node whose
    // slurmd answers: Slurm's own abort signal (SIG_ABORT, 997 in every
    // release from 22.05 to 26.05), which kills the tasks and tells each
    // slurmstepd to report its end at once, where a killed step's stepd
    // waits up to 60 s for every child of it in the step's reverse tree
    // (REVERSE_TREE_CHILDREN_TIMEOUT, compiled into Slurm), a dead node's
    // included, before its node may complete the job. Sent just before the
    // requeue a silent node brings; the extern step (PrologFlags=Contain)
    // still waits.
    virtual void abort_steps(JobId id) = 0;
};

} // namespace nvl
