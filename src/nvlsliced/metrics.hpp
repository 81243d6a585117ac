// nvlsliced — Prometheus text-format metrics on a localhost port.
#pragma once

#include "helper_config.hpp"
#include "reconcile.hpp"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nvl {

// Where a cycle's time went: reading Slurm, deciding, asking Slurm.
struct CyclePhases {
    double load = 0, decide = 0, apply = 0;
    size_t actions = 0; // RPCs asked for
};

class Metrics {
  public:
    void add_cycle(const CycleStats& s, double seconds, bool failed, const CyclePhases& phases = {});
    // The racks' names, in map order (at start and after a reload).
    void set_racks(std::vector<std::string> names);
    std::string render() const;

  private:
    mutable std::mutex mu_;
    double placements_ = 0, repairs_ = 0, moves_ = 0, preemptions_ = 0, unrepairable_ = 0, errors_ = 0;
    double requeued_to_wait_ = 0, held_ = 0;
    double evacuations_ = 0;
    std::vector<std::string> rack_names_;
    std::vector<CycleStats::Rack> racks_;
    double cycles_ = 0, cycle_sum_ = 0, cycle_last_ = 0, cycle_max_ = 0;
    CyclePhases phase_sum_;
    std::map<std::string, int> pending_;
};

// Serves GET /metrics (and /) on host:port from a thread of its own, to
// several clients at once: a client that is slow, silent or gone away
// (reset) costs only its own connection, never the helper.
class MetricsServer {
  public:
    static constexpr size_t kMaxClients = 16;                        // beyond it, the oldest silent client is let go
    static constexpr std::chrono::milliseconds kClientTimeout{5000}; // to send its request, then to read the answer

    MetricsServer(const Metrics& m, const ListenAddress& listen); // throws nvl::Error
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;
    int port() const { return port_; }
    const std::string& host() const { return host_; }

  private:
    void serve();
    const Metrics& metrics_;
    int fd_ = -1;
    int port_ = 0;
    std::string host_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace nvl
