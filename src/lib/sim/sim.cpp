#include "sim.hpp"

#include "defrag.hpp"
#include "error.hpp"
#include "model.hpp"
#include "place_stage.hpp"
#include "placement.hpp"
#include "reconcile.hpp"
#include "repair.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <unordered_map>

namespace nvl {
namespace {

enum class Policy { FirstFit, WholeRacks, Block, BlockExpedite, Nvlslice };
const char* name(Policy p) {
    switch (p) {
    case Policy::FirstFit: return "first_fit";
    case Policy::WholeRacks: return "whole_racks";
    case Policy::Block: return "block";
    case Policy::BlockExpedite: return "block_expedite";
    case Policy::Nvlslice: return "nvlslice";
    }
    return "?";
}

double uniform(std::mt19937_64& g) {
    return double(g() >> 11) * (1.0 / 9007199254740992.0);
}
double expo(std::mt19937_64& g, double mean) {
    return -mean * std::log(1.0 - uniform(g));
}
// A uniform draw in [0, 1) for failure `index` of the trace, from the seed
// (and a salt per use) alone: the same on every policy's replay of one
// trace (splitmix64).
double failure_draw(uint64_t seed, size_t index, uint64_t salt = 0) {
    uint64_t z = seed + salt + 0x9e3779b97f4a7c15ULL * (uint64_t(index) + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return double(z >> 11) * (1.0 / 9007199254740992.0);
}
// A failure's kind.
bool dead_failure(uint64_t seed, size_t index, double share) {
    return failure_draw(seed, index) < share;
}

} // namespace

Trace make_trace(const SimParams& p) {
    std::mt19937_64 g(p.seed);
    Trace t;
    const double horizon = p.days * 24;
    const int total = p.racks * p.nodes_per_rack;
    // size mix from single nodes to 8 slices; weights sum to 1
    const std::pair<int, double> mix[] = {{1, .30},  {2, .10},  {4, .10},  {8, .10},
                                          {16, .15}, {32, .12}, {64, .08}, {128, .05}};
    double mean_size = 0;
    for (auto [s, w] : mix) mean_size += std::min(s, total) * w;
    const double rate = p.load * total / (mean_size * p.mean_job_hours); // jobs per hour
    for (double now = expo(g, 1 / rate); now < horizon; now += expo(g, 1 / rate)) {
        double u = uniform(g), acc = 0;
        int size = 1;
        for (auto [s, w] : mix) {
            acc += w;
            size = std::min(s, total);
            if (u < acc) break;
        }
        double hours = std::min(expo(g, p.mean_job_hours), 8 * p.mean_job_hours);
        t.jobs.push_back({now, size, std::max(hours, 0.05), uniform(g) < p.checkpointable});
    }
    const double fail_rate = total / (p.mtbf_days * 24);
    for (double now = expo(g, 1 / fail_rate); now < horizon; now += expo(g, 1 / fail_rate))
        t.failures.emplace_back(now, NodeId(g() % uint64_t(total)));
    return t;
}

namespace {

// The backfill's reservation holds nodes as if this job had them.
constexpr JobId kReservedFor = JobId(-1);

enum EvKind { Arrive, Finish, Fail, FailJob, NodeBack, Eligible, Requeued };
struct Event {
    double time;
    int kind;
    int job;      // trace index (Arrive, Finish, Requeued); Fail, FailJob: the failure's index
    uint32_t gen; // Finish, Requeued: the run it belongs to
    NodeId node;  // Fail, NodeBack
    // ties: by kind, then by job (arrivals at one time queue in trace order)
    bool operator>(const Event& o) const {
        return time > o.time || (time == o.time && (kind > o.kind || (kind == o.kind && job > o.job)));
    }
};

struct RunJob {
    bool running = false;
    bool done = false;
    bool started_once = false;
    uint32_t gen = 0;
    double remaining = 0; // full-speed hours left (at the last checkpoint / start)
    double run_start = 0;
    double work_start = 0;      // run_start + the restart delay of a restart
    double failed_at = -1;      // a node failure stopped it then; -1: not recovering
    bool dead = false;          // that failure: a dead node (else a drain)
    bool requeueing = false;    // stopped by it, its nodes still its own until its requeue
    std::vector<NodeId> failed; // its nodes that failed meanwhile
    double eligible_at = 0;     // plain requeue: Slurm's begin time
    double speed = 1;
    std::vector<NodeId> nodes; // allocated (whole racks: all of them)
    int used = 0;              // nodes doing work
    Placement placement;       // engine policies
    bool lent = false;         // nvlslice: placed on spares lent to it
    bool held = false;         // nvlslice: its repair's target held for it (placement), started once all of it is
};

class Sim {
  public:
    Sim(const SimParams& p, const Trace& t, Policy pol)
        : p_(p), t_(t), pol_(pol), map_(make_map(p, pol)), snap_(map_), jobs_(t.jobs.size()) {
        // each job's request as the plugin makes it from what its user
        // submits: -N NODES --nvl-slice=min(NODES, slice), or =auto where
        // that does not divide it (make_request, the plugin's own rule)
        tags_.reserve(t.jobs.size());
        for (const TraceJob& tj : t.jobs) {
            SliceOptions o;
            o.slice_set = true;
            o.slice = tj.nodes % std::min(tj.nodes, p.slice) ? 0 : std::min(tj.nodes, p.slice);
            o.checkpointable = tj.ckpt;
            try {
                tags_.push_back(make_request(map_, o, tj.nodes, tj.nodes, Requeue::Requeue));
            } catch (const Error&) {
                tags_.emplace_back(); // slice 0: not a slice job
            }
        }
    }

    PolicyResult run();

  private:
    static RackMap make_map(const SimParams& p, Policy pol) {
        RackMap m = regular_map(p.racks, p.nodes_per_rack, pol == Policy::Nvlslice ? p.spares : 0);
        m.defaults().default_slice = p.slice; // what "smaller than a slice" means to the lending rule
        return m;
    }
    bool plain_requeue() const {
        return pol_ == Policy::FirstFit || pol_ == Policy::WholeRacks || pol_ == Policy::Block;
    }
    void note_resume(int j, double now, double work_start);
    // Where a job would start: its nodes, and for the engine's policies its
    // placement and whether it borrows spares.
    struct Choice {
        std::vector<NodeId> nodes;
        Placement placement;
        int split = 0;
        bool lent = false, engine = false;
    };
    // `now`: when (hours), for how long it has waited
    bool choose(const Snapshot& s, int j, double now, Choice& c, Reason* why, bool spares_only) const;
    // `spares_only`: start it only on idle kept spares (the spare pass);
    // `on`: choose its nodes on this snapshot (the backfill's, with the
    // reserved nodes taken) instead of the cluster's.
    bool try_start(int j, double now, Reason* why = nullptr, bool spares_only = false, const Snapshot* on = nullptr);
    // Slurm's backfill for the first waiting job that cannot start: when
    // the running jobs' time limits free room for it, and on which nodes.
    struct Reservation {
        bool ok = false;
        double at = 0;             // hours
        std::vector<NodeId> nodes; // its placement then
    };
    Reservation reserve(int j, double now) const;
    double limit_hours(int j) const;  // a waiting job's time limit, as the backfill sees it
    double expected_end(int j) const; // a running job's end by its limit (never before its real end)
    int priority(int j) const { return j < p_.top_jobs ? 1 : 0; }
    void enqueue(int j); // behind every waiting job of its priority or higher
    int idle_beyond_spares() const {
        int n = 0;
        for (DomainId d = 0; d < map_.domains().size(); ++d)
            n += snap_.counts(d).free - idle_kept_spares(map_.domain(d), snap_.counts(d));
        return n;
    }
    void not_running(int j) {
        auto at = std::find(running_.begin(), running_.end(), j);
        if (at != running_.end()) {
            *at = running_.back();
            running_.pop_back();
        }
    }
    void lend_spares(double now);
    bool maybe_defrag(int j, double now, int repair_slice = 0);
    double stop(int j, double now, bool keep_nodes); // the GPU-hours of work lost
    void let_go(int j);
    void schedule(double now);
    void account_run(int j, double now);
    JobTraits traits(int j) const;
    // Nodes of work the lending policy may take back count as kept spares.
    bool preemptible(int j) const { return pol_ == Policy::Nvlslice && may_borrow_spares(traits(j), p_.lend); }
    void run_on(int j, const std::vector<NodeId>& nodes, double now);

    const SimParams& p_;
    const Trace& t_;
    Policy pol_;
    RackMap map_;
    Snapshot snap_;
    std::vector<RunJob> jobs_;
    std::deque<int> queue_;
    std::vector<int> running_;     // the jobs running now (the backfill's end times)
    std::vector<RequestTag> tags_; // each job's request, as the plugin makes it
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> ev_;
    PolicyResult res_;
    double useful_ = 0, useful_slice_ = 0, alloc_ = 0, wait_sum_ = 0;
    double healthy_hours_ = 0, last_event_ = 0;
    double recovery_sum_ = 0;
    int recoveries_ = 0;
    double failure_lost_ = 0; // GPU-hours lost to failures (the failed jobs, and lent spares taken back for them)
    // per failure, seconds: running again, working again; the same for big jobs
    std::vector<double> resume_, resume_work_, resume_big_, resume_big_work_;
    std::vector<double> resume_slice_drain_, resume_slice_dead_;
    bool fail(NodeId node, double now, bool dead);
    void finish(int j, double now);
    bool fail_job(const Event& e, double now);
    PolicyResult summary(double horizon);
    void requeued(int j, double now); // a failed job's requeue: the policy acts
    // nvlslice, a dead node: its DOWN to its job's nodes free, for the
    // failure being struck (drawn from complete_dead_draws when given)
    double complete_dead() const {
        const auto& d = p_.complete_dead_draws;
        if (d.empty()) return p_.complete_dead_s;
        const size_t i = size_t(failure_draw(p_.seed, size_t(res_.failures_hit), 0x5eed) * double(d.size()));
        return d[std::min(i, d.size() - 1)];
    }
    bool hold_repair(int j, double now); // nvlslice: no room now: the target that frees soonest, held
    // A repair's victims (lent or checkpointable work on its nodes) stop and
    // go to the head of the queue; how many were running.
    int take_back(const std::vector<JobId>& victims, double now) {
        int n = 0;
        for (JobId v : victims) {
            const int vj = int(v) - 1;
            if (vj < 0 || !jobs_[size_t(vj)].running) continue;
            failure_lost_ += stop(vj, now, false);
            ++res_.restarts;
            queue_.push_front(vj);
            ++n;
        }
        return n;
    }
    void claim_held(double now); // held targets take the nodes that freed; a whole one starts its job
    void drop_hold(int j);       // a held target's node failed: back to the head of the queue
    std::vector<int> held_;      // jobs waiting for a held target
    double last_defrag_ = -1;
    const HelperConfig helper_; // the daemon's defaults: the same defragmentation pace
};

JobTraits Sim::traits(int j) const {
    const TraceJob& tj = t_.jobs[size_t(j)];
    JobTraits jt{tj.ckpt, true, true, tj.nodes};
    if (tj.ckpt && p_.checkpoint_known) jt.checkpoint_s = int(p_.checkpoint_hours * 3600);
    return jt;
}

// (Re)starts job j on `nodes`: every start pays the restart delay first.
void Sim::run_on(int j, const std::vector<NodeId>& nodes, double now) {
    RunJob& r = jobs_[size_t(j)];
    const bool pre = preemptible(j);
    for (NodeId id : nodes) snap_.set(id, {NodeState::Allocated, JobId(j + 1), -1, pre, pre && r.lent});
    r.running = true;
    running_.push_back(j);
    r.nodes = nodes;
    r.run_start = now;
    r.work_start = now + p_.restart_hours; // every start pays it: loading, initialisation
    if (r.failed_at >= 0) {
        recovery_sum_ += r.work_start - r.failed_at;
        ++recoveries_;
        note_resume(j, now, r.work_start);
        r.failed_at = -1;
    }
    if (!r.started_once) {
        r.started_once = true;
        r.remaining = t_.jobs[size_t(j)].hours;
        wait_sum_ += now - t_.jobs[size_t(j)].arrival;
        ++res_.jobs_started;
    }
    ++r.gen;
    ev_.push({r.work_start + r.remaining / r.speed, Finish, j, r.gen, 0});
}

void Sim::note_resume(int j, double now, double work_start) {
    const RunJob& r = jobs_[size_t(j)];
    const bool big = t_.jobs[size_t(j)].nodes >= 64;
    resume_.push_back((now - r.failed_at) * 3600);
    resume_work_.push_back((work_start - r.failed_at) * 3600);
    if (big) {
        resume_big_.push_back(resume_.back());
        resume_big_work_.push_back(resume_work_.back());
    }
    // slice jobs: of a slice or more (with sliced_top_only: the top jobs)
    if (t_.jobs[size_t(j)].nodes >= p_.slice && (!p_.sliced_top_only || j < p_.top_jobs))
        (r.dead ? resume_slice_dead_ : resume_slice_drain_).push_back(resume_.back());
}

Percentiles percentiles(std::vector<double> v) {
    Percentiles p;
    p.n = int(v.size());
    if (v.empty()) return p;
    std::sort(v.begin(), v.end());
    auto rank = [&](double q) { return v[std::min(v.size() - 1, size_t(std::ceil(q * double(v.size()))) - 1)]; };
    p.p50 = rank(0.50);
    p.p90 = rank(0.90);
    p.p99 = rank(0.99);
    p.max = v.back();
    return p;
}

void Sim::account_run(int j, double now) {
    RunJob& r = jobs_[size_t(j)];
    alloc_ += double(r.nodes.size()) * (now - r.run_start);
}

// Where job j would start on `s`, by this policy (nothing changes).
bool Sim::choose(const Snapshot& s, int j, double now, Choice& c, Reason* why, bool spares_only) const {
    const TraceJob& tj = t_.jobs[size_t(j)];
    if (s.total_free() < tj.nodes) return false;
    c = Choice{};
    if (pol_ == Policy::FirstFit) {
        for (NodeId id = 0; id < map_.node_count() && int(c.nodes.size()) < tj.nodes; ++id)
            if (s.node(id).state == NodeState::Idle) c.nodes.push_back(id);
        if (int(c.nodes.size()) < tj.nodes) return false;
        const int k = std::min(tj.nodes, p_.slice);
        for (size_t i = 0; i < c.nodes.size(); i += size_t(k))
            if (map_.domain_of(c.nodes[i]) != map_.domain_of(c.nodes[std::min(c.nodes.size(), i + size_t(k)) - 1]))
                ++c.split;
    } else if (pol_ == Policy::WholeRacks && tj.nodes >= p_.slice) {
        const int want = (tj.nodes + p_.nodes_per_rack - 1) / p_.nodes_per_rack;
        std::vector<DomainId> racks;
        for (DomainId d = 0; d < map_.domains().size() && int(racks.size()) < want; ++d)
            if (s.counts(d).free == map_.domain(d).size()) racks.push_back(d);
        if (int(racks.size()) < want) return false;
        for (DomainId d : racks)
            c.nodes.insert(c.nodes.end(), map_.domain(d).nodes.begin(), map_.domain(d).nodes.end());
    } else if (pol_ == Policy::WholeRacks) {
        // below one slice: packed best fit into racks already in use
        SliceRequest req;
        req.sliced = false;
        req.total_nodes = tj.nodes;
        PlacementResult pr = place(s, req);
        if (!pr.ok) return false;
        c.nodes = pr.placement.nodes();
        c.split = pr.placement.domain_count(map_) > 1;
    } else {
        // the request as the helper makes it from the job's tag
        // (slice_request); a job the plugin refuses as a slice job asks
        // for nodes alone
        const RequestTag& tag = tags_[size_t(j)];
        SliceRequest req;
        if (tag.slice > 0)
            req = slice_request(JobId(j + 1), tag, int64_t((now - tj.arrival) * 3600), helper_.prefer_wait_s);
        else
            req.sliced = false;
        req.total_nodes = tj.nodes;
        const bool lendable = pol_ == Policy::Nvlslice && may_borrow_spares(traits(j), p_.lend);
        if (p_.sliced_top_only && j >= p_.top_jobs && !lendable) req.sliced = false;
        // spares are lent to preemptible work until a repair needs them
        // (the helper's rule: place_or_borrow)
        bool on_spares = false;
        PlacementResult pr = place_or_borrow(s, req, lendable, c.lent, &on_spares);
        if (!pr.ok) {
            if (why) *why = pr.reason;
            return false;
        }
        if (spares_only && !on_spares) return false;
        c.nodes = pr.placement.nodes();
        c.placement = pr.placement;
        c.engine = true;
    }
    return true;
}

bool Sim::try_start(int j, double now, Reason* why, bool spares_only, const Snapshot* on) {
    Choice c;
    if (!choose(on ? *on : snap_, j, now, c, why, spares_only)) return false;
    const TraceJob& tj = t_.jobs[size_t(j)];
    RunJob& r = jobs_[size_t(j)];
    if (c.engine) {
        r.lent = c.lent;
        r.placement = c.placement;
    }
    const std::vector<NodeId>& nodes = c.nodes;
    const int split = c.split;
    double speed = 1;
    if (split) speed = p_.split_speed;
    res_.split_slices += split;
    r.used = tj.nodes;
    r.speed = speed;
    run_on(j, nodes, now);
    if (pol_ == Policy::Nvlslice && p_.on_decision) {
        SimDecision d;
        d.hours = now;
        d.job = JobId(j + 1);
        d.nodes = nodes;
        d.lent = r.lent;
        p_.on_decision(d);
    }
    return true;
}

// The run ends early (failure): keep the work up to the last checkpoint.
double Sim::stop(int j, double now, bool keep_nodes) {
    const TraceJob& tj = t_.jobs[size_t(j)];
    RunJob& r = jobs_[size_t(j)];
    account_run(j, now);
    const double wall = std::max(0.0, now - r.work_start);
    const double kept_wall = tj.ckpt ? std::floor(wall / p_.checkpoint_hours) * p_.checkpoint_hours : 0.0;
    const double kept = kept_wall * r.speed;
    const double lost = (wall - kept_wall) * r.used * 4;
    res_.lost_gpu_hours += lost;
    useful_ += kept * r.used;
    if (tj.nodes >= p_.slice) useful_slice_ += kept * r.used;
    r.remaining = std::max(0.0, r.remaining - kept);
    r.running = false;
    not_running(j);
    ++r.gen;
    if (!keep_nodes) let_go(j);
    return lost;
}

// Job j's nodes that are still its own go idle.
void Sim::let_go(int j) {
    for (NodeId id : jobs_[size_t(j)].nodes)
        if (snap_.node(id).state == NodeState::Allocated && snap_.node(id).job_id == JobId(j + 1))
            snap_.set(id, {NodeState::Idle, 0, -1, false});
}

void Sim::enqueue(int j) {
    auto at = queue_.end();
    while (at != queue_.begin() && priority(*(at - 1)) < priority(j)) --at;
    queue_.insert(at, j);
}

double Sim::limit_hours(int j) const {
    const RunJob& r = jobs_[size_t(j)];
    const double run = p_.restart_hours + (r.started_once ? r.remaining : t_.jobs[size_t(j)].hours);
    return std::max(run, p_.time_limit_s / 3600);
}

double Sim::expected_end(int j) const {
    const RunJob& r = jobs_[size_t(j)];
    return std::max(r.work_start + r.remaining / r.speed, r.run_start + p_.time_limit_s / 3600);
}

// Slurm's backfill (backfill.c, EASY for the first job): the running jobs
// end by their time limits, in order, on a copy of the cluster, until the
// job fits there, by this policy's own placement.
Sim::Reservation Sim::reserve(int j, double now) const {
    Reservation res;
    std::vector<std::pair<double, int>> ends;
    ends.reserve(running_.size());
    for (int k : running_) ends.emplace_back(expected_end(k), k);
    std::sort(ends.begin(), ends.end());
    Snapshot later = snap_;
    Choice c;
    for (const auto& [at, k] : ends) {
        for (NodeId id : jobs_[size_t(k)].nodes)
            if (later.node(id).state == NodeState::Allocated && later.node(id).job_id == JobId(k + 1))
                later.set(id, {NodeState::Idle, 0, -1, false});
        if (later.total_free() < t_.jobs[size_t(j)].nodes || !choose(later, j, at, c, nullptr, false)) continue;
        res.ok = true;
        res.at = std::max(at, now);
        res.nodes = std::move(c.nodes);
        return res;
    }
    return res;
}

void Sim::schedule(double now) {
    // FIFO with a short look-ahead (the same for every policy), and
    // Slurm's backfill: the first job that cannot start holds the nodes
    // it will get when running jobs end by their time limits; a later job
    // starts on them only if its own limit ends before then.
    claim_held(now);
    int looked = 0;
    Reservation held;
    std::optional<Snapshot> without; // the cluster with the reserved nodes taken
    for (auto it = queue_.begin(); it != queue_.end() && looked < p_.lookahead;) {
        if (jobs_[size_t(*it)].eligible_at > now) { // Slurm's begin time: not considered yet
            ++it;
            continue;
        }
        ++looked;
        Reason why = Reason::None;
        const int j = *it;
        const bool before_it = held.ok && now + limit_hours(j) <= held.at;
        if (try_start(j, now, &why, false, held.ok && !before_it ? &*without : nullptr)) {
            if (without)
                for (NodeId id : jobs_[size_t(j)].nodes) without->set(id, snap_.node(id));
            it = queue_.erase(it);
            continue;
        }
        if (looked == 1 && (why == Reason::Fragmented || why == Reason::WouldConsumeSpares)) {
            int head = *it;
            maybe_defrag(head, now);
            it = std::find(queue_.begin(), queue_.end(), head);
            if (try_start(head, now)) {
                it = queue_.erase(it);
                continue;
            }
        }
        if (p_.backfill && !held.ok) {
            held = reserve(j, now);
            if (held.ok) {
                without.emplace(snap_);
                for (NodeId id : held.nodes)
                    if (without->node(id).state == NodeState::Idle)
                        without->set(id, {NodeState::Allocated, kReservedFor, -1, false});
            }
        }
        ++it;
    }
    if (pol_ == Policy::Nvlslice && p_.lend_depth > 0 && p_.lend != LendScope::None) lend_spares(now);
}

// The first lend_depth eligible jobs of the queue, in its order: one that
// may borrow spares starts if it fits whole in one rack's idle kept spares
// (the helper's rule: it tries every waiting job, spares first, and Slurm
// reaches the first bf_max_job_test of them). Jobs that do not fit stay
// where they are; only spares are taken.
void Sim::lend_spares(double now) {
    auto room = [&] { // the most idle kept spares of one rack (place_or_borrow's test)
        int most = 0;
        for (DomainId d = 0; d < map_.domains().size(); ++d)
            most = std::max(most, idle_kept_spares(map_.domain(d), snap_.counts(d)));
        return most;
    };
    int most = room(), seen = 0;
    for (auto it = queue_.begin(); most > 0 && it != queue_.end() && seen < p_.lend_depth;) {
        const int j = *it;
        if (jobs_[size_t(j)].eligible_at > now) {
            ++it;
            continue;
        }
        ++seen;
        if (t_.jobs[size_t(j)].nodes <= most && preemptible(j) && try_start(j, now, nullptr, true)) {
            it = queue_.erase(it);
            most = room();
            continue;
        }
        ++it;
    }
}

// nvlslice's defragmentation: the helper's own plan_defrag() at the
// helper's default pace (a slice job blocked by fragmentation for
// defrag_after_s, at most one per defrag_interval_s; defrag_due()).
// Requeued jobs wait right behind the job they made room for. For a repair
// (`repair_slice`: the failed slice's size; the helper's
// try_defrag(for_repair)), at once, and the requeued jobs go to the head of
// the queue, as lent spares taken back do. True if jobs were requeued.
bool Sim::maybe_defrag(int j, double now, int repair_slice) {
    const TraceJob& tj = t_.jobs[size_t(j)];
    const bool repair = repair_slice > 0;
    if (pol_ != Policy::Nvlslice) return false;
    if (repair ? !p_.defrag_repairs : (!p_.defrag || tj.nodes < p_.slice)) return false;
    const double after = p_.defrag_after_s >= 0 ? p_.defrag_after_s : helper_.defrag_after_s;
    const double interval = p_.defrag_interval_s >= 0 ? p_.defrag_interval_s : helper_.defrag_interval_s;
    const DefragPace pace{repair, (now - tj.arrival) * 3600, last_defrag_ >= 0 ? (now - last_defrag_) * 3600 : -1.0,
                          after, interval};
    const auto due = decide_defrag(snap_, repair ? repair_slice : p_.slice, pace, [&](JobId id) {
        const int v = int(id) - 1;
        if (v < 0 || v == j || !jobs_[size_t(v)].running) return VictimInfo{};
        const double restart = p_.restart_hours * 3600; // every start's startup, and the next one
        return victim_info(traits(v), (now - jobs_[size_t(v)].run_start) * 3600, restart, restart); // the helper's rule
    });
    if (!due || !*due) return false;
    const DefragPlan& plan = *due;
    if (p_.on_decision) {
        SimDecision d;
        d.kind = SimDecision::Defrag;
        d.hours = now;
        d.job = JobId(j + 1);
        d.rack = plan.domain;
        d.victims = plan.victims;
        p_.on_decision(d);
    }
    if (!repair) last_defrag_ = now; // a repair's does not delay the paced ones
    auto pos = std::find(queue_.begin(), queue_.end(), j);
    for (JobId id : plan.victims) {
        const int v = int(id) - 1;
        const double lost = stop(v, now, false);
        ++res_.restarts;
        ++res_.defrag_preemptions;
        if (repair) {
            failure_lost_ += lost;
            queue_.push_front(v);
            continue;
        }
        pos = queue_.insert(pos == queue_.end() ? pos : pos + 1, v);
        pos = std::find(queue_.begin(), queue_.end(), j);
    }
    return true;
}

// Node `node` fails now (`dead`: a dead node, else a drain). False when
// nothing else is to happen in this event (the caller skips the schedule).
bool Sim::fail(NodeId node, double now, bool dead) {
    const NodeStatus st = snap_.node(node);
    if (st.state == NodeState::Down) return false;
    snap_.set(node, {NodeState::Down, 0, -1, false});
    ev_.push({now + p_.node_repair_hours, NodeBack, -1, 0, node});
    if (st.state != NodeState::Allocated || st.job_id == 0) return true;
    const int j = int(st.job_id) - 1;
    RunJob& r = jobs_[size_t(j)];
    if (r.held) { // a node of its held target: the hold ends, it waits with its priority
        drop_hold(j);
        return true;
    }
    if (r.requeueing) { // stopped already: one more node for its repair to replace
        r.failed.push_back(node);
        return false;
    }
    if (pol_ == Policy::WholeRacks) {
        // the whole rack is the job's, but only its first `used` nodes work
        auto at = std::find(r.nodes.begin(), r.nodes.end(), node);
        if (at - r.nodes.begin() >= r.used) return true;
    }
    // The job stops working now; its nodes stay its own (running on,
    // completing, or held for it) until its requeue.
    failure_lost_ += stop(j, now, true);
    ++res_.restarts;
    ++res_.failures_hit;
    r.failed_at = now;
    r.dead = dead;
    r.requeueing = true;
    r.failed.assign(1, node);
    double after_s = p_.complete_s;
    if (r.dead)
        after_s =
            pol_ == Policy::Nvlslice ? p_.probe_s + complete_dead() : p_.slurmd_timeout_s + p_.complete_dead_slurm_s;
    ev_.push({now + after_s / 3600, Requeued, j, r.gen, 0});
    return false;
}

// The failed job's requeue: its nodes are let go (nvlslice: to its repair,
// which holds them), and the policy brings it back.
void Sim::requeued(int j, double now) {
    RunJob& r = jobs_[size_t(j)];
    r.requeueing = false;
    if (pol_ == Policy::Nvlslice) {
        // the job's nodes still look allocated to it; plan around the failed ones
        RepairPlan plan = plan_repair(snap_, r.placement, r.failed);
        if (!plan.feasible) {
            // no room in its rack or another: free a rack from
            // checkpointable work at once, then move the slice there
            int k = 0;
            for (size_t i = 0; i < plan.slices.size() && i < r.placement.slices.size(); ++i)
                if (plan.slices[i].action == RepairAction::Wait)
                    k = std::max(k, int(r.placement.slices[i].nodes.size()));
            if (k > 0 && maybe_defrag(j, now, k)) plan = plan_repair(snap_, r.placement, r.failed);
            if (!plan.feasible && hold_repair(j, now)) return;
        }
        if (plan.feasible) {
            // lent spares come back first: their jobs go back to the queue
            take_back(plan.preempt, now);
            let_go(j);
            r.placement = plan.placement;
            run_on(j, plan.placement.nodes(), now); // a restart: it pays the delay
            ++res_.repairs;
            res_.moves += plan.moved;
            return;
        }
    }
    let_go(j);
    if (plain_requeue()) {
        // back of the queue (its submit time is reset), eligible
        // after the begin-time delay
        r.eligible_at = now + p_.requeue_delay_s / 3600;
        enqueue(j);
        ev_.push({r.eligible_at, Eligible, j, 0, 0});
    } else {
        // expedited (sorted first, its old nodes its first pick) or
        // nvlslice's fallback: the head of the queue, at once
        queue_.push_front(j);
    }
}

// The helper's held repair (repair_apply.cpp, RepairWaits): no room now and
// none freed from checkpointable work alone, so the slice goes where the
// nodes it needs free soonest by the running jobs' time limits, the
// checkpointable work there requeued at once (plan_repair with LaterRoom,
// the helper's own), if that is within repair_hold_max; its healthy slices
// and the target are held for it (its own reservation) and it starts the
// moment the last node frees. False: the job is requeued to wait.
bool Sim::hold_repair(int j, double now) {
    if (helper_.repair_hold_max_s <= 0) return false;
    RunJob& r = jobs_[size_t(j)];
    std::unordered_map<JobId, int64_t> ends;
    for (int k : running_) ends[JobId(k + 1)] = int64_t(std::ceil(expected_end(k) * 3600));
    const int64_t now_s = int64_t(now * 3600);
    const LaterRoom later{&ends, now_s, now_s + helper_.repair_hold_max_s, p_.defrag_repairs};
    r.placement.job_id = JobId(j + 1);
    const RepairPlan plan = plan_repair(snap_, r.placement, r.failed, NodeSet(), &later);
    if (!plan.feasible) return false;
    take_back(plan.preempt, now);
    res_.defrag_preemptions += take_back(plan.evict, now);
    let_go(j);
    r.placement = plan.placement;
    r.nodes = plan.placement.nodes();
    r.held = true;
    held_.push_back(j);
    ++res_.repairs;
    res_.moves += plan.moved;
    return true;
}

void Sim::claim_held(double now) {
    for (size_t i = 0; i < held_.size();) {
        const int j = held_[i];
        RunJob& r = jobs_[size_t(j)];
        if (std::any_of(r.nodes.begin(), r.nodes.end(), [&](NodeId id) { return !is_healthy(snap_.node(id).state); })) {
            drop_hold(j); // a node of its target failed while another job ran there
            continue;
        }
        bool all = true;
        for (NodeId id : r.nodes) {
            const NodeStatus& st = snap_.node(id);
            if (st.state == NodeState::Idle || st.state == NodeState::SpareReserved)
                snap_.set(id, {NodeState::Allocated, JobId(j + 1), -1, false});
            else if (!(st.state == NodeState::Allocated && st.job_id == JobId(j + 1)))
                all = false;
        }
        if (!all) {
            ++i;
            continue;
        }
        held_.erase(held_.begin() + long(i));
        r.held = false;
        run_on(j, r.nodes, now);
    }
}

void Sim::drop_hold(int j) {
    RunJob& r = jobs_[size_t(j)];
    r.held = false;
    held_.erase(std::find(held_.begin(), held_.end(), j));
    let_go(j);
    queue_.push_front(j);
}

PolicyResult Sim::run() {
    res_.policy = name(pol_);
    const double horizon = p_.days * 24;
    for (size_t j = 0; j < t_.jobs.size(); ++j) ev_.push({t_.jobs[j].arrival, Arrive, int(j), 0, 0});
    for (size_t i = 0; i < t_.failures.size(); ++i)
        ev_.push({t_.failures[i].first, Fail, int(i), 0, t_.failures[i].second});
    for (size_t i = 0; i < t_.job_failures.size(); ++i) ev_.push({t_.job_failures[i].time, FailJob, int(i), 0, 0});
    while (!ev_.empty() && ev_.top().time < horizon) {
        Event e = ev_.top();
        ev_.pop();
        const double now = e.time;
        healthy_hours_ += double(snap_.total_healthy()) * (now - last_event_);
        last_event_ = now;
        if (e.kind == Arrive) {
            enqueue(e.job);
        } else if (e.kind == Finish) {
            RunJob& r = jobs_[size_t(e.job)];
            if (!r.running || r.gen != e.gen) continue;
            finish(e.job, now);
        } else if (e.kind == Fail) {
            if (!fail(e.node, now, dead_failure(p_.seed, size_t(e.job), p_.dead_share))) continue;
        } else if (e.kind == FailJob) {
            if (!fail_job(e, now)) continue;
        } else if (e.kind == Requeued) {
            RunJob& r = jobs_[size_t(e.job)];
            if (!r.requeueing || r.gen != e.gen) continue;
            requeued(e.job, now);
        } else if (e.kind == NodeBack) {
            if (snap_.node(e.node).state == NodeState::Down) snap_.set(e.node, {NodeState::Idle, 0, -1, false});
        }
        schedule(now);
    }
    return summary(horizon);
}

// Job j's run ends at `now`: its work done, its nodes idle.
void Sim::finish(int j, double now) {
    RunJob& r = jobs_[size_t(j)];
    account_run(j, now);
    useful_ += r.remaining * r.used;
    if (t_.jobs[size_t(j)].nodes >= p_.slice) useful_slice_ += r.remaining * r.used;
    r.remaining = 0;
    r.running = false;
    not_running(j);
    r.done = true;
    ++res_.jobs_done;
    for (NodeId id : r.nodes)
        if (snap_.node(id).state == NodeState::Allocated) snap_.set(id, {NodeState::Idle, 0, -1, false});
}

// A failjob event: the job's k-th node fails (its rack, with failjob_rack),
// once the cluster is saturated (failjob_busy_wait_s). False when nothing
// else is to happen in this event.
bool Sim::fail_job(const Event& e, double now) {
    const TraceJobFailure& f = t_.job_failures[size_t(e.job)];
    const RunJob& r = jobs_[size_t(f.job)];
    if (!r.running || r.nodes.empty()) return false;                  // not running then: nothing fails
    if (e.gen < p_.failjob_busy_wait_s && idle_beyond_spares() > 0) { // not saturated yet: a second later
        ev_.push({now + 1.0 / 3600, FailJob, e.job, e.gen + 1, 0});
        return false;
    }
    const int of = r.used > 0 ? std::min(r.used, int(r.nodes.size())) : int(r.nodes.size());
    const NodeId hit = r.nodes[size_t(f.k % of)];
    if (!p_.failjob_rack) return fail(hit, now, f.dead);
    bool any = false;
    for (NodeId id : map_.domain(map_.domain_of(hit)).nodes) any = fail(id, now, f.dead) || any;
    return any;
}

// The run's figures at the horizon.
PolicyResult Sim::summary(double horizon) {
    // work in flight at the horizon counts as done so far
    for (size_t j = 0; j < jobs_.size(); ++j) {
        RunJob& r = jobs_[j];
        if (!r.running) continue;
        account_run(int(j), horizon);
        double w = std::max(0.0, horizon - r.work_start) * r.speed * r.used;
        useful_ += w;
        if (t_.jobs[j].nodes >= p_.slice) useful_slice_ += w;
    }
    // failed jobs still waiting: their wait so far (a lower bound)
    for (size_t j = 0; j < jobs_.size(); ++j) {
        RunJob& r = jobs_[j];
        if (r.running || r.failed_at < 0) continue;
        ++res_.unresumed;
        note_resume(int(j), horizon, horizon);
    }
    res_.resume_s = percentiles(resume_);
    res_.resume_work_s = percentiles(resume_work_);
    res_.resume_big_s = percentiles(resume_big_);
    res_.resume_big_work_s = percentiles(resume_big_work_);
    res_.resume_slice_drain_s = percentiles(resume_slice_drain_);
    res_.resume_slice_dead_s = percentiles(resume_slice_dead_);
    res_.lost_gpu_hours_per_failure = res_.failures_hit ? failure_lost_ / res_.failures_hit : 0;
    healthy_hours_ += double(snap_.total_healthy()) * (horizon - last_event_);
    res_.busy_healthy = healthy_hours_ > 0 ? alloc_ / healthy_hours_ : 0;
    const double cap = double(map_.node_count()) * horizon;
    res_.goodput = useful_ / cap;
    res_.slice_goodput = useful_slice_ / cap;
    res_.utilization = alloc_ / cap;
    res_.mean_wait_h = res_.jobs_started ? wait_sum_ / res_.jobs_started : 0;
    res_.mean_recovery_h = recoveries_ ? recovery_sum_ / recoveries_ : 0;
    return res_;
}

} // namespace

std::vector<PolicyResult> run_trace(const SimParams& p) {
    return run_trace(p, make_trace(p));
}

std::vector<PolicyResult> run_trace(const SimParams& p, const Trace& t) {
    if (p.racks < 1 || p.nodes_per_rack < 2 || p.slice < 1 || p.slice > p.nodes_per_rack - p.spares || p.days <= 0 ||
        p.mtbf_days <= 0 || p.mean_job_hours <= 0 || p.load <= 0 || p.checkpoint_hours <= 0 || p.restart_hours < 0 ||
        p.requeue_delay_s < 0 || !(p.split_speed > 0 && p.split_speed <= 1) || p.lookahead < 1)
        throw Error("trace: need racks >= 1, slice <= nodes per rack - spares, and positive days, MTBF, job hours, "
                    "load, checkpoint interval, restart delay and requeue delay >= 0, 0 < split speed <= 1, "
                    "look-ahead >= 1");
    const uint64_t total = uint64_t(p.racks) * uint64_t(p.nodes_per_rack);
    for (const auto& f : t.failures)
        if (f.second >= total)
            throw Error(fmt::format("trace: a failure names node {}, but the cluster has {} nodes", f.second, total));
    for (const auto& f : t.job_failures)
        if (f.job < 0 || size_t(f.job) >= t.jobs.size() || f.k < 0)
            throw Error(fmt::format("trace: a job's failure names job {} (node {}), but the trace has {} jobs", f.job,
                                    f.k, t.jobs.size()));
    for (const auto& j : t.jobs)
        if (j.nodes < 1 || uint64_t(j.nodes) > total)
            throw Error(fmt::format("trace: a job of {} nodes on a cluster of {}", j.nodes, total));
    std::vector<PolicyResult> out;
    for (Policy pol : {Policy::FirstFit, Policy::WholeRacks, Policy::Block, Policy::BlockExpedite, Policy::Nvlslice})
        out.push_back(Sim(p, t, pol).run());
    return out;
}

std::string write_trace(const Trace& t) {
    std::string out = "# nvl-sim trace: job ARRIVAL_H NODES HOURS CKPT | fail TIME_H NODE\n";
    for (const auto& j : t.jobs)
        out += fmt::format("job {:.6f} {} {:.6f} {}\n", j.arrival, j.nodes, j.hours, j.ckpt ? 1 : 0);
    for (const auto& [when, node] : t.failures) out += fmt::format("fail {:.6f} {}\n", when, node);
    for (const auto& f : t.job_failures)
        out += fmt::format("failjob {:.6f} {} {} {}\n", f.time, f.job, f.k, f.dead ? "dead" : "drain");
    return out;
}

Trace read_trace(const std::string& text, const std::string& where) {
    Trace t;
    size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        const std::string l = text.substr(pos, end - pos);
        pos = end + 1;
        ++line;
        if (l.empty() || l[0] == '#') continue;
        auto bad = [&](const char* what) {
            return Error(fmt::format("{}:{}: {} (expected \"job ARRIVAL_H NODES HOURS CKPT\" or \"fail TIME_H NODE\")",
                                     where, line, what));
        };
        char kind[8] = {0};
        double a = 0, h = 0;
        long long n = 0;
        int ck = 0, used = 0;
        if (std::sscanf(l.c_str(), "%7s%n", kind, &used) != 1) throw bad("no line kind");
        const char* rest = l.c_str() + used;
        int more = 0;
        if (std::string(kind) == "job") {
            if (std::sscanf(rest, " %lf %lld %lf %d %n", &a, &n, &h, &ck, &more) != 4 || rest[more] != '\0')
                throw bad("a job line needs four numbers");
            if (!std::isfinite(a) || !std::isfinite(h) || !(a >= 0) || n < 1 || n > (1 << 20) || !(h > 0) ||
                (ck != 0 && ck != 1))
                throw bad("a job needs a finite arrival >= 0, 1 to 2^20 nodes, finite hours > 0 and CKPT 0 or 1");
            t.jobs.push_back({a, int(n), h, ck == 1});
        } else if (std::string(kind) == "fail") {
            if (std::sscanf(rest, " %lf %lld %n", &a, &n, &more) != 2 || rest[more] != '\0')
                throw bad("a fail line needs a time and a node");
            if (!std::isfinite(a) || !(a >= 0) || n < 0 || n >= (1 << 20))
                throw bad("a failure needs a finite time >= 0 and a node index 0 to 2^20 - 1");
            t.failures.emplace_back(a, NodeId(n));
        } else if (std::string(kind) == "failjob") {
            char what[8] = {0};
            long long k = 0;
            if (std::sscanf(rest, " %lf %lld %lld %7s %n", &a, &n, &k, what, &more) != 4 || rest[more] != '\0')
                throw bad("a failjob line needs a time, a job, a node of it and drain or dead");
            const std::string w = what;
            if (!std::isfinite(a) || !(a >= 0) || n < 0 || k < 0 || k >= (1 << 20) || (w != "drain" && w != "dead"))
                throw bad("a job's failure needs a finite time >= 0, a job index >= 0, its node 0 to 2^20 - 1 and "
                          "drain or dead");
            t.job_failures.push_back({a, int(n), int(k), w == "dead"});
        } else {
            throw bad("unknown line kind");
        }
    }
    auto by_time = [](const auto& x, const auto& y) { return x.arrival < y.arrival; };
    std::stable_sort(t.jobs.begin(), t.jobs.end(), by_time);
    std::stable_sort(t.failures.begin(), t.failures.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    std::stable_sort(t.job_failures.begin(), t.job_failures.end(),
                     [](const auto& x, const auto& y) { return x.time < y.time; });
    for (const auto& f : t.job_failures)
        if (size_t(f.job) >= t.jobs.size())
            throw Error(fmt::format("{}: a failjob line names job {}, but the trace has {} jobs (0 to {})", where,
                                    f.job, t.jobs.size(), t.jobs.size() - 1));
    return t;
}

} // namespace nvl
