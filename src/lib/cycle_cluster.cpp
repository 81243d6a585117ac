// Cluster-wide upkeep: the spare reservation, node weights, the gate.
#include "cycle.hpp"

#include "upkeep.hpp"

namespace nvl::detail {

void Cycle::keep_spares() {
    if (cfg_.reservation.empty()) return;
    const auto list = wanted_spares(snap_, obs_.reserved, spares_.has_value(), obs_.unprotected);
    if (!list) return;
    // Sent before every action that lets a job start (Phase::Spares), so
    // that a spare handed to a job leaves the reservation first; after the
    // others, so that a repair's requeue is not kept waiting by a
    // reservation update (slurmctld may take seconds over one).
    act({0, action::SetReservation{*list}});
    log(fmt::format("spares: reservation {} = {}", cfg_.reservation, list->empty() ? "(none)" : *list));
}

void Cycle::keep_weights() {
    if (!cfg_.steer_weights) return;
    for (auto& c : weight_changes(snap_, nodes_)) act({0, action::SetWeight{std::move(c.nodes), c.weight}});
    // not logged: it changes with every job that starts or ends (sinfo -o %w shows it)
}

void Cycle::keep_gate() {
    if (!cfg_.gate_reservation.empty() && !gate_) {
        act({0, action::Gate{}});
        log(fmt::format("gate: creating the license-only reservation {} that holds {}", cfg_.gate_reservation,
                        cfg_.gate_license));
    }
}

} // namespace nvl::detail
