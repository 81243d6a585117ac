// nvlslice — the cluster as the helper sees it, and the one call through
// which it acts (apply(), with the actions of action.hpp). The one
// implementation over libslurm lives in src/slurm/; unit tests use a fake. Records mirror what Slurm reports, already
// decoded.
#pragma once

#include "model.hpp"
#include "slurm_reason.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvl {

struct Action; // action.hpp
namespace action {
struct Names;
}
struct ViewRequest; // reconcile.hpp
struct ClusterRead;

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
    // Its last unanswered probe was refused: its host answers, its slurmd
    // is gone (else the probe timed out: the host itself is silent).
    bool unanswered_refused = false;
};

enum class JobState { Pending, Running, Suspended, Completing, Finished };

struct SlurmJob {
    JobId id = 0;
    JobState state = JobState::Pending;
    bool held = false;       // priority 0 (user or admin hold)
    bool admin_held = false; // JobHeldAdmin: users cannot release it
    bool stopped = false;    // running, its batch script stopped through Slurm (JOB_STOPPED)
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
    // Everything a cycle reads (reconcile.hpp: ViewRequest, ClusterRead):
    // nodes, jobs, the helper's reservations, and Slurm's partitions,
    // licenses and limits while a job needs them. Throws when the nodes,
    // jobs or reservations cannot be read; a failed read of the others is
    // kept in the result instead.
    virtual ClusterRead read_view(const ViewRequest& q) = 0;

    // Does what the action asks, by its kind: action.hpp describes each
    // kind (what Slurm is asked, when it is sent, what a refusal does) and
    // names the method each implementation has for it (Action::run).
    virtual void apply(const Action& a, const action::Names& names) = 0;
};

} // namespace nvl
