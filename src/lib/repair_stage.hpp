// nvlslice — the cycle's repair stage: what becomes of each running slice
// job (SPEC §3). A function of the observation (observe.hpp), the working
// snapshot as the earlier decisions of this cycle leave it, and the job; it
// returns a typed decision and changes nothing. The cycle (cycle_repair.cpp)
// turns a decision into records, actions and log lines, and takes the nodes
// a repair or a move pins before it judges the next job:
//   decide_running()  a running job: healthy, its reason stale, started
//                     without a current record (decide_started()), moved out
//                     of a degraded rack later (an evacuee), not repairable,
//                     its repair waiting, or its repair plan;
//   decide_started()  a job running where no record of ours says: recorded
//                     where Slurm started it, or requeued as having escaped
//                     its gate;
//   decide_move()     an evacuee, checkpointable ones first
//                     (order_evacuees()): not movable, its move waiting, or
//                     its move plan.
#pragma once

#include "model.hpp"
#include "observe.hpp"
#include "placement.hpp"
#include "repair.hpp"
#include "slice_job.hpp"

#include <optional>
#include <string>
#include <vector>

namespace nvl {

// One slice job of this cycle, its tag and record read once (observe.hpp's
// ParsedJob, checked: its tag describes it and the record is its own).
struct SliceJob {
    const SlurmJob* job;
    RequestTag tag;
    std::optional<PlacementRecord> rec; // its own record
    JobId copied_from = 0;              // the job whose record it carries (a job array's split copies it), or 0
};

// Handed to Slurm with --segment: Slurm places it; the helper repairs.
inline bool native(const SliceJob& sj) {
    return sj.tag.hand_off == HandOff::Native;
}
// The record says the helper placed it (pinned, started or repairing).
inline bool has_placement(const SliceJob& sj) {
    return sj.rec && (sj.rec->state == RecordState::Placed || sj.rec->state == RecordState::Repairing ||
                      sj.rec->state == RecordState::Restarting);
}

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
    Recovered,     // its failed nodes came back before a repair: the record's reason is stale
    Started,       // none failed, and no record says it was placed: decide_started()
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
StartDecision decide_started(const RackMap& map, const SliceJob& sj);

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
MoveDecision decide_move(const RackMap& map, const Snapshot& snap, const SliceJob& sj);

} // namespace nvl
