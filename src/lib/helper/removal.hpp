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

// A reload that renames reservations of the helper's (reservation,
// gate_reservation, protect_reservation, lend_reservation): the old names
// are gathered here and deleted (their jobs taken out) only once this
// helper acts. A helper standing by (the lease is another's) or on a dry
// run deletes nothing: the active helper may still use them under those
// names. A name renamed back before that is no longer retired.
struct Renamed {
    std::vector<std::string> names;         // spares, gate, protection
    std::vector<std::string> lend_prefixes; // old lend_reservation values
    void add(const HelperConfig& old_cfg, const HelperConfig& new_cfg);
    bool empty() const { return names.empty() && lend_prefixes.empty(); }
};

// What retiring `renamed` deletes, from every reservation Slurm reports:
// each old name that exists (a standby never made its new names, which a
// reload back then lists), then each lend reservation of an old prefix
// with the job it holds (the job is taken out of it first). `job` 0: none.
struct Retire {
    std::string name;
    JobId job = 0;
};
std::vector<Retire> plan_retirement(const Renamed& renamed, const std::vector<Reservation>& reservations);

} // namespace nvl
