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
#include <vector>

namespace nvl {

struct AcctLimits;

// Why Slurm would not start a job now, as the policy reads it: the kind of
// Slurm's reason (what the policy matches) and its text for logs and
// records, Slurm's reason name first as squeue prints it, then what it is
// about ("PartitionDown (partition batch)").
struct HeldBack {
    ReasonKind kind = ReasonKind::Unknown;
    std::string text;
    // Slurm refuses every update of the job while this holds (its
    // partition is INACTIVE): its record cannot be written either
    bool updates_refused = false;
    // One the helper wrote down earlier (a record's reason): its first word
    // decoded again by Slurm's reason table.
    static HeldBack from_text(std::string text);
};

// Whether a reason, by its name, says Slurm itself holds the job back
// (holds_back(reason_kind(name))): for the tools and tests; the policy
// reads the job's decoded kind.
bool reason_holds_back(std::string_view reason);

// Why Slurm would not start `j` now for a reason of its own (nullopt: only
// the gate, priority or resources stand in the way). `now` in epoch
// seconds. A StartTime ahead counts as a begin time only when Slurm's
// reason says so (or the job has no reason yet): it is also the start the
// scheduler expects for a job waiting for nodes. A job that ran before (requeued) has a begin time Slurm set
// for the requeue, which a repair may bring forward: only a first start's
// begin time is the user's.
// Licenses is Slurm's own reason for a job without the gate license
// (`gate_license`; native mode, or a job the gate is off).
std::optional<HeldBack> held_back_by_slurm(const SlurmJob& j, int64_t now, std::string_view gate_license = {});

// What Slurm tests before it starts a job and its reason may hide (the
// gate's Licenses in gate mode; None before the scheduler's first look;
// any other reason says Slurm tested them): its partition's state and
// limits (job_limits_check), the licenses it asks for besides the gate's,
// a reservation of its own not started yet, its array's throttle
// (`array_running`: tasks of its array running now). Named as Slurm names
// the reason (PartitionDown, Licenses, ...), or nullopt. The partition's
// node and time limits count only where the job's QOS is known not to
// lift them (`limits`, with the QOS flags; a job without a QOS: no
// accounting, nothing lifts them): else Slurm's reason says, later.
std::optional<HeldBack> held_back_by_gates(const SlurmJob& j, const SlurmGates& g, int array_running,
                                           std::string_view gate_license, int64_t now,
                                           const AcctLimits* limits = nullptr);

// Slurm's accounting limits and their use as slurmctld holds them
// (scontrol show assoc_mgr), for the limits Slurm tests only when it places
// a job: the usage-based TRES and job counts (acct_policy's post-select
// test). Behind the gate license on Slurm 22.05 no reason shows them, and
// on 24.11+ only once the job was tried. -1: no limit.
//
// Every TRES limit (GrpTRES, MaxTRES per job, MaxTRESPerUser) is a vector
// in the order of `tres_names`, as slurmctld sends them (positions 0-4:
// cpu, mem, energy, node, billing; then gres/gpu, license/x, ...); an empty
// vector: no limit on any. Memory in MB.
struct AcctLimits {
    struct Assoc {
        uint32_t id = 0, parent = 0;
        std::string acct, user; // user "" for an account's association
        int64_t grp_nodes = -1, grp_jobs = -1, max_jobs = -1, max_nodes_per_job = -1;
        int64_t used_nodes = 0, used_jobs = 0; // running jobs, of it and below it
        int64_t max_wall_s = -1;               // MaxWall (per job), seconds
        std::vector<int64_t> grp_tres, max_tres_pj, used_tres;
    };
    struct Use {
        uint32_t uid = 0;
        int64_t nodes = 0, jobs = 0;
        std::vector<int64_t> tres;
    };
    struct Qos {
        std::string name;
        int64_t grp_nodes = -1, grp_jobs = -1, max_nodes_per_user = -1, max_jobs_per_user = -1, max_nodes_per_job = -1;
        int64_t max_wall_s = -1; // MaxWall (per job), seconds
        int64_t used_nodes = 0, used_jobs = 0;
        std::vector<int64_t> grp_tres, max_tres_pj, max_tres_pu, used_tres;
        std::vector<Use> users; // per user, in this QOS
        // its PartitionMaxNodes, PartitionMinNodes or PartitionTimeLimit
        // flag: a job in it is not held to its partition's limits
        bool lifts_partition_limits = false;
    };
    std::vector<std::string> tres_names;
    std::vector<Assoc> assocs; // sorted by id (the adapter sorts them)
    std::vector<Qos> qos;
    // The association `id` (a binary search), or nullptr.
    const Assoc* assoc(uint32_t id) const;
};

// A job's TRES request (SlurmJob::tres_req, "cpu=16,mem=64G,gres/gpu=64")
// item by item, in place: the next well-formed item of `s` into `out`, `s`
// moved past it; false at the end. "mem" in MB (its K, M, G, T or P suffix
// read), the others as written; malformed items are skipped.
struct TresCount {
    std::string_view name;
    int64_t count = 0;
};
bool next_tres_item(std::string_view& s, TresCount& out);

// Which limit keeps Slurm from starting `j` with its nodes now, named as
// Slurm names its reason (AssocGrpNodeLimit, QOSMaxNodePerUserLimit, ...),
// or nullopt. A QOS limit takes the place of the association's limit of the
// same kind, as in Slurm (acct_policy_set_qos_order without OverPartQOS).
std::optional<HeldBack> held_back_by_limits(const SlurmJob& j, const AcctLimits& a);

// Whether the helper needs Slurm's accounting limits for `j` this cycle: a
// pending job behind the gate (gate mode: the gate hides the limit's
// reason) or a pending slice job (native mode: Slurm's reason may not be
// set yet, and the helper's first record of the job would reset it).
bool needs_limits(const SlurmJob& j, std::string_view gate_license);

} // namespace nvl
