// nvlsliced — its own probe of the slurmds under running jobs: a TCP
// connection to each node's slurmd port (NodeAddr, Port from Slurm's node
// table, never from a job), every second, from a thread of its own, so
// that a node that has gone silent (a kernel panic, power loss, a dead
// link: the connection times out) or whose slurmd is gone (refused) is
// known in seconds, where slurmctld notices only at its next ping and
// marks it DOWN after SlurmdTimeout. The cycle reads for how long each
// node has gone unanswered (SlurmNode::unanswered_s); the core decides
// (judge_silent(), silent_after).
//
// Cost: one connect, and its reset, per probed node and round; nothing is
// sent (slurmd sees a connection that closes at once). Probed in batches
// of kBatch descriptors, each batch waiting at most the round's timeout.
// Measured (nvl-bench --only probe, loopback): about 23 us of CPU per node
// and round, 5 % of one core for 2,304 nodes at a round a second; the pace
// (pace_ms()) keeps it under a tenth of a core at any size.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <netinet/in.h>

namespace nvl {

struct ProbeTarget {
    std::string name; // the node
    std::string addr; // its NodeAddr: an IPv4 or IPv6 address, or a name
    uint16_t port = 0;
    bool operator==(const ProbeTarget& o) const { return name == o.name && addr == o.addr && port == o.port; }
};

// One round's outcome per target, in the targets' order.
enum class ProbeResult : uint8_t { Answered, Refused, TimedOut, Unresolved };

// One round over `targets`: a non-blocking connect to each, all of a batch
// in flight at once, each waited for at most `timeout` (milliseconds).
// Addresses are resolved through `cache` (a name is looked up once).
std::vector<ProbeResult> probe_round(const std::vector<ProbeTarget>& targets, int timeout_ms,
                                     std::unordered_map<std::string, sockaddr_storage>& cache);

class SlurmdProbe {
  public:
    // interval and timeout in milliseconds
    SlurmdProbe(int interval_ms, int timeout_ms);
    ~SlurmdProbe();
    SlurmdProbe(const SlurmdProbe&) = delete;
    SlurmdProbe& operator=(const SlurmdProbe&) = delete;

    // The nodes to probe from the next round on (those of running jobs).
    void set_targets(std::vector<ProbeTarget> targets);
    // Seconds each probed node has gone unanswered: from its first
    // unanswered probe, once two probes in a row went unanswered (0: it
    // answered at the last round, or only one probe has failed, or it is
    // new); nodes not probed are absent. Two in a row: a round may come
    // seconds apart on a large cluster (below), and one lost connection
    // is no silence.
    struct Silence {
        int64_t s = 0;        // seconds unanswered (as above)
        bool refused = false; // the last unanswered probe was refused: slurmd is gone, its host answers
    };
    std::unordered_map<std::string, Silence> unanswered() const;
    // The pace: a round every interval, or, where a round costs more than
    // a tenth of that in CPU time (tens of thousands of nodes), every ten
    // times its CPU time: the probe takes at most a tenth of one core.
    int64_t pace_ms() const;
    // What the rounds cost so far: rounds, probes, and the thread's CPU
    // time in seconds (for the metrics and the log).
    struct Cost {
        uint64_t rounds = 0;
        uint64_t probes = 0;
        double cpu_s = 0;
    };
    Cost cost() const;

  private:
    void run();
    using Clock = std::chrono::steady_clock;
    const int interval_ms_;
    const int timeout_ms_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<ProbeTarget> targets_;
    struct Seen {
        Clock::time_point first_fail{}; // of the current run of unanswered probes
        int fails = 0;                  // unanswered probes in a row
        bool refused = false;           // the last of them refused (else timed out, unresolved)
    };
    std::unordered_map<std::string, Seen> seen_; // by node
    int64_t pace_ms_;
    Cost cost_;
    bool stop_ = false;
    std::thread thread_;
};

} // namespace nvl
