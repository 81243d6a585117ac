#include "removal.hpp"

#include "slice_job.hpp"

#include <algorithm>

namespace nvl {

namespace {

bool is_ours(const std::string& name, const HelperConfig& cfg, const std::string& lease) {
    const std::string lend = cfg.lend_reservation + "_";
    return (!cfg.reservation.empty() && name == cfg.reservation) || name == cfg.gate_reservation ||
           name == cfg.protect_reservation || (!lease.empty() && name == lease) ||
           (!cfg.lend_reservation.empty() && name.size() > lend.size() && name.compare(0, lend.size(), lend) == 0);
}

} // namespace

Removal plan_removal(const std::vector<SlurmJob>& jobs, const std::vector<Reservation>& reservations,
                     const HelperConfig& cfg, const std::string& lease_reservation) {
    Removal out;
    for (const SlurmJob& j : jobs) {
        if (j.state != JobState::Pending && j.state != JobState::Running) continue;
        const auto rec = PlacementRecord::parse(j.admin_comment);
        const bool ours = rec && rec->belongs_to(j.id);
        const bool gated = has_license(j.licenses, cfg.gate_license);
        if (!ours && !gated) continue;
        ++out.jobs;
        if (j.state == JobState::Pending) {
            if (gated)
                out.actions.push_back({j.id, action::SetLicenses{without_license(j.licenses, cfg.gate_license)}});
            // the helper's pin: its node list (gate mode, node pools) or its
            // exclusion (native mode); a user's own -w or -x was replaced
            // by it already
            if (ours && !j.req_nodes.empty()) out.actions.push_back({j.id, action::PinOnly{}});
            if (ours && !j.exc_nodes.empty()) out.actions.push_back({j.id, action::Exclude{}});
            // its hold (a repair under way), never another's
            if (ours && rec->hold && j.held) out.actions.push_back({j.id, action::Release{}});
        }
        if (ours) out.actions.push_back({j.id, action::SetRecord{""}});
    }
    for (const Reservation& r : reservations) {
        if (!is_ours(r.name, cfg, lease_reservation)) continue;
        out.reservations.push_back(r.name);
        // the pending jobs in it leave it first (a borrower waiting for
        // its spare); one a job runs in is deleted once it ends
        std::vector<JobId> in;
        for (const SlurmJob& j : jobs)
            if (j.state == JobState::Pending && j.reservation == r.name) in.push_back(j.id);
        out.actions.push_back({0, action::EndLend{r.name, std::move(in)}});
    }
    return out;
}

} // namespace nvl
