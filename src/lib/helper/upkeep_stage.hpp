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

#include <cstdint>
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
std::optional<std::string> wanted_spares(const Snapshot& snap, const NodeSet& reserved, bool exists,
                                         const NodeSet& unprotected = NodeSet());

// Nodes whose weight differs from their rack's (rack_weight(): the fullest
// racks lowest, so that Slurm's own placement fills racks already in use),
// grouped by the weight they should have.
struct WeightChange {
    uint32_t weight = 0;
    std::string nodes; // hostlist
};
std::vector<WeightChange> weight_changes(const Snapshot& snap, const std::vector<SlurmNode>& nodes);

} // namespace nvl
