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
    int spares_taken = 0;    // of its nodes, those another domain kept as spares
    std::vector<Slot> slots; // the nodes, soonest first
};

// When the `need` first of `slots` (sorted) are all free; `ok`: there are
// that many.
int64_t room_when(const std::vector<Slot>& slots, size_t need, int64_t now, bool& ok) {
    ok = slots.size() >= need;
    int64_t when = now;
    for (size_t k = 0; ok && k < need; ++k) when = std::max(when, slots[k].when);
    return when;
}

// Another domain's room that takes some of its spares: the soonest it can
// have with those of them free now (`aside`, by rank: idle, held for the
// job, reserved, lent), and as few of them as give it that; the room beside
// them first in `slots` (sorted), then the spares taken (`taken`), then the
// rest.
void take_spares(std::vector<Slot>& slots, std::vector<Slot> aside, int64_t now, size_t need, int& taken) {
    std::sort(aside.begin(), aside.end());
    size_t usable = 0; // the spares free now
    while (usable < aside.size() && aside[usable].when <= now) ++usable;
    taken = 0;
    if (usable == 0 || slots.size() + usable < need) return;
    // the soonest: every usable spare, then the room beside them in order
    const int64_t soonest = usable >= need ? now : std::max(now, slots[need - usable - 1].when);
    size_t beside = 0; // the room beside the spares free by then
    while (beside < slots.size() && slots[beside].when <= soonest) ++beside;
    if (beside >= need) return;
    taken = int(need - beside);
    slots.insert(slots.begin() + std::ptrdiff_t(beside), aside.begin(), aside.begin() + taken);
}

// Takes out of `slots` (sorted) the nodes the domain keeps as its spares
// (kept_spares()): those that are spares now first (reserved, then lent to
// work a repair takes back: standing in for them), then idle ones, then ones
// held for the job (a held repair's reservation holds the whole rack, its
// spares too), then the ones whose jobs end last (spares again when those
// end); never a node whose work would be requeued to free it. False when
// too few are left for them. The nodes set aside go to `aside`.
bool set_aside_spares(const Snapshot& snap, DomainId d, std::vector<Slot>& slots, std::vector<Slot>& aside) {
    int keep = kept_spares(snap.map().domain(d), snap.counts(d));
    // by rank (idle, held for the job, spare-reserved, lent, requeued, ends
    // later): the pass that sets it aside, -1 never
    static constexpr int kOrder[] = {2, 3, 0, 1, -1, 4};
    for (int pass = 0; pass < 5 && keep > 0; ++pass) {
        for (size_t i = slots.size(); i-- > 0 && keep > 0;) {
            if (kOrder[slots[i].rank] != pass) continue;
            aside.push_back(slots[i]);
            slots.erase(slots.begin() + std::ptrdiff_t(i));
            --keep;
        }
    }
    return keep == 0;
}

// The domain where the nodes a slice needs (its lost ones in its own
// domain, the whole slice in another) are free soonest, by the running
// jobs' time limits; of those free as soon, the one that requeues the
// least work.
SoonestRoom soonest_room(const Snapshot& snap, JobId job, const PlacedSlice& slice, int lost,
                         const std::vector<NodeId>& taken, const LaterRoom& later) {
    const int size = int(slice.nodes.size());
    SoonestRoom best;
    std::vector<Slot> slots, aside;
    for (DomainId d = 0; d < snap.map().domains().size(); ++d) {
        if (!snap.map().domain(d).allows_slice(size) || snap.counts(d).degraded) continue;
        // its own domain: the lost nodes only; another: the whole slice
        const int need = d == slice.domain ? lost : size;
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
        // another domain keeps its spares, as step 2 does (its spare
        // failure budget stays out of the slice's nodes) while the room
        // beside them is free now; when the slice would wait there for
        // work that cannot be requeued, it takes as few of them as let it
        // start sooner (the rack's spares come back first as its nodes
        // free: upkeep)
        bool took = false; // some of the spares set aside
        if (d != slice.domain) {
            aside.clear();
            bool kept_ok = set_aside_spares(snap, d, slots, aside);
            const int64_t kept_when = room_when(slots, size_t(need), later.now, kept_ok);
            if (!kept_ok || kept_when > later.now) {
                std::vector<Slot> taking = slots;
                int n_taken = 0;
                take_spares(taking, aside, later.now, size_t(need), n_taken);
                bool ok = false;
                const int64_t when = room_when(taking, size_t(need), later.now, ok);
                if (ok && n_taken > 0 && (!kept_ok || when < kept_when)) {
                    slots.swap(taking);
                    kept_ok = took = true;
                }
            }
            if (!kept_ok) continue;
        }
        if (int(slots.size()) < need) continue;
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
        // (a leftover of requeued work may have taken a spare's place)
        const int spares_taken = !took ? 0 : int(std::count_if(slots.begin(), slots.begin() + need, [&](const Slot& s) {
            return std::any_of(aside.begin(), aside.end(), [&](const Slot& a) { return a.id == s.id; });
        }));
        bool enough = false;
        const int64_t when = room_when(slots, size_t(need), later.now, enough);
        const int requeued =
            int(std::count_if(slots.begin(), slots.begin() + need, [](const Slot& s) { return s.requeues(); }));
        // of those as soon, the one that takes fewer spares, then requeues less
        const bool better = best.domain == kNoDomain || when < best.when ||
                            (when == best.when && (spares_taken < best.spares_taken ||
                                                   (spares_taken == best.spares_taken && requeued < best.requeued)));
        if (better) {
            best.domain = d;
            best.when = when;
            best.requeued = requeued;
            best.spares_taken = spares_taken;
            best.slots.assign(slots.begin(), slots.begin() + need);
        }
    }
    return best;
}

// One plan_repair call: the nodes handed out so far (and the job's own,
// never replacement candidates even if the snapshot shows them idle), and
// each slice taken through the rule's steps in order: its own domain,
// another with room, where room frees soonest, else it waits.
class RepairPlanner {
  public:
    RepairPlanner(const Snapshot& snap, const Placement& running, const std::vector<NodeId>& failed,
                  const NodeSet& unprotected, const LaterRoom* later)
        : snap_(snap), map_(snap.map()), running_(running), failed_(failed), unprotected_(unprotected), later_(later),
          taken_(running.nodes()) {}

    // The slice's repair; `slice` becomes its placement after it.
    SliceRepair repair(PlacedSlice& slice) {
        SliceRepair rep;
        rep.slice_index = slice.index;
        rep.from = slice.domain;
        for (NodeId id : slice.nodes)
            if (is_failed(id)) rep.removed.push_back(id);
        if (rep.removed.empty()) {
            rep.to = slice.domain;
            return rep;
        }
        int usable_here = 0;
        if (!in_own_domain(slice, rep, usable_here) && !in_other_domain(slice, rep, usable_here) &&
            !where_room_frees(slice, rep, usable_here))
            wait(slice, rep, usable_here);
        return rep;
    }

  private:
    bool is_failed(NodeId id) const { return contains(failed_, id) || !is_healthy(snap_.node(id).state); }

    bool degraded(DomainId d) const { return d != kNoDomain && snap_.counts(d).degraded; }

    // Why a slice cannot stay in its domain, with the figures that show it.
    std::string no_room_in(DomainId d, int lost, int usable) const {
        if (d == kNoDomain) return std::string("its slice spans domains");
        const Domain& dom = map_.domain(d);
        if (snap_.counts(d).degraded) return fmt::format("{} is degraded ({})", dom.name, snap_.degraded_why(d));
        return fmt::format("{} has {} usable free node(s) for {} ({} spare(s), {} failed node(s))", dom.name, usable,
                           lost, dom.spares, dom.size() - snap_.counts(d).healthy);
    }

    // 1. the same domain; `usable_here`: how many nodes it had
    bool in_own_domain(PlacedSlice& slice, SliceRepair& rep, int& usable_here) {
        const int lost = int(rep.removed.size());
        if (slice.domain == kNoDomain || degraded(slice.domain)) return false;
        candidates(snap_, slice.domain, running_.job_id, taken_, cand_, true, unprotected_);
        usable_here = int(cand_.size());
        if (int(cand_.size()) < lost) return false;
        rep.action = RepairAction::ReplaceInDomain;
        rep.to = slice.domain;
        rep.added.assign(cand_.begin(), cand_.begin() + lost);
        for (NodeId id : rep.added) {
            taken_.push_back(id);
            const NodeStatus& st = snap_.node(id);
            // (a node held for this job itself is no one's to requeue)
            if (!is_free(st.state) && st.job_id && st.job_id != running_.job_id) rep.preempt.push_back(st.job_id);
        }
        slice.nodes = replaced(slice.nodes, rep.removed, rep.added);
        rep.detail = fmt::format("slice {}: {} failed node(s) replaced inside {}", slice.index, lost,
                                 map_.domain(slice.domain).name);
        return true;
    }

    // 2. another domain, best fit, keeping that domain's spares
    bool in_other_domain(PlacedSlice& slice, SliceRepair& rep, int usable_here) {
        const int lost = int(rep.removed.size());
        const int k = int(slice.nodes.size());
        const DomainId best = best_fit_elsewhere(snap_, slice.domain, k, taken_);
        if (best == kNoDomain) return false;
        rep.action = RepairAction::MoveDomain;
        rep.to = best;
        rep.removed = slice.nodes;
        candidates(snap_, best, running_.job_id, taken_, cand_, false, unprotected_);
        // idle nodes before the spare-reserved ones: the target keeps its spares
        std::stable_partition(cand_.begin(), cand_.end(),
                              [&](NodeId id) { return snap_.node(id).state == NodeState::Idle; });
        rep.added.assign(cand_.begin(), cand_.begin() + k);
        std::sort(rep.added.begin(), rep.added.end());
        taken_.insert(taken_.end(), rep.added.begin(), rep.added.end());
        rep.detail = degraded(slice.domain)
                         ? fmt::format("slice {}: {}; moved to {}", slice.index,
                                       no_room_in(slice.domain, lost, usable_here), map_.domain(best).name)
                         : fmt::format("slice {}: {} failed node(s), {}; moved to {}", slice.index, lost,
                                       no_room_in(slice.domain, lost, usable_here), map_.domain(best).name);
        slice.nodes = rep.added;
        slice.domain = best;
        return true;
    }

    // 3. where the nodes it needs free soonest (room that frees later)
    bool where_room_frees(PlacedSlice& slice, SliceRepair& rep, int usable_here) {
        if (!later_ || !later_->ends) return false;
        const int lost = int(rep.removed.size());
        const SoonestRoom soon = soonest_room(snap_, running_.job_id, slice, lost, taken_, *later_);
        if (soon.domain == kNoDomain) return false;
        rep.to = soon.domain;
        for (const Slot& s : soon.slots) {
            rep.added.push_back(s.id);
            const NodeStatus& st = snap_.node(s.id);
            if (s.rank == 3) rep.preempt.push_back(st.job_id);
            if (s.rank == 4 && !contains(rep.evict, st.job_id)) rep.evict.push_back(st.job_id);
        }
        std::sort(rep.added.begin(), rep.added.end());
        taken_.insert(taken_.end(), rep.added.begin(), rep.added.end());
        std::string when_s = soon.when > later_->now
                                 ? fmt::format("free in {} s by its jobs' time limits", soon.when - later_->now)
                                 : std::string("free now");
        if (soon.spares_taken > 0)
            when_s += fmt::format(", {} of its {} spares taken: beside them it would wait longer", soon.spares_taken,
                                  map_.domain(soon.domain).spares);
        if (soon.domain == slice.domain) {
            rep.action = RepairAction::ReplaceInDomain;
            slice.nodes = replaced(slice.nodes, rep.removed, rep.added);
            rep.detail = fmt::format("slice {}: {} failed node(s) replaced inside {} ({})", slice.index, lost,
                                     map_.domain(soon.domain).name, when_s);
        } else {
            rep.action = RepairAction::MoveDomain;
            rep.removed = slice.nodes;
            rep.detail =
                fmt::format("slice {}: {}; moved to {} ({})", slice.index, no_room_in(slice.domain, lost, usable_here),
                            map_.domain(soon.domain).name, when_s);
            slice.nodes = rep.added;
            slice.domain = soon.domain;
        }
        ready_at = std::max(ready_at, soon.when);
        return true;
    }

    // 4. wait
    void wait(const PlacedSlice& slice, SliceRepair& rep, int usable_here) const {
        const int lost = int(rep.removed.size());
        const int k = int(slice.nodes.size());
        rep.action = RepairAction::Wait;
        rep.detail = degraded(slice.domain)
                         ? fmt::format("slice {}: {} and no other domain has room for {} nodes", slice.index,
                                       no_room_in(slice.domain, lost, usable_here), k)
                         : fmt::format("slice {}: {} failed node(s), {} and no other domain has room for {} nodes",
                                       slice.index, lost, no_room_in(slice.domain, lost, usable_here), k);
    }

    const Snapshot& snap_;
    const RackMap& map_;
    const Placement& running_;
    const std::vector<NodeId>& failed_;
    const NodeSet& unprotected_;
    const LaterRoom* later_;
    std::vector<NodeId> taken_; // handed out by this plan, and the job's own nodes
    std::vector<NodeId> cand_;  // candidates' buffer

  public:
    int64_t ready_at = 0; // step 3: when the last node of its targets frees
};

} // namespace

RepairPlan plan_repair(const Snapshot& snap, const Placement& running, const std::vector<NodeId>& failed,
                       const NodeSet& unprotected, const LaterRoom* later) {
    RepairPlan plan;
    plan.job_id = running.job_id;
    plan.placement = running;
    plan.feasible = true;
    RepairPlanner planner(snap, running, failed, unprotected, later);
    for (auto& slice : plan.placement.slices) {
        SliceRepair rep = planner.repair(slice);
        plan.replaced_in_domain += !rep.removed.empty() && rep.action == RepairAction::ReplaceInDomain;
        plan.moved += rep.action == RepairAction::MoveDomain;
        if (rep.action == RepairAction::Wait) {
            if (plan.feasible) plan.reason = rep.detail;
            plan.feasible = false;
        }
        plan.slices.push_back(std::move(rep));
    }
    plan.ready_at = planner.ready_at;

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
