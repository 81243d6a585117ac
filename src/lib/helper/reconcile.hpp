// nvlslice — one reconcile cycle of the helper, as a pure function.
//
// Level-triggered and idempotent, like a Kubernetes controller: from what
// Slurm reports now (nodes, jobs, the reservations) and the records the
// helper keeps inside Slurm (job admin_comment), it decides the actions that
// move the cluster toward the wanted state. Run it again on the same input
// and it asks for nothing new; kill the helper between any two actions and
// the next cycle finishes the work from what Slurm shows.
//
// The gate: the plugin submits a slice job requesting one gate license,
// which a license-only reservation holds for root, so the job waits with
// Reason=Licenses while Slurm computes its priority as for any job (QOS,
// partition tier, fair-share, age, admin-set priority, nice). The helper
// takes jobs in Slurm's priority order, places them, pins the nodes and
// takes the gate license off. It never releases a hold it did not set
// itself (record hold=1: a repair's requeue-hold); user and admin holds
// stay until their owner releases them.
//
// Per tagged slice job (Slurm's priority order; repairs before placements):
//  running, a node failed (DOWN/FAIL, or a drain whose reason matches the
//    configured pattern) -> record "repairing" hold=1, requeue-hold, pin the
//    repaired nodes (spares of the same rack first, else move the slice);
//    once pending again: StartTime, record "placed", release.
//    --no-requeue jobs and interactive allocations are reported, not touched.
//  running without a placement of ours (it escaped its gate) -> adopted if
//    its nodes form whole slices, else requeued to be placed; logged.
//  pending, held by someone else -> left alone.
//  pending, placed, gate off -> waits for Slurm; gated again and re-placed
//    if a pinned node failed or another job holds the nodes too long.
//  pending, gated (or held by us), record placed/repairing -> finish.
//  pending, neither gated nor placed (its owner removed the gate) -> gated
//    again, logged.
//  pending, gated -> place with the core; on success record, pin, gate
//    off; else record "waiting" with the reason. Prefer mode may split.
//  the top-priority job that cannot be placed gets racks protected for it
//    (a reservation from its expected start: shorter jobs still run there).
//  strict job blocked only by fragmentation for long enough -> requeue the
//    cheapest set of checkpointable jobs that frees one rack (rate-limited).
// Then the spare reservation, the node weights and the gate reservation.
#pragma once

#include "action.hpp"
#include "cluster_api.hpp"
#include "eligibility.hpp"
#include "defrag.hpp"
#include "model.hpp"
#include "rack_health.hpp"
#include "slice_job.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nvl {

// The job whose lend reservation `resv` is, by its name: `prefix` + "_" +
// the job id (no leading zero: one name per job); 0: none. The one rule
// for the helper's records, the adapter's read and the fakes'.
JobId lend_job_of(std::string_view prefix, std::string_view resv);

struct HelperConfig {
    std::string reservation = "nvlslice_spares"; // "" = do not keep a reservation
    // The gate (slurm.conf: Licenses=nvlslice_gate:1): the license the
    // plugin adds to slice jobs, and the license-only reservation that
    // holds it so Slurm never starts them by itself.
    std::string gate_license = "nvlslice_gate";
    std::string gate_reservation = "nvlslice_gate";
    // Racks kept for the top-priority slice job that cannot start yet.
    std::string protect_reservation = "nvlslice_protect";
    bool protect = true;
    // A spare lent to a job that Slurm has not started yet
    // waits for it in a reservation of its own, "<lend_reservation>_<job
    // id>", for the job's owner, so that no job ahead of it takes it.
    std::string lend_reservation = "nvlslice_lend";
    std::string lend_name(JobId id) const { return lend_reservation + "_" + std::to_string(id); }
    // The job a lend reservation was made for; 0: not one (lend_job_of).
    JobId lend_job(const std::string& resv) const;
    // A repair's (or a restart's) target waits for its job in the same
    // reservation of the job's own, made before the requeue: from the
    // requeue to the restart, neither the job's healthy nodes nor the spare
    // it takes may go to another job (Slurm would give them to the
    // backlog the moment they complete). false: the pin alone, as before.
    bool repair_reservation = true;
    // Drains whose reason matches trigger a repair (ECMAScript regex searched
    // in the reason, case-insensitive);
    // empty = every drain. DOWN/FAIL always trigger one.
    std::string repair_drain_reasons;
    // A failed node whose reason matches this (same syntax) takes its whole
    // rack out of service (rack_health.hpp); empty = only the rule that a
    // rack whose failed nodes outnumber its spares is degraded.
    std::string rack_failure_reasons;
    // A node of a running slice job that Slurm flags NOT_RESPONDING this
    // many seconds is drained and marked DOWN by the helper and repaired,
    // before Slurm marks it DOWN (SlurmdTimeout). 0 = off: wait for Slurm.
    int repair_not_responding_after_s = 0;
    // A node of a running slice job whose slurmd has not answered the
    // helper's own probe (a TCP connection to its port, nvlsliced probes
    // every second) for this many seconds is drained, marked DOWN and its
    // job repaired, without waiting for slurmctld's ping and SlurmdTimeout.
    // A node that answers again sooner (a network blip) is left alone.
    // 0 = off.
    int silent_after_s = 5;
    // Before the DOWN of a silent node (either way above), the job's steps
    // are aborted (ClusterApi::abort_steps): its other nodes then complete
    // in a second, where each stepd above the silent node in a step's
    // reverse tree would wait 60 s for it. false: Slurm's own wait.
    bool abort_steps = true;
    int prefer_wait_s = 300;  // prefer mode: wait this long for whole slices
    int replace_after_s = 60; // placed but not started while others hold the nodes
    // How long the spare, gate and lend reservations last beyond the
    // helper's last cycle: each is made with an end this far on and moved
    // on while the helper runs (at half of it), so that a helper gone for
    // good leaves no reservation for ever: the spares go back to Slurm and
    // gated jobs start without a placement after this long.
    int64_t reservation_lease_s = 3600;
    // A repair that finds no room now (none free, none being freed) keeps
    // the job's healthy slices and, for those that must move, the nodes
    // that free soonest by the time limits of the jobs on them, in the
    // job's own reservation from its requeue, as Slurm's expedited requeue
    // keeps a job's nodes: when all of them free within this many seconds.
    // Otherwise (or 0) it is requeued to wait with its priority.
    int repair_hold_max_s = 3600;
    bool defrag = true;
    // The pace nvl-sim trace measured best (doc/figures.txt, "Capacity"): the same
    // numbers drive the simulator's nvlslice policy.
    int defrag_after_s = 3600;    // strict job blocked by fragmentation this long
    int defrag_interval_s = 3600; // at most one defragmentation per interval
    bool defrag_interactive = false;
    // What a requeue costs a job beyond its lost work (its next start:
    // loading, initialisation), seconds; also the startup after which a job
    // that says how often it checkpoints (--nvl-checkpoint-every) starts
    // counting its checkpoints. Defragmentation's victim cost (victim_info()).
    int defrag_restart_cost_s = 900;
    // A repair that finds no room (its rack's spares and free nodes used,
    // no other rack with room for the slice) frees a rack the same way, at
    // once, unpaced (defrag_due()); even with `defrag` off.
    bool defrag_repairs = true;
    // Which work may run on a rack's spares until a repair takes them back.
    LendScope lend = LendScope::Checkpointable;
    // Steer the jobs Slurm places by itself (plain jobs) into racks already
    // in use, so whole racks stay whole for slices: each node's Slurm
    // Weight becomes rack_weight(), lowest for the fullest racks.
    bool steer_weights = true;
    // Gate or native (slice_job.hpp). nvlsliced resolves Auto from the
    // running Slurm at start. Native: Slurm orders, backfills and places
    // segment jobs itself, so the helper neither steers weights nor keeps
    // racks for the top job (Slurm's backfill does); the gate stays for
    // prefer jobs, which Slurm's segments cannot run split.
    HandOff hand_off = HandOff::Gate;
    // Native mode's pin on a controller that takes a node list on a job of
    // several segments as a pool (Slurm 25.11+, has_node_pools()): the
    // job's ReqNodeList is exactly its placement's nodes. Otherwise every
    // other node is excluded (ExcNodeList), which any segment job accepts.
    bool node_pools = false;
};

struct CycleStats {
    int placements = 0;
    int repairs_in_rack = 0; // slices repaired from their own rack's spares
    int moves = 0;           // slices moved to another rack
    int defrag_preemptions = 0;
    int unrepairable = 0;             // --no-requeue jobs that lost a node
    int repairs_requeued_to_wait = 0; // a node failed, no room anywhere: requeued to wait with its priority
    int repairs_held = 0;             // a node failed, no room now: its target held until it frees
    std::map<std::string, int> pending_by_reason;
    // Per rack, in map order, as the cycle found it: what an operator
    // watches (nvlsliced's per-rack gauges).
    using Rack = RackStats; // rack_health.hpp
    std::vector<Rack> racks;
    int evacuations = 0; // jobs moved out of degraded racks
};

// A warning wants an operator's eye (a degraded rack, a job that cannot be
// repaired, a refused action): nvlsliced logs it at warning level.
enum class Severity : uint8_t { Info, Warning };

// One line of the cycle's log: what it decided and why.
struct LogEntry {
    Severity severity = Severity::Info;
    JobId job = 0; // the job it is about; 0: the cluster (racks, spares, nodes)
    std::string text;
    // As nvlsliced writes it: "job 7: placed ..." or the text alone.
    std::string line() const { return job ? "job " + std::to_string(job) + ": " + text : text; }
};

struct CycleOutput {
    std::vector<Action> actions;
    std::vector<LogEntry> log; // one entry per decision: job, nodes, why
    CycleStats stats;
    // A repair or a restart is under way (a requeue asked for, a job
    // waiting for its start second or to be released): its next step
    // depends on what Slurm does next, so the next cycle should come soon
    // (nvlsliced: kFollowUpMs instead of cycle_ms).
    bool follow_up = false;
};
inline constexpr int kFollowUpMs = 100;

// What the helper remembers between cycles that is not needed for
// correctness (a restart only delays the next defragmentation). Its times
// are of reconcile()'s monotonic clock.
struct HelperMemory {
    int64_t last_defrag = 0;
    // Jobs whose actions Slurm refused: left alone until `until`, the wait
    // doubling with each failure (2 s up to 5 min), so that one odd job
    // neither stops the cycle nor floods slurmctld.
    struct Backoff {
        int failures = 0;
        int64_t until = 0;
        std::string error; // what failed, for the job's record and the log
        bool recorded = false;
    };
    std::unordered_map<JobId, Backoff> backoff;
    // The same for cluster-wide actions (the spare, gate and protection
    // reservations, node weights, a node marked DOWN), by backoff_key(): a
    // missing Licenses= line is tried and logged at 2, 4, 8 ... 300 s, not
    // every cycle.
    std::unordered_map<std::string, Backoff> cluster_backoff;
    // The last line logged about a job that is not tied to a record change:
    // a line repeats only when the job's situation changes.
    std::unordered_map<JobId, std::string> said;
    // The same for what defragmentation found for a job, which a repair
    // that waits says beside its own line: one slot each, or the two
    // lines would take turns and both repeat every cycle.
    std::unordered_map<JobId, std::string> said_defrag;
    // Repairs whose target nodes were still busy (a lent spare's borrower,
    // or an allocation still completing): since when, to wait a while
    // before placing afresh.
    std::unordered_map<JobId, int64_t> blocked_since;
    // Placed (pinned, released) and not started yet: since when; and jobs
    // whose pin was dropped for not starting within replace_after: placed
    // again from then on.
    std::unordered_map<JobId, int64_t> placed_since;
    std::unordered_map<JobId, int64_t> retry_at;
    // The wall-clock second by which the helper's own requeue of a job had
    // returned: slurmctld revoked the job's credential in that second or
    // before (the kill request's time), so a credential of any later second
    // is good and the job may start from the second after it -- often past
    // already when Slurm shows the job pending. Dropped once the job runs.
    std::unordered_map<JobId, int64_t> requeued_at;
    // A native job Slurm requeued itself, pinned by its repair from this
    // second (its StartTime): nothing of the helper's is released then, so
    // an update at that second asks Slurm for the pass that starts it
    // (keep_released). Dropped once done, or once the job runs.
    std::unordered_map<JobId, int64_t> schedule_at;
    // A job's tag changing what the helper writes and says (it went
    // unreadable, wrong, or readable again): since when, and how often. A
    // tag its owner flips back and forth makes a few record writes and log
    // lines per minute (Cycle::kTagChanges), not one per flip.
    struct TagChanges {
        int64_t since = 0;
        int count = 0;
    };
    std::unordered_map<JobId, TagChanges> tag_changed;
    // Each job's own record as last seen in its AdminComment: written back
    // when a site writes the whole field over it (observe()'s `records`).
    std::unordered_map<JobId, std::string> records;
    // Pending reasons Slurm gave that this nvlslice does not know
    // (ReasonKind::Unknown): each named in the log once.
    std::unordered_set<std::string> unknown_reasons;
    // Per rack: why it is degraded ("" = it is not), as last logged.
    std::vector<std::string> degraded;
    // Nodes Slurm flags NOT_RESPONDING (and not DOWN yet): since when.
    std::unordered_map<std::string, int64_t> not_responding_since;
    // Silent nodes whose job's steps were aborted and batch script stopped:
    // the DOWN due then (kDownAfterAbortS later), whatever the node does
    // meanwhile, and its reason. In name order: the same actions each run.
    // Kept one cycle past the DOWN (`sent`), whose cycle still sees the job
    // running.
    struct DownDue {
        int64_t at = 0;
        std::string reason;
        JobId job = 0; // its target held meanwhile (hold_target(), decide_lends())
        bool sent = false;
    };
    std::map<std::string, DownDue> down_after_abort;
    // Whether `job`'s silent node is due to be marked DOWN (or was, this
    // cycle): its held target stays its own, though the job still runs.
    bool down_due_for(JobId job) const {
        for (const auto& d : down_after_abort)
            if (d.second.job == job) return true;
        return false;
    }
    // The rack defragmentation freed, and for which job: no other slice job
    // (the requeued ones least of all) is placed there while that job waits
    // for the rack's nodes to finish completing, for at most replace_after.
    // For a repair the job may still be running (a drained node): kept
    // until the repair moves its slice there.
    struct DefragTarget {
        JobId job = 0;
        DomainId domain = 0;
        int64_t since = 0;
        bool repair = false;
    };
    std::optional<DefragTarget> defrag_target;
    // The reason patterns, compiled for the configuration they came from:
    // again only when it changes (a reload), not every cycle.
    struct Patterns {
        int compiled = 0; // times compiled (0: not yet; more: a reload's new patterns)
        std::string drain_src, rack_src;
        std::optional<std::regex> drain, rack;
    };
    Patterns patterns;
    // Since when nodes of the map are unregistered (SlurmNode::unregistered):
    // the cycles decide nothing meanwhile (kUnregisteredWaitS at most).
    std::optional<int64_t> unregistered_since;
};
// How long the helper waits for the nodes to register after slurmctld
// starts: Slurm's own verdict (DOWN) comes after SlurmdTimeout; a
// SlurmdTimeout of 0 (none) leaves a dead node UNKNOWN for ever.
inline constexpr int64_t kUnregisteredWaitS = 120;
// How long after aborting a silent node's job's steps the helper marks the
// node DOWN (its batch script stopped meanwhile). The DOWN's requeue sends
// every node the job's terminate, and slurmd then looks for the job's
// slurmstepds every second for 10 s, then every 10 s. The aborted stepds
// end up to 16 s after the abort: the step's first node reports and ends
// at once, and each of its children in the step's reverse tree then tries
// it 5 times a second apart per message (one per run of its own children
// that had reported: up to 4 on the busy bench) before it reports to
// slurmctld; a silent node's own children try to connect to it 5 times,
// each waiting TCPTimeout (2 s), 14 s. 6 s after the abort, slurmd's first
// 10 s of looks cover them; 3 s after it, a 16-s stepd was seen 10 s later
// (the busy bench's run 22).
inline constexpr int64_t kDownAfterAbortS = 6;

// Which cluster-wide actions back off together: Action::backoff_key().
inline std::string backoff_key(const Action& a) {
    return a.backoff_key();
}

// An action Slurm refused, and why.
struct ApplyFailure {
    JobId job = 0; // 0: a cluster-wide action (reservation, weights)
    ActionKind kind = ActionKind::SetRecord;
    std::string error;
    bool unreachable = false; // slurmctld did not answer: the batch stopped here
    std::string key;          // a cluster-wide action's backoff_key()
};

// What the helper reads from Slurm each cycle (references: nothing is
// copied), as ClusterRead::view() gives it.
struct ClusterView {
    const std::vector<SlurmNode>& nodes;
    const std::vector<SlurmJob>& jobs;
    const std::optional<Reservation>& spares;        // cfg.reservation
    const std::optional<Reservation>& gate;          // cfg.gate_reservation
    const std::optional<Reservation>& protection;    // cfg.protect_reservation
    const AcctLimits* limits = nullptr;              // Slurm's accounting limits (gate mode, when enforced)
    const std::vector<Reservation>* lends = nullptr; // those named cfg.lend_name(): lent spares not yet started on
    const SlurmGates* gates = nullptr;               // partitions, licenses, reservations (when a slice job waits)
};

// What a cycle asks of Slurm (ClusterApi::read_view): the helper's
// reservations by name, the lend reservations (named lend_prefix + "_"
// + a job id), and, only while a job needs them (needs_limits: a slice
// job waits, or a job behind the gate), Slurm's partitions, licenses and
// every reservation, and its accounting limits when `limits` (Slurm
// enforces them).
struct ViewRequest {
    std::string spares, gate, protection;
    std::string lend_prefix;
    std::string gate_license;
    bool limits = false;

    static ViewRequest of(const HelperConfig& cfg, bool limits) {
        return {cfg.reservation,      cfg.gate_reservation, cfg.protect_reservation,
                cfg.lend_reservation, cfg.gate_license,     limits};
    }
};

// Whether read_view() reads the gates and limits this cycle: a job needs
// them (needs_limits).
inline bool view_needs_gates(const std::vector<SlurmJob>& jobs, const ViewRequest& q) {
    for (const SlurmJob& j : jobs)
        if (needs_limits(j, q.gate_license)) return true;
    return false;
}
// Whether `name` is a lend reservation of the request (lend_job_of).
inline bool is_lend_name(const std::string& name, const ViewRequest& q) {
    return lend_job_of(q.lend_prefix, name) != 0;
}

// Slurm's view for one cycle, read whole in one call (ClusterApi::
// read_view); reconcile() takes view(). A failed read of the partitions
// and licenses or of the limits does not fail the cycle: it goes on
// without them, and the error says why.
struct ClusterRead {
    std::vector<SlurmNode> nodes;
    std::vector<SlurmJob> jobs;
    std::optional<Reservation> spares, gate, protection;
    std::vector<Reservation> lends;
    std::optional<SlurmGates> gates;
    std::optional<AcctLimits> limits;
    std::string gates_error, limits_error;

    ClusterView view() const {
        return {nodes, jobs, spares, gate, protection, limits ? &*limits : nullptr, &lends, gates ? &*gates : nullptr};
    }
};

// `now`: the wall clock (epoch seconds), for what Slurm's own times are
// compared with (submit, start and begin times; StartTime asked for).
// `mono`: seconds of a clock that never steps (CLOCK_MONOTONIC), for the
// durations the helper measures itself and keeps in `mem` (backoff, waits,
// NOT_RESPONDING timers, the last defragmentation): an NTP step of the wall
// clock must not make them expire. -1: the same as `now` (tests, tools).
CycleOutput reconcile(const RackMap& map, const ClusterView& view, const HelperConfig& cfg, int64_t now,
                      HelperMemory& mem, int64_t mono = -1);

// The Slurm Weight nvlsliced gives the nodes of a rack with `free` free
// (idle or spare) nodes out of `size`: 1 + free, so that Slurm, which gives a
// job the lowest-weight nodes that fit, fills the fullest racks first and a
// whole free rack last.
inline uint32_t rack_weight(int free, int size) {
    return uint32_t(1 + (free < 0 ? 0 : free > size ? size : free));
}

// The configuration's names the actions take (action::Names).
inline action::Names action_names(const HelperConfig& cfg) {
    return {cfg.reservation, cfg.protect_reservation, cfg.gate_reservation, cfg.gate_license};
}

// Applies the actions in order through the adapter, each job on its own: an
// action that fails skips the rest of that job's actions in the batch (they
// build on it) and is reported; every other job's actions still go ahead.
// Never throws nvl::Error. When slurmctld does not answer (nvl::Unreachable)
// the batch stops there, reported as one failure: the rest was decided from
// a snapshot that will be old when it answers again. `after_each`, if set,
// is called after every applied action (the daemon's crash-injection hook
// for the restart tests); `stop`, if set, is asked before each action (a
// SIGTERM ends the batch there, as a crash would, and the next start
// converges).
std::vector<ApplyFailure> apply(ClusterApi& api, const HelperConfig& cfg, const std::vector<Action>& actions,
                                void (*after_each)(const Action&) = nullptr, bool (*stop)() = nullptr);

// Books the outcome of apply() into the memory: a failed job's backoff
// doubles; a job whose actions all succeeded leaves its backoff. `mono` as
// for reconcile(); `wall` (epoch seconds, read after apply() returned; 0:
// unknown) dates the requeues it applied (HelperMemory::requeued_at).
void note_applied(HelperMemory& mem, const std::vector<Action>& actions, const std::vector<ApplyFailure>& failures,
                  int64_t mono, int64_t wall = 0);

} // namespace nvl
