// nvl-bench — placement latency of the engine against a naive baseline, in
// the same process on the same snapshots.
//
// Scenario (issue: core library): a fragmented 1,400-rack x 18-node cluster
// (25,200 nodes): small jobs scattered rack-blind over ~50 % of the nodes,
// then ~2 % of the racks emptied. Each decision places a 4 x 16-node strict
// slice job. The baseline recounts every node of the cluster for every
// slice (what a scheduler without per-domain counts does). Both must return
// the same placement; the figures are per decision, in microseconds.
#include "cli.hpp"
#include "placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

using namespace nvl;
using Clock = std::chrono::steady_clock;

namespace {

double pct(std::vector<double>& v, double p) {
    std::sort(v.begin(), v.end());
    size_t i = std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5));
    return v[i];
}

template <class F> std::vector<double> measure(int n, int snapshots, F&& f) {
    std::vector<double> us;
    us.reserve(size_t(n));
    for (int i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        f(i % snapshots);
        auto t1 = Clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return us;
}

} // namespace

int main(int argc, char** argv) {
    try {
        cli::Options o(argc, argv,
                       {{"json", false},
                        {"racks", true},
                        {"nodes-per-rack", true},
                        {"decisions", true},
                        {"baseline-decisions", true},
                        {"seed", true},
                        {"help", false}});
        if (o.has("help")) {
            std::puts("usage: nvl-bench [--json] [--racks 1400] [--nodes-per-rack 18] [--decisions 10000]\n"
                      "                 [--baseline-decisions 2000] [--seed 42]");
            return 0;
        }
        const int racks = int(o.integer("racks", 1400, 1, 100000));
        const int per = int(o.integer("nodes-per-rack", 18, 3, 4096));
        const int decisions = int(o.integer("decisions", 10000, 100, 10000000));
        const int base_decisions = int(o.integer("baseline-decisions", 2000, 100, 10000000));
        const uint64_t seed = uint64_t(o.integer("seed", 42, 0, 1L << 62));

        RackMap map = regular_map(racks, per, 2);
        // A handful of different fragmented states, visited in turn.
        const int nsnap = 8;
        std::vector<std::unique_ptr<Snapshot>> snaps;
        int idle_racks = std::max(1, racks / 50);
        for (int s = 0; s < nsnap; ++s) {
            snaps.push_back(std::make_unique<Snapshot>(map));
            cli::scatter_jobs(*snaps.back(), 0.50, seed + uint64_t(s), idle_racks);
        }
        SliceRequest req;
        req.job_id = 7;
        req.slice_size = 16;
        req.slice_count = 4;

        // Same answers first: the speed-up compares equal work.
        int fitting_racks = 0;
        for (int s = 0; s < nsnap; ++s) {
            PlacementResult a = place(*snaps[size_t(s)], req), b = place_naive(*snaps[size_t(s)], req);
            if (!a.ok || !b.ok || a.placement.nodes() != b.placement.nodes()) {
                std::fprintf(stderr, "nvl-bench: engine and baseline disagree on snapshot %d (%s / %s)\n", s,
                             a.detail.c_str(), b.detail.c_str());
                return 1;
            }
            for (DomainId d = 0; d < map.domains().size(); ++d) fitting_racks += snaps[size_t(s)]->counts(d).free >= 18;
        }
        size_t sink = 0;
        // warm-up
        for (int i = 0; i < 200; ++i) sink += place(*snaps[size_t(i % nsnap)], req).placement.slices.size();
        auto engine =
            measure(decisions, nsnap, [&](int s) { sink += place(*snaps[size_t(s)], req).placement.slices.size(); });
        auto naive = measure(base_decisions, nsnap,
                             [&](int s) { sink += place_naive(*snaps[size_t(s)], req).placement.slices.size(); });
        // A refused request (every rack too small: 4 x 17 does not fit 18 - 2)
        // exercises the explanation path.
        SliceRequest big = req;
        big.slice_size = 17;
        auto refused =
            measure(decisions / 10, nsnap, [&](int s) { sink += place(*snaps[size_t(s)], big).detail.size(); });

        const double p50 = pct(engine, 0.50), p99 = pct(engine, 0.99);
        const double b50 = pct(naive, 0.50), b99 = pct(naive, 0.99);
        const double r99 = pct(refused, 0.99);
        const double speedup = b99 / p99, speedup50 = b50 / p50;
        if (o.has("json")) {
            fmt::print("{{\"racks\":{},\"nodes\":{},\"decisions\":{},\"baseline_decisions\":{},\"p50_us\":{:.2f},"
                       "\"p99_us\":{:.2f},\"baseline_p50_us\":{:.2f},\"baseline_p99_us\":{:.2f},\"speedup\":{:.1f},"
                       "\"speedup_p50\":{:.1f},\"refused_p99_us\":{:.2f},\"target_p99_us\":1000,\"target_speedup\":20,"
                       "\"meets_targets\":{},\"checksum\":{}}}\n",
                       racks, map.node_count(), decisions, base_decisions, p50, p99, b50, b99, speedup, speedup50, r99,
                       p99 < 1000 && speedup >= 20, sink % 1000);
        } else {
            fmt::print("cluster: {} racks x {} = {} nodes, ~50% busy rack-blind, {} idle racks per state ({} states)\n",
                       racks, per, map.node_count(), idle_racks, nsnap);
            fmt::print("request: 4 x 16-node strict slices; racks with all 18 free: {:.1f} per state\n",
                       double(fitting_racks) / nsnap);
            fmt::print("engine    p50 {:8.2f} us   p99 {:8.2f} us   ({} decisions)\n", p50, p99, decisions);
            fmt::print("baseline  p50 {:8.2f} us   p99 {:8.2f} us   ({} decisions, recount every node per slice)\n",
                       b50, b99, base_decisions);
            fmt::print("refused   p99 {:8.2f} us   (4 x 17: explained, not placed)\n", r99);
            fmt::print("speedup   {:.1f}x at p99, {:.1f}x at p50 (targets: p99 < 1000 us, speedup >= 20)\n", speedup,
                       speedup50);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvl-bench: %s\n", e.what());
        return 1;
    }
}
