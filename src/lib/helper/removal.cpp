#include "removal.hpp"

#include "slice_job.hpp"

#include <algorithm>

namespace nvl {

namespace {

bool is_ours(const std::string& name, const HelperConfig& cfg, const std::string& lease) {
    return (!cfg.reservation.empty() && name == cfg.reservation) || name == cfg.gate_reservation ||
           name == cfg.protect_reservation || (!lease.empty() && name == lease) || cfg.lend_job(name) != 0;
}

} // namespace

Removal plan_removal(const std::vector<SlurmJob>& jobs, const std::vector<Reservation>& reservations,
                     const HelperConfig& cfg, const std::string& lease_reservation) {
    Removal out;
    for (const SlurmJob& j : jobs) {
        const auto rec = PlacementRecord::parse(j.admin_comment);
        const bool ours = rec && rec->belongs_to(j.id);
        const bool gated = has_license(j.licenses, cfg.gate_license);
        if (!rec && !gated) continue;
        // requeued by a repair, its old run still completing: pending and
        // held by the helper a moment later; undone only then
        if (j.state == JobState::Completing && ours && rec->hold) {
            out.completing.push_back(j.id);
            continue;
        }
        if (j.state != JobState::Pending && j.state != JobState::Running && j.state != JobState::Suspended) continue;
        ++out.jobs;
        if (j.state == JobState::Pending) {
            if (gated)
                out.actions.push_back({j.id, action::SetLicenses{without_license(j.licenses, cfg.gate_license)}});
            if (ours) {
                // the helper's pin: its record has a placement, or says it
                // was placed and gated again (the pin stays then); a
                // waiting job never placed keeps the user's own -w
                const bool placed = !rec->slices.empty() || rec->why == Why::NotStarted || rec->why == Why::HeldBack;
                if (placed && !j.req_nodes.empty()) out.actions.push_back({j.id, action::PinOnly{}});
                // an exclusion is the helper's in native mode only (its pin
                // by exclusion, or degraded racks kept off); gate mode
                // leaves the user's -x alone
                const auto tag = RequestTag::parse(j.comment);
                const bool native = tag && tag->hand_off == HandOff::Native;
                if (native && (placed || rec->off_degraded) && !j.exc_nodes.empty())
                    out.actions.push_back({j.id, action::Exclude{}});
                // its hold (a repair under way), never another's
                if (rec->hold && j.held) out.actions.push_back({j.id, action::Release{}});
            }
        }
        // every record, a copy in a task its array split off too: nothing
        // named nvlslice stays in the jobs
        if (rec) out.actions.push_back({j.id, action::SetRecord{""}});
    }
    for (const Reservation& r : reservations) {
        if (!is_ours(r.name, cfg, lease_reservation)) continue;
        out.reservations.push_back(r.name);
        // its jobs leave it first (a borrower waiting for its spare, or
        // running on it), or Slurm refuses to delete it
        std::vector<JobId> in;
        for (const SlurmJob& j : jobs)
            if ((j.state == JobState::Pending || j.state == JobState::Running) && j.reservation == r.name)
                in.push_back(j.id);
        out.actions.push_back({0, action::EndLend{r.name, std::move(in)}});
    }
    return out;
}

void Renamed::add(const HelperConfig& old_cfg, const HelperConfig& new_cfg) {
    const auto keep_unique = [](std::vector<std::string>& v, const std::string& x) {
        if (!x.empty() && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    };
    for (auto [o, n] : {std::pair{&old_cfg.reservation, &new_cfg.reservation},
                        std::pair{&old_cfg.gate_reservation, &new_cfg.gate_reservation},
                        std::pair{&old_cfg.protect_reservation, &new_cfg.protect_reservation}})
        if (*o != *n) keep_unique(names, *o);
    if (old_cfg.lend_reservation != new_cfg.lend_reservation) keep_unique(lend_prefixes, old_cfg.lend_reservation);
    // a name the new configuration uses (again) is not retired
    const std::string* in_use[] = {&new_cfg.reservation, &new_cfg.gate_reservation, &new_cfg.protect_reservation};
    names.erase(std::remove_if(names.begin(), names.end(),
                               [&](const std::string& x) {
                                   return std::any_of(std::begin(in_use), std::end(in_use),
                                                      [&](const std::string* u) { return *u == x; });
                               }),
                names.end());
    lend_prefixes.erase(std::remove(lend_prefixes.begin(), lend_prefixes.end(), new_cfg.lend_reservation),
                        lend_prefixes.end());
}

std::vector<Retire> plan_retirement(const Renamed& renamed, const std::vector<Reservation>& reservations) {
    std::vector<Retire> out;
    for (const auto& n : renamed.names)
        if (std::any_of(reservations.begin(), reservations.end(), [&](const Reservation& r) { return r.name == n; }))
            out.push_back({n, 0});
    HelperConfig old;
    for (const auto& prefix : renamed.lend_prefixes) {
        old.lend_reservation = prefix;
        for (const Reservation& r : reservations)
            if (const JobId id = old.lend_job(r.name)) out.push_back({r.name, id});
    }
    return out;
}

} // namespace nvl
