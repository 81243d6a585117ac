// nvlslice — the cycle's repair stage: what becomes of each running slice
// job, and of each pending one that has a placement (SPEC §3). Functions of
// the observation (observe.hpp), the working snapshot as the earlier
// decisions of this cycle leave it, and the job; each returns a typed
// decision and changes nothing. The cycle (repair_apply.cpp) turns a
// decision into records, actions and log lines, and takes the nodes a
// repair or a move pins before it judges the next job:
//   decide_running()     a running job: its record says it yielded (the
//                        requeue follows), healthy, restarted by Slurm
//                        elsewhere than its record says (native: the
//                        record follows), its reason stale,
//                        started without a record that says placed
//                        (decide_started()), moved out of a degraded rack
//                        later (an evacuee), not repairable, its repair
//                        waiting, or its repair plan;
//   decide_started()     recorded where Slurm or the helper started it, or
//                        requeued as having escaped its gate;
//   decide_move()        an evacuee, checkpointable ones first
//                        (order_evacuees()): not movable, its move waiting,
//                        or its move plan;
//   decide_placed()      a pending job that has a placement: another's
//                        hold, released (decide_released()), its target
//                        busy, ready to start (decide_start_step()), or a
//                        pinned node failed (plan_pinned_repair()).
#pragma once

#include "defrag.hpp"
#include "model.hpp"
#include "observe.hpp"
#include "placement.hpp"
#include "repair.hpp"
#include "slice_job.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvl {

// A slice on this node needs a repair: the node failed (down, or drained for
// a repair reason), or its rack is degraded.
inline bool needs_repair(const Observation& obs, const Snapshot& snap, NodeId id) {
    return obs.failed.contains(id) || snap.degraded(snap.map().domain_of(id));
}

// The job's placement on `nodes`: its record's slices when it has them (a
// running job whose record names a repair's target runs where it ran),
// else whole slices derived from the nodes.
Placement placement_of(const RackMap& map, const SliceJob& sj, const std::vector<std::string>& nodes);

// `r` as the record of a job placed where it runs: whole slices of one rack
// each when its nodes make them (`whole`), else one split slice.
struct WhereRunning {
    PlacementRecord rec;
    bool whole = false;
};
WhereRunning record_where_running(const RackMap& map, const SliceJob& sj, PlacementRecord r);

enum class RunningCase : uint8_t {
    Yielding,      // its record says it yielded its nodes, yet it runs (a crash before the requeue): requeue it
    Healthy,       // placed, none of its nodes failed: nothing to do
    Followed,      // native, placed, and Slurm restarted it elsewhere than its record says: recorded is the new one
    Recovered,     // its failed nodes came back before a repair: the record's reason is stale
    Started,       // none failed, and its record does not say placed (none, or repairing, restarting): decide_started()
    Evacuee,       // none of its own nodes failed, but its rack is degraded: decide_move(), after the repairs
    NotRepairable, // a node failed, and Slurm cannot requeue it (interactive, or --no-requeue)
    RepairWaits,   // a node failed, and nothing has room for the slice yet: plan.reason says why
    Repair,        // a node failed: plan is the repair
};
const char* to_string(RunningCase c);

struct RunningDecision {
    RunningCase kind = RunningCase::Healthy;
    std::vector<NodeId> failed; // its nodes that need a repair, in node-list order
    // A native job Slurm started whose node failed before a cycle recorded
    // where: the record of where it runs (its placement for the repair).
    // Followed: the record of where Slurm restarted it, a repair counted
    // when a node of the old placement failed.
    std::optional<PlacementRecord> recorded;
    RepairPlan plan;      // RepairWaits, Repair
    bool retried = false; // Repair: a repair whose requeue failed part way (counted already)
};

// `snap`: the working snapshot (the nodes this cycle's earlier repairs and
// placements took marked).
RunningDecision decide_running(const RackMap& map, const Observation& obs, const Snapshot& snap, const SliceJob& sj);

enum class StartCase : uint8_t {
    Native,       // Slurm placed it (--segment): recorded where; rec.why AcrossRacks when its segments cross racks
    Ours,         // started where the helper pinned it (its release, or a crash right after): the record catches up
    ArrayTask,    // a task of a job array started on the array's placement: the record is its own now
    GateOff,      // started without the helper on whole slices (its gate taken off): kept
    Escaped,      // its gate taken off, started rack-blind, requeueable: requeued to be placed
    RanRackBlind, // the same, not requeueable: said in its record once
    Said,         // RanRackBlind, already said
};
const char* to_string(StartCase c);

struct StartDecision {
    StartCase kind = StartCase::Said;
    PlacementRecord rec; // the record it gets
};
// `lend`: the helper's lend_spares; work Slurm started natively that may
// borrow spares and is smaller than a slice is recorded lent
// (stands_in_for_spares()), as the helper's own placement records it.
StartDecision decide_started(const RackMap& map, const SliceJob& sj, LendScope lend);

// Every node of a record's slices, in map order.
std::vector<NodeId> recorded_nodes(const RackMap& map, const PlacementRecord& r);
// The nodes a placed job is held to: its ReqNodeList, or for a native job
// (which Slurm placed, or the helper pinned by exclusion or node pool) its
// record's slices.
std::vector<NodeId> pinned_nodes(const RackMap& map, const SliceJob& sj);
// Job `other` runs with a copy of job `id`'s record: a task of id's array
// that Slurm split off when it started it on id's placement.
bool took_its_placement(const Observation& obs, JobId other, JobId id);

// A pending job that has a placement (pinned, released, or requeued for a
// repair or by Slurm): the second half of a repair, or a placement kept.
enum class PlacedCase : uint8_t {
    OthersHold,    // held by a user or an admin: theirs to release, left alone
    NoPlacement,   // no placement of ours, or pinned to nothing: placed afresh (pass 2)
    Released,      // released and pinned to healthy nodes: waits for Slurm (decide_released())
    TargetBusy,    // held or gated, its target not free yet (a borrower's requeue, an allocation completing)
    Start,         // held or gated, its target free: started there (decide_start_step())
    PinnedFailed,  // a pinned node failed since: repaired (plan_pinned_repair()), once gated if gate_first
    NotRequeueable // a pinned node failed, and it cannot be requeued: only gated if gate_first
};
const char* to_string(PlacedCase c);

struct PlacedDecision {
    PlacedCase kind = PlacedCase::NoPlacement;
    std::vector<NodeId> pinned; // what it is held to: its record's target where the pin did not follow
    bool repin = false;         // the pin did not follow the record: asked for again
    bool gate_first = false;    // PinnedFailed, NotRequeueable: open in gate mode (Slurm requeued it): gated first
    // Released: a node of its placement runs another job (`taken`), maybe a
    // task of its own array that Slurm split off (`split_task`)
    bool taken = false;
    JobId split_task = 0;
    // TargetBusy: preemptible jobs still on a repair's target (a borrower
    // whose requeue failed, or the helper died before it): asked to yield
    std::vector<JobId> borrowers;
    // PinnedFailed, NotRequeueable: its pinned nodes that failed
    std::vector<NodeId> failed;
    bool resumed = false; // PinnedFailed: a repair the helper started (counted then)
};
// `gated`: it carries the gate license; `held_by_us`: held, and its record
// says the helper holds it.
PlacedDecision decide_placed(const RackMap& map, const Observation& obs, const Snapshot& snap, const SliceJob& sj,
                             bool gated, bool held_by_us);

// The repair of a pending job whose pinned node failed (PinnedFailed):
// planned once the cycle has gated it where it must, so that a record it
// cannot read leaves the job gated.
RepairPlan plan_pinned_repair(const RackMap& map, const Snapshot& snap, const SliceJob& sj, const PlacedDecision& d,
                              const NodeSet& unprotected = NodeSet());

// A released job, pinned, that Slurm has not started yet.
enum class ReleasedCase : uint8_t {
    Waits,      // left to Slurm
    ArraySplit, // a task of its array started on its placement: the rest is placed afresh
    HeldBack,   // gate mode: Slurm holds it back for a reason of its own: gated again, its racks freed
    NotStarted, // gate mode: not started within replace_after, its nodes free: gated again
    NodesTaken, // its nodes taken by another job for too long: placed again (native: left to Slurm)
};
// `holds`: Slurm holds it back for a reason of its own; `overdue`: placed
// more than replace_after ago and never ran; `waited_past`: more than
// replace_after since it was submitted or last started.
ReleasedCase decide_released(const SliceJob& sj, const PlacedDecision& d, bool holds, bool overdue, bool waited_past);

// How a held job whose target is free starts. A requeued job may start
// only from `start` (the second after its requeue): its StartTime is
// brought forward to it first (also when the pin is asked for again), and
// it is released once that second has come, so that the release's own
// scheduling pass starts it.
enum class StartStep : uint8_t {
    BringForward, // its begin time set to `start` (the pin from then); released in a later cycle
    WaitSecond,   // its second has not come yet
    Release,      // released now (a first start is pinned from now first)
};
StartStep decide_start_step(const SlurmJob& j, int64_t start, int64_t now, bool repin);

// Checkpointable jobs first (they lose least), then the order given.
void order_evacuees(std::vector<SliceJob>& evacuees);

enum class MoveCase : uint8_t {
    NotMovable, // Slurm cannot requeue it (interactive, or --no-requeue): runs where it is
    MoveWaits,  // no healthy rack has room yet: runs where it is, plan.reason says why
    Move,       // plan is the move
};
const char* to_string(MoveCase c);

struct MoveDecision {
    MoveCase kind = MoveCase::MoveWaits;
    std::vector<NodeId> out; // its nodes in degraded racks
    std::string racks;       // those racks' names, ", "-joined
    RepairPlan plan;
    bool retried = false; // Move: a move whose requeue failed part way (counted already)
};
MoveDecision decide_move(const RackMap& map, const Snapshot& snap, const SliceJob& sj,
                         const NodeSet& unprotected = NodeSet());

} // namespace nvl
