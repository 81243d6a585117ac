// nvlslice — Slurm's pending reasons, decoded by what they mean to the
// helper. The adapter names a job's reason with libslurm's own table (the
// name squeue prints); this file sorts every name Slurm 22.05 to 26.05
// gives into kinds, which the policy matches (eligibility.hpp). A name
// this table does not know (a later Slurm's) is Unknown: held back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace nvl {

enum class ReasonKind : uint8_t {
    None,             // not looked at yet, or reset by an update of the job
    Priority,         // behind jobs of a higher priority
    Resources,        // waits for nodes
    NodesUnavailable, // ReqNodeNotAvail: nodes it asks for are down, drained or reserved
    Constraints,      // nodes with the features it asks for are busy now
    Licenses,         // a license it asks for is short (the gate's, in gate mode)
    LastRun,          // why its last run ended, or its requeue in progress (NodeDown, Cleaning, Prolog, ...)
    BeginTime,        // its begin time lies ahead
    Dependency,       // a dependency not yet satisfied (or never: DependencyNeverSatisfied)
    Held,             // held by its owner or an admin, or requeued held
    Partition,        // its partition is down or inactive, or the job is outside its limits
    AcctLimit,        // an association or QOS limit, the accounting policy
    ArrayThrottle,    // its array's task limit (%N)
    Reservation,      // its reservation has not started, or is gone
    Blocked,          // any other reason Slurm holds it back for (burst buffer, power, IMEX channels, ...)
    Unknown,          // a name this table does not know: held back, and logged
};

std::string_view to_string(ReasonKind k);

// The kind of a reason by its name as libslurm spells it ("" = None).
ReasonKind reason_kind(std::string_view name);

// Whether Slurm holds a pending job back for a reason of this kind,
// whatever nvlslice does: the kinds nvlslice's gate, pins and reservations
// can cause (None, Priority, Resources, NodesUnavailable, Constraints,
// Licenses) and those of a requeue (LastRun) are not.
// BeginTime counts only for a job's first start (eligibility.hpp).
bool holds_back(ReasonKind k);

// Whether slurmctld refuses every update of a job waiting for this reason
// (its partition INACTIVE: "PartitionInactive"), so that the helper
// writes nothing to it until the reason changes.
bool refuses_updates(std::string_view name);

// A job's pending reason: its name (for logs and records) and its kind
// (for the policy), decoded once where it is made.
class PendingReason {
  public:
    PendingReason() = default;
    PendingReason(std::string name) : name_(std::move(name)), kind_(reason_kind(name_)) {} // NOLINT: implicit
    PendingReason(const char* name) : PendingReason(std::string(name ? name : "")) {}      // NOLINT: implicit
    const std::string& name() const { return name_; }
    ReasonKind kind() const { return kind_; }
    bool is(ReasonKind k) const { return kind_ == k; }
    bool refuses_updates() const { return nvl::refuses_updates(name_); }

  private:
    std::string name_;
    ReasonKind kind_ = ReasonKind::None;
};

} // namespace nvl
