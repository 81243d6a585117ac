// nvlslice — the one adapter to libslurm (public headers only).
#pragma once

#include "cluster_api.hpp"
#include "eligibility.hpp"
#include "lease.hpp"
#include "reconcile.hpp"

#include <memory>

namespace nvl {

// slurmctld knows no lease license (slurm.conf has no Licenses=...:1 for
// it): the message names the line to add.
class LeaseUnconfigured : public Error {
  public:
    explicit LeaseUnconfigured(const std::string& msg) : Error(msg) {}
};

// Slurm through libslurm: ClusterApi, and the reads only the helper and
// the tools make. Its implementation, one class in slurm_cluster.cpp, is
// the only place that says how each action (action.hpp) becomes a libslurm
// request: a new kind's call is written there, with the name its payload
// gives it.
class SlurmCluster : public ClusterApi {
  public:
    // The cluster of SLURM_CONF (libslurm's own configuration): one owner
    // of libslurm's cached messages.
    static std::unique_ptr<SlurmCluster> open();
    // The parts of read_view(), for the tools and the helper's other reads:
    // each one request (loads of nodes and jobs are incremental).
    virtual std::vector<SlurmNode> load_nodes() = 0;
    virtual std::vector<SlurmJob> load_jobs() = 0;
    // nullopt when no reservation of that name exists.
    virtual std::optional<Reservation> load_reservation(const std::string& name) = 0;
    // Several reservations in one request, in the order of `names` ("" or
    // a missing one: nullopt).
    // With `prefixed`: also every lend reservation of `prefix`
    // (lend_job_of: prefix + "_" + a job id), in the same request.
    // With `all`: every reservation, in the same request.
    virtual std::vector<std::optional<Reservation>> load_reservations(const std::vector<std::string>& names,
                                                                      const std::string& prefix = "",
                                                                      std::vector<Reservation>* prefixed = nullptr,
                                                                      std::vector<Reservation>* all = nullptr) = 0;
    // Slurm's association and QOS limits with their use, as slurmctld's
    // association manager holds them (scontrol show assoc_mgr): one request.
    virtual AcctLimits load_limits() = 0;
    // The partitions and licenses (SlurmGates; its reservations come with
    // load_reservations' `all`): two requests.
    virtual SlurmGates load_gates() = 0;

    // The lease (lease.hpp): the reservation `name`, nullopt when there is
    // none. One request.
    virtual std::optional<LeaseView> load_lease(const std::string& name) = 0;
    // Creates it: holding `license`:1, no node (ANY_NODES), root's, from
    // now until `end`, `id` in its Features. false when a lease exists
    // already (slurmctld refused the name, or the license is held by
    // another reservation); throws on any other refusal, with the fix.
    virtual bool take_lease(const std::string& name, const std::string& license, const std::string& id,
                            int64_t end) = 0;
    // Throws LeaseUnconfigured when slurmctld has no such license (its
    // slurm.conf predates the lease).
    // Moves its end; throws when slurmctld refuses (it is gone).
    virtual void renew_lease(const std::string& name, int64_t end) = 0;
    // At a clean stop: deletes it if it is still `id`'s (a standby takes
    // over at its next cycle instead of after the lease's end).
    virtual void release_lease(const std::string& name, const std::string& id) = 0;
};

} // namespace nvl
