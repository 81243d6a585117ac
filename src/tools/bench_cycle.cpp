#include "bench_cycle.hpp"

#include "hostlist.hpp"
#include "placement.hpp"
#include "report.hpp"
#include "slice_job.hpp"

#include <algorithm>
#include <random>
#include <unordered_map>

namespace nvl::bench {

namespace {

constexpr int64_t kNow = 1700000000;

SlurmJob slice_job(JobId id, int slice, int count, bool ckpt) {
    SlurmJob j;
    j.id = id;
    RequestTag t;
    t.slice = slice;
    t.count = count;
    t.nodes = slice * count;
    t.checkpointable = ckpt;
    j.comment = t.str();
    j.num_nodes = t.nodes;
    return j;
}

} // namespace

CycleScenario make_cycle_scenario(const RackMap& map, int pending, uint64_t seed) {
    std::mt19937_64 g(seed);
    CycleScenario sc;
    const int racks = int(map.domains().size());
    sc.nodes.resize(map.node_count());
    for (NodeId id = 0; id < map.node_count(); ++id) {
        sc.nodes[id].name = map.node_name(id);
        sc.nodes[id].state = NodeState::Idle;
    }
    JobId next = 1000;
    int rack = 0;
    std::vector<std::string> spares;
    // Running slice jobs: 16 nodes of each rack, its last 2 nodes spares.
    auto run_slices = [&](int count) {
        if (rack + count > racks) return;
        SlurmJob j = slice_job(next++, 16, count, false);
        PlacementRecord rec;
        rec.slice = 16;
        for (int r = rack; r < rack + count; ++r) {
            const Domain& d = map.domain(DomainId(r));
            std::vector<NodeId> ids(d.nodes.begin(), d.nodes.begin() + std::min(16, d.size()));
            std::vector<std::string> names = map.node_names(ids);
            rec.slices.push_back(hostlist_compress(names));
            for (NodeId id : ids) sc.nodes[id].state = NodeState::Allocated;
            j.nodes.insert(j.nodes.end(), names.begin(), names.end());
            for (size_t i = 16; i < d.nodes.size(); ++i) spares.push_back(map.node_name(d.nodes[i]));
        }
        j.state = JobState::Running;
        j.held = false;
        j.admin_comment = rec.str();
        j.submit_time = kNow - 86400;
        j.start_time = kNow - 3600;
        sc.largest_job = std::max(sc.largest_job, int(j.nodes.size()));
        sc.jobs.push_back(std::move(j));
        ++sc.running_slice_jobs;
        rack += count;
    };
    run_slices(128);
    for (int i = 0; i < 4; ++i) run_slices(32);
    for (int i = 0; i < 16; ++i) run_slices(8);
    while (rack < racks * 2 / 5) run_slices(1);
    // Plain jobs (1-4 nodes) fill ~90 % of the other racks; every 100th
    // rack stays empty, so that a few waiting jobs can start each cycle.
    for (int r = rack; r < racks; ++r) {
        if (r % 100 == 99) continue;
        const Domain& d = map.domain(DomainId(r));
        for (size_t i = 0; i < d.nodes.size();) {
            const size_t len = 1 + g() % 4;
            if (g() % 10 == 0) {
                ++i;
                continue;
            }
            SlurmJob j;
            j.id = next++;
            j.state = JobState::Running;
            j.submit_time = kNow - 7200;
            j.start_time = kNow - 1800;
            for (size_t k = i; k < std::min(d.nodes.size(), i + len); ++k) {
                j.nodes.push_back(map.node_name(d.nodes[k]));
                sc.nodes[d.nodes[k]].state = NodeState::Allocated;
            }
            j.num_nodes = int(j.nodes.size());
            i += len;
            sc.jobs.push_back(std::move(j));
        }
    }
    // Waiting slice jobs, held by the plugin (a user hold the first cycle
    // turns into an admin hold).
    static const std::pair<int, double> mix[] = {{1, .50}, {2, .20}, {4, .15}, {8, .10}, {32, .04}, {128, .01}};
    for (int i = 0; i < pending; ++i) {
        double u = double(g() >> 11) / 9007199254740992.0, acc = 0;
        int count = 1;
        for (auto [c, w] : mix) {
            acc += w;
            count = c;
            if (u < acc) break;
        }
        // not checkpointable: the baseline does not lend spares, and both
        // sides must make the same decisions
        SlurmJob j = slice_job(next++, 16, count, false);
        j.state = JobState::Pending;
        j.licenses = "nvlslice_gate:1"; // behind the gate, as the plugin submits it
        j.priority = uint32_t(100000 - i);
        j.submit_time = kNow - 3600 + i;
        sc.jobs.push_back(std::move(j));
    }
    sc.pending = pending;
    sc.spares = Reservation{"nvlslice_spares", hostlist_compress(spares)};
    return sc;
}

void settle(CycleScenario& sc, const CycleOutput& first) {
    std::unordered_map<JobId, SlurmJob*> by_id;
    for (auto& j : sc.jobs) by_id[j.id] = &j;
    for (const auto& a : first.actions) {
        if (auto r = a.get<action::SetReservation>()) {
            sc.spares = Reservation{"nvlslice_spares", r->nodes};
            continue;
        }
        auto it = by_id.find(a.job);
        if (it == by_id.end()) continue;
        if (auto r = a.get<action::SetRecord>())
            it->second->admin_comment = with_record(it->second->admin_comment, r->text);
        if (a.get<action::Hold>()) it->second->held = it->second->admin_held = true;
        if (auto l = a.get<action::SetLicenses>()) it->second->licenses = l->licenses;
    }
}

int baseline_cycle(const RackMap& map, const CycleScenario& sc) {
    Snapshot snap = snapshot_from_slurm(map, sc.nodes, sc.jobs, sc.spares);
    std::vector<const SlurmJob*> waiting;
    for (const auto& j : sc.jobs)
        if (j.state == JobState::Pending && !j.held) waiting.push_back(&j);
    std::sort(waiting.begin(), waiting.end(),
              [](const SlurmJob* a, const SlurmJob* b) { return a->priority > b->priority; });
    int placed = 0;
    for (const SlurmJob* j : waiting) {
        std::optional<RequestTag> tag = RequestTag::parse(j->comment);
        if (!tag) continue;
        SliceRequest req;
        req.job_id = j->id;
        req.slice_size = tag->slice;
        req.slice_count = tag->count;
        PlacementResult r = place_naive(snap, req);
        if (!r.ok) continue;
        for (NodeId id : r.placement.nodes()) snap.set(id, {NodeState::Allocated, j->id, -1, false});
        ++placed;
    }
    return placed;
}

} // namespace nvl::bench
