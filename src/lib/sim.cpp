#include "sim.hpp"

#include "error.hpp"
#include "model.hpp"
#include "placement.hpp"
#include "repair.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <random>

namespace nvl {
namespace {

enum class Policy { FirstFit, WholeRacks, Block, Nvlslice };
const char* name(Policy p) {
    switch (p) {
    case Policy::FirstFit: return "first_fit";
    case Policy::WholeRacks: return "whole_racks";
    case Policy::Block: return "block";
    case Policy::Nvlslice: return "nvlslice";
    }
    return "?";
}

struct TraceJob {
    double arrival;
    int nodes;
    double hours; // work at full speed
    bool ckpt;
};

struct Trace {
    std::vector<TraceJob> jobs;
    std::vector<std::pair<double, NodeId>> failures; // time, node
};

double uniform(std::mt19937_64& g) {
    return double(g() >> 11) * (1.0 / 9007199254740992.0);
}
double expo(std::mt19937_64& g, double mean) {
    return -mean * std::log(1.0 - uniform(g));
}

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

enum EvKind { Arrive, Finish, Fail, NodeBack };
struct Event {
    double time;
    int kind;
    int job;      // trace index (Arrive, Finish)
    uint32_t gen; // Finish: the run it belongs to
    NodeId node;  // Fail, NodeBack
    bool operator>(const Event& o) const { return time > o.time || (time == o.time && kind > o.kind); }
};

struct RunJob {
    bool running = false;
    bool done = false;
    bool started_once = false;
    uint32_t gen = 0;
    double remaining = 0; // full-speed hours left (at the last checkpoint / start)
    double run_start = 0;
    double speed = 1;
    std::vector<NodeId> nodes; // allocated (whole racks: all of them)
    int used = 0;              // nodes doing work
    Placement placement;       // engine policies
};

class Sim {
  public:
    Sim(const SimParams& p, const Trace& t, Policy pol)
        : p_(p), t_(t), pol_(pol), map_(make_map(p, pol)), snap_(map_), jobs_(t.jobs.size()) {}

    PolicyResult run();

  private:
    static RackMap make_map(const SimParams& p, Policy pol) {
        return regular_map(p.racks, p.nodes_per_rack, pol == Policy::Nvlslice ? p.spares : 0);
    }
    bool try_start(int j, double now, Reason* why = nullptr);
    void maybe_defrag(int j, double now);
    void stop(int j, double now, bool keep_nodes);
    void schedule(double now);
    void account_run(int j, double now);

    const SimParams& p_;
    const Trace& t_;
    Policy pol_;
    RackMap map_;
    Snapshot snap_;
    std::vector<RunJob> jobs_;
    std::deque<int> queue_;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> ev_;
    PolicyResult res_;
    double useful_ = 0, useful_slice_ = 0, alloc_ = 0, wait_sum_ = 0;
    double last_defrag_ = -1;
};

void Sim::account_run(int j, double now) {
    RunJob& r = jobs_[size_t(j)];
    alloc_ += double(r.nodes.size()) * (now - r.run_start);
}

bool Sim::try_start(int j, double now, Reason* why) {
    const TraceJob& tj = t_.jobs[size_t(j)];
    RunJob& r = jobs_[size_t(j)];
    if (snap_.total_free() < tj.nodes) return false;
    std::vector<NodeId> nodes;
    double speed = 1;
    int split = 0;
    bool lent = false;
    if (pol_ == Policy::FirstFit) {
        for (NodeId id = 0; id < map_.node_count() && int(nodes.size()) < tj.nodes; ++id)
            if (snap_.node(id).state == NodeState::Idle) nodes.push_back(id);
        if (int(nodes.size()) < tj.nodes) return false;
        const int k = std::min(tj.nodes, p_.slice);
        for (size_t s = 0; s < nodes.size(); s += size_t(k))
            if (map_.domain_of(nodes[s]) != map_.domain_of(nodes[std::min(nodes.size(), s + size_t(k)) - 1])) ++split;
        if (split) speed = p_.split_speed;
    } else if (pol_ == Policy::WholeRacks) {
        const int want = (tj.nodes + p_.nodes_per_rack - 1) / p_.nodes_per_rack;
        std::vector<DomainId> racks;
        for (DomainId d = 0; d < map_.domains().size() && int(racks.size()) < want; ++d)
            if (snap_.counts(d).free == map_.domain(d).size()) racks.push_back(d);
        if (int(racks.size()) < want) return false;
        for (DomainId d : racks) nodes.insert(nodes.end(), map_.domain(d).nodes.begin(), map_.domain(d).nodes.end());
    } else {
        SliceRequest req;
        req.slice_size = std::min(tj.nodes, p_.slice);
        req.total_nodes = tj.nodes;
        if (tj.nodes % req.slice_size) req.slice_size = 0; // auto
        PlacementResult pr = place(snap_, req);
        lent = false;
        if (!pr.ok && pol_ == Policy::Nvlslice && tj.nodes == 1 && tj.ckpt) {
            // spares are lent to checkpointable single-node work (SPEC §3)
            req.use_spares = true;
            pr = place(snap_, req);
            lent = pr.ok;
        }
        if (!pr.ok) {
            if (why) *why = pr.reason;
            return false;
        }
        nodes = pr.placement.nodes();
        r.placement = pr.placement;
    }
    for (NodeId id : nodes) snap_.set(id, {NodeState::Allocated, JobId(j + 1), -1, lent});
    if (!r.started_once) {
        r.started_once = true;
        r.remaining = tj.hours;
        wait_sum_ += now - tj.arrival;
        ++res_.jobs_started;
    }
    res_.split_slices += split;
    r.running = true;
    r.nodes = nodes;
    r.used = tj.nodes;
    r.speed = speed;
    r.run_start = now;
    ++r.gen;
    ev_.push({now + r.remaining / speed, Finish, j, r.gen, 0});
    return true;
}

// The run ends early (failure): keep the work up to the last checkpoint.
void Sim::stop(int j, double now, bool keep_nodes) {
    const TraceJob& tj = t_.jobs[size_t(j)];
    RunJob& r = jobs_[size_t(j)];
    account_run(j, now);
    const double wall = now - r.run_start;
    const double kept_wall = tj.ckpt ? std::floor(wall / p_.checkpoint_hours) * p_.checkpoint_hours : 0.0;
    const double kept = kept_wall * r.speed;
    res_.lost_gpu_hours += (wall - kept_wall) * r.used * 4;
    useful_ += kept * r.used;
    if (tj.nodes >= p_.slice) useful_slice_ += kept * r.used;
    r.remaining = std::max(0.0, r.remaining - kept);
    r.running = false;
    ++r.gen;
    if (!keep_nodes)
        for (NodeId id : r.nodes)
            if (snap_.node(id).state == NodeState::Allocated && snap_.node(id).job_id == JobId(j + 1))
                snap_.set(id, {NodeState::Idle, 0, -1, false});
}

void Sim::schedule(double now) {
    // FIFO with a short look-ahead (the same for every policy).
    int looked = 0;
    for (auto it = queue_.begin(); it != queue_.end() && looked < 8;) {
        ++looked;
        Reason why = Reason::None;
        if (try_start(*it, now, &why)) {
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
        ++it;
    }
}

// nvlslice's defragmentation, as nvlsliced does it: the queue head, a slice
// job blocked only by fragmentation for an hour, gets the rack that is
// cheapest to free from checkpointable jobs (nodes x hours run); at most
// one per half hour. The requeued jobs wait behind it.
void Sim::maybe_defrag(int j, double now) {
    const TraceJob& tj = t_.jobs[size_t(j)];
    if (pol_ != Policy::Nvlslice || tj.nodes < p_.slice) return;
    if (now - tj.arrival < 1.0 || (last_defrag_ >= 0 && now - last_defrag_ < 0.5)) return;
    const int k = p_.slice;
    double best_cost = -1;
    std::vector<int> best;
    for (DomainId d = 0; d < map_.domains().size(); ++d) {
        const Domain& dom = map_.domain(d);
        const DomainCounts& dc = snap_.counts(d);
        if (dc.healthy - kept_spares(dom, dc) < k) continue;
        int room = domain_room(dom, dc, false);
        std::vector<std::pair<double, int>> cands; // cost, job
        std::vector<int> seen;
        for (NodeId id : dom.nodes) {
            const NodeStatus& st = snap_.node(id);
            if (st.state != NodeState::Allocated || st.job_id == 0) continue;
            int v = int(st.job_id) - 1;
            if (std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
            seen.push_back(v);
            if (!t_.jobs[size_t(v)].ckpt) continue;
            cands.emplace_back(double(jobs_[size_t(v)].nodes.size()) * (now - jobs_[size_t(v)].run_start), v);
        }
        std::sort(cands.begin(), cands.end());
        std::vector<int> victims;
        double cost = 0;
        for (auto [c, v] : cands) {
            if (room >= k) break;
            int in_rack = 0;
            for (NodeId id : jobs_[size_t(v)].nodes) in_rack += map_.domain_of(id) == d;
            room += in_rack;
            cost += c;
            victims.push_back(v);
        }
        if (room < k || victims.empty()) continue;
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = victims;
        }
    }
    if (best.empty()) return;
    last_defrag_ = now;
    auto pos = std::find(queue_.begin(), queue_.end(), j);
    for (int v : best) {
        stop(v, now, false);
        ++res_.restarts;
        ++res_.defrag_preemptions;
        pos = queue_.insert(pos == queue_.end() ? pos : pos + 1, v);
        pos = std::find(queue_.begin(), queue_.end(), j);
    }
}

PolicyResult Sim::run() {
    res_.policy = name(pol_);
    const double horizon = p_.days * 24;
    for (size_t j = 0; j < t_.jobs.size(); ++j) ev_.push({t_.jobs[j].arrival, Arrive, int(j), 0, 0});
    for (auto [when, node] : t_.failures) ev_.push({when, Fail, -1, 0, node});
    while (!ev_.empty() && ev_.top().time < horizon) {
        Event e = ev_.top();
        ev_.pop();
        const double now = e.time;
        if (e.kind == Arrive) {
            queue_.push_back(e.job);
        } else if (e.kind == Finish) {
            RunJob& r = jobs_[size_t(e.job)];
            if (!r.running || r.gen != e.gen) continue;
            const TraceJob& tj = t_.jobs[size_t(e.job)];
            account_run(e.job, now);
            useful_ += r.remaining * r.used;
            if (tj.nodes >= p_.slice) useful_slice_ += r.remaining * r.used;
            r.remaining = 0;
            r.running = false;
            r.done = true;
            ++res_.jobs_done;
            for (NodeId id : r.nodes)
                if (snap_.node(id).state == NodeState::Allocated) snap_.set(id, {NodeState::Idle, 0, -1, false});
        } else if (e.kind == Fail) {
            const NodeStatus st = snap_.node(e.node);
            if (st.state == NodeState::Down) continue;
            snap_.set(e.node, {NodeState::Down, 0, -1, false});
            ev_.push({now + p_.node_repair_hours, NodeBack, -1, 0, e.node});
            if (st.state != NodeState::Allocated || st.job_id == 0) {
                schedule(now);
                continue;
            }
            const int j = int(st.job_id) - 1;
            RunJob& r = jobs_[size_t(j)];
            if (pol_ == Policy::Nvlslice) {
                // the job's nodes still look allocated to it; plan around the failed one
                RepairPlan plan = plan_repair(snap_, r.placement, {e.node});
                if (plan.feasible) {
                    // lent spares come back first: their jobs go back to the queue
                    for (JobId v : plan.preempt) {
                        const int vj = int(v) - 1;
                        if (vj < 0 || !jobs_[size_t(vj)].running) continue;
                        stop(vj, now, false);
                        ++res_.restarts;
                        queue_.push_front(vj);
                    }
                    stop(j, now, true);
                    for (NodeId id : r.nodes)
                        if (snap_.node(id).state == NodeState::Allocated)
                            snap_.set(id, {NodeState::Idle, 0, -1, false});
                    r.placement = plan.placement;
                    std::vector<NodeId> nodes = plan.placement.nodes();
                    for (NodeId id : nodes) snap_.set(id, {NodeState::Allocated, JobId(j + 1), -1, false});
                    r.nodes = nodes;
                    r.running = true;
                    r.run_start = now;
                    ++r.gen;
                    ev_.push({now + r.remaining / r.speed, Finish, j, r.gen, 0});
                    ++res_.repairs;
                    res_.moves += plan.moved;
                    continue;
                }
            }
            stop(j, now, false);
            ++res_.restarts;
            queue_.push_front(j);
            schedule(now);
            continue;
        } else if (e.kind == NodeBack) {
            if (snap_.node(e.node).state == NodeState::Down) snap_.set(e.node, {NodeState::Idle, 0, -1, false});
        }
        schedule(now);
    }
    // work in flight at the horizon counts as done so far
    for (size_t j = 0; j < jobs_.size(); ++j) {
        RunJob& r = jobs_[j];
        if (!r.running) continue;
        account_run(int(j), horizon);
        double w = (horizon - r.run_start) * r.speed * r.used;
        useful_ += w;
        if (t_.jobs[j].nodes >= p_.slice) useful_slice_ += w;
    }
    const double cap = double(map_.node_count()) * horizon;
    res_.goodput = useful_ / cap;
    res_.slice_goodput = useful_slice_ / cap;
    res_.utilization = alloc_ / cap;
    res_.mean_wait_h = res_.jobs_started ? wait_sum_ / res_.jobs_started : 0;
    return res_;
}

} // namespace

std::vector<PolicyResult> run_trace(const SimParams& p) {
    if (p.racks < 1 || p.nodes_per_rack < 2 || p.slice < 1 || p.slice > p.nodes_per_rack - p.spares || p.days <= 0 ||
        p.mtbf_days <= 0 || p.mean_job_hours <= 0 || p.load <= 0 || p.checkpoint_hours <= 0 ||
        !(p.split_speed > 0 && p.split_speed <= 1))
        throw Error("trace: need racks >= 1, slice <= nodes per rack - spares, and positive days, MTBF, job hours, "
                    "load, checkpoint interval, 0 < split speed <= 1");
    Trace t = make_trace(p);
    std::vector<PolicyResult> out;
    for (Policy pol : {Policy::FirstFit, Policy::WholeRacks, Policy::Block, Policy::Nvlslice})
        out.push_back(Sim(p, t, pol).run());
    return out;
}

} // namespace nvl
