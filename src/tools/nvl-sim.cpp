// nvl-sim — planning: the capacity model (binomial and Monte Carlo through
// the real placement engine).
#include "capacity.hpp"
#include "sim.hpp"
#include "cli.hpp"
#include "defrag.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <cstring>
#include <sstream>

using namespace nvl;

static const char* kUsage = R"(usage: nvl-sim capacity [options]
       nvl-sim trace [options]

trace: a seeded discrete-event simulation replayed under five policies
(first_fit, whole_racks, block, block_expedite, nvlslice) on the real engine;
Slurm's policies bring a failed job back by its plain requeue
(block_expedite: its expedited requeue, 25.11+).
  --racks N --nodes-per-rack N --slice N --spares N   cluster (128 x 18, 16, 2)
  --days D             simulated days (30)
  --load L             offered work / capacity (1.3: the queue stays full)
  --mean-job-hours H   mean job duration (6)
  --checkpointable F   share of jobs that checkpoint (0.5)
  --checkpoint-hours H checkpoint interval (1)
  --mtbf-days D[,D..]  per-node MTBF, one table each (490)
  --repair-hours H     node repair (24)
  --restart-hours H    paid by every start and restart of every policy (0.25)
  --requeue-delay S    plain requeue: Slurm's begin-time delay (121: cred_expire + 1)
  --dead-share F       failures that kill the node (silent, slurmd gone); the
                       rest are health-check drains (0.5)
  --slurmd-timeout S   Slurm alone sees a dead node after it (300, Slurm's
                       default; nvlslice's probe: 6 s)
  --complete-dead S[,S..]  nvlslice, a dead node: seconds from its DOWN to
                       its job's nodes free (11); several: each failure
                       draws one (tests/cluster/sim_check.sh gives the
                       bench's trials)
  --split-speed F      speed of a job whose slice crosses racks (0.57)
  --lend-spares S      none | single-node | checkpointable (checkpointable)
  --defrag on|off --defrag-after S --defrag-interval S
                       nvlslice's defragmentation (the helper's defaults)
  --defrag-repairs on|off  a repair with no room frees a rack from
                       checkpointable work at once (on, the helper's default)
  --checkpoint-every on|off  checkpointing jobs say how often they do
                       (--nvl-checkpoint-every): defragmentation's cost then
                       counts the work since their last checkpoint (on)
  --lookahead N        Slurm's queue: the first N waiting jobs are tried at
                       every event, by every policy (8)
  --backfill on|off    Slurm's backfill: the first waiting job that cannot
                       start holds the nodes it gets when running jobs end
                       by their time limits; later jobs take them only if
                       they end before then (on; off: any free node)
  --time-limit S       jobs' time limits as the backfill reads them: each
                       job's run or S seconds, whichever is longer (0: the
                       run exactly)
  --top-jobs N         the first N jobs of the trace sort before every
                       other (a higher priority; the busy bench's measured
                       job) (0)
  --sliced top|all     which jobs ask for slices (all); top: only the
                       --top-jobs, the rest ask for nodes alone and are
                       packed across racks where no rack has room (as
                       topology/block places a job without --segment),
                       but nvlslice's lendable work asks for a slice
  --failjob-rack       a trace's failjob line fails every node of that
                       node's rack at once (one NVLink switch fault)
  --failjob-busy-wait S  a failjob line waits until no node is idle but
                       the kept spares, at most S seconds (the busy
                       bench's protocol) (0: at its time)
  --lend-depth N|all   nvlslice: after the look-ahead, any of the first N
                       waiting jobs that may borrow spares starts on idle
                       kept spares it fits in (all: the helper tries every
                       job, and Slurm tests one waiting in its lend
                       reservation apart from the queue); 0: none
  --seed S | --seeds A-B|A,B,..   trace seed(s) (1); with several, the mean
                       and the min-max of each policy's goodput
  --csv FILE           the table as CSV     --svg FILE  a chart     --json
  --write-trace FILE   the trace of the first seed and MTBF, as text
  --trace FILE         replay this trace (written by --write-trace, or the
                       one a cluster replay ran) instead of generating one;
                       --days still ends the run, --seed and --mtbf-days
                       only label it

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

namespace {

// "1-5" or "1,3,7" or "4": a list of seeds.
std::vector<uint64_t> parse_seeds(const std::string& v) {
    std::vector<uint64_t> out;
    std::stringstream ss(v);
    std::string item;
    auto num = [&](const std::string& x) {
        char* end = nullptr;
        unsigned long long n = std::strtoull(x.c_str(), &end, 10);
        if (x.empty() || *end) throw Error(fmt::format("--seeds={}: expected seeds like 1-5 or 1,3,7", v));
        return uint64_t(n);
    };
    while (std::getline(ss, item, ',')) {
        auto dash = item.find('-');
        if (dash == std::string::npos) {
            out.push_back(num(item));
            continue;
        }
        uint64_t lo = num(item.substr(0, dash)), hi = num(item.substr(dash + 1));
        if (hi < lo || hi - lo > 1000)
            throw Error(fmt::format("--seeds={}: a range runs low-high, at most 1,001 seeds", v));
        for (uint64_t x = lo; x <= hi; ++x) out.push_back(x);
    }
    if (out.empty()) throw Error(fmt::format("--seeds={}: expected seeds like 1-5 or 1,3,7", v));
    return out;
}

// nvlslice's dead-node completion as the Assumed line says it: one figure,
// or the draws' median and range.
std::string complete_dead_text(const SimParams& p) {
    if (p.complete_dead_draws.empty()) return fmt::format("{:.0f} s", p.complete_dead_s);
    std::vector<double> d = p.complete_dead_draws;
    std::sort(d.begin(), d.end());
    return fmt::format("one of {} draws from the bench's trials, median {:.0f} s, {:.0f}-{:.0f} s", d.size(),
                       d[(d.size() - 1) / 2], d.front(), d.back());
}

std::vector<double> parse_reals(const std::string& opt, const std::string& v, double min, double max) {
    std::vector<double> out;
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        double x = std::strtod(item.c_str(), &end);
        if (item.empty() || *end || !(x >= min && x <= max))
            throw Error(fmt::format("--{}={}: expected numbers from {} to {}, comma-separated", opt, v, min, max));
        out.push_back(x);
    }
    if (out.empty()) throw Error(fmt::format("--{}={}: expected at least one number", opt, v));
    return out;
}

struct Stat {
    double sum = 0, min = 0, max = 0;
    int n = 0;
    void add(double x) {
        min = n ? std::min(min, x) : x;
        max = n ? std::max(max, x) : x;
        sum += x;
        ++n;
    }
    double mean() const { return n ? sum / n : 0; }
};

// Per policy, the figures over the seeds of one scenario.
struct PolicyStats {
    std::string policy;
    Stat slice_goodput, goodput, util, busy_healthy, wait, recovery, split, repairs, moves, restarts, defrag, lost;
    Stat vs_block, vs_expedite, vs_whole, vs_first; // nvlslice / baseline, seed by seed (paired on the same trace)
    // per failure (seconds), each a per-seed figure: running again, working again; jobs >= 64 nodes
    struct Dist {
        Stat p50, p90, p99, max, n;
        void add(const Percentiles& p) {
            n.add(p.n);
            p50.add(p.p50);
            p90.add(p.p90);
            p99.add(p.p99);
            max.add(p.max);
        }
    } resume, resume_work, resume_big, resume_big_work, resume_slice_drain, resume_slice_dead;
    Stat failures, unresumed, lost_per_failure;
    // One seed's result r, its goodput also against the baselines of the same run, rs.
    void add(const PolicyResult& r, const std::vector<PolicyResult>& rs) {
        auto gp = [&](const char* name) {
            for (const auto& x : rs)
                if (x.policy == name) return x.goodput;
            return 1.0;
        };
        vs_block.add(r.goodput / gp("block"));
        vs_expedite.add(r.goodput / gp("block_expedite"));
        resume.add(r.resume_s);
        resume_work.add(r.resume_work_s);
        resume_big.add(r.resume_big_s);
        resume_big_work.add(r.resume_big_work_s);
        resume_slice_drain.add(r.resume_slice_drain_s);
        resume_slice_dead.add(r.resume_slice_dead_s);
        failures.add(r.failures_hit);
        unresumed.add(r.unresumed);
        lost_per_failure.add(r.lost_gpu_hours_per_failure);
        vs_whole.add(r.goodput / gp("whole_racks"));
        vs_first.add(r.goodput / gp("first_fit"));
        policy = r.policy;
        slice_goodput.add(r.slice_goodput);
        goodput.add(r.goodput);
        util.add(r.utilization);
        busy_healthy.add(r.busy_healthy);
        wait.add(r.mean_wait_h);
        recovery.add(r.mean_recovery_h);
        split.add(r.split_slices);
        repairs.add(r.repairs);
        moves.add(r.moves);
        restarts.add(r.restarts);
        defrag.add(r.defrag_preemptions);
        lost.add(r.lost_gpu_hours);
    }
};
// scenario (MTBF) -> policy stats, each over all seeds
using Table = std::vector<std::vector<PolicyStats>>;

// The simulation's parameters from trace's options.
SimParams trace_params(const cli::Options& o) {
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
    p.node_repair_hours = o.real("repair-hours", 24, 0, 1e5);
    p.restart_hours = o.real("restart-hours", 0.25, 0, 1000);
    p.requeue_delay_s = o.real("requeue-delay", 121, 0, 1e6);
    p.dead_share = o.real("dead-share", 0.5, 0, 1);
    p.slurmd_timeout_s = o.real("slurmd-timeout", 300, 1, 1e5);
    if (o.has("complete-dead")) {
        p.complete_dead_draws = parse_reals("complete-dead", o.str("complete-dead"), 0, 1e5);
        if (p.complete_dead_draws.size() == 1) {
            p.complete_dead_s = p.complete_dead_draws.front();
            p.complete_dead_draws.clear();
        }
    }
    p.split_speed = o.real("split-speed", 0.57, 0.01, 1);
    if (o.has("lend-spares")) p.lend = parse_lend_scope(o.str("lend-spares"));
    auto on_off = [&](const char* name, bool& out) {
        if (!o.has(name)) return;
        const std::string d = o.str(name);
        if (d != "on" && d != "off") throw Error(fmt::format("--{}={}: expected on or off", name, d));
        out = d == "on";
    };
    on_off("defrag", p.defrag);
    on_off("defrag-repairs", p.defrag_repairs);
    on_off("checkpoint-every", p.checkpoint_known);
    on_off("backfill", p.backfill);
    p.time_limit_s = o.real("time-limit", 0, 0, 1e8);
    p.top_jobs = int(o.integer("top-jobs", 0, 0, 100000000));
    p.failjob_rack = o.has("failjob-rack");
    if (o.has("sliced")) {
        const std::string v = o.str("sliced");
        if (v != "top" && v != "all") throw Error(fmt::format("--sliced={}: expected top or all", v));
        p.sliced_top_only = v == "top";
    }
    p.failjob_busy_wait_s = o.real("failjob-busy-wait", 0, 0, 1e6);
    if (o.has("lend-depth") && o.str("lend-depth") != "all") {
        try {
            p.lend_depth = int(o.integer("lend-depth", 0, 0, 100000000));
        } catch (const Error& e) {
            throw Error(std::string(e.what()) + ", or all");
        }
    }
    p.lookahead = int(o.integer("lookahead", 8, 1, 1000000));
    p.defrag_after_s = int(o.integer("defrag-after", -1, -1, 100000000));
    p.defrag_interval_s = int(o.integer("defrag-interval", -1, -1, 100000000));
    return p;
}

const PolicyStats& find(const std::vector<PolicyStats>& v, const char* name) {
    for (const auto& s : v)
        if (s.policy == name) return s;
    return v.front();
}

void write_csv(const std::string& path, const std::vector<double>& mtbfs, size_t seeds, const Table& table) {
    // nvlslice / baseline: the mean over seeds of the per-seed ratio is not
    // what is printed; the ratio of the means is, with the min-max of the
    // per-seed goodputs beside it.
    std::ofstream f(path);
    f << "mtbf_days,policy,seeds,goodput_mean,goodput_min,goodput_max,slice_goodput_mean,utilization,"
         "busy_of_healthy,mean_wait_h,mean_recovery_h,split_slices,repairs,moves,restarts,defrag_preemptions,"
         "lost_gpu_hours,goodput_vs_block\n";
    for (size_t m = 0; m < mtbfs.size(); ++m)
        for (const auto& r : table[m])
            f << fmt::format("{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.2f},{:.3f},{:.1f},{:.1f},{:.1f},"
                             "{:.1f},{:.1f},{:.0f},{:.4f}\n",
                             mtbfs[m], r.policy, seeds, r.goodput.mean(), r.goodput.min, r.goodput.max,
                             r.slice_goodput.mean(), r.util.mean(), r.busy_healthy.mean(), r.wait.mean(),
                             r.recovery.mean(), r.split.mean(), r.repairs.mean(), r.moves.mean(), r.restarts.mean(),
                             r.defrag.mean(), r.lost.mean(), r.vs_block.mean());
}

void write_svg(const std::string& path, const SimParams& p, double mtbf, size_t seeds,
               const std::vector<PolicyStats>& rs) {
    std::ofstream f(path);
    const int w = 640, h = 300, bar = 100;
    f << fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                     "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
                     "fill=\"white\"/>\n<text x=\"10\" y=\"20\">goodput (speed-weighted useful node-hours / "
                     "cluster node-hours), {} days, MTBF {} d, mean of {} seed(s)</text>\n",
                     w, h, p.days, mtbf, seeds);
    double top = 0;
    for (const auto& r : rs) top = std::max(top, r.goodput.mean());
    for (size_t i = 0; i < rs.size(); ++i) {
        double v = rs[i].goodput.mean(), bh = top > 0 ? 200 * v / top : 0;
        int x = 40 + int(i) * (bar + 40);
        f << fmt::format("<rect x=\"{}\" y=\"{:.0f}\" width=\"{}\" height=\"{:.0f}\" fill=\"{}\"/>"
                         "<text x=\"{}\" y=\"{:.0f}\">{:.3f}</text><text x=\"{}\" y=\"285\">{}</text>\n",
                         x, 260 - bh, bar, bh, rs[i].policy == "nvlslice" ? "#2f6fdf" : "#9aa7b8", x + 30, 255 - bh, v,
                         x + 10, rs[i].policy);
    }
    f << "</svg>\n";
}

void print_json(const SimParams& p, const std::vector<double>& mtbfs, size_t seeds, double secs, const Table& table) {
    // {"p50":..,"p90":..,"p99":..,"max":..,"p99_min":..,"p99_max":..}: means over the seeds
    auto dist_json = [](const PolicyStats::Dist& d) {
        return fmt::format("{{\"p50\":{:.0f},\"p90\":{:.0f},\"p99\":{:.0f},\"max\":{:.0f},\"p99_min\":{:.0f},"
                           "\"p99_max\":{:.0f}}}",
                           d.p50.mean(), d.p90.mean(), d.p99.mean(), d.max.mean(), d.p99.min, d.p99.max);
    };
    std::string scen;
    for (size_t m = 0; m < mtbfs.size(); ++m) {
        std::string items;
        for (const auto& r : table[m])
            items += fmt::format("{}{{\"policy\":\"{}\",\"goodput\":{:.4f},\"goodput_min\":{:.4f},"
                                 "\"goodput_max\":{:.4f},\"slice_goodput\":{:.4f},\"utilization\":{:.4f},"
                                 "\"busy_of_healthy\":{:.4f},\"mean_wait_h\":{:.2f},\"mean_recovery_h\":{:.3f},"
                                 "\"goodput_vs_block\":{:.4f},\"split_slices\":{:.1f},"
                                 "\"repairs\":{:.1f},\"moves\":{:.1f},\"restarts\":{:.1f},"
                                 "\"defrag_preemptions\":{:.1f},\"lost_gpu_hours\":{:.0f},"
                                 "\"goodput_vs_block_expedite\":{:.4f},\"failures\":{:.1f},\"unresumed\":{:.1f},"
                                 "\"lost_gpu_hours_per_failure\":{:.1f},\"resume_s\":{},\"resume_with_restart_s\":{},"
                                 "\"resume_64plus_s\":{},\"resume_64plus_with_restart_s\":{},"
                                 "\"resume_slice_drain_s\":{},\"resume_slice_dead_s\":{}}}",
                                 items.empty() ? "" : ",", r.policy, r.goodput.mean(), r.goodput.min, r.goodput.max,
                                 r.slice_goodput.mean(), r.util.mean(), r.busy_healthy.mean(), r.wait.mean(),
                                 r.recovery.mean(), r.vs_block.mean(), r.split.mean(), r.repairs.mean(), r.moves.mean(),
                                 r.restarts.mean(), r.defrag.mean(), r.lost.mean(), r.vs_expedite.mean(),
                                 r.failures.mean(), r.unresumed.mean(), r.lost_per_failure.mean(), dist_json(r.resume),
                                 dist_json(r.resume_work), dist_json(r.resume_big), dist_json(r.resume_big_work),
                                 dist_json(r.resume_slice_drain), dist_json(r.resume_slice_dead));
        scen += fmt::format("{}{{\"mtbf_days\":{},\"policies\":[{}]}}", scen.empty() ? "" : ",", mtbfs[m], items);
    }
    fmt::print("{{\"days\":{},\"seeds\":{},\"restart_hours\":{},\"requeue_delay_s\":{},\"lend_spares\":\"{}\","
               "\"lookahead\":{},\"lend_depth\":{},\"seconds\":{:.2f},\"scenarios\":[{}]}}\n",
               p.days, seeds, p.restart_hours, p.requeue_delay_s, to_string(p.lend), p.lookahead,
               p.lend_depth == SimParams::kAnyDepth ? std::string("\"all\"") : std::to_string(p.lend_depth), secs,
               scen);
}

void print_table(const SimParams& p, const std::vector<double>& mtbfs, const std::vector<uint64_t>& seeds, double secs,
                 const Table& table) {
    fmt::print("trace: {} racks x {} nodes, {} days, load {}, {:.0f}% checkpointable (every {} h, {}), restart delay "
               "{} h, spares lent to {} work{}, look-ahead {}, {} seed(s) {}{}\n",
               p.racks, p.nodes_per_rack, p.days, p.load, p.checkpointable * 100, p.checkpoint_hours,
               p.checkpoint_known ? "said by the jobs" : "not said", p.restart_hours, to_string(p.lend),
               p.lend_depth == SimParams::kAnyDepth || p.lend == LendScope::None ? std::string()
               : p.lend_depth > 0 ? fmt::format(" from the first {} waiting", p.lend_depth)
                                  : std::string(" (none from the queue's depth)"),
               p.lookahead, seeds.size(), seeds.front(), seeds.size() > 1 ? fmt::format("-{}", seeds.back()) : "");
    for (size_t m = 0; m < mtbfs.size(); ++m) {
        const auto& rs = table[m];
        fmt::print("\nMTBF {} days per node{}\n", mtbfs[m],
                   seeds.size() > 1 ? " (means over the seeds; goodput min-max)" : "");
        fmt::print("{:<12} {:>7} {:>13} {:>8} {:>6} {:>8} {:>7} {:>8} {:>6} {:>6} {:>8} {:>6} {:>10}\n", "policy",
                   "goodput", "min-max", "slice gp", "util", "busy/hl", "wait h", "recov h", "split", "repair",
                   "restarts", "defrag", "lost GPU-h");
        for (const auto& r : rs)
            fmt::print("{:<12} {:>7.3f} {:>13} {:>8.3f} {:>6.3f} {:>8.3f} {:>7.1f} {:>8.2f} {:>6.0f} {:>6.0f} {:>8.0f} "
                       "{:>6.0f} {:>10.0f}\n",
                       r.policy, r.goodput.mean(), fmt::format("{:.3f}-{:.3f}", r.goodput.min, r.goodput.max),
                       r.slice_goodput.mean(), r.util.mean(), r.busy_healthy.mean(), r.wait.mean(), r.recovery.mean(),
                       r.split.mean(), r.repairs.mean(), r.restarts.mean(), r.defrag.mean(), r.lost.mean());
        const auto& nv = find(rs, "nvlslice");
        auto ratio = [](const Stat& st) { return fmt::format("{:.3f}x ({:.3f}-{:.3f})", st.mean(), st.min, st.max); };
        fmt::print("nvlslice goodput, seed by seed (mean, min-max): {} block, {} block_expedite, {} whole racks, "
                   "{} first fit\n",
                   ratio(nv.vs_block), ratio(nv.vs_expedite), ratio(nv.vs_whole), ratio(nv.vs_first));
        fmt::print("\nWhat a failed job loses (seconds from the node failure; p99 min-max over the seeds; restart "
                   "cost {:.0f} s)\n",
                   p.restart_hours * 3600);
        fmt::print("{:<15} {:>8} {:>7} {:>7} {:>8} {:>15} {:>8} {:>10} {:>10} {:>9} {:>9}\n", "policy", "failures",
                   "p50", "p90", "p99", "p99 min-max", "max", "p99 +rst", "64+ p99", "lost GPU-h", "unresumed");
        for (const auto& r : rs)
            fmt::print(
                "{:<15} {:>8.0f} {:>7.0f} {:>7.0f} {:>8.0f} {:>15} {:>8.0f} {:>10.0f} {:>10.0f} {:>10.1f} {:>9.1f}\n",
                r.policy, r.failures.mean(), r.resume.p50.mean(), r.resume.p90.mean(), r.resume.p99.mean(),
                fmt::format("{:.0f}-{:.0f}", r.resume.p99.min, r.resume.p99.max), r.resume.max.mean(),
                r.resume_work.p99.mean(), r.resume_big.p99.mean(), r.lost_per_failure.mean(), r.unresumed.mean());
        fmt::print("\nJobs of a slice or more, by failure kind (seconds from the failure to running again; p50 / p90 "
                   "/ p99, mean over the seeds)\n");
        fmt::print("{:<15} {:>8} {:>22} {:>8} {:>22}\n", "policy", "drains", "p50 / p90 / p99", "dead",
                   "p50 / p90 / p99");
        for (const auto& r : rs)
            fmt::print("{:<15} {:>8.0f} {:>22} {:>8.0f} {:>22}\n", r.policy, r.resume_slice_drain.n.mean(),
                       fmt::format("{:.0f} / {:.0f} / {:.0f}", r.resume_slice_drain.p50.mean(),
                                   r.resume_slice_drain.p90.mean(), r.resume_slice_drain.p99.mean()),
                       r.resume_slice_dead.n.mean(),
                       fmt::format("{:.0f} / {:.0f} / {:.0f}", r.resume_slice_dead.p50.mean(),
                                   r.resume_slice_dead.p90.mean(), r.resume_slice_dead.p99.mean()));
    }
    fmt::print("\nAssumed, from the busy bench (tests/cluster/bench_busy.out, Slurm 26.05), not simulated: a share "
               "{:.2f} of failures kill the node, the rest are drains; a drain requeues the job at once, a dead node "
               "after Slurm's SlurmdTimeout ({:.0f} s) or nvlslice's probe ({:.0f} s); the job's nodes stay its own "
               "until then and free {:.0f} s later (a dead node: {} with nvlslice's aborted steps, {:.0f} s "
               "under Slurm alone, slurmstepd's wait); a held repair's checkpointable victims free their nodes at "
               "once (on the cluster they complete first, a second or two); not modelled: degraded racks and their "
               "evacuation (the helper's rack health: a "
               "rack with more failed nodes than spares stays in use here).\n",
               p.dead_share, p.slurmd_timeout_s, p.probe_s, p.complete_s, complete_dead_text(p),
               p.complete_dead_slurm_s);
    fmt::print("Assumed, not simulated: Slurm's queue is FIFO by submit time{} with a look-ahead of {} jobs "
               "for every policy, {} (a plain requeue resets the submit time: the job queues "
               "behind those waiting){}.\n",
               p.top_jobs > 0 ? fmt::format(" (the first {} job(s) of the trace before every other)", p.top_jobs)
                              : std::string(),
               p.lookahead,
               p.backfill
                   ? fmt::format("and Slurm's backfill for the first job that cannot start (EASY: one "
                                 "reservation, on its policy's placement, from time limits that are {})",
                                 p.time_limit_s > 0
                                     ? fmt::format("each job's run or {:.0f} s, whichever is longer", p.time_limit_s)
                                     : std::string("each job's run exactly"))
                   : std::string("no backfill by time limits"),
               p.lend_depth > 0 && p.lend != LendScope::None
                   ? "; a borrower behind the look-ahead starts on its lent spare at once (in its lend reservation it "
                     "sorts first in Slurm's queue: Slurm's next scheduling pass, a second or so)"
                   : "");
    fmt::print("({:.1f} s)\n", secs);
}

} // namespace

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
                    {"restart-hours", true},
                    {"requeue-delay", true},
                    {"dead-share", true},
                    {"slurmd-timeout", true},
                    {"complete-dead", true},
                    {"split-speed", true},
                    {"lend-spares", true},
                    {"defrag", true},
                    {"defrag-after", true},
                    {"defrag-interval", true},
                    {"defrag-repairs", true},
                    {"checkpoint-every", true},
                    {"lookahead", true},
                    {"backfill", true},
                    {"time-limit", true},
                    {"top-jobs", true},
                    {"failjob-rack", false},
                    {"sliced", true},
                    {"failjob-busy-wait", true},
                    {"lend-depth", true},
                    {"seed", true},
                    {"seeds", true},
                    {"csv", true},
                    {"svg", true},
                    {"json", false},
                    {"write-trace", true},
                    {"trace", true},
                    {"help", false}});
    if (o.has("help")) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    SimParams p = trace_params(o);
    const std::vector<double> mtbfs = parse_reals("mtbf-days", o.str("mtbf-days", "490"), 0.01, 1e6);
    const std::vector<uint64_t> seeds = o.has("seeds")
                                            ? parse_seeds(o.str("seeds"))
                                            : std::vector<uint64_t>{uint64_t(o.integer("seed", 1, 0, 1L << 62))};
    std::optional<Trace> given;
    if (o.has("trace")) {
        std::ifstream in(o.str("trace"));
        if (!in) throw Error(fmt::format("--trace {}: cannot open it", o.str("trace")));
        std::ostringstream text;
        text << in.rdbuf();
        given = read_trace(text.str(), o.str("trace"));
        if (mtbfs.size() > 1 || seeds.size() > 1)
            throw Error("--trace: one trace is replayed; give at most one --mtbf-days and one seed");
    }
    bool trace_written = !o.has("write-trace");
    auto t0 = std::chrono::steady_clock::now();
    Table table;
    for (double mtbf : mtbfs) {
        p.mtbf_days = mtbf;
        std::vector<PolicyStats> stats;
        for (uint64_t seed : seeds) {
            p.seed = seed;
            if (!trace_written) {
                std::ofstream f(o.str("write-trace"));
                f << write_trace(given ? *given : make_trace(p));
                if (!f) throw Error(fmt::format("--write-trace {}: cannot write it", o.str("write-trace")));
                trace_written = true;
            }
            auto rs = given ? run_trace(p, *given) : run_trace(p);
            stats.resize(rs.size());
            for (size_t i = 0; i < rs.size(); ++i) stats[i].add(rs[i], rs);
        }
        table.push_back(std::move(stats));
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.has("csv")) write_csv(o.str("csv"), mtbfs, seeds.size(), table);
    if (o.has("svg")) write_svg(o.str("svg"), p, mtbfs.front(), seeds.size(), table.front());
    if (o.has("json"))
        print_json(p, mtbfs, seeds.size(), secs, table);
    else
        print_table(p, mtbfs, seeds, secs, table);
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
