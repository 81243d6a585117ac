#include "eligibility.hpp"

#include <fmt/format.h>

#include <array>
#include <ctime>

namespace nvl {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

} // namespace

bool reason_holds_back(std::string_view r) {
    // by family (Slurm's job_state_reason strings, 22.05 to 26.05): every
    // association and QOS limit, the per-account and per-user maxima, the
    // partition's limits and states, dependencies and holds
    static constexpr std::array<std::string_view, 8> families = {
        "Assoc", "QOS", "Association", "Partition", "Dependency", "JobHeld", "BurstBuffer", "Reservation"};
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
        "BeginTime",       "JobArrayTaskLimit", "JobHoldMaxRequeue", "InvalidAccount", "InvalidQOS",
        "AccountNotAllowed", "AccountingPolicy", "DeadLine",        "FedJobLock",     "job_requeued_in_held_state"};
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

} // namespace nvl
