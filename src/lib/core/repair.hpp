// nvlslice — repair plans for running slice jobs whose nodes failed.
//
// For each slice that lost nodes, in this order (SPEC §1, §3):
//  1. replace the failed nodes inside the same domain: its free nodes
//     outside the spare reservation first (among them the spare the
//     reservation gave up when the failure used up part of the rack's
//     budget, wanted_spares(): the node Slurm's own requeue would start
//     the job on), then its spare-reserved nodes, then nodes lent to
//     preemptible single-node work (those jobs are requeued first);
//  2. else move the whole slice to another domain, best fit, without taking
//     that domain's spares;
//  3. else, given `later` (room that frees later), the slice goes where the
//     nodes it needs free soonest by the time limits of the jobs on them
//     (the plan's ready_at), if that is within later->until; checkpointable
//     work there counts as free now (the plan's evict: requeued to free the
//     target at once, as defragmentation for a repair would requeue it), so
//     the slice waits only for the work that cannot be requeued; another
//     domain keeps its spares here too (its reserved ones, then those lent
//     to work that stands in for them, then idle nodes, then those whose
//     jobs end last are set aside first; a domain without enough is not a
//     target), so that a failure there after the move still has its spare;
//  4. else the job is requeued and waits, with the reason.
// Several failures at once, in one slice or several, are planned together:
// no node is handed out twice.
#pragma once

#include "model.hpp"
#include "node_set.hpp"
#include "placement.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace nvl {

enum class RepairAction { Keep, ReplaceInDomain, MoveDomain, Wait };
const char* to_string(RepairAction a);

struct SliceRepair {
    int slice_index = 0;
    RepairAction action = RepairAction::Keep;
    DomainId from = kNoDomain;
    DomainId to = kNoDomain;
    std::vector<NodeId> removed; // failed nodes (and, on a move, the rest of the old slice)
    std::vector<NodeId> added;   // replacement nodes
    std::vector<JobId> preempt;  // preemptible jobs on the replacement nodes
    std::vector<JobId> evict;    // step 3: checkpointable jobs on the target, requeued to free it
    std::string detail;
};

struct RepairPlan {
    JobId job_id = 0;
    bool feasible = false; // every slice is kept, repaired or moved
    std::vector<SliceRepair> slices;
    Placement placement;        // the job's placement after the repair
    std::vector<JobId> preempt; // all jobs to requeue first, no duplicates
    std::vector<JobId> evict;   // step 3's checkpointable jobs to requeue at once, no duplicates
    std::string reason;         // when not feasible: why the job must wait
    int replaced_in_domain = 0; // slices repaired from their own domain
    int moved = 0;              // slices moved to another domain
    // Step 3: when the last node of the target frees (the latest end time
    // of the jobs still on it); 0: every node is free now.
    int64_t ready_at = 0;
};

// Room that frees later (step 3): the end time of each running job (its
// time limit; one without a limit is absent: it never ends, for this), now,
// and the latest end a target may wait for; `evict`: checkpointable work
// counts as free now (requeued to free the target; the helper's
// defrag.for_repairs), else it is never waited for.
struct LaterRoom {
    const std::unordered_map<JobId, int64_t>* ends = nullptr;
    int64_t now = 0;
    int64_t until = 0;
    bool evict = true;
};

// `failed` are nodes of `running` that drained or went down; nodes of the
// placement that the snapshot shows unhealthy are treated as failed too.
// `unprotected`: the nodes outside the protection reservation (unsized: no
// protection); a free node the protection holds is a same-domain repair's
// last free choice (a job pinned there would wait for it).
RepairPlan plan_repair(const Snapshot& snap, const Placement& running, const std::vector<NodeId>& failed,
                       const NodeSet& unprotected = NodeSet(), const LaterRoom* later = nullptr);

} // namespace nvl
