// nvlsliced — the slurmctld-side helper: places slice jobs, keeps the spare
// reservation, repairs slices when nodes drain or go down, defragments.
// A reconcile loop over the core (reconcile.hpp) and the libslurm adapter.
#include "helper_config.hpp"
#include "map_io.hpp"
#include "metrics.hpp"
#include "reconcile.hpp"
#include "slurm_cluster.hpp"
#include "slurm_features.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <thread>

using namespace nvl;

namespace {

volatile std::sig_atomic_t g_stop = 0;

// Crash injection for the restart tests: NVLSLICED_TEST_KILL_AFTER=<action>
// (e.g. requeue-hold) makes the helper SIGKILL itself right after applying
// the first such action, as a crash or kill -9 at that point would.
const char* g_kill_after = nullptr;
void maybe_die(const Action& a) {
    if (g_kill_after && std::string(to_string(a.kind)) == g_kill_after) {
        std::fprintf(stderr, "nvlsliced: test hook: killed after %s of job %u\n", g_kill_after, a.job);
        std::fflush(stderr);
        raise(SIGKILL);
    }
}
void on_signal(int) {
    g_stop = 1;
}

void say(const std::string& msg) {
    char ts[32];
    std::time_t t = std::time(nullptr);
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
    std::fprintf(stderr, "%s nvlsliced: %s\n", ts, msg.c_str());
    std::fflush(stderr);
}

const char* kUsage = R"(usage: nvlsliced [--config FILE] [--once] [--dry-run]

  --config FILE   configuration (default /etc/slurm/nvlslice.yaml)
  --once          run one reconcile cycle and exit
  --dry-run       decide and log, change nothing in Slurm
)";

} // namespace

int main(int argc, char** argv) {
    std::string config = "/etc/slurm/nvlslice.yaml";
    bool once = false, dry = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--config" && i + 1 < argc)
            config = argv[++i];
        else if (a.rfind("--config=", 0) == 0)
            config = a.substr(9);
        else if (a == "--once")
            once = true;
        else if (a == "--dry-run")
            dry = true;
        else if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else {
            std::fprintf(stderr, "nvlsliced: unknown argument %s\n%s", a.c_str(), kUsage);
            return 2;
        }
    }
    try {
        HelperSettings s = load_helper_config(config);
        RackMap map = load_map(s.map, s.overrides, config + " (map: " + s.map + ")");

        // One instance only: the lock is held for the life of the process
        // and released by the kernel however it ends (kill -9 included).
        int lock = open(s.lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock < 0) throw Error(fmt::format("lock_file {}: cannot open", s.lock_file));
        if (flock(lock, LOCK_EX | LOCK_NB) != 0)
            throw Error(fmt::format("another nvlsliced is running (it holds {})", s.lock_file));
        (void)!ftruncate(lock, 0);
        std::string pid = std::to_string(getpid()) + "\n";
        (void)!write(lock, pid.data(), pid.size());

        g_kill_after = std::getenv("NVLSLICED_TEST_KILL_AFTER");
        std::signal(SIGTERM, on_signal);
        std::signal(SIGINT, on_signal);
        Metrics metrics;
        std::unique_ptr<MetricsServer> server;
        if (!s.metrics_listen.empty() && !once) server = std::make_unique<MetricsServer>(metrics, s.metrics_listen);
        SlurmCluster slurm;
        // The mode: the configuration's, or for auto what slurmctld runs.
        const SlurmFeatures features = probe_slurm();
        const HandOff wanted = s.reconcile.hand_off;
        s.reconcile.hand_off = choose_hand_off(wanted, features);
        if (s.reconcile.hand_off == HandOff::Native && !features.segments)
            throw Error(fmt::format("{}: mode: native, but this nvlsliced was built against a Slurm without --segment "
                                    "(24.05 or later is needed)",
                                    config));
        say(fmt::format("started: map {} ({} racks, {} nodes), mode {} ({}; Slurm {}, {}), cycle {} ms, reservation "
                        "{}, metrics {}{}",
                        s.map, map.domains().size(), map.node_count(), to_string(s.reconcile.hand_off),
                        wanted == HandOff::Auto ? "chosen from the running Slurm" : "set in the configuration",
                        features.version, features.topology_plugin.empty() ? "no topology plugin" : features.topology_plugin,
                        s.cycle_ms, s.reconcile.reservation.empty() ? "(none)" : s.reconcile.reservation,
                        server ? fmt::format("127.0.0.1:{}", server->port()) : "(off)", dry ? ", dry run" : ""));

        HelperMemory mem;
        while (!g_stop) {
            auto t0 = std::chrono::steady_clock::now();
            bool failed = false;
            CycleStats stats;
            CyclePhases phases;
            auto since = [](std::chrono::steady_clock::time_point t) {
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
            };
            try {
                auto nodes = slurm.load_nodes();
                auto jobs = slurm.load_jobs();
                // one request for the spare, gate and protection reservations
                auto resvs = slurm.load_reservations(
                    {s.reconcile.reservation, s.reconcile.gate_reservation, s.reconcile.protect_reservation});
                phases.load = since(t0);
                auto t1 = std::chrono::steady_clock::now();
                CycleOutput out = reconcile(map, {nodes, jobs, resvs[0], resvs[1], resvs[2]}, s.reconcile,
                                            std::time(nullptr), mem);
                phases.decide = since(t1);
                for (const auto& line : out.log) say(line);
                auto t2 = std::chrono::steady_clock::now();
                phases.actions = out.actions.size();
                if (!dry) {
                    const int64_t now = std::time(nullptr);
                    auto failures = apply(slurm, s.reconcile, out.actions, maybe_die);
                    for (const auto& f : failures)
                        say(f.job ? fmt::format("job {}: {} (this job waits; the others go on)", f.job, f.error)
                                  : fmt::format("{} (retried next cycle)", f.error));
                    note_applied(mem, out.actions, failures, now);
                    failed = !failures.empty();
                }
                phases.apply = since(t2);
                stats = out.stats;
            } catch (const std::exception& e) {
                failed = true;
                say(fmt::format("cycle failed, retrying next cycle: {}", e.what()));
            }
            double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            metrics.add_cycle(stats, secs, failed, phases);
            if (once) return failed ? 1 : 0;
            auto next = t0 + std::chrono::milliseconds(s.cycle_ms);
            while (!g_stop && std::chrono::steady_clock::now() < next)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        say("stopped");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvlsliced: %s\n", e.what());
        return 1;
    }
}
