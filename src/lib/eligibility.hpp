// Whether Slurm itself would start a pending job, as far as the job's own
// fields say: the helper places, pins, ungates and protects only jobs whose
// sole obstacles are the gate, priority or resources. A job Slurm holds
// back (a dependency, a begin time, an accounting or partition limit, a
// hold, an array throttle, a reservation it cannot use) stays behind the
// gate, untouched. Pure: no Slurm header, no clock.
#pragma once

#include "cluster_api.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace nvl {

// Slurm's pending reasons that say Slurm itself holds the job back, whatever
// the gate does (slurmctld sets them before it tests licenses or places:
// job_independent, job_limits_check, the accounting policy). Reasons the
// gate or nvlslice's own reservations can cause (Licenses, Resources,
// Priority, ReqNodeNotAvail, Reservation, None) are not among them.
bool reason_holds_back(std::string_view reason);

// Why Slurm would not start `j` now for a reason of its own (nullopt: only
// the gate, priority or resources stand in the way). `now` in epoch
// seconds. A StartTime ahead counts as a begin time only when Slurm's
// reason says so (or the job has no reason yet): it is also the start the
// scheduler expects for a job waiting for nodes. A job that ran before (requeued) has a begin time Slurm set
// for the requeue, which a repair may bring forward: only a first start's
// begin time is the user's.
std::optional<std::string> held_back_by_slurm(const SlurmJob& j, int64_t now);

} // namespace nvl
