#include "eligibility.hpp"

#include "slice_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>

namespace nvl {

bool reason_holds_back(std::string_view r) {
    return holds_back(reason_kind(r));
}

std::optional<std::string> held_back_by_slurm(const SlurmJob& j, int64_t now, std::string_view gate_license) {
    if (j.state != JobState::Pending) return std::nullopt;
    const bool first_start = j.restarts == 0;
    const ReasonKind k = j.reason.kind();
    // A pending job's begin_time is Slurm's StartTime: its begin time, or a
    // later start the scheduler expects. Slurm says which with its reason
    // (BeginTime, set before any license or node test); a job not looked at
    // yet (None) whose StartTime lies ahead waits for its begin time too.
    if (first_start && j.begin_time > now && (k == ReasonKind::None || k == ReasonKind::BeginTime)) {
        char when[32] = "?";
        const time_t t = time_t(j.begin_time);
        struct tm tm {};
        if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        return fmt::format("BeginTime (eligible at {})", when);
    }
    // Licenses: the gate's in gate mode (held_back_by_gates looks past it);
    // Slurm's own for a job without it
    if (k == ReasonKind::Licenses && (gate_license.empty() || !has_license(j.licenses, gate_license)))
        return j.reason.name();
    if (!holds_back(k)) return std::nullopt;
    // a requeued job's BeginTime is Slurm's requeue delay, not the user's
    if (!first_start && k == ReasonKind::BeginTime) return std::nullopt;
    if (k == ReasonKind::Unknown) return fmt::format("{} (a reason this nvlslice does not know)", j.reason.name());
    return j.reason.name();
}

namespace {

// the licenses of `request` ("a:2,b", or "a|b": one of) short now for a job
// (in a reservation: the reservations' licenses count as its own)
bool licenses_short(std::string_view request, const std::vector<SlurmLicense>& have, std::string_view gate,
                    bool in_reservation, std::string* which) {
    const bool any_of = request.find('|') != std::string_view::npos;
    bool all_short = true, some_short = false;
    LicenseItem it;
    while (next_license_item(request, it, any_of ? '|' : ',')) {
        const std::string_view name = it.name;
        const int64_t want = it.count;
        if (name == gate) {
            all_short = false; // the gate's is the helper's to open
            continue;
        }
        bool is_short = false;
        for (const auto& l : have)
            if (l.name == name) {
                const int64_t free = l.total - l.in_use - (in_reservation ? 0 : l.reserved);
                is_short = free < want;
            }
        // a license slurmctld does not list: remote (a database's), not
        // counted here; Slurm's own reason will say
        if (is_short) {
            some_short = true;
            if (which && which->empty()) *which = std::string(name);
        } else {
            all_short = false;
        }
    }
    return any_of ? all_short && some_short : some_short;
}

} // namespace

std::optional<std::string> held_back_by_gates(const SlurmJob& j, const SlurmGates& g, int array_running,
                                              std::string_view gate_license, int64_t now, const AcctLimits* limits) {
    if (j.state != JobState::Pending) return std::nullopt;
    // any other reason: Slurm tested all this already
    if (!j.reason.is(ReasonKind::None) && !j.reason.is(ReasonKind::Licenses)) return std::nullopt;
    bool size_and_time = j.qos.empty();
    if (!size_and_time && limits)
        for (const auto& q : limits->qos)
            if (q.name == j.qos) size_and_time = !q.lifts_partition_limits;
    // its partitions ("a,b": any of them that would run it)
    if (!j.partition.empty() && !g.partitions.empty()) {
        std::string_view parts = j.partition;
        std::string why;
        bool any_runs = false, any_known = false;
        while (!parts.empty() && !any_runs) {
            const size_t c = parts.find(',');
            const std::string_view name = parts.substr(0, c);
            parts.remove_prefix(c == std::string_view::npos ? parts.size() : c + 1);
            for (const auto& p : g.partitions) {
                if (p.name != name) continue;
                any_known = true;
                std::string w;
                if (!p.runs_jobs)
                    w = p.inactive ? "PartitionInactive" : "PartitionDown";
                else if (size_and_time &&
                         ((p.max_nodes >= 0 && j.num_nodes > p.max_nodes) || j.num_nodes < p.min_nodes))
                    w = "PartitionNodeLimit";
                else if (size_and_time && p.max_time_s >= 0 && j.time_limit > p.max_time_s)
                    w = "PartitionTimeLimit";
                if (w.empty())
                    any_runs = true;
                else if (why.empty())
                    why = fmt::format("{} (partition {})", w, p.name);
            }
        }
        if (any_known && !any_runs) return why;
    }
    // a reservation of its own that has not started (or is gone)
    if (!j.reservation.empty()) {
        const Reservation* r = nullptr;
        for (const auto& x : g.reservations)
            if (x.name == j.reservation) r = &x;
        if (r && r->start_time > now) return fmt::format("Reservation ({} starts later)", j.reservation);
    }
    // licenses besides the gate's
    if (!j.licenses.empty()) {
        std::string which;
        if (licenses_short(j.licenses, g.licenses, gate_license, !j.reservation.empty(), &which))
            return fmt::format("Licenses ({} in use)", which);
    }
    if (j.array_id && j.array_throttle > 0 && array_running >= int(j.array_throttle))
        return fmt::format("JobArrayTaskLimit ({} of its array run, at most {})", array_running, j.array_throttle);
    return std::nullopt;
}

const AcctLimits::Assoc* AcctLimits::assoc(uint32_t id) const {
    auto it = std::lower_bound(assocs.begin(), assocs.end(), id, [](const Assoc& x, uint32_t v) { return x.id < v; });
    return it != assocs.end() && it->id == id ? &*it : nullptr;
}

std::optional<std::string> held_back_by_limits(const SlurmJob& j, const AcctLimits& a) {
    if (j.state != JobState::Pending || j.num_nodes <= 0) return std::nullopt;
    const int64_t n = j.num_nodes;
    auto over = [](int64_t limit, int64_t used, int64_t add) { return limit >= 0 && used + add > limit; };
    const AcctLimits::Qos* q = nullptr;
    for (const auto& x : a.qos)
        if (x.name == j.qos) q = &x;
    // MaxWall: the job's time limit above it (a job without one has the
    // partition's, which Slurm compares the same way; not known here)
    const bool q_wall = q && q->max_wall_s >= 0;
    if (q_wall && j.time_limit > q->max_wall_s) return std::string("QOSMaxWallDurationPerJobLimit");
    if (q) {
        if (over(q->max_nodes_per_job, 0, n)) return std::string("QOSMaxNodePerJobLimit");
        if (over(q->grp_nodes, q->used_nodes, n)) return std::string("QOSGrpNodeLimit");
        if (over(q->grp_jobs, q->used_jobs, 1)) return std::string("QOSGrpJobsLimit");
        for (const auto& u : q->users)
            if (u.uid == j.user_id) {
                if (over(q->max_nodes_per_user, u.nodes, n)) return std::string("QOSMaxNodePerUserLimit");
                if (over(q->max_jobs_per_user, u.jobs, 1)) return std::string("QOSMaxJobsPerUserLimit");
            }
        if (over(q->max_nodes_per_user, 0, n)) return std::string("QOSMaxNodePerUserLimit");
    }
    const bool q_grp_nodes = q && q->grp_nodes >= 0, q_grp_jobs = q && q->grp_jobs >= 0,
               q_job_nodes = q && q->max_nodes_per_job >= 0;
    const AcctLimits::Assoc* at = a.assoc(j.assoc_id);
    if (at) {
        if (!q_wall && at->max_wall_s >= 0 && j.time_limit > at->max_wall_s)
            return std::string("AssocMaxWallDurationPerJobLimit");
        if (over(at->max_jobs, at->used_jobs, 1)) return std::string("AssocMaxJobsLimit");
        if (!q_job_nodes && over(at->max_nodes_per_job, 0, n)) return std::string("AssocMaxNodePerJobLimit");
    }
    // the Grp limits of its association and of every account above it
    for (int depth = 0; at && depth < 64; ++depth, at = at->parent ? a.assoc(at->parent) : nullptr) {
        if (!q_grp_nodes && over(at->grp_nodes, at->used_nodes, n)) return std::string("AssocGrpNodeLimit");
        if (!q_grp_jobs && over(at->grp_jobs, at->used_jobs, 1)) return std::string("AssocGrpJobsLimit");
    }
    return std::nullopt;
}

bool needs_limits(const SlurmJob& j, std::string_view gate_license) {
    return j.state == JobState::Pending && (has_license(j.licenses, gate_license) ||
                                            std::string_view(j.comment).substr(0, kTagPrefix.size()) == kTagPrefix);
}

} // namespace nvl
