// nvlslice — which nvlsliced acts when Slurm runs a backup controller.
//
// Each controller host may run a helper (the lock is per host), and two
// helpers acting on the same jobs would fight. The one that acts is the
// one on the host of the slurmctld in control, by Slurm's own rule: the
// first SlurmctldHost, in slurm.conf's order, that answers a ping (a
// backup takes control when the ones before it stop answering, and gives
// it back when the primary returns). The others stand by: they read
// nothing, change nothing and keep serving their metrics.
//
// Its limit: during a takeover both controllers may answer for a moment,
// and a helper whose own slurmctld is up but cut off from the other host
// acts with it, as that slurmctld itself does (Slurm has the same window).
// With one SlurmctldHost (no backup) there is no choice: the helper acts
// wherever it runs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nvl {

struct ControllerRole {
    bool active = true;
    std::string why; // for the log: who is in control, and where
};

// `hosts`: SlurmctldHost names in slurm.conf's order; `answers`: which of
// them answered a ping now; `my_names`: this host's names (its hostname,
// short and long). Names are compared without their domain, ignoring case.
ControllerRole controller_role(const std::vector<std::string>& hosts, const std::vector<bool>& answers,
                               const std::vector<std::string>& my_names);

} // namespace nvl
