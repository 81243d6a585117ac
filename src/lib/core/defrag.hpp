// nvlslice — defragmentation and spare lending: the one policy that both
// nvlsliced (reconcile.cpp) and the simulator (sim.cpp) run, so that the
// simulator measures the helper's own decisions.
//
// Defragmentation: when a slice job waits only because free nodes are
// scattered (or would fit only by taking spares), requeue the cheapest set
// of preemptible running jobs that frees one rack for one slice. The cost of
// a victim is what its requeue costs (victim_info()): nodes x (the work it
// loses, since its last checkpoint when it says how often it checkpoints,
// else all it has run, + its next start). Ties go to the lower domain, so
// the same state always gives the same answer.
//
// Lending: the spares of a rack are not left idle. Work that may be requeued
// at any time (checkpointable, requeue allowed, a batch job that Slurm can
// requeue) may run on them; a repair takes them back first (requeue, never
// kill), and while it runs, its nodes count as the rack's kept spares
// (domain_room()). Such work smaller than a slice stands in for its rack's
// spares wherever it runs (lent work), so the spares take other work.
#pragma once

#include "model.hpp"
#include "placement.hpp"

#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace nvl {

// What the policy needs to know about a job, whoever runs it.
struct JobTraits {
    bool checkpointable = false; // --nvl-checkpointable
    bool requeue = true;         // Slurm may requeue it (--requeue or the cluster default)
    bool batch = true;           // sbatch; salloc/srun allocations cannot be requeued
    int nodes = 1;
    int checkpoint_s = 0; // --nvl-checkpoint-every: seconds between its checkpoints; 0 = not said
};

// Which work may borrow spares (helper config `lend_spares`, nvl-sim
// --lend-spares); nvl-sim trace measures each.
enum class LendScope {
    None,           // spares stay idle
    SingleNode,     // checkpointable single-node jobs only
    Checkpointable, // any checkpointable job (the default)
};
const char* to_string(LendScope s);
// Throws nvl::Error naming the accepted words.
LendScope parse_lend_scope(std::string_view s);

// May the job run on a rack's spares until a repair takes them back? The
// same jobs are the ones defragmentation may requeue (unless the admin also
// allows interactive ones) and whose nodes count as lent spares.
inline bool may_borrow_spares(const JobTraits& t, LendScope scope = LendScope::Checkpointable) {
    if (scope == LendScope::None || !(t.checkpointable && t.requeue && t.batch)) return false;
    return scope == LendScope::Checkpointable || t.nodes == 1;
}

// Does the job stand in for its rack's spares wherever it runs? Work that
// may borrow spares and is smaller than the map's default slice: a repair
// there takes it back as it takes back a lent spare, so the rack's idle
// spares may take other work. A slice job does not (its own failure needs
// the spares it would give away). Whoever started it: the helper's
// placement (place_or_borrow) and Slurm's own (native mode) alike.
inline bool stands_in_for_spares(const JobTraits& t, LendScope scope, int default_slice) {
    return may_borrow_spares(t, scope) && t.nodes < default_slice;
}

// Placement with the lending rule. A job that may borrow spares goes first
// to racks whose idle kept spares can take it whole (spares first: they are
// idle until a repair, and the racks' slice room stays whole); else `req` as
// it is; and where that does not fit either, again on the racks' spares too.
// `lent` says whether it was placed as a borrower: on spares, or, for work
// smaller than the map's default slice, anywhere (it then stands in for its
// rack's spares, so that their nodes need not idle); `spares_taken`, if
// given, whether it takes the racks' spares themselves (the helper must pin
// it there). The helper's placement and the simulator's both.
PlacementResult place_or_borrow(const Snapshot& snap, SliceRequest req, bool may_borrow, bool& lent,
                                bool* spares_taken = nullptr);

struct VictimInfo {
    bool eligible = false; // may be requeued to free a rack
    double cost = 0;       // what the requeue costs, node-seconds
};

// A running job as defragmentation sees it: eligible as a borrower of
// spares is (checkpointable, requeueable, batch). Its cost: its nodes x
// (the work it loses + `restart_s`, the start it pays again). What it
// loses: its startup so far while it runs for less than `startup_s`; after
// that the work since its last checkpoint when it says how often it
// checkpoints (every checkpoint_s from the end of its startup), else all it
// has run (the work since a checkpoint is at most that). A second at least.
// The helper's victims and the simulator's.
inline VictimInfo victim_info(const JobTraits& t, double seconds_run, double startup_s = 0, double restart_s = 0) {
    VictimInfo v;
    v.eligible = may_borrow_spares(t);
    double lost = seconds_run;
    if (t.checkpoint_s > 0 && seconds_run >= startup_s)
        lost = std::fmod(seconds_run - startup_s, double(t.checkpoint_s));
    v.cost = ((lost > 1 ? lost : 1.0) + (restart_s > 0 ? restart_s : 0.0)) * double(t.nodes > 1 ? t.nodes : 1);
    return v;
}

struct DefragPlan {
    DomainId domain = kNoDomain; // the rack freed; kNoDomain: none can be
    std::vector<JobId> victims;  // cheapest first
    double cost = 0;

    explicit operator bool() const { return domain != kNoDomain; }
};

// Whether defragmentation may run now for a blocked slice job. Blocked by
// fragmentation: after it waited `after_s`, at most once per `interval_s`
// (`since_last_s` < 0: none ran yet). For a repair (a failed slice with no
// room in its rack or any other, helper config defrag.for_repairs): at once,
// unpaced. The failed job stands still now, and failures, not waiting jobs,
// bound how often it happens (one rack per failed slice).
bool defrag_due(bool for_repair, double waited_s, double since_last_s, double after_s, double interval_s);

// The cheapest rack to free for one `slice`-node slice from eligible jobs
// alone, keeping the spares that rack keeps (kept_spares()). `victim` is
// asked once per (rack, job) pair for jobs seen on the rack's healthy busy
// nodes. A rack too degraded to ever hold the slice is skipped.
DefragPlan plan_defrag(const Snapshot& snap, int slice, const std::function<VictimInfo(JobId)>& victim);

// The defragmentation stage, as the helper (try_defrag) and the simulator
// (maybe_defrag) both run it: nullopt while it is not due (defrag_due()),
// else plan_defrag()'s plan (without a rack: none can be freed from
// eligible jobs alone).
struct DefragPace {
    bool for_repair = false;
    double waited_s = 0;      // how long the blocked job has waited
    double since_last_s = -1; // since the last paced defragmentation (< 0: none yet)
    double after_s = 0, interval_s = 0;
};
std::optional<DefragPlan> decide_defrag(const Snapshot& snap, int slice, const DefragPace& pace,
                                        const std::function<VictimInfo(JobId)>& victim);

} // namespace nvl
