#include "slurm_reason.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace nvl {

namespace {

using K = ReasonKind;

// Every name Slurm 22.05 to 26.05 gives a job's state reason (libslurm's
// job_reason_string / job_state_reason_string) but the accounting
// limits', which come by family below. Sorted by name: a binary search.
constexpr std::array<std::pair<std::string_view, ReasonKind>, 50> kNames = {{
    {"AccountNotAllowed", K::AcctLimit},
    {"AccountingPolicy", K::AcctLimit},
    {"BadConstraints", K::Blocked},
    {"BeginTime", K::BeginTime},
    {"BlockFreeAction", K::Blocked},
    {"BlockMaxError", K::Blocked},
    {"BurstBufferOperation", K::Blocked},
    {"BurstBufferResources", K::Blocked},
    {"BurstBufferStageIn", K::Blocked},
    {"Cleaning", K::LastRun},
    {"Constraints", K::Constraints},
    {"DeadLine", K::Blocked},
    {"Dependency", K::Dependency},
    {"DependencyNeverSatisfied", K::Dependency},
    {"FedJobLock", K::Blocked},
    {"FrontEndDown", K::Blocked},
    {"InactiveLimit", K::LastRun},
    {"InvalidAccount", K::AcctLimit},
    {"InvalidQOS", K::AcctLimit},
    {"JobArrayTaskLimit", K::ArrayThrottle},
    {"JobHeldAdmin", K::Held},
    {"JobHeldUser", K::Held},
    {"JobHoldMaxRequeue", K::Held},
    {"JobLaunchFailure", K::LastRun},
    {"Licenses", K::Licenses},
    {"MaxPoweredUpNodes", K::Blocked},
    {"MpiPortsBusy", K::Blocked},
    {"NodeDown", K::LastRun},
    {"NonZeroExitCode", K::LastRun},
    {"None", K::None},
    {"NvidiaImexChannels", K::Blocked},
    {"OutOfMemory", K::LastRun},
    {"PartitionConfig", K::Partition},
    {"PartitionDown", K::Partition},
    {"PartitionInactive", K::Partition},
    {"PartitionNodeLimit", K::Partition},
    {"PartitionTimeLimit", K::Partition},
    {"PowerNotAvail", K::Blocked},
    {"PowerReserved", K::Blocked},
    {"Priority", K::Priority},
    {"Prolog", K::LastRun},
    {"RaisedSignal", K::LastRun},
    {"ReqNodeNotAvail", K::NodesUnavailable},
    {"Reservation", K::Reservation},
    {"ReservationDeleted", K::Reservation},
    {"ReservationInvalid", K::Reservation},
    {"Resources", K::Resources},
    {"SchedDefer", K::LastRun},
    {"SystemFailure", K::LastRun},
    {"TimeLimit", K::LastRun},
}};

constexpr bool sorted() {
    for (size_t i = 1; i < kNames.size(); ++i)
        if (!(kNames[i - 1].first < kNames[i].first)) return false;
    return true;
}
static_assert(sorted(), "kNames must stay sorted by name");

bool starts_with(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

} // namespace

std::string_view to_string(ReasonKind k) {
    switch (k) {
    case K::None: return "none";
    case K::Priority: return "priority";
    case K::Resources: return "resources";
    case K::NodesUnavailable: return "nodes unavailable";
    case K::Constraints: return "constraints";
    case K::Licenses: return "licenses";
    case K::LastRun: return "last run";
    case K::BeginTime: return "begin time";
    case K::Dependency: return "dependency";
    case K::Held: return "held";
    case K::Partition: return "partition";
    case K::AcctLimit: return "accounting limit";
    case K::ArrayThrottle: return "array throttle";
    case K::Reservation: return "reservation";
    case K::Blocked: return "blocked";
    case K::Unknown: return "unknown";
    }
    return "unknown";
}

ReasonKind reason_kind(std::string_view name) {
    if (name.empty()) return K::None;
    auto it = std::lower_bound(kNames.begin(), kNames.end(), name,
                               [](const auto& e, std::string_view v) { return e.first < v; });
    if (it != kNames.end() && it->first == name) return it->second;
    // the accounting limits by family: every association and QOS limit
    // (AssocGrpNodeLimit, QOSMaxWallDurationPerJobLimit, QOSUsageThreshold,
    // ...) and the per-account and per-user maxima (MaxNodePerAccount,
    // MaxCpuRunMinsPerUser, MaxMemPerLimit, ...)
    if (starts_with(name, "Assoc") || starts_with(name, "QOS")) return K::AcctLimit;
    if (starts_with(name, "Max") && (name.find("PerAccount") != std::string_view::npos ||
                                     name.find("PerUser") != std::string_view::npos || name == "MaxMemPerLimit"))
        return K::AcctLimit;
    return K::Unknown; // "InvalidReason" (libslurm's own unknown), a number, a later Slurm's name
}

bool refuses_updates(std::string_view name) {
    return name == "PartitionInactive";
}

bool holds_back(ReasonKind k) {
    switch (k) {
    case K::None:
    case K::Priority:
    case K::Resources:
    case K::NodesUnavailable:
    case K::Constraints:
    case K::Licenses:
    case K::LastRun: return false;
    case K::BeginTime:
    case K::Dependency:
    case K::Held:
    case K::Partition:
    case K::AcctLimit:
    case K::ArrayThrottle:
    case K::Reservation:
    case K::Blocked:
    case K::Unknown: return true;
    }
    return true;
}

} // namespace nvl
