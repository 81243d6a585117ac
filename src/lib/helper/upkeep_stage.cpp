// The spare and cluster upkeep stage (upkeep_stage.hpp).
#include "upkeep_stage.hpp"

#include "hostlist.hpp"
#include "reconcile.hpp"
#include "repair_stage.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace nvl {

std::optional<std::string> wanted_spares(const Snapshot& snap, const NodeSet& reserved, bool exists,
                                         const NodeSet& unprotected, const BusyEnd& busy_end) {
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
        // Too few free nodes (a move took the rack's spares, or the backlog
        // took them while lent work stood in for them): the nodes of plain
        // work that ends first are kept too (the reservation ignores running
        // jobs), so that each comes back as a spare the moment its job ends,
        // before Slurm can start other work there. A slice job's node, a
        // held target's, lent work's or a job's in a reservation is none.
        // (those it keeps already first: the reservation changes only when
        // it must)
        if (busy_end && int(pick.size()) < want_n) {
            std::vector<std::pair<int64_t, NodeId>> ending;
            for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend(); ++it) {
                const NodeStatus& st = snap.node(*it);
                if (!st.job_id || st.lent || st.slice >= 0 || !is_healthy(st.state) || !addable(*it)) continue;
                if (const auto e = busy_end(st.job_id))
                    ending.emplace_back(reserved.contains(*it) ? INT64_MIN : *e, *it);
            }
            std::stable_sort(ending.begin(), ending.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            for (size_t i = 0; i < ending.size() && int(pick.size()) < want_n; ++i) pick.push_back(ending[i].second);
        }
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

namespace nvl {

bool waits_in_own_reservation(const ParsedJob& p, const HelperConfig& cfg, const RackMap& map, const NodeSet& failed) {
    const SlurmJob& j = *p.job;
    if (!((j.state == JobState::Pending || j.state == JobState::Completing) && p.rec && p.rec->belongs_to(j.id) &&
          !j.reservation.empty() && cfg.lend_job(j.reservation) == j.id))
        return false;
    if (p.rec->state == RecordState::Repairing || p.rec->state == RecordState::Restarting) return true;
    for (NodeId id : recorded_nodes(map, *p.rec))
        if (failed.contains(id)) return true;
    return false;
}

std::vector<LendVerdict> decide_lends(const std::vector<Reservation>& lends, const LendContext& c) {
    std::vector<LendVerdict> out;
    if (lends.empty()) return out;
    const RackMap& map = c.snap.map();
    std::unordered_map<JobId, const ParsedJob*> by_id;          // a few lends, many jobs: one pass
    std::unordered_map<std::string, std::vector<JobId>> inside; // every job in a lend reservation
    for (const Reservation& r : lends)
        if (JobId id = c.cfg.lend_job(r.name)) by_id.emplace(id, nullptr);
    for (const ParsedJob& p : c.jobs) {
        const SlurmJob& j = *p.job;
        if (auto it = by_id.find(j.id); it != by_id.end()) it->second = &p;
        if (!j.reservation.empty() && c.cfg.lend_job(j.reservation)) inside[j.reservation].push_back(j.id);
    }
    for (const Reservation& r : lends) {
        const JobId id = c.cfg.lend_job(r.name);
        if (!id) continue; // not one
        const ParsedJob* p = by_id[id];
        const SlurmJob* j = p ? p->job : nullptr;
        const bool in = j && j->reservation == r.name;
        // Slurm changes only a pending or running job's reservation, and
        // keeps one a suspended job holds; a job Slurm refused lately waits
        // out its backoff
        if (j && j->state == JobState::Suspended) continue;
        if (auto b = c.mem.backoff.find(id); j && b != c.mem.backoff.end() && b->second.until > c.mono) continue;
        LendVerdict v;
        v.resv = &r;
        v.job = id;
        v.j = j;
        v.in = in;
        for (JobId o : inside[r.name])
            if (o != id) v.others.push_back(o);
        // A repair or restart under way or due (hold_target()): its target
        // is kept from the requeue (Slurm's or the helper's) until the job
        // runs there; the repair itself moves the reservation when it plans
        // afresh. One made this cycle (a silent node's repair, before its
        // DOWN) stays too, and one whose DOWN is due after its steps'
        // abort (kDownAfterAbortS). A job still running otherwise is one whose
        // requeue did not happen (refused, or the helper stopped in
        // between): ended, and made again should the repair be retried.
        // (a repair's held target keeps the end its repair gave it: moving
        // it re-sent the job into it, which Slurm 22.05 took as the job's
        // start there)
        if (in && v.others.empty() &&
            ((c.lent_now && c.lent_now(id)) || c.mem.down_due_for(id) ||
             waits_in_own_reservation(*p, c.cfg, map, c.failed)))
            continue;
        if (in && j->state == JobState::Pending && v.others.empty()) {
            // still pinned there (the nodes this cycle's snapshot gives it),
            // and not on a degraded rack: a job in an OVERLAP reservation
            // is not kept off the nodes the spare reservation holds
            bool waits = !r.nodes.empty();
            if (p->rec && p->rec->belongs_to(id) && !p->rec->slices.empty()) {
                // a slice job released onto its held target: its record's
                // nodes, all in the reservation (which may hold more of
                // their racks, swap_held_target()), may still be completing
                // the jobs it waited for; without the reservation a
                // higher-priority job would be planned there meanwhile
                const NodeSet held = NodeSet::of(map, r.nodes);
                const std::vector<NodeId> target = recorded_nodes(map, *p->rec);
                waits = !target.empty();
                for (NodeId t : target) waits = waits && held.contains(t) && !c.snap.degraded(map.domain_of(t));
            } else {
                for (const auto& n : hostlist_expand(r.nodes)) {
                    auto node = map.find_node(n);
                    waits = waits && node && c.snap.node(*node).job_id == id && !c.snap.degraded(map.domain_of(*node));
                }
            }
            if (waits) {
                // a lent spare kept: its lease moved on when half of it is gone
                if (lease_due(r.end_time, c.now, c.cfg.reservation_lease_s)) {
                    v.kind = LendVerdict::Kind::Renew;
                    out.push_back(std::move(v));
                }
                continue;
            }
        }
        v.kind = LendVerdict::Kind::End;
        v.why = !j                                 ? LendVerdict::Why::Gone
                : !in                              ? LendVerdict::Why::NotIn
                : j->state == JobState::Pending    ? LendVerdict::Why::NoLongerWaits
                : j->state == JobState::Completing ? LendVerdict::Why::Ended
                                                   : LendVerdict::Why::RunsThere;
        // Another job of the owner's that started there (--reservation)
        // would keep the spare for its whole time limit: taken back as lent
        // work is (a task split off the borrower's array is the borrower's).
        for (JobId o : v.others) {
            const SlurmJob* q = nullptr;
            for (const ParsedJob& x : c.jobs)
                if (x.job->id == o) q = x.job;
            if (!q || q->state != JobState::Running || (q->array_id && q->array_id == id)) continue;
            (q->batch ? v.requeue : v.interactive).push_back(q);
        }
        out.push_back(std::move(v));
    }
    return out;
}

} // namespace nvl
