#include "repair.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nvl {

const char* to_string(RepairAction a) {
    switch (a) {
    case RepairAction::Keep: return "keep";
    case RepairAction::ReplaceInDomain: return "replace_in_domain";
    case RepairAction::MoveDomain: return "move_domain";
    case RepairAction::Wait: return "wait";
    }
    return "unknown";
}

namespace {

bool contains(const std::vector<NodeId>& v, NodeId id) {
    return std::find(v.begin(), v.end(), id) != v.end();
}

// A slice repaired inside its domain: its nodes but `removed`, and `added`,
// in map order.
std::vector<NodeId> replaced(const std::vector<NodeId>& slice, const std::vector<NodeId>& removed,
                             const std::vector<NodeId>& added) {
    std::vector<NodeId> nodes;
    for (NodeId id : slice)
        if (!contains(removed, id)) nodes.push_back(id);
    nodes.insert(nodes.end(), added.begin(), added.end());
    std::sort(nodes.begin(), nodes.end());
    return nodes;
}

// Replacement candidates of one domain in the order they are used.
// Free nodes outside the spare reservation first (the spare it gave up when
// a failure used up part of the rack's budget among them), then its spares,
// then free nodes the protection holds.
void candidates(const Snapshot& snap, DomainId d, JobId job, const std::vector<NodeId>& taken, std::vector<NodeId>& out,
                bool include_lent, const NodeSet& unprotected) {
    const Domain& dom = snap.map().domain(d);
    auto held = [&](NodeId id) { return !unprotected.unsized() && !unprotected.contains(id); };
    out.clear();
    // nodes already held for this job (its own reservation, made before
    // Slurm let go of it: the target of a repair under way) come first
    for (NodeId id : dom.nodes)
        if (job && snap.node(id).job_id == job && is_healthy(snap.node(id).state) && !contains(taken, id))
            out.push_back(id);
    for (NodeId id : dom.nodes)
        if (snap.node(id).state == NodeState::Idle && !contains(taken, id) && !held(id)) out.push_back(id);
    for (NodeId id : dom.nodes)
        if (snap.node(id).state == NodeState::SpareReserved && !contains(taken, id)) out.push_back(id);
    for (NodeId id : dom.nodes)
        if (snap.node(id).state == NodeState::Idle && !contains(taken, id) && held(id)) out.push_back(id);
    if (!include_lent) return;
    for (NodeId id : dom.nodes) {
        const NodeStatus& st = snap.node(id);
        if (st.preemptible && is_healthy(st.state) && !is_free(st.state) && !contains(taken, id)) out.push_back(id);
    }
}

// Another domain with room for a whole slice of k nodes beside its kept
// spares, the tightest fit (kNoDomain: none).
DomainId best_fit_elsewhere(const Snapshot& snap, DomainId from, int k, const std::vector<NodeId>& taken) {
    const RackMap& map = snap.map();
    DomainId best = kNoDomain;
    int best_room = 0;
    for (DomainId d = 0; d < map.domains().size(); ++d) {
        if (d == from || !map.domain(d).allows_slice(k) || snap.counts(d).degraded) continue;
        int free_n = 0;
        for (NodeId id : map.domain(d).nodes)
            if (is_free(snap.node(id).state) && !contains(taken, id)) ++free_n;
        int room = free_n - kept_spares(map.domain(d), snap.counts(d));
        if (room >= k && (best == kNoDomain || room < best_room)) {
            best = d;
            best_room = room;
        }
    }
    return best;
}

// Per candidate node of the room that frees later: when it is free, and its rank among
// nodes free as soon (idle, held for this job, a spare, lent work a repair
// takes back, checkpointable work requeued to free it, a job that ends
// by its time limit)
struct Slot {
    int64_t when;
    int rank;
    NodeId id;
    bool operator<(const Slot& o) const {
        return when != o.when ? when < o.when : rank != o.rank ? rank < o.rank : id < o.id;
    }
    // its work is requeued for the slice: lent (3) or checkpointable (4)
    bool requeues() const { return rank == 3 || rank == 4; }
};
struct SoonestRoom {
    DomainId domain = kNoDomain;
    int64_t when = 0;
    int requeued = 0;        // of its nodes, those whose work is requeued for it
    std::vector<Slot> slots; // the nodes, soonest first
};

// The domain where the nodes a slice needs (its lost ones in its own
// domain, the whole slice in another) are free soonest, by the running
// jobs' time limits; of those free as soon, the one that requeues the
// least work.
SoonestRoom soonest_room(const Snapshot& snap, JobId job, const PlacedSlice& slice, int lost,
                         const std::vector<NodeId>& taken, const LaterRoom& later) {
    const int k = int(slice.nodes.size());
    SoonestRoom best;
    std::vector<Slot> slots;
    for (DomainId d = 0; d < snap.map().domains().size(); ++d) {
        if (!snap.map().domain(d).allows_slice(k) || snap.counts(d).degraded) continue;
        // its own domain: the lost nodes only; another: the whole slice
        const int need = d == slice.domain ? lost : k;
        slots.clear();
        for (NodeId id : snap.map().domain(d).nodes) {
            const NodeStatus& st = snap.node(id);
            if (contains(taken, id) || !is_healthy(st.state)) continue;
            if (st.state == NodeState::Idle)
                slots.push_back({later.now, 0, id});
            else if (job && st.job_id == job)
                slots.push_back({later.now, 1, id});
            else if (st.state == NodeState::SpareReserved)
                slots.push_back({later.now, 2, id});
            else if (st.lent && st.job_id)
                slots.push_back({later.now, 3, id});
            else if (st.preemptible && st.job_id) { // checkpointable work: requeued now, never waited for
                if (later.evict) slots.push_back({later.now, 4, id});
            } else if (auto e = st.job_id ? later.ends->find(st.job_id) : later.ends->end();
                       e != later.ends->end() && e->second <= later.until)
                slots.push_back({std::max(e->second, later.now), 5, id});
        }
        if (int(slots.size()) < need) continue;
        std::sort(slots.begin(), slots.end());
        // work requeued for it frees all its nodes: those of them left
        // over take the place of the rack's spares among the chosen
        for (size_t i = size_t(need); i < slots.size(); ++i) {
            if (!slots[i].requeues()) continue;
            const JobId owner = snap.node(slots[i].id).job_id;
            const bool goes = std::any_of(slots.begin(), slots.begin() + need, [&](const Slot& s) {
                return s.requeues() && snap.node(s.id).job_id == owner;
            });
            if (!goes) continue;
            for (size_t k = size_t(need); k-- > 0;)
                if (slots[k].rank == 2) {
                    std::swap(slots[k], slots[i]);
                    break;
                }
        }
        int64_t when = later.now;
        for (size_t k = 0; k < size_t(need); ++k) when = std::max(when, slots[k].when);
        const int requeued =
            int(std::count_if(slots.begin(), slots.begin() + need, [](const Slot& s) { return s.requeues(); }));
        if (best.domain == kNoDomain || when < best.when || (when == best.when && requeued < best.requeued)) {
            best.domain = d;
            best.when = when;
            best.requeued = requeued;
            best.slots.assign(slots.begin(), slots.begin() + need);
        }
    }
    return best;
}

} // namespace

RepairPlan plan_repair(const Snapshot& snap, const Placement& running, const std::vector<NodeId>& failed,
                       const NodeSet& unprotected, const LaterRoom* later) {
    const RackMap& map = snap.map();
    RepairPlan plan;
    plan.job_id = running.job_id;
    plan.placement = running;
    plan.feasible = true;

    auto is_failed = [&](NodeId id) { return contains(failed, id) || !is_healthy(snap.node(id).state); };

    // Nodes already handed out by this plan, and the job's own nodes (not
    // replacement candidates even if the snapshot shows them idle).
    std::vector<NodeId> taken = running.nodes();
    std::vector<NodeId> cand;

    // Why a slice cannot stay in its domain, with the figures that show it.
    auto no_room_in = [&](DomainId d, int lost, int usable) {
        if (d == kNoDomain) return std::string("its slice spans domains");
        const Domain& dom = map.domain(d);
        if (snap.counts(d).degraded) return fmt::format("{} is degraded ({})", dom.name, snap.degraded_why(d));
        return fmt::format("{} has {} usable free node(s) for {} ({} spare(s), {} failed node(s))", dom.name, usable,
                           lost, dom.spares, dom.size() - snap.counts(d).healthy);
    };

    for (auto& slice : plan.placement.slices) {
        SliceRepair rep;
        rep.slice_index = slice.index;
        rep.from = slice.domain;
        for (NodeId id : slice.nodes)
            if (is_failed(id)) rep.removed.push_back(id);
        if (rep.removed.empty()) {
            rep.to = slice.domain;
            plan.slices.push_back(std::move(rep));
            continue;
        }
        const int lost = int(rep.removed.size());
        const int k = int(slice.nodes.size());

        // 1. the same domain
        int usable_here = 0;
        if (slice.domain != kNoDomain && !snap.counts(slice.domain).degraded) {
            candidates(snap, slice.domain, running.job_id, taken, cand, true, unprotected);
            usable_here = int(cand.size());
            if (int(cand.size()) >= lost) {
                rep.action = RepairAction::ReplaceInDomain;
                rep.to = slice.domain;
                rep.added.assign(cand.begin(), cand.begin() + lost);
                for (NodeId id : rep.added) {
                    taken.push_back(id);
                    const NodeStatus& st = snap.node(id);
                    // (a node held for this job itself is no one's to requeue)
                    if (!is_free(st.state) && st.job_id && st.job_id != running.job_id)
                        rep.preempt.push_back(st.job_id);
                }
                slice.nodes = replaced(slice.nodes, rep.removed, rep.added);
                rep.detail = fmt::format("slice {}: {} failed node(s) replaced inside {}", slice.index, lost,
                                         map.domain(slice.domain).name);
                ++plan.replaced_in_domain;
                plan.slices.push_back(std::move(rep));
                continue;
            }
        }

        // 2. another domain, best fit, keeping that domain's spares
        const DomainId best = best_fit_elsewhere(snap, slice.domain, k, taken);
        if (best != kNoDomain) {
            rep.action = RepairAction::MoveDomain;
            rep.to = best;
            rep.removed = slice.nodes;
            candidates(snap, best, running.job_id, taken, cand, false, unprotected);
            // idle nodes before the spare-reserved ones: the target keeps its spares
            std::stable_partition(cand.begin(), cand.end(),
                                  [&](NodeId id) { return snap.node(id).state == NodeState::Idle; });
            rep.added.assign(cand.begin(), cand.begin() + k);
            std::sort(rep.added.begin(), rep.added.end());
            taken.insert(taken.end(), rep.added.begin(), rep.added.end());
            rep.detail = slice.domain != kNoDomain && snap.counts(slice.domain).degraded
                             ? fmt::format("slice {}: {}; moved to {}", slice.index,
                                           no_room_in(slice.domain, lost, usable_here), map.domain(best).name)
                             : fmt::format("slice {}: {} failed node(s), {}; moved to {}", slice.index, lost,
                                           no_room_in(slice.domain, lost, usable_here), map.domain(best).name);
            slice.nodes = rep.added;
            slice.domain = best;
            ++plan.moved;
            plan.slices.push_back(std::move(rep));
            continue;
        }

        // 3. where the nodes it needs free soonest (room that frees later)
        if (later && later->ends) {
            const SoonestRoom soon = soonest_room(snap, running.job_id, slice, lost, taken, *later);
            const DomainId best_d = soon.domain;
            const int64_t best_when = soon.when;
            const std::vector<Slot>& best_slots = soon.slots;
            if (best_d != kNoDomain) {
                rep.to = best_d;
                for (const Slot& s : best_slots) {
                    rep.added.push_back(s.id);
                    const NodeStatus& st = snap.node(s.id);
                    if (s.rank == 3) rep.preempt.push_back(st.job_id);
                    if (s.rank == 4 && !contains(rep.evict, st.job_id)) rep.evict.push_back(st.job_id);
                }
                std::sort(rep.added.begin(), rep.added.end());
                taken.insert(taken.end(), rep.added.begin(), rep.added.end());
                const std::string when_s = best_when > later->now ? fmt::format("free in {} s by its jobs' time limits",
                                                                                best_when - later->now)
                                                                  : std::string("free now");
                if (best_d == slice.domain) {
                    rep.action = RepairAction::ReplaceInDomain;
                    slice.nodes = replaced(slice.nodes, rep.removed, rep.added);
                    rep.detail = fmt::format("slice {}: {} failed node(s) replaced inside {} ({})", slice.index, lost,
                                             map.domain(best_d).name, when_s);
                    ++plan.replaced_in_domain;
                } else {
                    rep.action = RepairAction::MoveDomain;
                    rep.removed = slice.nodes;
                    rep.detail =
                        fmt::format("slice {}: {}; moved to {} ({})", slice.index,
                                    no_room_in(slice.domain, lost, usable_here), map.domain(best_d).name, when_s);
                    slice.nodes = rep.added;
                    slice.domain = best_d;
                    ++plan.moved;
                }
                plan.ready_at = std::max(plan.ready_at, best_when);
                plan.slices.push_back(std::move(rep));
                continue;
            }
        }

        // 4. wait
        rep.action = RepairAction::Wait;
        rep.detail = slice.domain != kNoDomain && snap.counts(slice.domain).degraded
                         ? fmt::format("slice {}: {} and no other domain has room for {} nodes", slice.index,
                                       no_room_in(slice.domain, lost, usable_here), k)
                         : fmt::format("slice {}: {} failed node(s), {} and no other domain has room for {} nodes",
                                       slice.index, lost, no_room_in(slice.domain, lost, usable_here), k);
        if (plan.feasible) plan.reason = rep.detail;
        plan.feasible = false;
        plan.slices.push_back(std::move(rep));
    }

    for (const auto& r : plan.slices)
        for (JobId j : r.preempt)
            if (std::find(plan.preempt.begin(), plan.preempt.end(), j) == plan.preempt.end()) plan.preempt.push_back(j);
    for (const auto& r : plan.slices)
        for (JobId j : r.evict)
            if (!contains(plan.evict, j) && !contains(plan.preempt, j)) plan.evict.push_back(j);
    if (!plan.feasible) {
        plan.placement = running; // nothing to pin: the job waits
        plan.preempt.clear();
        plan.evict.clear();
    }
    return plan;
}

} // namespace nvl
