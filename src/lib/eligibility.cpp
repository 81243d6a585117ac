#include "eligibility.hpp"

#include "slice_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>

namespace nvl {

namespace {

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

} // namespace

bool reason_holds_back(std::string_view r) {
    // by family (Slurm's job_state_reason strings, 22.05 to 26.05): every
    // association and QOS limit, the per-account and per-user maxima, the
    // partition's limits and states, dependencies and holds
    static constexpr std::array<std::string_view, 8> families = {"Assoc",      "QOS",     "Association", "Partition",
                                                                 "Dependency", "JobHeld", "BurstBuffer", "Reservation"};
    for (std::string_view f : families)
        if (starts_with(r, f)) {
            // "Reservation" alone: the job's reservation has not started or
            // cannot be used now (job_test_resv_now); the nvlslice
            // reservations never cause it for a job outside them.
            // "ReservationDeleted" / "ReservationInvalid" too.
            return true;
        }
    if (starts_with(r, "Max") && (r.find("PerAccount") != std::string_view::npos ||
                                  r.find("PerUser") != std::string_view::npos || r == "MaxMemPerLimit"))
        return true;
    static constexpr std::array<std::string_view, 10> exact = {
        "BeginTime",         "JobArrayTaskLimit", "JobHoldMaxRequeue", "InvalidAccount", "InvalidQOS",
        "AccountNotAllowed", "AccountingPolicy",  "DeadLine",          "FedJobLock",     "job_requeued_in_held_state"};
    for (std::string_view e : exact)
        if (r == e) return true;
    return false;
}

std::optional<std::string> held_back_by_slurm(const SlurmJob& j, int64_t now) {
    if (j.state != JobState::Pending) return std::nullopt;
    const bool first_start = j.restarts == 0;
    // A pending job's begin_time is Slurm's StartTime: its begin time, or a
    // later start the scheduler expects. Slurm says which with its reason
    // (BeginTime, set before any license or node test); a job not looked at
    // yet (None) whose StartTime lies ahead waits for its begin time too.
    const bool unseen = j.reason.empty() || j.reason == "None";
    if (first_start && j.begin_time > now && (unseen || j.reason == "BeginTime")) {
        char when[32] = "?";
        const time_t t = time_t(j.begin_time);
        struct tm tm {};
        if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        return fmt::format("BeginTime (eligible at {})", when);
    }
    if (!reason_holds_back(j.reason)) return std::nullopt;
    // a requeued job's BeginTime is Slurm's requeue delay, not the user's
    if (!first_start && j.reason == "BeginTime") return std::nullopt;
    return j.reason;
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
