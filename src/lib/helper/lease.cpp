#include "lease.hpp"

#include <fmt/format.h>

#include <utility>

namespace nvl {

Lease::Lease(std::string me, int64_t length_s) : me_(std::move(me)), length_s_(length_s) {}

LeaseDecision Lease::decide(const std::optional<LeaseView>& view, int64_t now, double mono) const {
    LeaseDecision d;
    if (!view) {
        d.step = LeaseStep::Take;
        d.active = true;
        d.why = "no helper holds the lease: taken";
        return d;
    }
    if (view->holder != me_) {
        d.step = LeaseStep::StandBy;
        d.why = fmt::format("the lease is held by {} (until {} s from now{}): standing by", view->holder,
                            view->end_time - now,
                            view->end_time < now ? ", ended: Slurm purges it about 30 s after its end" : "");
        return d;
    }
    // ours: renewed once a third of it is gone (by slurmctld's end, and by
    // this host's clock since the last renewal went out)
    const bool due =
        view->end_time - now <= length_s_ * 2 / 3 || !valid_from_ || mono - *valid_from_ >= double(length_s_) / 3;
    d.step = due ? LeaseStep::Renew : LeaseStep::Keep;
    d.active = due || may_act(mono);
    d.why = "this helper holds the lease";
    return d;
}

void Lease::taken(bool ok, double sent) {
    if (ok)
        valid_from_ = sent;
    else
        valid_from_.reset();
}

void Lease::renewed(bool ok, double sent) {
    if (ok)
        valid_from_ = sent;
    else
        valid_from_.reset();
}

void Lease::lost() {
    valid_from_.reset();
}

bool Lease::may_act(double mono) const {
    return valid_from_ && mono - *valid_from_ < double(length_s_) / 2;
}

std::string lease_id(std::string_view host, std::string_view lock_file) {
    auto clean = [](std::string_view s) {
        std::string out;
        for (char c : s)
            out += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                           c == '_' || c == '/'
                       ? c
                       : '_';
        return out;
    };
    std::string h = clean(host);
    if (h.empty()) h = "unknown";
    return h + ":" + clean(lock_file);
}

} // namespace nvl
