// nvlsliced — Prometheus text-format metrics on a localhost port.
#pragma once

#include "helper_config.hpp"
#include "reconcile.hpp"

#include <atomic>
#include <chrono>
#include <functional>
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
// (reset) costs only its own connection, never the helper. A port taken
// when the helper starts is not fatal: the server says so (through `warn`,
// once) and binds when the port is free. One source address never holds
// more than kMaxPerSource connections, so a burst from one host cannot
// push out another's scraper. A process out of descriptors (EMFILE) makes
// it pause its accepts, not spin.
class MetricsServer {
  public:
    static constexpr size_t kMaxClients = 16;  // beyond it, the oldest silent client of the busiest source goes
    static constexpr size_t kMaxPerSource = 8; // beyond it, that source's own oldest silent client goes
    static constexpr std::chrono::milliseconds kClientTimeout{5000}; // to send its request, then to read the answer
    static constexpr std::chrono::milliseconds kRetryBind{2000};     // a taken port, tried again
    static constexpr std::chrono::milliseconds kAcceptPause{500};    // out of descriptors: accepts paused

    using Warn = std::function<void(const std::string&)>;
    // Throws nvl::Error for an address it can never bind (not IPv4).
    MetricsServer(const Metrics& m, const ListenAddress& listen, Warn warn = {});
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;
    // The port it listens on; 0 while its port is taken.
    int port() const { return port_; }
    const std::string& host() const { return host_; }

  private:
    bool try_bind(); // the serving thread's, and the constructor's
    void serve();
    const Metrics& metrics_;
    ListenAddress listen_;
    Warn warn_;
    int fd_ = -1;
    std::atomic<int> port_{0};
    std::string host_;
    std::string last_bind_error_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace nvl
