// nvlslice — taking nvlslice out of a running cluster (nvlsliced --remove).
// What the helper left in Slurm, undone from what Slurm reports: each job's
// gate license, the helper's hold, its pin (ReqNodeList or ExcNodeList) and
// its record, then every reservation it made (spares, gate, protection,
// lends, the lease). Node weights go back to slurm.conf's with the
// `scontrol reconfigure` that follows (doc/admin-guide.txt, REMOVAL).
// Pure: no Slurm header.
#pragma once

#include "action.hpp"
#include "cluster_api.hpp"
#include "reconcile.hpp"

#include <string>
#include <vector>

namespace nvl {

struct Removal {
    std::vector<Action> actions; // the jobs' first, then the reservations'
    int jobs = 0;                // jobs with anything of nvlslice's on them
    std::vector<std::string> reservations;
    // jobs a repair requeued whose old run still completes: the helper's
    // hold and pin land on them a moment later; --remove runs again then
    std::vector<JobId> completing;
};

// `jobs`: every job Slurm reports; `reservations`: every reservation;
// `lease_reservation`: the lease's name ("" = none).
Removal plan_removal(const std::vector<SlurmJob>& jobs, const std::vector<Reservation>& reservations,
                     const HelperConfig& cfg, const std::string& lease_reservation);

} // namespace nvl
