// nvlslice — the one adapter to libslurm (public headers only).
#pragma once

#include "cluster_api.hpp"
#include "eligibility.hpp"

#include <memory>

namespace nvl {

class SlurmCluster final : public ClusterApi {
  public:
    SlurmCluster();
    ~SlurmCluster() override;
    // One owner of libslurm's cached messages: not copied.
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;
    std::vector<SlurmNode> load_nodes() override;
    std::vector<SlurmJob> load_jobs() override;
    std::optional<Reservation> load_reservation(const std::string& name) override;
    // Several reservations in one request, in the order of `names` ("" or
    // a missing one: nullopt).
    std::vector<std::optional<Reservation>> load_reservations(const std::vector<std::string>& names);
    // Slurm's association and QOS limits with their use, as slurmctld's
    // association manager holds them (scontrol show assoc_mgr): one request.
    AcctLimits load_limits();
    void pin_job(JobId id, const std::string& nodes, int64_t start_at) override;
    void set_admin_comment(JobId id, const std::string& text) override;
    void hold(JobId id) override;
    void release(JobId id) override;
    void requeue_hold(JobId id) override;
    void requeue(JobId id) override;
    void allow_requeue(JobId id) override;
    void exclude_nodes(JobId id, const std::string& nodes, int64_t start_at) override;
    void set_licenses(JobId id, const std::string& licenses) override;
    void set_reservation(const std::string& name, const std::string& nodes, int64_t start_at, int64_t end_at) override;
    void ensure_gate(const std::string& reservation, const std::string& license) override;
    void set_node_weight(const std::string& nodes, uint32_t weight) override;
    void set_active_features(const std::string& nodes, const std::string& features) override;
    void set_node_down(const std::string& node, const std::string& reason) override;

  private:
    struct Cache;                  // frees the messages it holds
    std::unique_ptr<Cache> cache_; // last node/job messages: loads are incremental (update_time)
};

} // namespace nvl
