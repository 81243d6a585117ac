// The spare and cluster upkeep stage (upkeep_stage.hpp).
#include "upkeep_stage.hpp"

#include "hostlist.hpp"
#include "reconcile.hpp"

#include <algorithm>
#include <map>

namespace nvl {

std::optional<std::string> wanted_spares(const Snapshot& snap, const NodeSet& reserved, bool exists,
                                         const NodeSet& unprotected) {
    const RackMap& map = snap.map();
    // A node the protection holds is not added: Slurm refuses a reservation
    // on nodes another one holds (the protection leaves a degraded rack in
    // this cycle, and its nodes join at the next).
    auto addable = [&](NodeId id) {
        return unprotected.unsized() || unprotected.contains(id) || reserved.contains(id);
    };
    std::vector<std::string> want;
    bool same = true; // as Slurm reports the reservation now
    for (DomainId d = 0; d < map.domains().size(); ++d) {
        const Domain& dom = map.domain(d);
        std::vector<NodeId> pick;
        if (snap.degraded(d)) {
            // A degraded rack takes no new work from Slurm until it
            // recovers: every node of it is kept in the reservation (it
            // ignores running jobs), the busy and failed ones too, so that
            // Slurm never offers one to a job submitted meanwhile (a segment
            // job in native mode included), nor a node its job leaves or an
            // admin resumes before the helper's next cycle. A reservation
            // makes such a job wait (ReqNodeNotAvail, Resources), where a
            // constraint or an exclusion that too few nodes meet would have
            // Slurm refuse it at submission.
            for (NodeId id : dom.nodes) {
                const bool keep = snap.node(id).state != NodeState::Unknown && addable(id);
                same = same && keep == reserved.contains(id);
                if (keep) want.push_back(map.node_name(id));
            }
            continue;
        }
        // A node lent to preemptible work is still a spare: a repair takes it back
        // (a healthy one: as DomainCounts::lent counts them, so that placement
        // and the reservation agree). The spares are the rack's failure
        // budget: failed nodes used them up.
        int want_n = kept_spares(dom, snap.counts(d));
        for (NodeId id : dom.nodes)
            if (snap.node(id).lent && is_healthy(snap.node(id).state) && !is_free(snap.node(id).state)) --want_n;
        // keep current spares that are still free, then the rack's last
        // idle nodes; a rack that recovers from degraded had all its free
        // nodes reserved: its spares are its last ones again
        // A rack with no job at all (nothing runs, nothing is pinned or
        // placed there in this cycle) has its last nodes as spares again:
        // a repair may have left a spare mid-rack, and an admin (or a user's
        // -w) expects the spares where the rack's plan puts them.
        bool all_free = true;
        for (NodeId id : dom.nodes) all_free = all_free && is_free(snap.node(id).state);
        if (all_free) {
            for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
                if (addable(*it)) pick.push_back(*it);
        } else {
            // Fewer wanted than reserved (a failed node used up the budget,
            // or the rack recovers from degraded): the last ones stay, and
            // the first leave, the ones a repair takes first (plan_repair()
            // uses a rack's reserved nodes in node order). A job Slurm
            // requeues itself after the failure (expedited, 25.11+) and
            // starts before the helper's next cycle then finds the node its
            // repair would have been given, not another one.
            for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
                if (snap.node(*it).state == NodeState::SpareReserved) pick.push_back(*it);
        }
        for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
            if (snap.node(*it).state == NodeState::Idle && addable(*it)) pick.push_back(*it);
        std::sort(pick.begin(), pick.end());
        size_t picked = 0;
        for (NodeId id : dom.nodes) {
            const bool wanted = picked < pick.size() && pick[picked] == id;
            picked += wanted;
            same = same && wanted == reserved.contains(id);
        }
        for (NodeId id : pick) want.push_back(map.node_name(id));
    }
    if (same && (exists || want.empty())) return std::nullopt;
    return hostlist_compress(want);
}

std::vector<WeightChange> weight_changes(const Snapshot& snap, const std::vector<SlurmNode>& nodes) {
    const RackMap& map = snap.map();
    // nodes whose reported weight differs from their rack's, by wanted weight
    std::map<uint32_t, std::vector<std::string>> change;
    for (const auto& n : nodes) {
        auto id = map.find_node(n.name);
        if (!id || n.weight == 0) continue;
        const DomainId d = map.domain_of(*id);
        const uint32_t want = rack_weight(snap.counts(d).free, map.domain(d).size());
        if (n.weight != want) change[want].push_back(n.name);
    }
    std::vector<WeightChange> out;
    for (auto& [w, names] : change) out.push_back({w, hostlist_compress(names)});
    return out;
}

} // namespace nvl
