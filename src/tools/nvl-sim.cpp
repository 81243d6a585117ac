// nvl-sim — planning: the capacity model (binomial and Monte Carlo through
// the real placement engine).
#include "capacity.hpp"
#include "sim.hpp"
#include "cli.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <cstring>
#include <sstream>

using namespace nvl;

static const char* kUsage = R"(usage: nvl-sim capacity [options]
       nvl-sim trace [options]

trace: a seeded discrete-event simulation replayed under four policies
(first_fit, whole_racks, block, nvlslice) on the real engine.
  --racks N --nodes-per-rack N --slice N --spares N   cluster (128 x 18, 16, 2)
  --days D             simulated days (30)
  --load L             offered work / capacity (1.3: the queue stays full)
  --mean-job-hours H   mean job duration (6)
  --checkpointable F   share of jobs that checkpoint (0.5)
  --checkpoint-hours H checkpoint interval (1)
  --mtbf-days D        per-node MTBF (490)    --repair-hours H  node repair (24)
  --split-speed F      speed of a slice split across racks (0.57)
  --seed S             trace seed (1)
  --csv FILE           the table as CSV     --svg FILE  a chart     --json

capacity:

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

static int trace_main(int argc, char** argv) {
    cli::Options o(argc, argv,
                   {{"racks", true},
                    {"nodes-per-rack", true},
                    {"slice", true},
                    {"spares", true},
                    {"days", true},
                    {"load", true},
                    {"mean-job-hours", true},
                    {"checkpointable", true},
                    {"checkpoint-hours", true},
                    {"mtbf-days", true},
                    {"repair-hours", true},
                    {"split-speed", true},
                    {"seed", true},
                    {"csv", true},
                    {"svg", true},
                    {"json", false},
                    {"help", false}});
    if (o.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    SimParams p;
    p.racks = int(o.integer("racks", 128, 1, 10000));
    p.nodes_per_rack = int(o.integer("nodes-per-rack", 18, 2, 4096));
    p.slice = int(o.integer("slice", 16, 1, 4096));
    p.spares = int(o.integer("spares", 2, 0, 4095));
    p.days = o.real("days", 30, 0.01, 3650);
    p.load = o.real("load", 1.3, 0.01, 100);
    p.mean_job_hours = o.real("mean-job-hours", 6, 0.01, 10000);
    p.checkpointable = o.real("checkpointable", 0.5, 0, 1);
    p.checkpoint_hours = o.real("checkpoint-hours", 1, 0.01, 10000);
    p.mtbf_days = o.real("mtbf-days", 490, 0.01, 1e6);
    p.node_repair_hours = o.real("repair-hours", 24, 0, 1e5);
    p.split_speed = o.real("split-speed", 0.57, 0.01, 1);
    p.seed = uint64_t(o.integer("seed", 1, 0, 1L << 62));
    auto t0 = std::chrono::steady_clock::now();
    auto rs = run_trace(p);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string header = "policy,slice_goodput,goodput,utilization,mean_wait_h,jobs_started,jobs_done,"
                               "split_slices,repairs,moves,restarts,defrag_preemptions,lost_gpu_hours";
    auto row = [](const PolicyResult& r) {
        return fmt::format("{},{:.4f},{:.4f},{:.4f},{:.2f},{},{},{},{},{},{},{},{:.0f}", r.policy, r.slice_goodput,
                           r.goodput, r.utilization, r.mean_wait_h, r.jobs_started, r.jobs_done, r.split_slices,
                           r.repairs, r.moves, r.restarts, r.defrag_preemptions, r.lost_gpu_hours);
    };
    if (o.has("csv")) {
        std::ofstream f(o.str("csv"));
        f << header << "\n";
        for (const auto& r : rs) f << row(r) << "\n";
    }
    if (o.has("svg")) {
        std::ofstream f(o.str("svg"));
        const int w = 640, h = 300, bar = 100;
        f << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                         "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
                         "fill=\"white\"/>\n<text x=\"10\" y=\"20\">slice goodput (speed-weighted node-hours "
                         "of slice jobs / cluster node-hours), {} days, seed {}</text>\n",
                         w, h, p.days, p.seed);
        double top = 0;
        for (const auto& r : rs) top = std::max(top, r.slice_goodput);
        for (size_t i = 0; i < rs.size(); ++i) {
            double v = rs[i].slice_goodput, bh = top > 0 ? 200 * v / top : 0;
            int x = 40 + int(i) * (bar + 40);
            f << fmt::format("<rect x=\"{}\" y=\"{:.0f}\" width=\"{}\" height=\"{:.0f}\" fill=\"{}\"/>"
                             "<text x=\"{}\" y=\"{:.0f}\">{:.3f}</text><text x=\"{}\" y=\"285\">{}</text>\n",
                             x, 260 - bh, bar, bh, rs[i].policy == "nvlslice" ? "#2f6fdf" : "#9aa7b8", x + 30, 255 - bh,
                             v, x + 10, rs[i].policy);
        }
        f << "</svg>\n";
    }
    if (o.has("json")) {
        std::string items;
        for (const auto& r : rs)
            items += fmt::format("{}{{\"policy\":\"{}\",\"slice_goodput\":{:.4f},\"goodput\":{:.4f},"
                                 "\"utilization\":{:.4f},\"mean_wait_h\":{:.2f},\"split_slices\":{},\"repairs\":{},"
                                 "\"moves\":{},\"restarts\":{},\"defrag_preemptions\":{},\"lost_gpu_hours\":{:.0f}}}",
                                 items.empty() ? "" : ",", r.policy, r.slice_goodput, r.goodput, r.utilization,
                                 r.mean_wait_h, r.split_slices, r.repairs, r.moves, r.restarts, r.defrag_preemptions,
                                 r.lost_gpu_hours);
        fmt::print("{{\"days\":{},\"seed\":{},\"seconds\":{:.2f},\"policies\":[{}]}}\n", p.days, p.seed, secs, items);
        return 0;
    }
    fmt::print("trace: {} racks x {} nodes, {} days, load {}, {:.0f}% checkpointable (every {} h), MTBF {} days, "
               "seed {}\n\n",
               p.racks, p.nodes_per_rack, p.days, p.load, p.checkpointable * 100, p.checkpoint_hours, p.mtbf_days,
               p.seed);
    fmt::print("{:<12} {:>9} {:>8} {:>8} {:>9} {:>7} {:>7} {:>6} {:>8} {:>7} {:>10}\n", "policy", "slice gp", "goodput",
               "util", "wait (h)", "split", "repairs", "moves", "restarts", "defrag", "lost GPU-h");
    for (const auto& r : rs)
        fmt::print("{:<12} {:>9.3f} {:>8.3f} {:>8.3f} {:>9.1f} {:>7} {:>7} {:>6} {:>8} {:>7} {:>10.0f}\n", r.policy,
                   r.slice_goodput, r.goodput, r.utilization, r.mean_wait_h, r.split_slices, r.repairs, r.moves,
                   r.restarts, r.defrag_preemptions, r.lost_gpu_hours);
    const auto& nv = rs.back();
    fmt::print(
        "\nnvlslice slice goodput: {:.2f}x whole racks, {:.2f}x rack-blind first fit, {:.2f}x block ({:.1f} s)\n",
        nv.slice_goodput / rs[1].slice_goodput, nv.slice_goodput / rs[0].slice_goodput,
        nv.slice_goodput / rs[2].slice_goodput, secs);
    return 0;
}

int main(int argc, char** argv) {
    try {
        if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
            std::fputs(kUsage, argc < 2 ? stderr : stdout);
            return argc < 2 ? 2 : 0;
        }
        if (std::strcmp(argv[1], "trace") == 0) return trace_main(argc - 1, argv + 1);
        if (std::strcmp(argv[1], "capacity") != 0)
            throw Error(fmt::format("unknown subcommand \"{}\" (available: capacity, trace)", argv[1]));
        cli::Options o(argc - 1, argv + 1,
                       {{"racks", true},
                        {"nodes-per-rack", true},
                        {"slice", true},
                        {"spares", true},
                        {"unavail", true},
                        {"sizes", true},
                        {"lend", true},
                        {"trials", true},
                        {"seed", true},
                        {"json", false},
                        {"help", false}});
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
                   fmt::format("  + left-over nodes lent (ASSUMED {:.0f}% filled)", p.lend * 100), b.mixed_usable,
                   m.mixed_usable);
        fmt::print("{:<46} {:>9.1f}% {:>13.1f}%\n", "  busy share of healthy nodes (assumed)",
                   100 * b.mixed_usable / b.healthy, 100 * m.mixed_usable / m.healthy);
        fmt::print("\nThe lent share (--lend) is an assumption, not a result: nvl-sim trace simulates it.\n");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvl-sim: %s\n", e.what());
        return 1;
    }
}
