// Shared fixtures for the unit tests: regular maps and state helpers.
#pragma once

#include "cluster_api.hpp"
#include "hostlist.hpp"
#include "model.hpp"
#include "reconcile.hpp"
#include "sim.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace nvl {
// A log entry as nvlsliced writes it (Catch's CAPTURE and messages).
inline std::ostream& operator<<(std::ostream& os, const LogEntry& e) {
    return os << (e.severity == Severity::Warning ? "warning: " : "") << e.line();
}
} // namespace nvl

namespace nvl::test {

// `racks` domains r1..rN of `per` nodes each, nodes n001.. in order.
inline RackMap make_map(int racks, int per, int spares = 2, int gpus = 4) {
    MapDefaults defs;
    defs.spares = spares;
    defs.gpus_per_node = gpus;
    defs.default_slice = per - spares;
    RackMap map(defs);
    for (int r = 0; r < racks; ++r) {
        std::vector<std::string> names;
        for (int i = 0; i < per; ++i) names.push_back(fmt::format("n{:03d}", r * per + i + 1));
        Domain d;
        d.name = fmt::format("r{}", r + 1);
        d.spares = spares;
        d.gpus_per_node = gpus;
        map.add_domain(std::move(d), names);
    }
    return map;
}

inline NodeId id(const RackMap& m, const std::string& name) {
    return *m.find_node(name);
}

inline void set_all(Snapshot& s, const std::string& hostlist, NodeState st, JobId job = 0) {
    for (const auto& n : hostlist_expand(hostlist)) s.set(id(s.map(), n), {st, job, -1, false});
}

// Makes `busy` nodes of domain `d` allocated, starting at its first node.
inline void occupy(Snapshot& s, DomainId d, int busy, JobId job = 99) {
    const auto& nodes = s.map().domain(d).nodes;
    for (int i = 0; i < busy; ++i) s.set(nodes[size_t(i)], {NodeState::Allocated, job, -1, false});
}

inline std::string names(const RackMap& m, const std::vector<NodeId>& ids) {
    return hostlist_compress(m.node_names(ids));
}

// A slice job as the plugin submits it: tagged (slice x count nodes),
// behind the gate unless `gated` is false, submitted `age` seconds before `now`.
inline SlurmJob slice_job(JobId id, int slice, int count, bool ckpt, int64_t now, bool gated = true, int64_t age = 10,
                          int checkpoint_s = 0) {
    SlurmJob j;
    j.id = id;
    j.priority = 1000;
    j.licenses = gated ? "nvlslice_gate:1" : "";
    RequestTag t;
    t.slice = slice;
    t.count = count;
    t.nodes = slice * count;
    t.checkpointable = ckpt;
    t.checkpoint_s = checkpoint_s;
    j.comment = t.str();
    j.num_nodes = t.nodes;
    j.submit_time = now - age;
    return j;
}

// The first start of every job under the simulator's nvlslice policy on
// trace `t`, by job id (trace index + 1).
inline std::map<JobId, SimDecision> first_starts(SimParams p, const Trace& t) {
    std::map<JobId, SimDecision> out;
    p.on_decision = [&](const SimDecision& d) {
        if (d.kind == SimDecision::Start) out.emplace(d.job, d);
    };
    run_trace(p, t);
    return out;
}

} // namespace nvl::test
