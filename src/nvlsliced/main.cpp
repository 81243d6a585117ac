// nvlsliced — the slurmctld-side helper: places slice jobs, keeps the spare
// reservation, repairs slices when nodes drain or go down, defragments.
// A reconcile loop over the core (reconcile.hpp) and the libslurm adapter.
#include "controller.hpp"
#include "eligibility.hpp"
#include "helper_config.hpp"
#include "lease.hpp"
#include "map_io.hpp"
#include "metrics.hpp"
#include "probe.hpp"
#include "rack_health.hpp"
#include "reconcile.hpp"
#include "removal.hpp"
#include "slurm_cluster.hpp"
#include "slurm_features.hpp"
#include "text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <memory>

using namespace nvl;

namespace {

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_reload = 0;

// Crash injection for the restart tests: NVLSLICED_TEST_KILL_AFTER=<action>
// (e.g. requeue-hold) makes the helper SIGKILL itself right after applying
// the first such action, as a crash or kill -9 at that point would.
const char* g_kill_after = nullptr;
void maybe_die(const Action& a) {
    if (g_kill_after && std::string(a.name()) == g_kill_after) {
        std::fprintf(stderr, "nvlsliced: test hook: killed after %s of job %u\n", g_kill_after, a.job);
        std::fflush(stderr);
        raise(SIGKILL);
    }
}
void on_signal(int) {
    g_stop = 1;
}
void on_hup(int) {
    g_reload = 1;
}

// The probe's rounds: one a second, each connection given a second.
constexpr int kProbeIntervalMs = 1000;
constexpr int kProbeTimeoutMs = 1000;

// The log: standard error with a timestamp, the journal (standard error
// when it is journald's stream: "<N>" prefixes carry the level), or syslog.
enum class Sink { Stderr, Journal, Syslog };
Sink g_sink = Sink::Stderr;

bool stderr_is_journal() {
    const char* js = std::getenv("JOURNAL_STREAM"); // "DEVICE:INODE" of the stream journald gave us
    struct stat st {};
    if (!js || fstat(STDERR_FILENO, &st) != 0) return false;
    unsigned long long dev = 0, ino = 0;
    return std::sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == st.st_dev && ino == st.st_ino;
}

void set_sink(const std::string& log) {
    const Sink want = log == "syslog"                        ? Sink::Syslog
                      : log == "auto" && stderr_is_journal() ? Sink::Journal
                                                             : Sink::Stderr;
    if (want == Sink::Syslog && g_sink != Sink::Syslog) openlog("nvlsliced", LOG_PID, LOG_DAEMON);
    if (want != Sink::Syslog && g_sink == Sink::Syslog) closelog();
    g_sink = want;
}

void say(int level, const std::string& line);

// A read the cycle can do without (ClusterRead's gates and limits): said
// once when it fails (`without`: what the cycle does then), once when it
// works again; `tried`: read this cycle at all.
void say_read(bool tried, const std::string& error, bool& failed, const char* again, const char* without) {
    if (!tried) return;
    if (error.empty()) {
        if (failed) say(LOG_INFO, again);
        failed = false;
        return;
    }
    if (!failed)
        say(LOG_WARNING,
            fmt::format("{}: {} (a placed job that Slurm does not start is taken back after replace_after)", error,
                        without));
    failed = true;
}

// The settings' warnings that need what slurmctld runs: said at the start
// and after each reload (the settings may have changed, Slurm's not).
void say_setting_warnings(const HelperSettings& s, const SlurmFeatures& f) {
    if (auto w = not_responding_warning(s.reconcile.repair_not_responding_after_s, f.tcp_timeout_s, f.slurmd_timeout_s))
        say(LOG_WARNING, *w);
}

// The reservations a reload renamed (Renamed, removal.hpp), retired once
// this helper acts: the old ones go, their jobs taken out of them; the
// cycles make the new ones. A failure is said and kept for the next
// cycle; the old reservation stays meanwhile, visible in sinfo -T.
void retire_renamed(SlurmCluster& slurm, const HelperConfig& cfg, Renamed& renamed, bool dry) {
    try {
        std::vector<Reservation> every;
        slurm.load_reservations({}, "", nullptr, &every);
        for (const Retire& r : plan_retirement(renamed, every)) {
            if (dry) {
                say(LOG_INFO, fmt::format("(dry run) would delete the renamed reservation {}", r.name));
                continue;
            }
            slurm.apply({r.job, action::EndLend{r.name, {}}}, action_names(cfg)); // deletes it (gone already: fine)
            say(LOG_INFO, r.job ? fmt::format("reservation {} renamed: job {} taken out of it, deleted", r.name, r.job)
                                : fmt::format("reservation {} renamed: deleted", r.name));
        }
        renamed = {};
    } catch (const std::exception& e) {
        say(LOG_WARNING, fmt::format("a renamed reservation could not be deleted: {} (tried again next cycle; or "
                                     "delete it by hand: scontrol delete reservation=NAME)",
                                     e.what()));
    }
}

// `level`: LOG_ERR, LOG_WARNING, LOG_INFO
void say(int level, const std::string& line) {
    // one entry per line, whatever a job's comment or a node's reason holds
    const std::string msg = escape_log(line);
    switch (g_sink) {
    case Sink::Syslog: syslog(level, "%s", msg.c_str()); return;
    case Sink::Journal: std::fprintf(stderr, "<%d>%s\n", level, msg.c_str()); break;
    case Sink::Stderr: {
        char ts[32];
        std::time_t t = std::time(nullptr);
        struct tm tm {};
        localtime_r(&t, &tm); // the metrics thread says things too
        std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
        std::fprintf(stderr, "%s nvlsliced: %s%s\n", ts,
                     level <= LOG_ERR       ? "error: "
                     : level == LOG_WARNING ? "warning: "
                                            : "",
                     msg.c_str());
        break;
    }
    }
    std::fflush(stderr);
}
void say(const std::string& msg) {
    say(LOG_INFO, msg);
}
// A line of the core's, at its severity.
void say_core(const LogEntry& e) {
    say(e.severity == Severity::Warning ? LOG_WARNING : LOG_INFO, e.line());
}

// The probe's targets from this cycle's view (the nodes of running jobs:
// only a slice job's node is ever repaired for silence, judge_silent()),
// and its last rounds into the nodes (SlurmNode::unanswered_s). Many nodes
// silent at once (more than 2 and a twentieth of those probed) are taken
// for the helper's own network, not theirs: none of them counts, and
// slurmctld's ping decides, as without the probe. Returns whether the
// probe is distrusted now (said when that changes).
bool apply_probe(SlurmdProbe& probe, std::vector<SlurmNode>& nodes, const std::vector<SlurmJob>& jobs,
                 int silent_after_s, bool distrusted) {
    std::unordered_map<std::string, size_t> by_name;
    by_name.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) by_name.emplace(nodes[i].name, i);
    std::vector<ProbeTarget> targets;
    std::vector<bool> seen(nodes.size(), false);
    for (const auto& j : jobs) {
        if (j.state != JobState::Running) continue;
        for (const auto& n : j.nodes) {
            auto it = by_name.find(n);
            if (it == by_name.end() || seen[it->second]) continue;
            seen[it->second] = true;
            const SlurmNode& node = nodes[it->second];
            if (node.failed || node.port == 0) continue;
            targets.push_back({node.name, node.addr.empty() ? node.name : node.addr, node.port});
        }
    }
    const size_t probed = targets.size();
    probe.set_targets(std::move(targets));
    size_t silent = 0;
    const auto unanswered = probe.unanswered();
    for (const auto& [name, secs] : unanswered) {
        auto it = by_name.find(name);
        if (it == by_name.end() || !seen[it->second]) continue;
        nodes[it->second].unanswered_s = secs.s;
        nodes[it->second].unanswered_refused = secs.refused;
        silent += secs.s >= silent_after_s;
    }
    const bool distrust = silent > 2 && silent * 20 > probed;
    if (distrust) {
        for (auto& n : nodes) n.unanswered_s = 0;
        if (!distrusted)
            say(LOG_WARNING, fmt::format("{} of {} probed nodes have not answered nvlsliced's probe for {} s or more: "
                                         "taken for a fault of the helper's own network, none is repaired for it "
                                         "(slurmctld's ping decides)",
                                         silent, probed, silent_after_s));
    } else if (distrusted) {
        say("nvlsliced's probe is answered again: a node silent for silent_after is repaired");
    }
    return distrust;
}

// The configuration and the map it names, checked as a whole: a bad file
// is refused before anything of it is used (start, --check-config, reload).
struct Loaded {
    HelperSettings s;
    RackMap map;
};
Loaded load_all(const std::string& config) {
    HelperSettings s = load_helper_config(config);
    RackMap map = load_map(s.map, s.overrides, config + " (map: " + s.map + ")");
    return {std::move(s), std::move(map)};
}

// Seconds of CLOCK_MONOTONIC, for the durations the helper measures.
double mono_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t mono_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

bool stop_requested() {
    return g_stop != 0;
}

// The lease this helper holds, when it runs with one: apply() stops
// between two actions once it runs short (another helper may act soon).
const Lease* g_lease = nullptr;
bool stop_or_lease_short() {
    return stop_requested() || (g_lease && !g_lease->may_act(mono_now()));
}

// Sleeps up to `secs`, waking at once for SIGTERM.
void pause_for(double secs) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
    while (!g_stop && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// One instance per host: the lock is held for the life of the process and
// released by the kernel however it ends (kill -9 included). A lock still
// held by an instance that is on its way out (a restart) is waited for a
// few seconds; the error names the holder.
void take_lock(int fd, const std::string& path) {
    for (int waited = 0;; ++waited) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return;
        const int e = errno;
        if (e == EINTR) continue;
        if (e != EWOULDBLOCK)
            throw Error(
                fmt::format("lock_file {}: cannot lock it: {} (a filesystem without flock?)", path, std::strerror(e)));
        if (waited < 50 && !g_stop) { // 5 s
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        char buf[32] = {};
        (void)!pread(fd, buf, sizeof buf - 1, 0);
        const long pid = std::strtol(buf, nullptr, 10);
        throw Error(fmt::format("another nvlsliced is running: {} holds {} (stop it first, or give this one "
                                "another lock_file)",
                                pid > 0 ? fmt::format("process {}", pid) : std::string("a process"), path));
    }
}

// nvlsliced --remove: everything of nvlslice's taken out of Slurm
// (removal.hpp), each step printed. Every nvlsliced must be stopped first:
// this one holds the lock file, and it refuses while a lease is held.
int remove_nvlslice(SlurmCluster& slurm, const HelperSettings& s, bool dry) {
    if (!s.lease_reservation.empty()) {
        const auto l = slurm.load_lease(s.lease_reservation);
        if (l && l->end_time > std::time(nullptr)) {
            std::fprintf(stderr,
                         "nvlsliced: --remove: the lease %s is held by %s for %lld s more: stop every nvlsliced "
                         "first (systemctl stop nvlsliced on each controller host), then run --remove again\n",
                         s.lease_reservation.c_str(), l->holder.c_str(),
                         static_cast<long long>(l->end_time - std::time(nullptr)));
            return 1;
        }
    }
    std::vector<Reservation> every;
    slurm.load_reservations({}, "", nullptr, &every);
    const std::vector<SlurmJob> jobs = slurm.load_jobs();
    const Removal r = plan_removal(jobs, every, s.reconcile, s.lease_reservation);
    std::string names;
    for (const auto& n : r.reservations) names += (names.empty() ? "" : ", ") + n;
    std::printf(
        "nvlsliced: %sremoving nvlslice: %d job(s) with its gate, pin, hold or record; %zu reservation(s)%s%s%s\n",
        dry ? "(dry run) " : "", r.jobs, r.reservations.size(), names.empty() ? "" : " (", names.c_str(),
        names.empty() ? "" : ")");
    for (const Action& a : r.actions) {
        std::string what;
        if (const auto* e = a.get<action::EndLend>())
            what =
                fmt::format("delete reservation {}{}", e->reservation,
                            e->others.empty() ? "" : fmt::format(" (job(s) {} leave it)", fmt::join(e->others, ",")));
        else if (const auto* l = a.get<action::SetLicenses>())
            what = fmt::format("job {}: licenses \"{}\" (the gate taken off)", a.job, l->licenses);
        else if (a.kind() == ActionKind::SetRecord)
            what = fmt::format("job {}: record cleared", a.job);
        else if (a.kind() == ActionKind::Release)
            what = fmt::format("job {}: the helper's hold released", a.job);
        else
            what =
                fmt::format("job {}: {} cleared", a.job, a.kind() == ActionKind::Exclude ? "exclusion" : "node list");
        std::printf("nvlsliced: %s%s\n", dry ? "would: " : "", what.c_str());
    }
    for (JobId id : r.completing)
        std::printf("nvlsliced: job %llu: a repair's requeue still completes: run --remove again in a few seconds\n",
                    static_cast<unsigned long long>(id));
    if (dry) return 0;
    const auto failures = apply(slurm, s.reconcile, r.actions);
    for (const auto& f : failures)
        std::fprintf(stderr, "nvlsliced: --remove: %s%s: %s\n", to_string(f.kind),
                     f.job ? fmt::format(" job {}", f.job).c_str() : "", f.error.c_str());
    std::printf("nvlsliced: %s; next: take the plugin line out of plugstack.conf, the nvlslice licenses out of "
                "slurm.conf, then scontrol reconfigure (node weights go back to slurm.conf's)\n",
                failures.empty() && r.completing.empty()
                    ? "removed: every job is Slurm's own again, no reservation of nvlslice's is left"
                    : "not all removed (above): run --remove again once the jobs named have ended");
    return failures.empty() && r.completing.empty() ? 0 : 1;
}

const char* kUsage = R"(usage: nvlsliced [--config FILE] [--once] [--dry-run] [--check-config] [--remove]

  --config FILE   configuration (default /etc/slurm/nvlslice.yaml)
  --once          run one reconcile cycle and exit
  --dry-run       decide and log, change nothing in Slurm
  --check-config  read and check the configuration and the rack map, then exit
                  (0: valid; 1: the error, with file:line)
  --remove        take nvlslice out of Slurm: every job's gate, pin, hold and
                  record, and every reservation it made (stop every nvlsliced
                  first; with --dry-run: print what it would do)

SIGHUP (systemctl reload nvlsliced) re-reads the configuration and the map;
a bad new one is refused and the running one kept. SIGTERM stops it.
)";

// The command line; `exit` set: exit with it (--help, a bad argument).
struct Options {
    std::string config = "/etc/slurm/nvlslice.yaml";
    bool once = false, dry = false, check = false, remove = false;
    std::optional<int> exit;
};
Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--config" && i + 1 < argc)
            o.config = argv[++i];
        else if (a.rfind("--config=", 0) == 0)
            o.config = a.substr(9);
        else if (a == "--once")
            o.once = true;
        else if (a == "--dry-run")
            o.dry = true;
        else if (a == "--check-config")
            o.check = true;
        else if (a == "--remove")
            o.remove = true;
        else if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            o.exit = 0;
            return o;
        } else {
            std::fprintf(stderr, "nvlsliced: unknown argument %s\n%s", a.c_str(), kUsage);
            o.exit = 2;
            return o;
        }
    }
    return o;
}

// One instance only: the lock is held for the life of the process and
// released by the kernel however it ends (kill -9 included); it holds this
// process's pid.
void take_lock_file(const std::string& path) {
    int lock = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0 && errno == ENOENT) {
        // its directory (the unit's RuntimeDirectory; by hand, made here)
        const std::string dir = path.substr(0, path.rfind('/'));
        if (!dir.empty() && mkdir(dir.c_str(), 0755) == 0)
            lock = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    }
    if (lock < 0) throw Error(fmt::format("lock_file {}: cannot open: {}", path, std::strerror(errno)));
    take_lock(lock, path);
    (void)!ftruncate(lock, 0);
    std::string pid = std::to_string(getpid()) + "\n";
    (void)!write(lock, pid.data(), pid.size());
}

// What the running Slurm offers. slurmctld may be away (a restart, an
// outage): waited for rather than exit, which under systemd would churn
// restarts (`once`: its error thrown). nullopt: stopped while waiting.
std::optional<SlurmFeatures> wait_for_slurmctld(bool once) {
    for (int attempt = 0;; ++attempt) {
        try {
            SlurmFeatures features = probe_slurm();
            if (attempt > 0) say("slurmctld answers: starting");
            return features;
        } catch (const std::exception& e) {
            if (once) throw;
            if (attempt == 0)
                say(LOG_WARNING, fmt::format("waiting for slurmctld ({}); nothing is placed or repaired until it "
                                             "answers",
                                             e.what()));
            pause_for(std::min(30, 1 << std::min(attempt, 5)));
            if (g_stop) return std::nullopt;
        }
    }
}

// The configuration and map read again (SIGHUP), checked against the
// running Slurm, with what takes effect only at the next start (the lock
// file, the metrics port, the lease) kept from the running `s`, each
// change said. Throws nvl::Error: the reload is refused.
Loaded load_for_reload(const std::string& config, const HelperSettings& s, const SlurmFeatures& features) {
    Loaded next = load_all(config);
    const HandOff mode = choose_hand_off(next.s.reconcile.hand_off, features);
    if (mode == HandOff::Native && !features.segments)
        throw Error("mode: native, but this nvlsliced was built against a Slurm without --segment");
    for (auto [key, old_v, new_v] :
         {std::tuple{"lock_file", s.lock_file, next.s.lock_file},
          std::tuple{"metrics_listen", s.metrics_listen, next.s.metrics_listen},
          std::tuple{"lease_reservation", s.lease_reservation, next.s.lease_reservation},
          std::tuple{"lease_license", s.lease_license, next.s.lease_license},
          std::tuple{"lease_length", std::to_string(s.lease_s), std::to_string(next.s.lease_s)}})
        if (old_v != new_v)
            say(LOG_WARNING, fmt::format("reload: {} changed ({} -> {}): takes effect at the next start; {} kept", key,
                                         old_v, new_v, old_v));
    next.s.lock_file = s.lock_file;
    next.s.metrics_listen = s.metrics_listen;
    // the lease was taken under these: another helper reads them from its
    // own configuration
    next.s.lease_reservation = s.lease_reservation;
    next.s.lease_license = s.lease_license;
    next.s.lease_s = s.lease_s;
    next.s.reconcile.hand_off = mode;
    next.s.reconcile.node_pools = has_node_pools(features.version);
    return next;
}

// slurmctld away: said once when it goes, once when it is back.
struct Outage {
    std::optional<std::chrono::steady_clock::time_point> since;
    void begin(const std::string& why) {
        if (since) return;
        since = std::chrono::steady_clock::now();
        say(LOG_WARNING, fmt::format("slurmctld does not answer ({}); retrying every cycle", why));
    }
    void end() {
        if (!since) return;
        say(fmt::format("slurmctld answers again after {:.0f} s",
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - *since).count()));
        since.reset();
    }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::string> rack_names(const RackMap& m) {
    std::vector<std::string> names;
    for (const auto& d : m.domains()) names.push_back(d.name);
    return names;
}

// --check-config: the configuration and its map are valid (load_all said
// otherwise); what they set is printed.
int print_checked(const std::string& config, const Loaded& loaded) {
    std::printf("nvlsliced: %s is valid: map %s (%zu racks, %zu nodes), mode %s, cycle %d ms, reservation "
                "%s, metrics %s\n",
                config.c_str(), loaded.s.map.c_str(), loaded.map.domains().size(), loaded.map.node_count(),
                to_string(loaded.s.reconcile.hand_off), loaded.s.cycle_ms,
                loaded.s.reconcile.reservation.empty() ? "(none)" : loaded.s.reconcile.reservation.c_str(),
                loaded.s.metrics_listen.empty() ? "(off)" : loaded.s.metrics_listen.c_str());
    for (const auto& n : loaded.s.notices) std::printf("nvlsliced: warning: %s\n", n.c_str());
    return 0;
}

// The helper at work: its settings and map, the Slurm it reads and writes,
// and what it keeps from one cycle to the next (the core's HelperMemory,
// the probe, the lease, what was said once). run() is the loop; each
// cycle asks whether this helper acts (the lease, else the controllers),
// then reads, decides (reconcile) and applies.
class Helper {
  public:
    Helper(const std::string& config, const Options& opt, HelperSettings s, RackMap map, SlurmCluster& slurm,
           const SlurmFeatures& features, Metrics& metrics)
        : config_(config), once_(opt.once), dry_(opt.dry), s_(std::move(s)), map_(std::move(map)), slurm_(slurm),
          features_(features), metrics_(metrics) {
        char host[256] = {};
        if (gethostname(host, sizeof host - 1) == 0) my_names_.emplace_back(host);
        // (a dry run acts on nothing: it never takes the lease from the
        // helper that acts)
        if (!s_.lease_reservation.empty() && !dry_)
            lease_.emplace(lease_id(my_names_.empty() ? std::string() : my_names_[0], s_.lock_file), s_.lease_s);
        g_lease = lease_ ? &*lease_ : nullptr;
    }
    Helper(const Helper&) = delete;
    Helper& operator=(const Helper&) = delete;
    ~Helper() { g_lease = nullptr; }

    // Until SIGTERM (--once: one cycle); the exit status.
    int run() {
        while (!g_stop) {
            if (g_reload) reload();
            const auto t0 = std::chrono::steady_clock::now();
            if (!acting()) {
                if (once_) return 0; // standing by is this cycle's whole work
                pause_for(s_.cycle_ms / 1000.0);
                continue;
            }
            // acting from here on: the reservations a reload renamed go now
            // (a standby's reload leaves them to the helper that uses them)
            if (!retiring_.empty()) retire_renamed(slurm_, s_.reconcile, retiring_, dry_);
            const CycleEnd end = cycle(t0);
            if (once_) {
                give_back_lease(false); // (not given back: it ends by itself)
                return end.failed ? 1 : 0;
            }
            // A repair under way is followed closely: each of its steps
            // waits on what Slurm did with the last one.
            const int period = end.follow_up ? std::min(s_.cycle_ms, kFollowUpMs) : s_.cycle_ms;
            pause_for(
                std::chrono::duration<double>(t0 + std::chrono::milliseconds(period) - std::chrono::steady_clock::now())
                    .count());
        }
        give_back_lease(true);
        say("stopped");
        return 0;
    }

  private:
    struct CycleEnd {
        bool failed = false;
        bool follow_up = false; // a repair under way: the next cycle comes sooner
    };

    // The lease given back when this helper holds it and may act (another
    // takes it at once instead of when it ends); a failure said when `say_failure`.
    void give_back_lease(bool say_failure) {
        if (!lease_ || !lease_->may_act(mono_now())) return;
        try {
            slurm_.release_lease(s_.lease_reservation, lease_->me());
        } catch (const std::exception& e) {
            if (say_failure)
                say(LOG_WARNING, fmt::format("stopping: the lease was not given back ({}): another helper takes it "
                                             "once it ends",
                                             e.what()));
        }
    }

    // SIGHUP: both files read again; the state lives in Slurm and in mem_
    // (per job and per node name), so nothing is lost.
    void reload() {
        g_reload = 0;
        try {
            Loaded next = load_for_reload(config_, s_, features_);
            for (const auto& n : next.s.notices) say(LOG_WARNING, n);
            retiring_.add(s_.reconcile, next.s.reconcile);
            s_ = std::move(next.s);
            map_ = std::move(next.map);
            metrics_.set_racks(rack_names(map_));
            set_sink(s_.log);
            say(fmt::format("reloaded {}: map {} ({} racks, {} nodes), mode {}, cycle {} ms", config_, s_.map,
                            map_.domains().size(), map_.node_count(), to_string(s_.reconcile.hand_off), s_.cycle_ms));
            say_setting_warnings(s_, features_);
        } catch (const std::exception& e) {
            say(LOG_ERR, fmt::format("reload refused, the running configuration is kept: {}", e.what()));
        }
    }

    // Whether this helper acts this cycle: one helper acts at a time, by
    // the lease (lease.hpp); without one (lease_reservation ""), with a
    // backup controller, the one beside the slurmctld in control
    // (controller.hpp); alone, always. The role is said when it changes.
    bool acting() {
        bool unconfigured = lease_ && mono_seconds() < unconfigured_until_;
        if (unconfigured) {
            // a lease another helper took meanwhile (the license added):
            // the lease decides again from this cycle on
            try {
                if (slurm_.load_lease(s_.lease_reservation)) {
                    unconfigured = false;
                    unconfigured_until_ = 0;
                }
            } catch (const std::exception&) {} // slurmctld away: the pings say
        }
        if (lease_ && !unconfigured) return lease_says_act();
        if (features_.controllers.size() > 1) {
            const ControllerRole role =
                controller_role(features_.controllers, ping_controllers(features_.controllers.size()), my_names_);
            say_role(role.active, role.active ? LOG_INFO : LOG_WARNING,
                     fmt::format("{}: {}", role.active ? "active" : "standby", role.why));
            return role.active;
        }
        return true;
    }

    // The lease's step this cycle (take, renew, keep, stand by), taken.
    bool lease_says_act() {
        std::string why;
        try {
            const double sent = mono_now();
            const auto view = slurm_.load_lease(s_.lease_reservation);
            const LeaseDecision d = lease_->decide(view, std::time(nullptr), sent);
            why = d.why;
            switch (d.step) {
            case LeaseStep::Take:
                lease_->taken(slurm_.take_lease(s_.lease_reservation, s_.lease_license, lease_->me(),
                                                lease_->end_for(std::time(nullptr))),
                              sent);
                if (!lease_->may_act(mono_now())) why = "another helper took the lease first: standing by";
                break;
            case LeaseStep::Renew: {
                slurm_.renew_lease(s_.lease_reservation, lease_->end_for(std::time(nullptr)));
                // read back: slurmctld's update is not conditional
                const auto back = slurm_.load_lease(s_.lease_reservation);
                if (back && back->holder == lease_->me()) {
                    lease_->renewed(true, sent);
                } else {
                    lease_->lost();
                    why = back ? fmt::format("the lease is held by {} now: standing by", back->holder)
                               : std::string("the lease is gone: taken again at the next cycle");
                }
                break;
            }
            case LeaseStep::Keep: break;
            case LeaseStep::StandBy: lease_->lost(); break;
            }
        } catch (const LeaseUnconfigured& e) {
            lease_->lost();
            unconfigured_until_ = mono_seconds() + 60;
            why = "slurmctld has no lease license: the controller pings choose from the next cycle";
            if (unconfigured_said_ < 0 || mono_seconds() - unconfigured_said_ >= 3600) {
                unconfigured_said_ = mono_seconds();
                say(LOG_ERR, fmt::format("{}; until then the helper beside the slurmctld in control acts, "
                                         "and two helpers on hosts that are not SlurmctldHost entries may "
                                         "both act",
                                         e.what()));
            }
        } catch (const Unreachable& e) {
            lease_->lost();
            outage_.begin(e.what());
            // (the outage itself was said once, just above)
            why = "slurmctld is away: the lease cannot be renewed, this helper does not act";
        } catch (const std::exception& e) {
            lease_->lost();
            why = fmt::format("the lease reservation {}: {}; this helper does not act", s_.lease_reservation, e.what());
        }
        const bool act = lease_->may_act(mono_now());
        say_role(
            act, act ? LOG_INFO : LOG_WARNING,
            fmt::format("{}: {} (lease {}, {})", act ? "active" : "standby", why, s_.lease_reservation, lease_->me()));
        return act;
    }

    void say_role(bool active, int level, const std::string& line) {
        if (!was_active_ || *was_active_ != active) say(level, line);
        was_active_ = active;
    }

    // One cycle: read the view (the probe's silences added), decide, apply
    // (not on a dry run, nor past the lease's safe half), count.
    CycleEnd cycle(std::chrono::steady_clock::time_point t0) {
        CycleEnd end;
        CycleStats stats;
        CyclePhases phases;
        try {
            ClusterRead read = slurm_.read_view(ViewRequest::of(s_.reconcile, features_.enforce_limits));
            if (s_.reconcile.silent_after_s > 0 && !once_) {
                if (!probe_) probe_ = std::make_unique<SlurmdProbe>(kProbeIntervalMs, kProbeTimeoutMs);
                probe_distrusted_ =
                    apply_probe(*probe_, read.nodes, read.jobs, s_.reconcile.silent_after_s, probe_distrusted_);
            } else {
                probe_.reset();
            }
            say_read(read.gates || !read.gates_error.empty(), read.gates_error, gates_failed_,
                     "partitions and licenses read again", "placing by Slurm's reasons alone");
            say_read(read.limits || !read.limits_error.empty(), read.limits_error, limits_failed_,
                     "accounting limits read again", "placing without them");
            phases.load = seconds_since(t0);
            const auto t1 = std::chrono::steady_clock::now();
            CycleOutput out = reconcile(map_, read.view(), s_.reconcile, std::time(nullptr), mem_, mono_seconds());
            phases.decide = seconds_since(t1);
            end.follow_up = out.follow_up;
            for (const auto& line : out.log) say_core(line);
            const auto t2 = std::chrono::steady_clock::now();
            phases.actions = out.actions.size();
            if (!dry_ && lease_ && !lease_->may_act(mono_now())) {
                // the cycle outlasted half the lease: another helper may
                // act soon; nothing of it is applied
                say(LOG_WARNING, fmt::format("the cycle took past the lease's safe half ({} s): its {} action(s) "
                                             "are dropped, the next cycle decides again",
                                             s_.lease_s / 2, out.actions.size()));
                out.actions.clear();
            }
            if (!dry_) end.failed = !apply_actions(out.actions);
            phases.apply = seconds_since(t2);
            stats = out.stats;
        } catch (const Unreachable& e) {
            end.failed = true;
            outage_.begin(e.what());
        } catch (const std::exception& e) {
            end.failed = true;
            say(LOG_ERR, fmt::format("cycle failed, retrying next cycle: {}", e.what()));
        }
        if (!end.failed) outage_.end();
        metrics_.add_cycle(stats, seconds_since(t0), end.failed, phases);
        return end;
    }

    // The cycle's actions sent; each failure said (an unreachable
    // slurmctld as the outage). Whether all of them were applied.
    bool apply_actions(const std::vector<Action>& actions) {
        const auto failures = apply(slurm_, s_.reconcile, actions, maybe_die, stop_or_lease_short);
        note_applied(mem_, actions, failures, mono_seconds(), std::time(nullptr));
        for (const auto& f : failures) {
            if (f.unreachable) {
                outage_.begin(f.error);
                continue;
            }
            say(LOG_WARNING, f.job ? fmt::format("job {}: {} (this job waits; the others go on)", f.job, f.error)
                                   : fmt::format("{} (tried again in {} s)", f.error,
                                                 mem_.cluster_backoff.count(f.key)
                                                     ? mem_.cluster_backoff[f.key].until - mono_seconds()
                                                     : 0));
        }
        return failures.empty();
    }

    const std::string config_;
    const bool once_, dry_;
    HelperSettings s_;
    RackMap map_;
    SlurmCluster& slurm_;
    const SlurmFeatures features_;
    Metrics& metrics_;
    HelperMemory mem_;
    // Its own probe of the slurmds under running jobs (probe.hpp), on
    // while silent_after is: a node silent that long is repaired without
    // waiting for slurmctld's ping and SlurmdTimeout.
    std::unique_ptr<SlurmdProbe> probe_;
    bool probe_distrusted_ = false;     // too many unanswered at once: said once
    std::vector<std::string> my_names_; // this host's, for the controllers' roles
    std::optional<bool> was_active_;    // the role last said
    std::optional<Lease> lease_;
    // slurmctld has no lease license (a slurm.conf from before the lease):
    // the controller pings choose, as before, until it has one; tried
    // again each minute, said once an hour
    int64_t unconfigured_until_ = 0, unconfigured_said_ = -1;
    bool limits_failed_ = false; // loading the accounting limits failed last time (said once)
    bool gates_failed_ = false;  // loading the partitions and licenses failed last time (said once)
    Outage outage_;
    Renamed retiring_; // reservations a reload renamed, deleted once this helper acts
};

// The first line of the log: what runs, in which mode and why.
void say_started(const HelperSettings& s, const RackMap& map, HandOff wanted, const SlurmFeatures& features,
                 const MetricsServer* server, bool dry) {
    say(fmt::format("started: map {} ({} racks, {} nodes), mode {} ({}; Slurm {}, {}{}), cycle {} ms, reservation "
                    "{}, metrics {}{}",
                    s.map, map.domains().size(), map.node_count(), to_string(s.reconcile.hand_off),
                    wanted == HandOff::Auto ? "chosen from the running Slurm" : "set in the configuration",
                    features.version,
                    features.topology_plugin.empty() ? "no topology plugin" : features.topology_plugin,
                    s.reconcile.hand_off != HandOff::Native ? ""
                    : s.reconcile.node_pools                ? "; pins with a node pool"
                                                            : "; pins by excluding other nodes",
                    s.cycle_ms, s.reconcile.reservation.empty() ? "(none)" : s.reconcile.reservation,
                    server ? fmt::format("{}:{}", server->host(), server->port()) : "(off)", dry ? ", dry run" : ""));
}

} // namespace

int main(int argc, char** argv) {
    // A peer that goes away (a metrics client's reset, a closed pipe) is an
    // error return on that one write, never the end of the helper: systemd
    // counts a SIGPIPE death as a clean exit and would not restart it.
    std::signal(SIGPIPE, SIG_IGN);
    const Options opt = parse_options(argc, argv);
    if (opt.exit) return *opt.exit;
    const std::string& config = opt.config;
    try {
        Loaded loaded = load_all(config);
        if (opt.check) return print_checked(config, loaded);
        HelperSettings s = std::move(loaded.s);
        RackMap map = std::move(loaded.map);
        set_sink(s.log);
        for (const auto& n : s.notices) say(LOG_WARNING, n);

        // One instance only (the lock file). A dry run of the cycle acts on
        // nothing: it runs beside the helper that acts, without the lock
        // (nor the lease, Helper), so that an install or a change may be
        // checked on a running site.
        if (!opt.dry || opt.remove) take_lock_file(s.lock_file);

        g_kill_after = std::getenv("NVLSLICED_TEST_KILL_AFTER");
        std::signal(SIGTERM, on_signal);
        std::signal(SIGINT, on_signal);
        std::signal(SIGHUP, on_hup);
        Metrics metrics;
        metrics.set_racks(rack_names(map));
        std::unique_ptr<MetricsServer> server;
        if (!s.metrics_listen.empty() && !opt.once)
            server = std::make_unique<MetricsServer>(metrics, parse_listen(s.metrics_listen),
                                                     [](const std::string& m) { say(LOG_WARNING, m); });
        const auto cluster = SlurmCluster::open();
        SlurmCluster& slurm = *cluster;
        if (opt.remove) return remove_nvlslice(slurm, s, opt.dry);
        // The mode: the configuration's, or for auto what slurmctld runs.
        const std::optional<SlurmFeatures> probed = wait_for_slurmctld(opt.once);
        if (!probed) {
            say("stopped");
            return 0;
        }
        const SlurmFeatures& features = *probed;
        const HandOff wanted = s.reconcile.hand_off;
        s.reconcile.hand_off = choose_hand_off(wanted, features);
        s.reconcile.node_pools = has_node_pools(features.version);
        if (s.reconcile.hand_off == HandOff::Native && !features.segments)
            throw Error(fmt::format("{}: mode: native, but this nvlsliced was built against a Slurm without --segment "
                                    "(24.05 or later is needed)",
                                    config));
        say_started(s, map, wanted, features, server.get(), opt.dry);
        say_setting_warnings(s, features);
        Helper helper(config, opt, std::move(s), std::move(map), slurm, features, metrics);
        return helper.run();
    } catch (const std::exception& e) {
        if (g_sink == Sink::Stderr)
            std::fprintf(stderr, "nvlsliced: %s\n", e.what());
        else
            say(LOG_ERR, e.what());
        return 1;
    }
}
