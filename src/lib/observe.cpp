// The observe stage (observe.hpp).
#include "observe.hpp"

#include "rack_health.hpp"

namespace nvl {

Observation observe(const RackMap& map, const ClusterView& view, LendScope lend, const std::optional<std::regex>& drain,
                    const std::optional<std::regex>& rack) {
    Observation o{Snapshot(map), NodeSet(map.node_count()), NodeSet(map.node_count()), NodeSet(), {}, {}};
    o.jobs = parse_jobs(view.jobs);
    if (view.spares) o.reserved = NodeSet::of(map, view.spares->nodes);
    o.snap = snapshot_of(map, view.nodes, o.jobs, o.reserved, lend);
    if (view.protection && !view.protection->nodes.empty()) {
        o.unprotected = NodeSet(map.node_count(), true);
        for (NodeId id : NodeSet::of(map, view.protection->nodes).ids()) o.unprotected.erase(id);
    }
    o.reasons.resize(map.node_count());
    for (const auto& n : view.nodes) {
        auto id = map.find_node(n.name);
        if (!id) continue; // a node outside the map is none of our business
        const NodeState st = o.snap.node(*id).state;
        o.failed.set(*id, n.failed || ((st == NodeState::Draining || st == NodeState::Drained) &&
                                       (!drain || std::regex_search(n.reason, *drain))));
        o.reasons[*id] = n.reason; // node_reasons(), in the same pass
    }
    mark_degraded_racks(o.snap, o.reasons, rack);
    return o;
}

} // namespace nvl
