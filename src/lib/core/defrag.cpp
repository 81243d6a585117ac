#include "defrag.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nvl {

const char* to_string(LendScope s) {
    switch (s) {
    case LendScope::None: return "none";
    case LendScope::SingleNode: return "single-node";
    case LendScope::Checkpointable: return "checkpointable";
    }
    return "?";
}

LendScope parse_lend_scope(std::string_view s) {
    for (LendScope l : {LendScope::None, LendScope::SingleNode, LendScope::Checkpointable})
        if (s == to_string(l)) return l;
    throw Error(
        fmt::format("lend_spares: \"{}\" is not a lending scope (accepted: none, single-node, checkpointable)", s));
}

bool defrag_due(bool for_repair, double waited_s, double since_last_s, double after_s, double interval_s) {
    if (for_repair) return true;
    return waited_s >= after_s && (since_last_s < 0 || since_last_s >= interval_s);
}

std::optional<DefragPlan> decide_defrag(const Snapshot& snap, int slice, const DefragPace& pace,
                                        const std::function<VictimInfo(JobId)>& victim) {
    if (!defrag_due(pace.for_repair, pace.waited_s, pace.since_last_s, pace.after_s, pace.interval_s))
        return std::nullopt;
    return plan_defrag(snap, slice, victim);
}

DefragPlan plan_defrag(const Snapshot& snap, int slice, const std::function<VictimInfo(JobId)>& victim) {
    const RackMap& map = snap.map();
    DefragPlan best;
    struct Cand {
        JobId id;
        int nodes; // in this rack
        int lent;  // of those, counted as the rack's kept spares
        double cost;
    };
    std::vector<Cand> cands;
    std::vector<JobId> victims;
    for (DomainId d = 0; d < map.domains().size(); ++d) {
        const Domain& dom = map.domain(d);
        const DomainCounts& c = snap.counts(d);
        if (!dom.allows_slice(slice) || c.healthy - kept_spares(dom, c) < slice) continue;
        int room = domain_room(dom, c, false);
        if (room >= slice) continue; // nothing to free here: placement would have taken it
        cands.clear();
        for (NodeId id : dom.nodes) {
            const NodeStatus& st = snap.node(id);
            if (is_free(st.state) || !is_healthy(st.state) || st.job_id == 0) continue;
            auto it = std::find_if(cands.begin(), cands.end(), [&](const Cand& x) { return x.id == st.job_id; });
            if (it != cands.end()) {
                ++it->nodes;
                it->lent += st.lent;
                continue;
            }
            cands.push_back({st.job_id, 1, int(st.lent), 0});
        }
        // ask once per job; drop the ineligible
        size_t keep = 0;
        for (auto& cand : cands) {
            VictimInfo v = victim(cand.id);
            if (!v.eligible) continue;
            cand.cost = v.cost;
            cands[keep++] = cand;
        }
        cands.resize(keep);
        std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.cost < b.cost; });
        victims.clear();
        double cost = 0;
        DomainCounts after = c;
        for (const auto& cand : cands) {
            if (room >= slice) break;
            // a lent node already counts as a kept spare: requeuing its job
            // frees it, and the rack then keeps it idle as a spare
            victims.push_back(cand.id);
            after.free += cand.nodes;
            after.lent -= cand.lent;
            room = domain_room(dom, after, false);
            cost += cand.cost;
        }
        if (room < slice || victims.empty()) continue;
        if (!best || cost < best.cost) {
            best.domain = d;
            best.cost = cost;
            best.victims = victims;
        }
    }
    return best;
}

PlacementResult place_or_borrow(const Snapshot& snap, SliceRequest req, bool may_borrow, bool& lent,
                                bool* spares_taken) {
    lent = false;
    if (spares_taken) *spares_taken = false;
    const int n = req.total_nodes > 0 ? req.total_nodes : req.slice_size * req.slice_count;
    if (may_borrow) {
        // Work that fits in a rack's idle kept spares goes there first: they
        // wait idle for a repair anyway, and the racks' slice room stays
        // whole for the slice jobs behind it. Only racks whose unlent kept
        // spares can take the whole job are offered; best fit picks among them.
        const RackMap& map = snap.map();
        NodeSet on_spares;
        for (DomainId d = 0; n > 0 && d < map.domains().size(); ++d) {
            const Domain& dom = map.domain(d);
            if (idle_kept_spares(dom, snap.counts(d)) < n) continue;
            if (on_spares.unsized()) on_spares = NodeSet(map.node_count());
            for (NodeId id : dom.nodes)
                if (req.allowed.unsized() || req.allowed.contains(id)) on_spares.insert(id);
        }
        if (!on_spares.unsized()) {
            SliceRequest spare_req = req;
            spare_req.use_spares = true;
            spare_req.allowed = std::move(on_spares);
            PlacementResult first = place(snap, spare_req);
            if (first.ok) {
                lent = true;
                if (spares_taken) *spares_taken = true;
                return first;
            }
        }
    }
    PlacementResult r = place(snap, req);
    if (r.ok) {
        // Preemptible work smaller than a slice stands in for its rack's
        // spares wherever it runs (stands_in_for_spares()).
        lent = may_borrow && n < snap.map().defaults().default_slice;
        return r;
    }
    if (!may_borrow) return r;
    // spares are not left idle: preemptible work may borrow them until a
    // repair needs them back
    req.use_spares = true;
    PlacementResult borrowed = place(snap, req);
    if (!borrowed.ok) return r; // why it waits: as without the spares
    lent = true;
    if (spares_taken) *spares_taken = true;
    return borrowed;
}

} // namespace nvl
