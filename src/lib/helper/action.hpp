// nvlslice — what a cycle asks Slurm to do: one typed payload per kind.
//
// Each kind is described here, in one place: its payload holds exactly
// what it needs, says what Slurm is asked (its contract, in the comment
// above it), names the call it makes on the applier (run(): the adapter's
// and the tests' fakes' method of that name), and says what the cycle and
// apply() need to know of it (each a default unless the kind says
// otherwise):
//   phase(job, now)   when the cycle sends it (Phase; Prepare by default)
//   follow_up(now)    whether the steps of a repair or restart follow it
//                     closely (the next cycle comes sooner)
//   own_order         sent in its phase whatever the job's earlier actions
//   refused_lend      a refusal keeps its spare(s) in the spare reservation:
//                     the spare reservation's update after it is skipped
//   after_refused_lend  skipped after such a refusal
//   requeues          a requeue: its time is remembered (requeued_at)
//   key()             what a refusal backs off, for kinds with many targets
// ClusterApi takes every kind through one call, apply(Action). Adding a
// kind touches this file (the payload, its place in ActionKind and
// ActionPayload) and src/slurm/slurm_cluster.cpp (its method through
// libslurm: the build fails until it is there); the tests' fakes model it
// the same way. apply(), the planner, the logs and the backoff take it
// from here.
#pragma once

#include "cluster_api.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace nvl {

// When the cycle sends an action (its planner orders the cycle's actions by
// phase, each job's own in the order they were decided).
enum class Phase : uint8_t {
    Unprotect, // the protection dropped: nothing waits for racks any more
    Prepare,   // records, holds, requeues, pins and exclusions without a start time
    Spares,    // the spare reservation: a spare handed to a job leaves it before the job may start
    Start,     // what lets a job start: a release, the gate off (or on), a pin from its start time,
               // the protection of racks
    Upkeep,    // node weights, the gate reservation made
};

namespace action {

// The names an action's call takes from the configuration.
struct Names {
    const std::string& reservation;         // the spare reservation
    const std::string& protect_reservation; // the top job's racks
    const std::string& gate_reservation;    // the license-only gate
    const std::string& gate_license;
};

// Admin hold (priority 0).
struct Hold {
    static constexpr const char* name = "hold";
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.hold(job); }
};
// Required node list and, when start_at > 0, StartTime (epoch seconds).
struct Pin {
    static constexpr const char* name = "pin";
    std::string nodes;
    int64_t start_at = 0;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.pin_job(job, nodes, start_at); }
    Phase phase(JobId, int64_t) const { return Phase::Start; }
    bool follow_up(int64_t now) const { return start_at > now; }
};
// Required nodes only ("" = none); StartTime left as it is.
struct PinOnly {
    static constexpr const char* name = "pin-nodes";
    std::string nodes;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.pin_job(job, nodes, 0); }
};
// Native mode's pin: every node but the target excluded (ExcNodeList),
// and StartTime when start_at > 0; "" clears the exclusion. Slurm
// 24.05-25.05 refuse a ReqNodeList on a job of several segments.
struct Exclude {
    static constexpr const char* name = "exclude";
    std::string nodes;
    int64_t start_at = 0;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.exclude_nodes(job, nodes, start_at); }
    Phase phase(JobId, int64_t) const { return start_at > 0 ? Phase::Start : Phase::Prepare; }
    bool follow_up(int64_t now) const { return start_at > now; }
};
struct Release {
    static constexpr const char* name = "release";
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.release(job); }
    Phase phase(JobId, int64_t) const { return Phase::Start; }
    bool follow_up(int64_t) const { return true; }
};
// Requeue a running batch job, held (RequeueHold) or not (Requeue). Slurm
// refuses interactive allocations and --no-requeue jobs.
struct RequeueHold {
    static constexpr const char* name = "requeue-hold";
    static constexpr bool requeues = true;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.requeue_hold(job); }
    bool follow_up(int64_t) const { return true; }
};
struct Requeue {
    static constexpr const char* name = "requeue";
    static constexpr bool requeues = true;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.requeue(job); }
    bool follow_up(int64_t) const { return true; }
};
// The helper's record into the job's AdminComment, in place of the one
// there, the site's text around it kept as it stands (with_record); ""
// takes the record out.
struct SetRecord {
    static constexpr const char* name = "record";
    std::string text;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.set_record(job, text); }
};
// The spare reservation's nodes, until end_at (its lease). A node
// reservation for root (IGNORE_JOBS: nodes may still run jobs), created,
// updated or (nodes empty) deleted; Protect's too. start_at / end_at 0:
// from now, without end; a start in the future keeps off the nodes only
// the jobs that would still run then (Slurm's own rule). An existing one
// is given end_at too (when not 0).
struct SetReservation {
    static constexpr const char* name = "reservation";
    static constexpr bool after_refused_lend = true;
    std::string nodes;
    int64_t end_at = 0;
    template <class Api> void run(Api& api, JobId, const Names& n) const {
        api.set_reservation(n.reservation, nodes, 0, end_at);
    }
    Phase phase(JobId, int64_t) const { return Phase::Spares; }
};
// Slurm's scheduling weight of the nodes (a hostlist): Slurm gives a job
// the lowest-weight nodes that fit.
struct SetWeight {
    static constexpr const char* name = "weight";
    std::string nodes;
    uint32_t weight = 0;
    template <class Api> void run(Api& api, JobId, const Names&) const { api.set_node_weight(nodes, weight); }
    Phase phase(JobId, int64_t) const { return Phase::Upkeep; }
    // a refusal backs off this change only, not every weight
    std::string key() const { return std::string(name) + " " + nodes + " " + std::to_string(weight); }
};
// The job's license request, replaced as a whole ("" = none): how the
// gate license is put on a job and taken off it.
struct SetLicenses {
    static constexpr const char* name = "licenses";
    std::string licenses;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.set_licenses(job, licenses); }
    Phase phase(JobId job, int64_t) const { return job ? Phase::Start : Phase::Prepare; }
};
// The protection reservation: nodes ("" = none) from start_at to end_at.
struct Protect {
    static constexpr const char* name = "protect";
    std::string nodes;
    int64_t start_at = 0;
    int64_t end_at = 0;
    template <class Api> void run(Api& api, JobId, const Names& n) const {
        api.set_reservation(n.protect_reservation, nodes, start_at, end_at);
    }
    Phase phase(JobId, int64_t) const { return nodes.empty() ? Phase::Unprotect : Phase::Start; }
};
// Creates, if missing, the license-only reservation that holds every gate
// license for root, so that jobs requesting it wait (Reason=Licenses) with
// their priority computed, until the helper takes it off them; until end_at
// (its lease; 0: far on), which an existing one is given too.
struct Gate {
    static constexpr const char* name = "gate";
    int64_t end_at = 0;
    template <class Api> void run(Api& api, JobId, const Names& n) const {
        api.ensure_gate(n.gate_reservation, n.gate_license, end_at);
    }
    Phase phase(JobId, int64_t) const { return Phase::Upkeep; }
};
// Drains the node and marks it DOWN, with `reason` for Slurm and the admin:
// Slurm lets go of its jobs at once (requeued if they may be), as for a
// node it marks DOWN itself, and the node stays out until an admin resumes
// it.
struct NodeDown {
    static constexpr const char* name = "node-down";
    std::string nodes; // one node
    std::string reason;
    // The slice job its DOWN requeues (0: none): the requeue is Slurm's, at
    // the DOWN, so the DOWN's second is remembered as the helper's own
    // requeue's is (HelperMemory::requeued_at): the job may start again
    // the second after it, not the second after the helper sees it pending.
    JobId job_requeued = 0;
    template <class Api> void run(Api& api, JobId, const Names&) const { api.set_node_down(nodes, reason); }
    bool follow_up(int64_t) const { return true; }
    std::string key() const { return std::string(name) + " " + nodes + " " + reason; }
};
// Requeue=1 again on a lent job: Slurm may requeue it again, the terms on
// which a job borrows a rack's spare, which its owner may not withdraw.
struct AllowRequeue {
    static constexpr const char* name = "allow-requeue";
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.allow_requeue(job); }
};

// The job waits for its lent spare(s) in a reservation of its own: a
// reservation on `nodes` for the job's owner alone (OVERLAP: made while
// the spare reservation still holds the nodes, which leave it next), and
// the job moved into it. Until the job starts there, no other job may take
// the nodes, and Slurm's scheduler sorts it first and tests it apart from
// its partition's queue. An existing reservation of that name is given
// these nodes. It ends at end_at (0: without end).
// Made (and ended) before the spare reservation changes, whatever the
// job's earlier actions: never after it, when the spare would be free to
// any job meanwhile.
struct Lend {
    static constexpr const char* name = "lend";
    static constexpr bool own_order = true;
    static constexpr bool refused_lend = true;
    std::string nodes;
    uint32_t user_id = 0;
    std::string reservation;
    int64_t end_at = 0; // its lease
    template <class Api> void run(Api& api, JobId job, const Names&) const {
        api.lend_nodes(job, user_id, reservation, nodes, end_at);
    }
};
// Its steps aborted (not its batch script) on every node whose slurmd
// answers, just before the requeue its silent node brings: Slurm's own
// abort signal (SIG_ABORT, 997 in every release from 22.05 to 26.05),
// which kills the tasks and tells each slurmstepd to report its end at
// once, where a killed step's stepd waits up to 60 s for every child of it
// in the step's reverse tree (REVERSE_TREE_CHILDREN_TIMEOUT, compiled into
// Slurm), a dead node's included, before its node may complete the job.
// The extern step (PrologFlags=Contain) still waits.
struct AbortSteps {
    static constexpr const char* name = "abort-steps";
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.abort_steps(job); }
};
// Its batch script stopped (SIGSTOP to the batch shell alone, not its
// children, KILL_JOB_BATCH), just before its steps are aborted when the DOWN
// that makes Slurm requeue the job follows seconds later
// (kDownAfterAbortS): meanwhile the script must not go on past an srun that
// ended and finish the job, which Slurm would then not requeue. Nothing is
// left stopped: the DOWN's terminate sends SIGCONT before SIGTERM (slurmd).
struct StopBatch {
    static constexpr const char* name = "stop-batch";
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.stop_batch(job); }
};
// A lend reservation's end: the job (0: none) and the `others` in it (a
// task its job array split off, a job its owner put there) leave it
// (Reservation=""; a job that ended meanwhile is no error), then it is
// deleted; one already gone is no error.
struct EndLend {
    static constexpr const char* name = "end-lend";
    static constexpr bool own_order = true;
    std::string reservation;
    std::vector<JobId> others;
    template <class Api> void run(Api& api, JobId job, const Names&) const { api.end_lend(job, others, reservation); }
    std::string key() const { return std::string(name) + " " + reservation; }
};

} // namespace action

// In Payload's order.
enum class ActionKind {
    Hold,
    Pin,
    PinOnly,
    Release,
    RequeueHold,
    Requeue,
    SetRecord,
    SetReservation,
    SetWeight,
    SetLicenses,
    Protect,
    Gate,
    Exclude,
    NodeDown,
    AllowRequeue,
    Lend,
    EndLend,
    AbortSteps,
    StopBatch
};

using ActionPayload =
    std::variant<action::Hold, action::Pin, action::PinOnly, action::Release, action::RequeueHold, action::Requeue,
                 action::SetRecord, action::SetReservation, action::SetWeight, action::SetLicenses, action::Protect,
                 action::Gate, action::Exclude, action::NodeDown, action::AllowRequeue, action::Lend, action::EndLend,
                 action::AbortSteps, action::StopBatch>;

namespace detail {
template <class T, class = void> struct HasNodes : std::false_type {};
template <class T> struct HasNodes<T, std::void_t<decltype(std::declval<T>().nodes)>> : std::true_type {};
template <class T, class = void> struct HasStart : std::false_type {};
template <class T> struct HasStart<T, std::void_t<decltype(std::declval<T>().start_at)>> : std::true_type {};
template <class T, class = void> struct HasKey : std::false_type {};
template <class T> struct HasKey<T, std::void_t<decltype(std::declval<T>().key())>> : std::true_type {};
template <class T, class = void> struct HasPhase : std::false_type {};
template <class T>
struct HasPhase<T, std::void_t<decltype(std::declval<T>().phase(JobId(), int64_t()))>> : std::true_type {};
template <class T, class = void> struct HasFollowUp : std::false_type {};
template <class T>
struct HasFollowUp<T, std::void_t<decltype(std::declval<T>().follow_up(int64_t()))>> : std::true_type {};
// A kind's flag: its static member when it has one, else false.
#define NVL_ACTION_FLAG(flag)                                                                                          \
    template <class T, class = void> struct Flag_##flag : std::false_type {};                                          \
    template <class T> struct Flag_##flag<T, std::void_t<decltype(T::flag)>> : std::bool_constant<T::flag> {};
NVL_ACTION_FLAG(own_order)
NVL_ACTION_FLAG(refused_lend)
NVL_ACTION_FLAG(after_refused_lend)
NVL_ACTION_FLAG(requeues)
#undef NVL_ACTION_FLAG

template <size_t... I> constexpr auto kind_names(std::index_sequence<I...>) {
    return std::array<const char*, sizeof...(I)>{std::variant_alternative_t<I, ActionPayload>::name...};
}
} // namespace detail

// The kind of a payload type: its place in ActionPayload.
template <class T, size_t I = 0> constexpr ActionKind kind_of() {
    if constexpr (std::is_same_v<std::variant_alternative_t<I, ActionPayload>, T>)
        return ActionKind(I);
    else
        return kind_of<T, I + 1>();
}
static_assert(kind_of<action::StopBatch>() == ActionKind::StopBatch, "ActionKind follows ActionPayload");
static_assert(size_t(ActionKind::StopBatch) + 1 == std::variant_size_v<ActionPayload>, "one ActionKind per payload");

inline const char* to_string(ActionKind k) {
    static constexpr auto names = detail::kind_names(std::make_index_sequence<std::variant_size_v<ActionPayload>>{});
    return names[size_t(k)];
}

struct Action {
    JobId job = 0; // 0: cluster-wide (reservations, nodes)
    ActionPayload what;

    ActionKind kind() const { return ActionKind(what.index()); }
    const char* name() const { return to_string(kind()); }
    // The payload, if it is a T.
    template <class T> const T* get() const { return std::get_if<T>(&what); }
    // The node list it acts on or asks for ("" for kinds without one).
    std::string nodes() const {
        return std::visit(
            [](const auto& p) -> std::string {
                if constexpr (detail::HasNodes<std::decay_t<decltype(p)>>::value) return p.nodes;
                return {};
            },
            what);
    }
    // The StartTime (or reservation start) it sets; 0: none.
    int64_t start_at() const {
        return std::visit(
            [](const auto& p) -> int64_t {
                if constexpr (detail::HasStart<std::decay_t<decltype(p)>>::value) return p.start_at;
                return 0;
            },
            what);
    }
    // What a refusal backs off (cluster-wide actions): the kind, or for
    // kinds with many independent targets, this one change.
    std::string backoff_key() const {
        return std::visit(
            [](const auto& p) -> std::string {
                if constexpr (detail::HasKey<std::decay_t<decltype(p)>>::value) return p.key();
                return std::decay_t<decltype(p)>::name;
            },
            what);
    }
    // The call it makes on `api` (the adapter's and the tests' fakes'
    // ClusterApi::apply()), by its payload's run().
    template <class Api> void run(Api& api, const action::Names& names) const {
        std::visit([&](const auto& p) { p.run(api, job, names); }, what);
    }
    // What its kind says (the comment at the top of this file): the
    // payload's own phase() and follow_up() and flags, else the defaults.
    Phase phase(int64_t now) const {
        return std::visit(
            [&](const auto& p) {
                if constexpr (detail::HasPhase<std::decay_t<decltype(p)>>::value) return p.phase(job, now);
                return Phase::Prepare;
            },
            what);
    }
    bool follow_up(int64_t now) const {
        return std::visit(
            [&](const auto& p) {
                if constexpr (detail::HasFollowUp<std::decay_t<decltype(p)>>::value) return p.follow_up(now);
                return false;
            },
            what);
    }
    bool own_order() const {
        return std::visit([](const auto& p) { return detail::Flag_own_order<std::decay_t<decltype(p)>>::value; }, what);
    }
    bool refused_lend() const {
        return std::visit([](const auto& p) { return detail::Flag_refused_lend<std::decay_t<decltype(p)>>::value; },
                          what);
    }
    bool after_refused_lend() const {
        return std::visit(
            [](const auto& p) { return detail::Flag_after_refused_lend<std::decay_t<decltype(p)>>::value; }, what);
    }
    bool requeues() const {
        return std::visit([](const auto& p) { return detail::Flag_requeues<std::decay_t<decltype(p)>>::value; }, what);
    }
};

} // namespace nvl
