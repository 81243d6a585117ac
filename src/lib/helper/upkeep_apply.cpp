// Cluster-wide upkeep: the spare and lend reservations, node weights, the gate.
#include "cycle.hpp"

#include "upkeep_stage.hpp"

#include <fmt/ranges.h>

namespace nvl::detail {

void Cycle::keep_spares() {
    if (cfg_.reservation.empty()) return;
    // plain work whose nodes a rack short of free spares may keep as they
    // free (wanted_spares()): running jobs with a time limit, neither slice
    // jobs nor in a reservation of their own; gathered only when a rack is
    // short (not every cycle)
    std::optional<std::unordered_map<JobId, int64_t>> busy;
    const auto busy_end = [&](JobId id) -> std::optional<int64_t> {
        if (!busy) {
            busy = end_times();
            for (auto it = busy->begin(); it != busy->end();)
                it = it->second == INT64_MAX ? busy->erase(it) : std::next(it);
            for (const SlurmJob& j : jobs_)
                if (!j.reservation.empty()) busy->erase(j.id);
            for (const SliceJob& sj : st_.slice_jobs) busy->erase(sj.job->id);
        }
        const auto e = busy->find(id);
        return e == busy->end() ? std::nullopt : std::optional<int64_t>(e->second);
    };
    const auto list = wanted_spares(st_.snap, obs_.reserved, spares_.has_value(), obs_.unprotected, busy_end);
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
    const LendContext c{obs_.jobs, cfg_, st_.snap, obs_.failed,
                        mem_,      now_, mono_,    [this](JobId id) { return did(id, ActionKind::Lend); }};
    for (LendVerdict& v : decide_lends(*lends_, c)) {
        const Reservation& r = *v.resv;
        if (v.kind == LendVerdict::Kind::Renew) {
            act({v.job, action::Lend{r.nodes, v.j->user_id, r.name, lease_end()}});
            continue;
        }
        act({v.in ? v.job : 0, action::EndLend{r.name, v.others}});
        for (const SlurmJob* q : v.interactive)
            warn_once(q->id, fmt::format("runs on {} in the lend reservation {} that job {} was lent; an interactive "
                                         "allocation cannot be requeued: it keeps the spare until it ends",
                                         r.nodes, r.name, v.job));
        for (const SlurmJob* q : v.requeue) {
            if (!q->requeue) act({q->id, action::AllowRequeue{}});
            act({q->id, action::Requeue{}});
            warn(q->id, fmt::format("ran on {} in the lend reservation {} that job {} was lent: requeued (a lent spare "
                                    "is its borrower's alone)",
                                    r.nodes, r.name, v.job));
        }
        const char* why = "";
        switch (v.why) {
        case LendVerdict::Why::Gone: why = "the job is gone"; break;
        case LendVerdict::Why::NotIn: why = "the job is not in it"; break;
        case LendVerdict::Why::NoLongerWaits: why = "the job no longer waits for it there"; break;
        case LendVerdict::Why::Ended: why = "the job has ended"; break;
        case LendVerdict::Why::RunsThere: why = "the job runs there and keeps the node"; break;
        }
        log(v.job,
            fmt::format("lend reservation {} ({}) ended: {}{}", r.name, r.nodes, why,
                        v.others.empty() ? ""
                                         : fmt::format("; job(s) {} taken out of it too", fmt::join(v.others, ","))));
    }
}

void Cycle::keep_weights() {
    if (!cfg_.steer_weights) return;
    for (auto& c : weight_changes(st_.snap, nodes_)) act({0, action::SetWeight{std::move(c.nodes), c.weight}});
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
