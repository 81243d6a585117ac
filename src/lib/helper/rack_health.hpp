// nvlslice — rack-level failures. One node's contained error can take its
// whole NVLink domain down, and a rack that lost more nodes than it keeps
// spares can no longer repair its slices in place. Such a rack is
// *degraded*, as a whole:
//   - its failed nodes (draining, drained, down) outnumber its spares, or
//   - a failed node's Slurm reason matches the rack-scope pattern
//     (nvlsliced's rack_failure_reasons, e.g. "contained|NVLink fabric").
// A degraded rack takes no new slice and repairs no slice inside it
// (domain_room() is 0, plan_repair() looks elsewhere); the helper moves its
// slice jobs to healthy racks, checkpointable jobs first, and places there
// again once the rack recovers (its nodes resumed).
#pragma once

#include "cluster_api.hpp"
#include "model.hpp"
#include "node_set.hpp"

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace nvl {

// Why a rack is degraded (nullopt: it is not). `reasons`: each node's Slurm
// reason by NodeId ("" = none); `rack_scope`: the pattern, or none.
std::optional<std::string> rack_degraded_why(const Snapshot& snap, DomainId d, const std::vector<std::string>& reasons,
                                             const std::optional<std::regex>& rack_scope);

// Judges every rack and marks the degraded ones in `snap`
// (Snapshot::set_degraded). Returns how many are degraded.
int mark_degraded_racks(Snapshot& snap, const std::vector<std::string>& reasons,
                        const std::optional<std::regex>& rack_scope);

// One rack's nodes counted, as the metrics show them.
struct RackStats {
    int free = 0;        // idle, outside the spare reservation
    int spare = 0;       // in the spare reservation, idle
    int lent = 0;        // running preemptible work that a repair takes back
    int slice_nodes = 0; // running a slice job
    int failed = 0;      // draining, drained, down
    int room = 0;        // free nodes a new slice may take (spares kept)
    bool degraded = false;
};

// The rack-health stage: its verdicts on a snapshot whose degraded racks
// are marked (mark_degraded_racks()). `before`: each rack's reason as the
// last cycle judged it ("" = healthy; shorter than the racks: healthy).
struct RackVerdicts {
    struct Change {
        DomainId domain = 0;
        std::string why; // degraded, and why; "" = recovered
    };
    std::vector<RackStats> stats; // by DomainId
    std::vector<Change> changes;  // the racks judged otherwise than `before`, in rack order
    NodeSet out_of_service;       // every node of the degraded racks
};
RackVerdicts judge_racks(const Snapshot& snap, const std::vector<std::string>& before);

// Silent nodes: flagged NOT_RESPONDING by slurmctld (not yet DOWN), or
// unanswered by the helper's own probe of their slurmd: how long each has
// been so, and which to drain and mark DOWN now, so that Slurm lets go of
// their jobs and the repair of a DOWN node follows. Only a node of a
// running slice job (`runs_slice_job`) is: NOT_RESPONDING for `after_s`
// (repair_not_responding_after; 0 = off), or unanswered for `probe_after_s`
// (silent_after; 0 = off). `since`: when each node was first seen
// NOT_RESPONDING (monotonic seconds), from the last cycle.
struct SilentNodes {
    std::unordered_map<std::string, int64_t> since; // the nodes silent now, for the next cycle
    struct Down {
        std::string node;
        JobId job = 0;        // the slice job on it
        int64_t silent_s = 0; // for how long
        bool probe = false;   // found by the helper's probe (else slurmctld's NOT_RESPONDING)
        // Its host does not answer at all (the probe timed out, or slurmctld
        // flagged it): others' connections to it wait TCPTimeout per try.
        bool host_silent = true;
    };
    std::vector<Down> down; // to drain and mark DOWN, in Slurm's node order
    // A node of a running slice job has gone unanswered by the probe (two
    // probes in a row), not yet for probe_after_s: its verdict is due within
    // seconds, and the cycle that gives it should come then, not up to a
    // cycle later.
    bool suspect = false;
};
SilentNodes judge_silent(const RackMap& map, const std::vector<SlurmNode>& nodes, const Snapshot& snap,
                         const std::unordered_map<std::string, int64_t>& since, int64_t mono, int64_t after_s,
                         int64_t probe_after_s, const std::function<bool(JobId)>& runs_slice_job);

// What nvlsliced says at its start when repair_not_responding_after
// (`after_s`) would repair a healthy node: slurmctld flags a node
// NOT_RESPONDING after one failed ping, and at TCPTimeout 1 s
// (`tcp_timeout_s`) one lost SYN fails it; the flag stays until the next
// ping, a third of SlurmdTimeout (`slurmd_timeout_s`) later. None when
// the setting is off, TCPTimeout is 2 s or more, or `after_s` outlasts the
// ping interval.
std::optional<std::string> not_responding_warning(int64_t after_s, int tcp_timeout_s, int slurmd_timeout_s);

// Each map node's Slurm reason, by NodeId.
std::vector<std::string> node_reasons(const RackMap& map, const std::vector<SlurmNode>& nodes);

// A reason pattern (rack_failure_reasons, repair_drain_reasons) as the
// helper compiles it (ECMAScript, case-insensitive, searched in the
// reason); none when `pattern` is empty. Throws nvl::Error naming `origin`
// on a bad pattern.
std::optional<std::regex> reason_regex(const std::string& pattern, const std::string& origin);

} // namespace nvl
