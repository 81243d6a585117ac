// nvlslice — the cycle's last stage: spare and cluster upkeep.
//
// From the cycle's snapshot, once this cycle's repairs and placements have
// taken their nodes, what the cluster-wide state should be: the spare
// reservation and the nodes' weights. Each function is pure and returns
// only what differs from what Slurm reports (nothing to do: empty); the
// cycle turns that into actions.
#pragma once

#include "cluster_api.hpp"
#include "model.hpp"
#include "node_set.hpp"
#include "observe.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nvl {

// The spare reservation's nodes as a hostlist, or nullopt when Slurm's
// (`reserved`; `exists`: there is one) is already that. Per rack: a
// degraded rack keeps every node (Slurm offers none to a job); a healthy
// one keeps its failure budget (kept_spares(), less the nodes lent to
// preemptible work): the nodes it keeps already (the last of them when it
// keeps fewer now: the first leave, the ones a repair takes first), then
// its last idle ones; a rack with nothing on it has its last nodes as spares again. A node the
// protection holds (outside `unprotected`, unless that is unsized: no
// protection) is never added, since Slurm refuses overlapping reservations.
// A rack with too few free nodes for its budget keeps busy ones too: those
// of the jobs `busy_end` gives an end (plain work the caller chose; asked
// only for such a rack) that end first, each a spare as soon as its job
// ends.
using BusyEnd = std::function<std::optional<int64_t>(JobId)>;
std::optional<std::string> wanted_spares(const Snapshot& snap, const NodeSet& reserved, bool exists,
                                         const NodeSet& unprotected = NodeSet(), const BusyEnd& busy_end = {});

// Nodes whose weight differs from their rack's (rack_weight(): the fullest
// racks lowest, so that Slurm's own placement fills racks already in use),
// grouped by the weight they should have.
struct WeightChange {
    uint32_t weight = 0;
    std::string nodes; // hostlist
};
std::vector<WeightChange> weight_changes(const Snapshot& snap, const std::vector<SlurmNode>& nodes);

// A job in its own lend reservation whose repair is under way or due: it
// completes or waits (held, for its start second, or for the repair of a
// node Slurm requeued it for), so the reservation holds its target until
// it runs there. `failed`: the nodes a slice on needs a repair.
bool waits_in_own_reservation(const ParsedJob& p, const HelperConfig& cfg, const RackMap& map, const NodeSet& failed);

// What becomes of one lend reservation this cycle (keep_lends() applies
// it). Kept while its job waits, pinned, for the spare in it (its lease
// moved on when half of it is gone: Renew), or while a repair of its job
// holds its target there; ended once the job runs there (it keeps the
// node), no longer waits for it, or is gone. Other jobs in it (a task its
// array split off, a job its owner put there) are taken out with it; those
// already running there are requeued, or said, when interactive, to keep
// the spare until they end.
struct LendVerdict {
    enum class Kind { Renew, End };
    // why an End
    enum class Why { Gone, NotIn, NoLongerWaits, Ended, RunsThere };
    Kind kind = Kind::End;
    Why why = Why::Gone;
    const Reservation* resv = nullptr;
    JobId job = 0;                            // whose it is
    const SlurmJob* j = nullptr;              // the job, when Slurm still reports it
    bool in = false;                          // the job is in it
    std::vector<JobId> others;                // the other jobs in it, taken out with it
    std::vector<const SlurmJob*> requeue;     // of those, the ones running there: requeued
    std::vector<const SlurmJob*> interactive; // running there, not requeueable: kept, said
};
// What the lends depend on besides Slurm's report: the snapshot as this
// cycle's decisions leave it, the jobs lent this cycle (their reservation
// was just made) and the helper's memory (jobs whose last action Slurm
// refused wait out their backoff).
struct LendContext {
    const std::vector<ParsedJob>& jobs; // the observation's
    const HelperConfig& cfg;
    const Snapshot& snap;
    const NodeSet& failed; // Observation::failed
    const HelperMemory& mem;
    int64_t now = 0;  // wall clock
    int64_t mono = 0; // monotonic (the backoff's)
    std::function<bool(JobId)> lent_now;
};
std::vector<LendVerdict> decide_lends(const std::vector<Reservation>& lends, const LendContext& c);

// Whether a reservation of the helper's that ends at `end` is due for its
// lease to move on: half of it gone, or an end further on than the lease
// (made without end by an earlier version). 0: Slurm reported none.
inline bool lease_due(int64_t end, int64_t now, int64_t lease_s) {
    return end > 0 && (end - now < lease_s / 2 || end > now + 2 * lease_s);
}

} // namespace nvl
