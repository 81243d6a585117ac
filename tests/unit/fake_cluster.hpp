// The one ClusterApi in memory, for unit tests of apply(), the cycle and
// the convergence runs: jobs, nodes and reservations (by name) as plain
// records, changed as Slurm changes them (a requeue frees the job's nodes,
// counts a restart and sets a begin time; a pin's start becomes the begin
// time), every call logged, failures injected per operation and job or by
// the call's index. Optional, Slurm's own side: its refusals
// (as_slurmctld) and its scheduler (schedule(): a job starts when it is
// neither held nor gated, its begin time has come and its required nodes
// are idle, healthy and outside every reservation but its own).
#pragma once

#include "action.hpp"
#include "cluster_api.hpp"
#include "reconcile.hpp"
#include "error.hpp"
#include "hostlist.hpp"
#include "model.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace nvl::test {

class FakeCluster : public ClusterApi {
  public:
    std::vector<SlurmNode> nodes;
    std::vector<SlurmJob> jobs;
    // by name; an empty optional: no such reservation. std::map: a
    // reference to an entry stays valid.
    std::map<std::string, std::optional<Reservation>> reservations;
    int64_t now = 0;             // Slurm's clock, for a requeue's begin time
    int64_t requeue_delay = 121; // a requeued job waits out the credential lifetime (120 s) + 1
    // false: a requeued job stays COMPLETING on its nodes until complete()
    // (its processes take a second or two to end)
    bool requeue_completes = true;

    // Every node of `map`, idle.
    void add_nodes(const RackMap& map) {
        for (NodeId i = 0; i < map.node_count(); ++i) {
            SlurmNode n;
            n.name = map.node_name(i);
            n.state = NodeState::Idle;
            nodes.push_back(n);
        }
    }

    // A requeued job's nodes are given back: pending.
    void complete(JobId id) {
        SlurmJob& j = job(id);
        for (const auto& name : j.nodes)
            for (auto& x : nodes)
                if (x.name == name) {
                    if (x.state == NodeState::Allocated || x.state == NodeState::Mixed) x.state = NodeState::Idle;
                    if (x.state == NodeState::Draining) x.state = NodeState::Drained;
                }
        j.state = JobState::Pending;
        j.nodes.clear();
    }
    std::vector<std::string> calls;            // "hold 7", "pin 7 n[001-016] 0", ...
    std::map<std::string, std::string> faults; // "release 7" -> error message
    int fail_call = -1;                        // the call of this index (calls.size() before it) is refused

    // Slurm's refusals too: a job's update once it no longer pends (nor
    // completes), a requeue of a job that does not run or may not be
    // requeued; and a node set DOWN requeues the jobs running on it.
    bool as_slurmctld = false;
    // Drained or down (a scenario's, set_node_down's): refresh_nodes()
    // shows them so, the scheduler starts nothing on them.
    std::set<std::string> failed;

    // Slurm's partitions, licenses and reservations, and its accounting
    // limits, as read_view() gives them while a job needs them (nullopt:
    // not there)
    std::optional<SlurmGates> gates;
    std::optional<AcctLimits> limits;

    // The whole view, as the adapter reads it.
    ClusterRead read_view(const ViewRequest& q) override {
        ClusterRead r;
        r.nodes = nodes;
        r.jobs = jobs;
        r.spares = load_reservation(q.spares);
        r.gate = load_reservation(q.gate);
        r.protection = load_reservation(q.protection);
        for (const auto& [name, res] : reservations)
            if (res && is_lend_name(name, q)) r.lends.push_back(*res);
        if (view_needs_gates(r.jobs, q)) {
            r.gates = gates;
            if (q.limits) r.limits = limits;
        }
        return r;
    }
    // every action by its kind (action.hpp): the method of its name below
    void apply(const Action& a, const action::Names& names) override { a.run(*this, names); }
    std::optional<Reservation> load_reservation(const std::string& name) const {
        auto it = reservations.find(name);
        return it == reservations.end() ? std::nullopt : it->second;
    }
    void pin_job(JobId id, const std::string& n, int64_t start_at) {
        call(fmt::format("pin {}", id), fmt::format(" {} {}", n, start_at));
        pending(id).req_nodes = n;
        if (start_at > 0) job(id).begin_time = start_at;
    }
    void exclude_nodes(JobId id, const std::string& n, int64_t start_at) {
        call(fmt::format("exclude {}", id), fmt::format(" {} {}", n, start_at));
        pending(id).exc_nodes = n;
        if (start_at > 0) job(id).begin_time = start_at;
    }
    void set_record(JobId id, const std::string& record) {
        call(fmt::format("record {}", id));
        job(id).admin_comment = with_record(job(id).admin_comment, record);
    }
    void hold(JobId id) {
        call(fmt::format("hold {}", id));
        held(pending(id));
    }
    void release(JobId id) {
        call(fmt::format("release {}", id));
        SlurmJob& j = pending(id);
        j.held = j.admin_held = false;
        // its priority computed again: as before the hold (a hold set
        // before this fake saw the job: any priority above 0)
        auto p = held_priority.find(id);
        j.priority = p != held_priority.end() ? p->second : std::max<uint32_t>(j.priority, 1);
        held_priority.erase(id);
    }
    void requeue_hold(JobId id) {
        call(fmt::format("requeue-hold {}", id));
        requeued(job(id));
        held(job(id));
    }
    void requeue(JobId id) {
        call(fmt::format("requeue {}", id));
        requeued(job(id));
    }
    void allow_requeue(JobId id) {
        call(fmt::format("allow-requeue {}", id));
        job(id).requeue = true;
    }
    void set_licenses(JobId id, const std::string& l) {
        call(fmt::format("licenses {}", id), " \"" + l + "\"");
        pending(id).licenses = l;
    }
    void set_reservation(const std::string& name, const std::string& n, int64_t start_at, int64_t end_at) {
        call("reservation", fmt::format(" {} {} {} {}", name, n, start_at, end_at));
        if (n.empty())
            reservations[name].reset(); // as the adapter does: no nodes, no reservation
        else if (reservations[name] && !(start_at > 0 && reservations[name]->start_time != start_at))
            reservations[name] = Reservation{name, n, reservations[name]->start_time,
                                             end_at > 0 ? end_at : reservations[name]->end_time};
        else
            reservations[name] = Reservation{name, n, start_at, end_at};
    }
    // As slurmctld: the reservation (for the job's owner), then the job in
    // it; ended, the job leaves it first (a reservation a job still uses is
    // not deleted: ESLURM_RESERVATION_BUSY).
    void lend_nodes(JobId id, uint32_t user_id, const std::string& name, const std::string& n, int64_t end_at) {
        call(fmt::format("lend {}", id), fmt::format(" {} {} {}", user_id, name, n));
        reservations[name] = Reservation{name, n, now, end_at};
        job(id).reservation = name;
    }
    void end_lend(JobId id, const std::vector<JobId>& others, const std::string& name) {
        call(fmt::format("end-lend {}", id), " " + name);
        // a job that ended meanwhile is no error
        for (auto& j : jobs)
            if ((j.id == id || std::count(others.begin(), others.end(), j.id)) && j.reservation == name)
                j.reservation.clear();
        for (const auto& j : jobs)
            if (j.reservation == name && j.state != JobState::Finished)
                throw Error(fmt::format("Requested reservation is in use (job {})", j.id));
        reservations.erase(name);
    }
    void ensure_gate(const std::string& reservation, const std::string& license, int64_t end_at) {
        call("gate", fmt::format(" {} {}", reservation, license));
        if (!reservations[reservation])
            reservations[reservation] = Reservation{reservation, "", now, end_at};
        else if (end_at > 0)
            reservations[reservation]->end_time = end_at;
    }
    void set_node_weight(const std::string& n, uint32_t w) {
        call(fmt::format("weight {}", w), " " + n);
        for (const auto& name : hostlist_expand(n))
            for (auto& x : nodes)
                if (x.name == name) x.weight = w;
    }
    void abort_steps(JobId id) { call(fmt::format("abort-steps {}", id)); }
    void stop_batch(JobId id) { call(fmt::format("stop-batch {}", id)); }
    void set_node_down(const std::string& n, const std::string& reason) {
        call("down " + n, " \"" + reason + "\"");
        for (auto& x : nodes)
            if (x.name == n) {
                x.state = NodeState::Drained; // DOWN + DRAIN: shown drained
                x.failed = true;
                x.not_responding = true;
                x.reason = reason;
            }
        if (!as_slurmctld) return;
        failed.insert(n);
        for (auto& j : jobs)
            if (j.state == JobState::Running && j.batch && j.requeue && std::count(j.nodes.begin(), j.nodes.end(), n))
                requeued(j);
    }

    // Slurm's scheduler, one pass: a requeued job whose old allocation has
    // completed pends again (held back requeue_delay more), then jobs in
    // priority order start on the nodes they are pinned to.
    void schedule() {
        for (auto& j : jobs)
            if (j.state == JobState::Completing && now >= j.end_time) {
                complete(j.id);
                j.begin_time = now + requeue_delay;
            }
        std::set<std::string> busy = running_nodes();
        std::map<std::string, std::set<std::string>> reserved; // node -> its reservations (the gate holds none)
        for (const auto& [name, r] : reservations)
            if (r)
                for (const auto& n : hostlist_expand(r->nodes)) reserved[n].insert(name);
        std::vector<SlurmJob*> order;
        for (auto& j : jobs) order.push_back(&j);
        std::stable_sort(order.begin(), order.end(),
                         [](const SlurmJob* a, const SlurmJob* b) { return a->priority > b->priority; });
        for (SlurmJob* j : order) {
            if (j->state != JobState::Pending || j->held || has_license(j->licenses, "nvlslice_gate") ||
                j->begin_time > now || j->req_nodes.empty())
                continue;
            const auto want = hostlist_expand(j->req_nodes);
            bool ok = int(want.size()) == j->num_nodes;
            // a job in a reservation runs on its nodes only, whatever other
            // reservation holds them too (the lend reservation's OVERLAP);
            // no other job runs on a reserved node
            for (const auto& n : want) {
                auto r = reserved.find(n);
                ok = ok && !busy.count(n) && !failed.count(n) &&
                     (j->reservation.empty() ? r == reserved.end()
                                             : r != reserved.end() && r->second.count(j->reservation));
            }
            if (!ok) continue;
            j->state = JobState::Running;
            j->nodes = want;
            j->start_time = now;
            busy.insert(want.begin(), want.end());
        }
        refresh_nodes();
    }

    // Each node's state from the running jobs and `failed`.
    void refresh_nodes() {
        const std::set<std::string> busy = running_nodes();
        for (auto& n : nodes) {
            const bool f = failed.count(n.name) != 0;
            if (f && !n.failed)
                n.state = busy.count(n.name) ? NodeState::Draining : NodeState::Drained;
            else if (!f)
                n.state = busy.count(n.name) ? NodeState::Allocated : NodeState::Idle;
        }
    }

    SlurmNode& node(const std::string& n) {
        for (auto& x : nodes)
            if (x.name == n) return x;
        throw Error("no node " + n);
    }
    SlurmJob& job(JobId id) {
        for (auto& j : jobs)
            if (j.id == id) return j;
        throw Error(fmt::format("Invalid job id specified ({})", id));
    }

  private:
    std::map<JobId, uint32_t> held_priority; // what a release gives back
    // The nodes of the running jobs.
    std::set<std::string> running_nodes() const {
        std::set<std::string> busy;
        for (const auto& j : jobs)
            if (j.state == JobState::Running) busy.insert(j.nodes.begin(), j.nodes.end());
        return busy;
    }
    // An admin hold: priority 0.
    void held(SlurmJob& j) {
        if (!j.held) held_priority[j.id] = j.priority;
        j.held = j.admin_held = true;
        j.priority = 0;
    }
    // A job's update (as_slurmctld: refused once it no longer pends).
    SlurmJob& pending(JobId id) {
        SlurmJob& j = job(id);
        if (as_slurmctld && j.state != JobState::Pending && j.state != JobState::Completing)
            throw Error("Job is no longer pending execution");
        return j;
    }
    // As slurmctld requeues a job: completing (for a second), then pending
    // again with its nodes given back (failed ones keep their state,
    // draining ones are drained), one restart more, held back until the
    // credential expired.
    void requeued(SlurmJob& j) {
        if (as_slurmctld && j.state != JobState::Running) throw Error("Job is pending execution");
        if (as_slurmctld && (!j.batch || !j.requeue)) throw Error("Requested operation is presently disabled");
        j.state = JobState::Completing;
        j.end_time = now + 1;
        // (as_slurmctld: it lists no nodes while it completes, as the
        // convergence runs were written; listed, one lending run ends with
        // the other of two equal lent jobs running)
        if (as_slurmctld) j.nodes.clear();
        if (requeue_completes) complete(j.id);
        j.restarts += 1;
        j.begin_time = now + requeue_delay;
    }
    // Records the call, then fails it if a fault names it (as Slurm would:
    // nothing changes).
    void call(const std::string& key, const std::string& rest = "") {
        calls.push_back(key + rest);
        if (int(calls.size()) - 1 == fail_call) throw Error(fmt::format("{}: refused (injected)", key));
        auto f = faults.find(key);
        if (f != faults.end()) throw Error(f->second);
    }
};

} // namespace nvl::test
