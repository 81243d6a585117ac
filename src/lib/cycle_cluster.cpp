// Cluster-wide upkeep: the spare reservation, node weights, the gate.
#include "cycle.hpp"

#include "text.hpp"

#include <algorithm>
#include <map>
#include <ctime>

namespace nvl::detail {

void Cycle::keep_spares() {
    if (cfg_.reservation.empty()) return;
    std::vector<std::string> want;
    bool same = true; // as Slurm reports the reservation now
    for (DomainId d = 0; d < map_.domains().size(); ++d) {
        const Domain& dom = map_.domain(d);
        std::vector<NodeId> pick;
        if (snap_.degraded(d)) {
            // A degraded rack takes no new work from Slurm until it
            // recovers: every free node of it is kept in the reservation,
            // so that Slurm never offers it to a job submitted meanwhile (a
            // segment job in native mode included), not only from the
            // helper's next look at that job.
            for (NodeId id : dom.nodes) {
                const NodeState st = snap_.node(id).state;
                const bool keep = st == NodeState::Idle || st == NodeState::SpareReserved;
                same = same && keep == reserved_.contains(id);
                if (keep) want.push_back(map_.node_name(id));
            }
            continue;
        }
        // A node lent to preemptible work is still a spare: a repair takes it back.
        // The spares are the rack's failure budget: failed nodes used them up.
        int want_n = kept_spares(dom, snap_.counts(d));
        for (NodeId id : dom.nodes)
            if (snap_.node(id).lent && !is_free(snap_.node(id).state)) --want_n;
        // keep current spares that are still free, then the rack's last
        // idle nodes; a rack that recovers from degraded had all its free
        // nodes reserved: its spares are its last ones again
        // A rack with no job at all (nothing runs, nothing is pinned or
        // placed there in this cycle) has its last nodes as spares again:
        // a repair may have left a spare mid-rack, and an admin (or a user's
        // -w) expects the spares where the rack's plan puts them.
        int reserved_here = 0;
        bool all_free = true;
        for (NodeId id : dom.nodes) {
            const NodeState st = snap_.node(id).state;
            reserved_here += st == NodeState::SpareReserved;
            all_free = all_free && is_free(st);
        }
        if (all_free) {
            for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
                pick.push_back(*it);
        } else if (reserved_here > dom.spares) {
            for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
                if (snap_.node(*it).state == NodeState::SpareReserved) pick.push_back(*it);
        } else {
            for (NodeId id : dom.nodes)
                if (snap_.node(id).state == NodeState::SpareReserved && int(pick.size()) < want_n) pick.push_back(id);
        }
        for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
            if (snap_.node(*it).state == NodeState::Idle) pick.push_back(*it);
        std::sort(pick.begin(), pick.end());
        size_t picked = 0;
        for (NodeId id : dom.nodes) {
            const bool wanted = picked < pick.size() && pick[picked] == id;
            picked += wanted;
            same = same && wanted == reserved_.contains(id);
        }
        for (NodeId id : pick) want.push_back(map_.node_name(id));
    }
    if (same && (spares_ || want.empty())) return;
    std::string list = hostlist_compress(want);
    // Sent before every action that lets a job start (Phase::Spares), so
    // that a spare handed to a job leaves the reservation first; after the
    // others, so that a repair's requeue is not kept waiting by a
    // reservation update (slurmctld may take seconds over one).
    act({0, action::SetReservation{list}});
    log(fmt::format("spares: reservation {} = {}", cfg_.reservation, list.empty() ? "(none)" : list));
}

void Cycle::keep_weights() {
    if (!cfg_.steer_weights) return;
    // nodes whose reported weight differs from their rack's, by wanted weight
    std::map<uint32_t, std::vector<std::string>> change;
    for (const auto& n : nodes_) {
        auto id = map_.find_node(n.name);
        if (!id || n.weight == 0) continue;
        const DomainId d = map_.domain_of(*id);
        const uint32_t want = rack_weight(snap_.counts(d).free, map_.domain(d).size());
        if (n.weight != want) change[want].push_back(n.name);
    }
    for (auto& [w, names] : change) {
        act({0, action::SetWeight{hostlist_compress(names), w}});
    }
    // not logged: it changes with every job that starts or ends (sinfo -o %w shows it)
}

namespace {
// The list with `f` added at its end or taken out, the rest in order.
std::string with_feature(std::string_view list, std::string_view f, bool on) {
    std::string out;
    size_t a = 0;
    while (a < list.size()) {
        size_t b = list.find(',', a);
        if (b == std::string_view::npos) b = list.size();
        std::string_view x = list.substr(a, b - a);
        if (!x.empty() && x != f) out.append(out.empty() ? "" : ",").append(x);
        a = b + 1;
    }
    if (on) out.append(out.empty() ? "" : ",").append(f);
    return out;
}
} // namespace

void Cycle::keep_features() {
    const std::string& f = cfg_.healthy_feature;
    if (f.empty()) return;
    // new active feature list -> the nodes that get it; only nodes where
    // slurm.conf makes the feature available (the admin's choice)
    std::map<std::string, std::vector<std::string>> change;
    std::map<DomainId, bool> racks; // the racks that change, and to what
    for (const auto& n : nodes_) {
        auto id = map_.find_node(n.name);
        if (!id || !names_feature(n.features, f)) continue;
        const DomainId d = map_.domain_of(*id);
        const bool want = !snap_.degraded(d);
        if (names_feature(n.active_features, f) == want) continue;
        change[with_feature(n.active_features, f, want)].push_back(n.name);
        racks[d] = want;
    }
    if (change.empty()) return;
    // first of all actions (Phase::Features): before anything lets a job
    // start, so that no new slice job is offered a rack that degraded in
    // this cycle
    for (auto& [features, names] : change) act({0, action::SetFeatures{hostlist_compress(names), features}});
    for (const auto& [d, on] : racks)
        log(on ? fmt::format("rack {} is healthy: feature {} active on its nodes again", map_.domain(d).name, f)
               : fmt::format("rack {} is degraded: feature {} taken off its nodes, no new slice job goes there",
                             map_.domain(d).name, f));
}

void Cycle::keep_gate() {
    if (!cfg_.gate_reservation.empty() && !gate_) {
        act({0, action::Gate{}});
        log(fmt::format("gate: creating the license-only reservation {} that holds {}", cfg_.gate_reservation,
                        cfg_.gate_license));
    }
}

} // namespace nvl::detail
