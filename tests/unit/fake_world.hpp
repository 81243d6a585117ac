// A cluster as Slurm would report it, and the helper's cycle over it:
// `racks` x `per_rack` nodes n001.., all idle, kept in a FakeCluster so that
// a cycle's actions change it as Slurm would (apply(), as nvlsliced
// applies them) instead of by hand.
#pragma once

#include "fake_cluster.hpp"
#include "fixtures.hpp"
#include "reconcile.hpp"

#include "catch.hpp"

namespace nvl::test {

struct FakeWorld : FakeCluster {
    RackMap map;
    HelperConfig cfg;
    HelperMemory mem;
    int64_t mono = -1; // the helper's monotonic clock; -1: the same as now
    std::optional<Reservation>& resv = reservations["nvlslice_spares"];
    std::optional<Reservation>& gate = reservations["nvlslice_gate"];
    std::optional<Reservation>& protection = reservations["nvlslice_protect"];

    explicit FakeWorld(int racks, int per_rack = 18) : map(make_map(racks, per_rack)) {
        now = 100000;
        gate = Reservation{"nvlslice_gate", ""}; // exists: no Gate action
        jobs.reserve(256);                       // tests hold references to jobs they add
        add_nodes(map);
    }
    SlurmNode& node(const std::string& n) {
        for (auto& x : nodes)
            if (x.name == n) return x;
        FAIL("no node " << n);
        return nodes.front();
    }
    SlurmJob& job(JobId id) {
        for (auto& j : jobs)
            if (j.id == id) return j;
        FAIL("no job " << id);
        return jobs.front();
    }
    // As the plugin submits it: behind the gate (gated = false: its owner
    // took the gate off, or it was written by hand).
    SlurmJob& add_slice_job(JobId id, int slice, int count, bool gated = true, bool ckpt = false) {
        jobs.push_back(slice_job(id, slice, count, ckpt, now, gated));
        return jobs.back();
    }
    // A plain (not slice) job running on `hl`.
    SlurmJob& add_plain_job(JobId id, uint32_t priority, const std::string& hl) {
        SlurmJob j;
        j.id = id;
        j.priority = priority;
        jobs.push_back(j);
        run_on(jobs.back(), hl);
        return jobs.back();
    }
    void run_on(SlurmJob& j, const std::string& hl, NodeState st = NodeState::Allocated) {
        j.state = JobState::Running;
        j.held = false;
        j.licenses.clear(); // the gate came off when it was placed
        j.nodes = hostlist_expand(hl);
        j.start_time = now - 100;
        for (auto& n : j.nodes) node(n).state = st;
    }
    // Slurm starts a pending job on the nodes it was pinned to.
    void start(SlurmJob& j) {
        REQUIRE_FALSE(j.req_nodes.empty());
        run_on(j, j.req_nodes);
        j.start_time = now;
    }
    // One cycle's decision on the view read_view() gives, with Slurm's
    // accounting limits `limits` (none: not enforced).
    CycleOutput cycle(const AcctLimits* acct = nullptr) {
        limits = acct ? std::optional<AcctLimits>(*acct) : std::nullopt;
        const ClusterRead read = read_view(ViewRequest::of(cfg, acct != nullptr));
        return reconcile(map, read.view(), cfg, now, mem, mono);
    }
    // The cycle's actions applied through the ClusterApi, then noted in the
    // helper's memory, as nvlsliced does; every action must succeed.
    void apply(const CycleOutput& out) {
        const auto failures = nvl::apply(*this, cfg, out.actions);
        for (const auto& f : failures) FAIL_CHECK(f.error);
        note_applied(mem, out.actions, failures, mono < 0 ? now : mono, now);
    }
    // One cycle, applied.
    CycleOutput step() {
        auto out = cycle();
        apply(out);
        return out;
    }
};

} // namespace nvl::test
