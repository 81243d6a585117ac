// nvl-sim — planning: the capacity model (binomial and Monte Carlo through
// the real placement engine).
#include "capacity.hpp"
#include "cli.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <sstream>

using namespace nvl;

static const char* kUsage = R"(usage: nvl-sim capacity [options]

  --racks N            racks (NVLink domains), default 128
  --nodes-per-rack N   nodes per rack, default 18
  --slice N            slice size, default 16
  --spares N           spares per rack, default 2
  --unavail P          probability a node is unavailable, default 0.02
  --sizes A,B,...      slice sizes degraded racks may serve (default slice/2, slice/4, ... 1)
  --lend F             share of left-over node time filled by preemptible
                       single-node work (spares lent), default 0.9
  --trials N           Monte Carlo trials through the real engine, default 1000
  --seed S             Monte Carlo seed, default 1
  --json               one JSON object
)";

int main(int argc, char** argv) {
    try {
        if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
            std::fputs(kUsage, argc < 2 ? stderr : stdout);
            return argc < 2 ? 2 : 0;
        }
        if (std::strcmp(argv[1], "capacity") != 0)
            throw Error(fmt::format("unknown subcommand \"{}\" (available: capacity)", argv[1]));
        cli::Options o(argc - 1, argv + 1,
                       {{"racks", true}, {"nodes-per-rack", true}, {"slice", true}, {"spares", true},
                        {"unavail", true}, {"sizes", true}, {"lend", true}, {"trials", true}, {"seed", true},
                        {"json", false}, {"help", false}});
        if (o.has("help")) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        CapacityParams p;
        p.racks = int(o.integer("racks", 128, 1, 100000));
        p.nodes_per_rack = int(o.integer("nodes-per-rack", 18, 1, 4096));
        p.slice = int(o.integer("slice", 16, 1, 4096));
        p.spares = int(o.integer("spares", 2, 0, 4095));
        p.unavail = o.real("unavail", 0.02, 0, 1);
        p.lend = o.real("lend", 0.9, 0, 1);
        p.trials = int(o.integer("trials", 1000, 1, 10000000));
        p.seed = uint64_t(o.integer("seed", 1, 0, 1L << 62));
        if (o.has("sizes")) {
            std::stringstream ss(o.str("sizes"));
            std::string item;
            while (std::getline(ss, item, ',')) {
                char* end = nullptr;
                long v = std::strtol(item.c_str(), &end, 10);
                if (item.empty() || *end || v < 1 || v > p.slice)
                    throw Error(fmt::format("--sizes={}: expected slice sizes from 1 to {}, comma-separated",
                                            o.str("sizes"), p.slice));
                p.degraded_sizes.push_back(int(v));
            }
        }
        CapacityFigures b = capacity_binomial(p);
        CapacityFigures m = capacity_monte_carlo(p);
        const double total = double(p.racks) * p.nodes_per_rack;
        if (o.has("json")) {
            fmt::print("{{\"racks\":{},\"nodes_per_rack\":{},\"slice\":{},\"spares\":{},\"unavail\":{},\"lend\":{},"
                       "\"nodes\":{},\"healthy\":{:.1f},\"slice_usable\":{:.1f},\"whole_rack_usable\":{:.1f},"
                       "\"slice_vs_whole_rack\":{:.3f},\"mixed_usable\":{:.1f},\"mixed_slices_only\":{:.1f},"
                       "\"mixed_share_of_healthy\":{:.4f},\"mc_trials\":{},\"mc_healthy\":{:.1f},"
                       "\"mc_slice_usable\":{:.1f},\"mc_whole_rack_usable\":{:.1f},\"mc_mixed_usable\":{:.1f}}}\n",
                       p.racks, p.nodes_per_rack, p.slice, p.spares, p.unavail, p.lend, int(total), b.healthy,
                       b.slice_usable, b.whole_rack_usable, b.slice_usable / b.whole_rack_usable, b.mixed_usable,
                       b.mixed_slices_only, b.mixed_usable / b.healthy, p.trials, m.healthy, m.slice_usable,
                       m.whole_rack_usable, m.mixed_usable);
            return 0;
        }
        fmt::print("capacity: {} racks x {} nodes = {}, each node unavailable with p = {}, {}-node slices, {} "
                   "spares per rack\n\n",
                   p.racks, p.nodes_per_rack, int(total), p.unavail, p.slice, p.spares);
        fmt::print("{:<46} {:>10} {:>14}\n", "", "binomial", "Monte Carlo");
        fmt::print("{:<46} {:>10} {:>14}\n", "", "(exact)", fmt::format("({} trials)", p.trials));
        fmt::print("{:<46} {:>10.1f} {:>14.1f}\n", "healthy nodes", b.healthy, m.healthy);
        fmt::print("{:<46} {:>10.1f} {:>14.1f}\n", fmt::format("usable in {}-node slices", p.slice), b.slice_usable,
                   m.slice_usable);
        fmt::print("{:<46} {:>10.1f} {:>14.1f}\n", fmt::format("usable in whole {}-node racks", p.nodes_per_rack),
                   b.whole_rack_usable, m.whole_rack_usable);
        fmt::print("{:<46} {:>9.2f}x {:>13.2f}x\n", "slices vs whole racks", b.slice_usable / b.whole_rack_usable,
                   m.slice_usable / m.whole_rack_usable);
        std::string sizes;
        for (int k : degraded_slice_sizes(p)) sizes += (sizes.empty() ? "" : "/") + std::to_string(k);
        fmt::print("{:<46} {:>10.1f} {:>14.1f}\n", fmt::format("nvlslice: slices of {}", sizes), b.mixed_slices_only,
                   m.mixed_slices_only);
        fmt::print("{:<46} {:>10.1f} {:>14.1f}\n",
                   fmt::format("nvlslice: + left-over nodes lent ({:.0f}% filled)", p.lend * 100), b.mixed_usable,
                   m.mixed_usable);
        fmt::print("{:<46} {:>9.1f}% {:>13.1f}%\n", "nvlslice: share of healthy nodes doing work",
                   100 * b.mixed_usable / b.healthy, 100 * m.mixed_usable / m.healthy);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvl-sim: %s\n", e.what());
        return 1;
    }
}
