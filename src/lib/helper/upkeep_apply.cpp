// Cluster-wide upkeep: the spare and lend reservations, node weights, the gate.
#include "cycle.hpp"

#include "upkeep_stage.hpp"

#include <fmt/ranges.h>

namespace nvl::detail {

void Cycle::keep_spares() {
    if (cfg_.reservation.empty()) return;
    const auto list = wanted_spares(snap_, obs_.reserved, spares_.has_value(), obs_.unprotected);
    if (!list) {
        // the same nodes: its lease moved on when half of it is gone
        if (spares_ && lease_due(spares_->end_time)) {
            act({0, action::SetReservation{spares_->nodes, lease_end()}});
            log(fmt::format("spares: reservation {} kept until {}", cfg_.reservation, iso_time(lease_end())));
        }
        return;
    }
    // Sent before every action that lets a job start (Phase::Spares), so
    // that a spare handed to a job leaves the reservation first; after the
    // others, so that a repair's requeue is not kept waiting by a
    // reservation update (slurmctld may take seconds over one).
    act({0, action::SetReservation{*list, lease_end()}});
    log(fmt::format("spares: reservation {} = {}", cfg_.reservation, list->empty() ? "(none)" : *list));
}

void Cycle::keep_lends() {
    if (!lends_ || lends_->empty()) return;
    std::unordered_map<JobId, const ParsedJob*> by_id;          // a few lends, many jobs: one pass
    std::unordered_map<std::string, std::vector<JobId>> inside; // every job in a lend reservation
    for (const Reservation& r : *lends_)
        if (JobId id = cfg_.lend_job(r.name)) by_id.emplace(id, nullptr);
    for (const ParsedJob& p : obs_.jobs) {
        const SlurmJob& j = *p.job;
        if (auto it = by_id.find(j.id); it != by_id.end()) it->second = &p;
        if (!j.reservation.empty() && cfg_.lend_job(j.reservation)) inside[j.reservation].push_back(j.id);
    }
    for (const Reservation& r : *lends_) {
        const JobId id = cfg_.lend_job(r.name);
        if (!id) continue; // not one
        const ParsedJob* p = by_id[id];
        const SlurmJob* j = p ? p->job : nullptr;
        const bool in = j && j->reservation == r.name;
        // Slurm changes only a pending or running job's reservation, and
        // keeps one a suspended job holds; a job Slurm refused lately waits
        // out its backoff
        if (j && j->state == JobState::Suspended) continue;
        if (auto b = mem_.backoff.find(id); j && b != mem_.backoff.end() && b->second.until > mono_) continue;
        // jobs in it besides its own: a task its job array split off, a job
        // its owner put there (--reservation)
        std::vector<JobId> others;
        for (JobId o : inside[r.name])
            if (o != id) others.push_back(o);
        // A repair or restart under way or due (hold_target()): its target
        // is kept from the requeue (Slurm's or the helper's) until the job
        // runs there; the repair itself moves the reservation when it plans
        // afresh. One made this cycle (a silent node's repair, before its
        // DOWN) stays too. A job still running otherwise is one whose
        // requeue did not happen (refused, or the helper stopped in
        // between): ended, and made again should the repair be retried.
        // (a repair's held target keeps the end its repair gave it: moving
        // it re-sent the job into it, which Slurm 22.05 took as the job's
        // start there)
        if (in && others.empty() && (did(id, ActionKind::Lend) || waits_in_own_reservation(*p))) continue;
        if (in && j->state == JobState::Pending && others.empty()) {
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
                const NodeSet held = NodeSet::of(map_, r.nodes);
                const std::vector<NodeId> target = recorded_nodes(*p->rec);
                waits = !target.empty();
                for (NodeId t : target) waits = waits && held.contains(t) && !snap_.degraded(map_.domain_of(t));
            } else {
                for (const auto& n : hostlist_expand(r.nodes)) {
                    auto node = map_.find_node(n);
                    waits = waits && node && snap_.node(*node).job_id == id && !snap_.degraded(map_.domain_of(*node));
                }
            }
            if (waits) {
                // a lent spare kept: its lease moved on when half of it is gone
                if (lease_due(r.end_time)) act({id, action::Lend{r.nodes, j->user_id, r.name, lease_end()}});
                continue;
            }
        }
        act({in ? id : 0, action::EndLend{r.name, others}});
        // Another job of the owner's that started there (--reservation)
        // would keep the spare for its whole time limit: taken back as lent
        // work is (a task split off the borrower's array is the borrower's).
        for (JobId o : others) {
            const ParsedJob* q = nullptr;
            for (const ParsedJob& x : obs_.jobs)
                if (x.job->id == o) q = &x;
            if (!q || q->job->state != JobState::Running || (q->job->array_id && q->job->array_id == id)) continue;
            if (!q->job->batch) {
                warn_once(o, fmt::format("runs on {} in the lend reservation {} that job {} was lent; an interactive "
                                         "allocation cannot be requeued: it keeps the spare until it ends",
                                         r.nodes, r.name, id));
                continue;
            }
            if (!q->job->requeue) act({o, action::AllowRequeue{}});
            act({o, action::Requeue{}});
            warn(o, fmt::format("ran on {} in the lend reservation {} that job {} was lent: requeued (a lent spare "
                                "is its borrower's alone)",
                                r.nodes, r.name, id));
        }
        log(id,
            fmt::format("lend reservation {} ({}) ended: {}{}", r.name, r.nodes,
                        !j                                 ? "the job is gone"
                        : !in                              ? "the job is not in it"
                        : j->state == JobState::Pending    ? "the job no longer waits for it there"
                        : j->state == JobState::Completing ? "the job has ended"
                                                           : "the job runs there and keeps the node",
                        others.empty() ? "" : fmt::format("; job(s) {} taken out of it too", fmt::join(others, ","))));
    }
}

void Cycle::keep_weights() {
    if (!cfg_.steer_weights) return;
    for (auto& c : weight_changes(snap_, nodes_)) act({0, action::SetWeight{std::move(c.nodes), c.weight}});
    // not logged: it changes with every job that starts or ends (sinfo -o %w shows it)
}

void Cycle::keep_gate() {
    if (cfg_.gate_reservation.empty()) return;
    if (!gate_) {
        act({0, action::Gate{lease_end()}});
        log(fmt::format("gate: creating the license-only reservation {} that holds {}", cfg_.gate_reservation,
                        cfg_.gate_license));
    } else if (lease_due(gate_->end_time)) {
        act({0, action::Gate{lease_end()}});
        log(fmt::format("gate: reservation {} kept until {}", cfg_.gate_reservation, iso_time(lease_end())));
    }
}

} // namespace nvl::detail
