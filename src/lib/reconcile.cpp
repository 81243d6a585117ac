#include "reconcile.hpp"

#include "defrag.hpp"
#include "hostlist.hpp"
#include "placement.hpp"
#include "repair.hpp"
#include "report.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <numeric>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace nvl {

const char* to_string(ActionKind k) {
    switch (k) {
    case ActionKind::Hold: return "hold";
    case ActionKind::Pin: return "pin";
    case ActionKind::PinOnly: return "pin-nodes";
    case ActionKind::Release: return "release";
    case ActionKind::RequeueHold: return "requeue-hold";
    case ActionKind::Requeue: return "requeue";
    case ActionKind::SetRecord: return "record";
    case ActionKind::SetReservation: return "reservation";
    case ActionKind::SetWeight: return "weight";
    case ActionKind::SetLicenses: return "licenses";
    case ActionKind::Protect: return "protect";
    case ActionKind::Gate: return "gate";
    }
    return "?";
}

namespace {

// "busy: 26 usable free nodes, ..." -> "busy"
std::string_view reason_kind(std::string_view reason) {
    return reason.substr(0, reason.find(':'));
}

struct SliceJob {
    const SlurmJob* job;
    RequestTag tag;
    std::optional<PlacementRecord> rec;
};

class Cycle {
  public:
    Cycle(const RackMap& map, const ClusterView& view, const HelperConfig& cfg, int64_t now, HelperMemory& mem)
        : map_(map), nodes_(view.nodes), jobs_(view.jobs), spares_(view.spares), gate_(view.gate),
          protection_(view.protection), cfg_(cfg), now_(now), mem_(mem), snap_(map), failed_(map.node_count(), 0) {
        if (!cfg.repair_drain_reasons.empty())
            drain_re_.emplace(cfg.repair_drain_reasons,
                              std::regex::ECMAScript | std::regex::icase | std::regex::nosubs);
    }

    CycleOutput run();

  private:
    void build_snapshot();
    void collect_slice_jobs();
    bool needs_repair(NodeId id) const;
    Placement placement_of(const SliceJob& sj, const std::vector<std::string>& nodes) const;
    void handle_running(const SliceJob& sj);
    // Running without a placement of ours: it escaped its gate.
    void check_escaped(const SliceJob& sj, PlacementRecord rec);
    // Pass 1: pending jobs that have a placement: keep, finish, or repair it.
    void finish_placed(const SliceJob& sj);
    // Pass 2: pending jobs without a usable placement: place them.
    void place_waiting(const SliceJob& sj);
    bool place_job(const SliceJob& sj);
    // The top-priority waiting job gets racks kept for it.
    void protect_top();
    void keep_gate();
    bool gated(const SlurmJob& j) const { return has_license(j.licenses, cfg_.gate_license); }
    bool held_by_us(const SliceJob& sj) const { return sj.job->held && sj.rec && sj.rec->hold; }
    void gate(const SliceJob& sj) {
        act({ActionKind::SetLicenses, sj.job->id, with_license(sj.job->licenses, cfg_.gate_license)});
    }
    // Lets Slurm start a pinned job: takes its gate off, or releases the
    // helper's own hold (never another).
    void start_now(const SliceJob& sj) {
        if (gated(*sj.job))
            act({ActionKind::SetLicenses, sj.job->id, without_license(sj.job->licenses, cfg_.gate_license)});
        if (held_by_us(sj)) act({ActionKind::Release, sj.job->id, {}});
    }
    std::vector<NodeId> pinned_nodes(const SlurmJob& j) const {
        std::vector<NodeId> pinned;
        if (!j.req_nodes.empty())
            for (const auto& n : hostlist_expand(j.req_nodes))
                if (auto id = map_.find_node(n)) pinned.push_back(*id);
        return pinned;
    }
    void try_defrag(const SliceJob& sj);
    // Requeues a running job that gives up its nodes; a slice job is placed
    // again later, after the job it yielded to.
    void yield_job(JobId victim, const std::string& why);
    // The common part of every repair: count it (once: `count`) in the
    // record and the stats, give lent spares back, log each changed slice.
    void begin_repair(const SliceJob& sj, const RepairPlan& plan, PlacementRecord& rec, bool count,
                      const char* label);
    void keep_spares();
    void keep_weights();
    // A job whose last action Slurm refused waits out its backoff: true
    // while it does (its record says why, once).
    bool backing_off(const SliceJob& sj);
    void take(const std::vector<NodeId>& ids, JobId job);
    // When a job may start: now, or for a job that ran before (a repair),
    // a little later. A requeue revokes the job's credential on its nodes,
    // and slurmd rejects a new credential of the same second ("Job
    // credential revoked"): the next second is enough, where Slurm itself
    // waits cred_expire.
    int64_t start_time(const SlurmJob& j) const { return j.restarts > 0 ? now_ + 1 : now_; }
    // Writes the record when it changed (always: in any case), refusing a
    // move allowed_transition() forbids.
    void record(const SliceJob& sj, const PlacementRecord& r, bool always = false);
    void pin_and_release(const SliceJob& sj, const Placement& p, PlacementRecord r, bool requeue_first);
    std::string hl(const std::vector<NodeId>& ids) const { return hostlist_compress(map_.node_names(ids)); }
    void log(const std::string& s) { out_.log.push_back(s); }
    void say_once(JobId job, const std::string& s) {
        std::string& last = mem_.said[job];
        if (last != s) log(last = s);
    }
    // Every action goes through act(), which remembers per job which kinds
    // were asked for, so that a later pass asks in O(1).
    void act(Action a) {
        if (a.job) acted_[a.job] |= 1u << unsigned(a.kind);
        out_.actions.push_back(std::move(a));
    }
    bool did(JobId job, ActionKind k) const {
        auto it = acted_.find(job);
        return it != acted_.end() && (it->second & (1u << unsigned(k)));
    }

    const RackMap& map_;
    const std::vector<SlurmNode>& nodes_;
    const std::vector<SlurmJob>& jobs_;
    const std::optional<Reservation>& spares_;
    const std::optional<Reservation>& gate_;
    const std::optional<Reservation>& protection_;
    const HelperConfig& cfg_;
    const int64_t now_;
    HelperMemory& mem_;
    Snapshot snap_;
    std::vector<char> failed_; // per node: needs a repair if a slice uses it
    std::optional<std::regex> drain_re_;
    std::vector<SliceJob> slice_jobs_;
    std::set<std::string> reserved_;
    std::unordered_set<JobId> settled_; // jobs pass 1 has dealt with: not placed again in pass 2
    std::unordered_map<JobId, uint32_t> acted_; // per job: a bit per ActionKind asked for
    struct FailedShape {
        int slice, count;
        PlacementMode mode;
        bool split, lend, restricted;
        bool operator==(const FailedShape& o) const {
            return slice == o.slice && count == o.count && mode == o.mode && split == o.split && lend == o.lend &&
                   restricted == o.restricted;
        }
    };
    std::vector<std::pair<FailedShape, PlacementResult>> failed_shapes_; // valid until the next take()
    bool defrag_done_ = false;
    std::unordered_map<JobId, Reason> waits_; // why each job placed this cycle could not be
    std::vector<char> protected_;             // nodes of the protection reservation
    JobId top_ = 0;                           // the first job placement was tried for: the top priority
    CycleOutput out_;
};

void Cycle::build_snapshot() {
    snap_ = snapshot_from_slurm(map_, nodes_, jobs_, spares_, cfg_.lend);
    if (protection_ && !protection_->nodes.empty()) {
        protected_.assign(map_.node_count(), 0);
        for (const auto& n : hostlist_expand(protection_->nodes))
            if (auto id = map_.find_node(n)) protected_[*id] = 1;
    }
    if (spares_)
        for (auto& n : hostlist_expand(spares_->nodes)) reserved_.insert(n);
    for (const auto& n : nodes_) {
        auto id = map_.find_node(n.name);
        if (!id) continue; // a node outside the map is none of our business
        const NodeState st = snap_.node(*id).state;
        failed_[*id] = n.failed || ((st == NodeState::Draining || st == NodeState::Drained) &&
                                    (!drain_re_ || std::regex_search(n.reason, *drain_re_)));
    }
}

// Why a tag does not describe its job ("" when it does). The comment is
// user-writable: a tag typed by hand must not make the helper pin a job to
// more nodes than it asked for, or count nodes it never takes.
std::string tag_mismatch(const RequestTag& t, const SlurmJob& j) {
    if (t.slice <= 0 || t.count <= 0 || t.nodes != t.slice * t.count)
        return fmt::format("its tag asks for {} nodes as {} slice(s) of {}", t.nodes, t.count, t.slice);
    if (j.num_nodes != t.nodes) return fmt::format("its tag asks for {} nodes, the job for {}", t.nodes, j.num_nodes);
    if (t.checkpointable && !j.requeue) return "its tag says checkpointable, but the job was submitted --no-requeue";
    return {};
}

void Cycle::collect_slice_jobs() {
    for (const auto& j : jobs_) {
        if (j.state != JobState::Pending && j.state != JobState::Running) continue;
        std::optional<RequestTag> tag;
        std::string wrong;
        try {
            tag = RequestTag::parse(j.comment);
            if (tag) wrong = tag_mismatch(*tag, j);
        } catch (const Error& e) {
            wrong = fmt::format("its nvlslice tag is unreadable: {}", e.what());
        }
        std::optional<PlacementRecord> rec;
        try {
            rec = PlacementRecord::parse(j.admin_comment);
        } catch (const Error& e) {
            if (wrong.empty() && tag)
                log(fmt::format("job {}: admin_comment is not an nvlslice record ({}); placing afresh", j.id,
                                e.what()));
        }
        if (!wrong.empty()) {
            // Left to Slurm as it is (no hold, no pin, no nodes counted);
            // named once, in its record and the log.
            PlacementRecord ignored;
            ignored.state = RecordState::Ignored;
            ignored.reason = "left to Slurm: " + wrong;
            if (!rec || rec->state != RecordState::Ignored || rec->reason != ignored.reason) {
                act({ActionKind::SetRecord, j.id, ignored.str()});
                log(fmt::format("job {}: not a slice job nvlslice can place, left to Slurm: {}", j.id, wrong));
            }
            continue;
        }
        if (!tag) continue;
        slice_jobs_.push_back(SliceJob{&j, *tag, rec});
    }
    // Slurm's own order: the priority it computed (multifactor: QOS,
    // partition tier, fair-share, age, job size, nice, or an admin's
    // priority=), then submission, then job id.
    std::sort(slice_jobs_.begin(), slice_jobs_.end(), [](const SliceJob& a, const SliceJob& b) {
        if (a.job->priority != b.job->priority) return a.job->priority > b.job->priority;
        if (a.job->submit_time != b.job->submit_time) return a.job->submit_time < b.job->submit_time;
        return a.job->id < b.job->id;
    });
    // Nodes pinned to released jobs that Slurm has not started yet are
    // spoken for: no other slice may be placed there meanwhile.
    for (const auto& sj : slice_jobs_) {
        const SlurmJob& j = *sj.job;
        if (j.state != JobState::Pending || j.held || !sj.rec || sj.rec->state != RecordState::Placed || j.req_nodes.empty())
            continue;
        for (const auto& name : hostlist_expand(j.req_nodes)) {
            auto id = map_.find_node(name);
            if (id && is_free(snap_.node(*id).state)) snap_.set(*id, {NodeState::Allocated, j.id, -1, false});
        }
    }
}

bool Cycle::needs_repair(NodeId id) const {
    return failed_[id] != 0;
}

Placement Cycle::placement_of(const SliceJob& sj, const std::vector<std::string>& nodes) const {
    Placement p;
    p.job_id = sj.job->id;
    p.slice_size = sj.tag.slice;
    std::vector<std::vector<NodeId>> slices;
    if (sj.rec && !sj.rec->slices.empty()) {
        for (const auto& h : sj.rec->slices) {
            std::vector<NodeId> ids;
            for (const auto& n : hostlist_expand(h))
                if (auto id = map_.find_node(n)) ids.push_back(*id);
            slices.push_back(std::move(ids));
        }
    } else {
        slices = derive_slices(map_, nodes, sj.tag.slice);
    }
    for (size_t i = 0; i < slices.size(); ++i) {
        PlacedSlice ps;
        ps.index = int(i);
        ps.nodes = slices[i];
        ps.domain = ps.nodes.empty() ? kNoDomain : map_.domain_of(ps.nodes.front());
        for (NodeId n : ps.nodes)
            if (map_.domain_of(n) != ps.domain) ps.domain = kNoDomain;
        p.split = p.split || ps.domain == kNoDomain;
        p.slices.push_back(std::move(ps));
    }
    return p;
}

void Cycle::take(const std::vector<NodeId>& ids, JobId job) {
    failed_shapes_.clear(); // the snapshot changes: what did not fit may fit now
    for (NodeId id : ids) {
        NodeStatus st = snap_.node(id);
        if (is_free(st.state)) st.state = NodeState::Allocated;
        st.job_id = job;
        snap_.set(id, st);
    }
}

void Cycle::record(const SliceJob& sj, const PlacementRecord& r, bool always) {
    if (sj.rec && !allowed_transition(sj.rec->state, r.state))
        throw Error(fmt::format("its record may not go from {} to {}", to_string(sj.rec->state), to_string(r.state)));
    std::string text = r.str();
    if (always || text != sj.job->admin_comment) act({ActionKind::SetRecord, sj.job->id, text});
}

void Cycle::pin_and_release(const SliceJob& sj, const Placement& placement, PlacementRecord r, bool requeue_first) {
    const JobId id = sj.job->id;
    // Slices numbered in node order, as the plugin derives them on the
    // nodes from the job's node list: a moved slice may change its index.
    Placement p = placement;
    std::sort(p.slices.begin(), p.slices.end(),
              [](const PlacedSlice& a, const PlacedSlice& b) { return a.nodes.front() < b.nodes.front(); });
    for (size_t i = 0; i < p.slices.size(); ++i) p.slices[i].index = int(i);
    r.slice = p.slice_size;
    r.slices.clear();
    for (const auto& s : p.slices) r.slices.push_back(hl(s.nodes));
    r.split = p.split;
    r.reason.clear();
    if (requeue_first) {
        // A running job: record the target, requeue it held and pin the new
        // nodes. Slurm sets BeginTime when the old allocation has finished
        // completing, so StartTime=now and the release come in a later
        // cycle, once the job is pending again (see handle_pending).
        r.state = RecordState::Repairing;
        r.hold = true; // the one hold the helper may release
        record(sj, r, true);
        act({ActionKind::RequeueHold, id, {}});
        act({ActionKind::PinOnly, id, hl(p.nodes())});
        take(p.nodes(), id);
        return;
    }
    if (sj.job->restarts > 0) {
        // It ran before: pin it to start in the next second; a later cycle
        // releases it when that second has come (handle_pending, pass 1).
        // A placement that ran before is a repair; anything else (it
        // yielded, waited after a requeue) is a restart.
        const bool repair = sj.rec && (sj.rec->state == RecordState::Placed || sj.rec->state == RecordState::Repairing);
        r.state = repair ? RecordState::Repairing : RecordState::Restarting;
        record(sj, r, true);
        act({ActionKind::Pin, id, hl(p.nodes()), start_time(*sj.job)});
        settled_.insert(id);
        take(p.nodes(), id);
        return;
    }
    r.state = RecordState::Placed;
    r.hold = false;
    record(sj, r, true);
    act({ActionKind::Pin, id, hl(p.nodes()), now_});
    start_now(sj);
    take(p.nodes(), id);
}

void Cycle::handle_running(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    std::vector<NodeId> failed;
    for (const auto& n : j.nodes)
        if (auto id = map_.find_node(n); id && needs_repair(*id)) failed.push_back(*id);
    PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
    if (failed.empty()) {
        if (sj.rec && sj.rec->state == RecordState::Placed && !sj.rec->reason.empty()) {
            // its failed nodes came back (resumed) before a repair: the
            // reason is stale
            rec.reason.clear();
            record(sj, rec);
            log(fmt::format("job {}: its nodes are healthy again; nothing to repair", j.id));
        } else if (!sj.rec || sj.rec->state != RecordState::Placed) {
            check_escaped(sj, rec);
        }
        return;
    }
    const std::string failed_hl = hl(failed);
    if (!j.requeue || !j.batch) {
        // Slurm requeues only batch jobs that allow it: an interactive
        // allocation (salloc, srun) or a --no-requeue job is reported once,
        // in its record and the log, and left to Slurm and its owner. No
        // repair is counted, nothing is pinned, no spare leaves its rack.
        ++out_.stats.unrepairable;
        if (rec.reason.rfind("not repaired", 0) != 0) {
            rec.reason = j.batch ? fmt::format("not repaired: {} failed but the job was submitted --no-requeue",
                                               failed_hl)
                                 : fmt::format("not repaired: {} failed; an interactive allocation (salloc/srun) "
                                               "cannot be requeued: end it and submit again",
                                               failed_hl);
            record(sj, rec);
            log(fmt::format("job {}: node(s) {} failed; {}, so it is left to Slurm and its owner", j.id, failed_hl,
                            j.batch ? "submitted with --no-requeue" : "an interactive allocation"));
        }
        return;
    }
    Placement running = placement_of(sj, j.nodes);
    RepairPlan plan = plan_repair(snap_, running, failed);
    if (!plan.feasible) {
        std::string why = "repair waits: " + plan.reason;
        if (rec.reason != why) {
            rec.reason = why;
            record(sj, rec);
            log(fmt::format("job {}: node(s) {} failed; {}", j.id, failed_hl, plan.reason));
        }
        return;
    }
    begin_repair(sj, plan, rec, true, "");
    pin_and_release(sj, plan.placement, rec, true);
}

void Cycle::check_escaped(const SliceJob& sj, PlacementRecord rec) {
    const SlurmJob& j = *sj.job;
    // Started where the helper pinned it (its release, or a crash right
    // after it): the record catches up.
    const bool ours = sj.rec && (sj.rec->state == RecordState::Repairing || sj.rec->state == RecordState::Restarting);
    std::optional<Placement> p;
    try {
        p = placement_of(SliceJob{sj.job, sj.tag, std::nullopt}, j.nodes);
    } catch (const Error&) {
        // not whole slices of one rack each
    }
    if (p || ours) {
        rec.state = RecordState::Placed;
        rec.hold = false;
        rec.slice = sj.tag.slice;
        rec.slices.clear();
        if (p)
            for (const auto& s : p->slices) rec.slices.push_back(hl(s.nodes));
        else
            rec.slices = {hostlist_compress(j.nodes)};
        rec.split = !p;
        rec.reason.clear();
        if (!ours)
            log(fmt::format("job {}: started without nvlsliced (its gate was taken off) on whole slices {}: kept", j.id,
                            hostlist_compress(j.nodes)));
        record(sj, rec);
        return;
    }
    // It escaped its gate and Slurm started it rack-blind: only its owner
    // can have done that, and only their own job pays.
    const std::string where = hostlist_compress(j.nodes);
    if (j.requeue && j.batch) {
        rec.state = RecordState::Waiting;
        rec.slices.clear();
        rec.reason = fmt::format("its gate was taken off and Slurm started it rack-blind on {}; requeued to be placed",
                                 where);
        record(sj, rec);
        act({ActionKind::Requeue, j.id, {}});
        log(fmt::format("job {}: escaped its gate and started rack-blind on {}: requeued, to be placed in slices", j.id,
                        where));
    } else if (rec.reason.rfind("ran rack-blind", 0) != 0) {
        rec.reason = fmt::format("ran rack-blind on {}: its gate was taken off, and Slurm cannot requeue it", where);
        record(sj, rec);
        log(fmt::format("job {}: escaped its gate and runs rack-blind on {}; it cannot be requeued", j.id, where));
    }
}

bool Cycle::place_job(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    SliceRequest req;
    req.job_id = j.id;
    req.slice_size = sj.tag.slice;
    req.slice_count = sj.tag.count;
    req.mode = sj.tag.mode;
    req.allow_split = sj.tag.mode == PlacementMode::Prefer && now_ - j.submit_time >= cfg_.prefer_wait_s;
    const bool may_lend = may_borrow_spares({sj.tag.checkpointable, j.requeue, j.batch, sj.tag.nodes}, cfg_.lend);
    // Racks protected for the top-priority job: others may use them only
    // if they end before its expected start (as Slurm's backfill allows).
    if (!top_) top_ = j.id;
    const bool restricted = !protected_.empty() && top_ != j.id &&
                            !(j.time_limit > 0 && protection_ && now_ + j.time_limit <= protection_->start_time);
    if (restricted) {
        req.allowed.assign(map_.node_count(), true);
        for (NodeId id = 0; id < map_.node_count(); ++id)
            if (protected_[id]) req.allowed[id] = false;
    }
    PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
    rec.lent = false;
    // Thousands of waiting jobs share a few shapes: while the snapshot does
    // not change, a shape that did not fit does not fit again.
    const FailedShape key{sj.tag.slice, sj.tag.count, req.mode, req.allow_split, may_lend, restricted};
    auto memo = std::find_if(failed_shapes_.begin(), failed_shapes_.end(),
                             [&](const auto& f) { return f.first == key; });
    PlacementResult r = memo != failed_shapes_.end() ? memo->second : place(snap_, req);
    if (memo == failed_shapes_.end() && !r.ok && may_lend) {
        // Spares are not left idle: preemptible work may borrow them until a
        // repair needs them back (defrag.hpp, the simulator's policy too).
        req.use_spares = true;
        PlacementResult lent = place(snap_, req);
        if (lent.ok) {
            r = lent;
            rec.lent = true;
        }
    }
    if (!r.ok && memo == failed_shapes_.end()) failed_shapes_.emplace_back(key, r);
    if (!r.ok) {
        ++out_.stats.pending_by_reason[to_string(r.reason)];
        waits_[j.id] = r.reason;
        // The record (one RPC) and the log line change only when the kind of
        // reason does: the figures in it move with every job that starts or
        // ends, and rewriting thousands of waiting jobs' records each cycle
        // would swamp slurmctld.
        const bool was_waiting = sj.rec && sj.rec->state == RecordState::Waiting;
        rec.state = RecordState::Waiting;
        rec.slice = sj.tag.slice;
        rec.slices.clear();
        if (!was_waiting || reason_kind(rec.reason) != reason_kind(r.detail)) {
            rec.reason = r.detail;
            record(sj, rec);
            log(fmt::format("job {}: waits: {}", j.id, r.detail));
        }
        // Enough room in total but in no single rack (with or without their
        // spares): what defragmentation is for.
        if ((r.reason == Reason::Fragmented || r.reason == Reason::WouldConsumeSpares) &&
            sj.tag.mode == PlacementMode::Strict)
            try_defrag(sj);
        return false;
    }
    ++out_.stats.placements;
    std::string where;
    for (const auto& s : r.placement.slices)
        where += fmt::format("{}{} {}", where.empty() ? "" : ", ",
                             s.domain == kNoDomain ? "(split)" : map_.domain(s.domain).name, hl(s.nodes));
    log(fmt::format("job {}: placed {} slice(s) of {}: {}{}{}", j.id, r.placement.slices.size(), sj.tag.slice, where,
                    r.placement.split ? " [" + r.detail + "]" : "", rec.lent ? " (a lent spare)" : ""));
    pin_and_release(sj, r.placement, rec, false);
    return true;
}

void Cycle::finish_placed(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    const bool placed = sj.rec && (sj.rec->state == RecordState::Placed || sj.rec->state == RecordState::Repairing ||
                                   sj.rec->state == RecordState::Restarting);
    if (j.held && !held_by_us(sj)) {
        settled_.insert(j.id); // a user's or an admin's hold: theirs to release
        return;
    }
    const std::vector<NodeId> pinned = pinned_nodes(j);
    if (!placed || pinned.empty()) return;
    bool pinned_failed = false;
    for (NodeId id : pinned) pinned_failed = pinned_failed || needs_repair(id);
    if (!j.held && !gated(j) && !pinned_failed) {
        // Placed and waiting for Slurm. Nodes taken by another job for too
        // long: gate it again and place it afresh.
        bool taken = false;
        for (NodeId id : pinned) {
            const NodeStatus& st = snap_.node(id);
            taken = taken || (st.job_id != 0 && st.job_id != j.id && !is_free(st.state));
        }
        if (taken && now_ - std::max(j.submit_time, j.start_time) > cfg_.replace_after_s) {
            gate(sj);
            PlacementRecord rec = *sj.rec;
            rec.state = RecordState::Waiting;
            rec.reason = "its nodes were taken by another job; placing again";
            record(sj, rec);
            log(fmt::format("job {}: nodes {} taken by other jobs; gated to be placed again", j.id, hl(pinned)));
        }
        settled_.insert(j.id);
        return;
    }
    // Requeued by Slurm (a node went DOWN): gate it, so that the repair
    // decides where it runs.
    if (!j.held && !gated(j)) gate(sj);
    if (!pinned_failed) {
        // The second half of a repair (pending again after its requeue), or
        // a crash between pin and gate-off: start it on its pinned nodes.
        bool usable = true;
        for (NodeId id : pinned) {
            const NodeStatus& st = snap_.node(id);
            usable = usable && is_healthy(st.state) && (is_free(st.state) || st.job_id == j.id || st.job_id == 0);
        }
        if (!usable) return; // placed afresh in pass 2
        take(pinned, j.id);
        settled_.insert(j.id);
        // A requeued job may start only from the second after its requeue
        // (start_time()). Start it once that second has come, so that the
        // update itself makes Slurm schedule it at once instead of at its
        // next periodic pass.
        const int64_t start = start_time(j);
        if (j.restarts > 0 && j.begin_time > start) {
            act({ActionKind::Pin, j.id, hl(pinned), start});
            return;
        }
        if (j.restarts > 0 && j.begin_time > now_) return; // its second has not come yet
        PlacementRecord rec = *sj.rec;
        rec.state = RecordState::Placed;
        rec.hold = false;
        record(sj, rec);
        if (j.restarts == 0) act({ActionKind::Pin, j.id, hl(pinned), now_});
        start_now(sj);
        log(fmt::format("job {}: started on its pinned nodes {}{}", j.id, hl(pinned),
                        sj.rec->state == RecordState::Repairing    ? " (repair complete)"
                        : sj.rec->state == RecordState::Restarting ? " (restarted)"
                                                                   : ""));
        return;
    }
    // Pinned to a node that failed since (or requeued by Slurm after a node
    // went down): repair the placement before it runs again.
    if (!j.requeue) return;
    Placement p = placement_of(sj, map_.node_names(pinned));
    std::vector<NodeId> failed;
    for (NodeId id : pinned)
        if (needs_repair(id)) failed.push_back(id);
    RepairPlan plan = plan_repair(snap_, p, failed);
    if (!plan.feasible) {
        say_once(j.id, fmt::format("job {}: pinned node(s) {} failed; {}", j.id, hl(failed), plan.reason));
        return; // pass 2 places it afresh or records why it waits
    }
    PlacementRecord rec = *sj.rec;
    const bool resumed = rec.state == RecordState::Repairing; // a repair we started was counted then
    begin_repair(sj, plan, rec, !resumed, resumed ? " (resumed)" : " (requeued by Slurm)");
    pin_and_release(sj, plan.placement, rec, false);
}

void Cycle::place_waiting(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    if (settled_.count(j.id) || did(j.id, ActionKind::Pin)) return;
    if (j.held && !held_by_us(sj)) return; // a user's or an admin's hold: theirs to release
    const bool placed = sj.rec && (sj.rec->state == RecordState::Placed || sj.rec->state == RecordState::Repairing ||
                                   sj.rec->state == RecordState::Restarting);
    const bool open = !j.held && !gated(j);
    if (open && placed && !j.req_nodes.empty()) return; // placed, waiting for Slurm to start it
    if (place_job(sj) || !open) return;
    // Requeued (it yielded its nodes) or its owner took the gate off, and no
    // room now: Slurm would start it rack-blind. Gate it again.
    gate(sj);
    if (!(sj.rec && sj.rec->state == RecordState::Yielded) && j.restarts == 0)
        say_once(j.id, fmt::format("job {}: pending without its gate and without a placement (its owner took the "
                                   "gate off?): gated again",
                                   j.id));
}

// Requeue the cheapest set of checkpointable jobs that frees one rack for
// the blocked job's slice. Cost of a victim: its nodes x seconds run (work
// lost since a checkpoint is at most that); a rack where a
// non-checkpointable job would have to go is not a candidate.
void Cycle::try_defrag(const SliceJob& sj) {
    if (!cfg_.defrag || defrag_done_) return;
    const SlurmJob& blocked = *sj.job;
    if (now_ - blocked.submit_time < cfg_.defrag_after_s) return;
    if (mem_.last_defrag && now_ - mem_.last_defrag < cfg_.defrag_interval_s) return;
    std::unordered_map<JobId, const SlurmJob*> by_id;
    std::unordered_map<JobId, bool> ckpt;
    for (const auto& j : jobs_) by_id[j.id] = &j;
    for (const auto& s : slice_jobs_) ckpt[s.job->id] = s.tag.checkpointable;
    const int k = sj.tag.slice;
    DefragPlan plan = plan_defrag(snap_, k, [&](JobId id) {
        VictimInfo v;
        auto it = by_id.find(id);
        if (it == by_id.end() || it->second->state != JobState::Running) return v;
        const SlurmJob& j = *it->second;
        auto c = ckpt.find(id);
        JobTraits t{c != ckpt.end() && c->second, j.requeue, j.batch || cfg_.defrag_interactive, j.num_nodes};
        v.eligible = may_borrow_spares(t);
        v.cost = double(std::max<int64_t>(1, now_ - j.start_time)) * double(std::max(1, j.num_nodes));
        return v;
    });
    const DomainId best = plan.domain;
    const double best_cost = plan.cost;
    const std::vector<JobId>& best_victims = plan.victims;
    if (best == kNoDomain) {
        say_once(blocked.id, fmt::format("job {}: blocked by fragmentation; no rack can be freed from "
                                         "checkpointable jobs alone",
                                         blocked.id));
        defrag_done_ = true;
        return;
    }
    std::string list;
    for (JobId v : best_victims) {
        yield_job(v,
                  fmt::format("requeued by defragmentation to free {} for job {}", map_.domain(best).name, blocked.id));
        list += (list.empty() ? "" : ", ") + std::to_string(v);
    }
    out_.stats.defrag_preemptions += int(best_victims.size());
    mem_.last_defrag = now_;
    defrag_done_ = true;
    log(fmt::format("job {}: defragmentation: requeued checkpointable job(s) {} to free {} for a {}-node slice "
                    "(cost {:.0f} node-seconds)",
                    blocked.id, list, map_.domain(best).name, k, best_cost));
}

void Cycle::begin_repair(const SliceJob& sj, const RepairPlan& plan, PlacementRecord& rec, bool count,
                         const char* label) {
    const JobId id = sj.job->id;
    if (count) {
        rec.repairs += 1;
        rec.moves += plan.moved;
        out_.stats.repairs_in_rack += plan.replaced_in_domain;
        out_.stats.moves += plan.moved;
    }
    for (JobId victim : plan.preempt) {
        yield_job(victim, fmt::format("its lent spare was taken back to repair job {}", id));
        log(fmt::format("job {}: repair takes back a lent spare: requeued checkpointable job {}", id, victim));
    }
    for (const auto& s : plan.slices)
        if (s.action != RepairAction::Keep)
            log(fmt::format("job {}: repair{}: {}: removed {} added {}", id, label, s.detail, hl(s.removed),
                            hl(s.added)));
}

void Cycle::yield_job(JobId v, const std::string& why) {
    for (const auto& s : slice_jobs_)
        if (s.job->id == v) {
            PlacementRecord rec = s.rec.value_or(PlacementRecord{});
            rec.state = RecordState::Yielded;
            rec.slices.clear();
            rec.lent = false;
            rec.reason = why;
            act({ActionKind::SetRecord, v, rec.str()});
        }
    act({ActionKind::Requeue, v, {}});
}

void Cycle::keep_spares() {
    if (cfg_.reservation.empty()) return;
    std::vector<std::string> want;
    for (DomainId d = 0; d < map_.domains().size(); ++d) {
        const Domain& dom = map_.domain(d);
        std::vector<NodeId> pick;
        // A node lent to preemptible work is still a spare: a repair takes it back.
        // The spares are the rack's failure budget: failed nodes used them up.
        int want_n = kept_spares(dom, snap_.counts(d));
        for (NodeId id : dom.nodes)
            if (snap_.node(id).preemptible && !is_free(snap_.node(id).state)) --want_n;
        // keep current spares that are still free, then the rack's last idle nodes
        for (NodeId id : dom.nodes)
            if (snap_.node(id).state == NodeState::SpareReserved && int(pick.size()) < want_n) pick.push_back(id);
        for (auto it = dom.nodes.rbegin(); it != dom.nodes.rend() && int(pick.size()) < want_n; ++it)
            if (snap_.node(*it).state == NodeState::Idle) pick.push_back(*it);
        std::sort(pick.begin(), pick.end());
        for (NodeId id : pick) want.push_back(map_.node_name(id));
    }
    std::set<std::string> want_set(want.begin(), want.end());
    if (want_set == reserved_ && (spares_ || want.empty())) return;
    std::string list = hostlist_compress(want);
    // First, so that a spare handed to a repair leaves the reservation
    // before the repaired job is released.
    out_.actions.insert(out_.actions.begin(), Action{ActionKind::SetReservation, 0, list});
    log(fmt::format("spares: reservation {} = {}", cfg_.reservation, list.empty() ? "(none)" : list));
}

void Cycle::keep_weights() {
    if (!cfg_.steer_weights) return;
    // nodes whose reported weight differs from their rack's, by wanted weight
    std::map<uint32_t, std::vector<std::string>> change;
    for (const auto& n : nodes_) {
        auto id = map_.find_node(n.name);
        if (!id || n.weight == 0) continue;
        const DomainId d = map_.domain_of(*id);
        const uint32_t want = rack_weight(snap_.counts(d).free, map_.domain(d).size());
        if (n.weight != want) change[want].push_back(n.name);
    }
    for (auto& [w, names] : change) {
        Action a{ActionKind::SetWeight, 0, hostlist_compress(names)};
        a.weight = w;
        act(std::move(a));
    }
    // not logged: it changes with every job that starts or ends (sinfo -o %w shows it)
}

void Cycle::keep_gate() {
    if (!cfg_.gate_reservation.empty() && !gate_) {
        act({ActionKind::Gate, 0, cfg_.gate_reservation});
        log(fmt::format("gate: creating the license-only reservation {} that holds {}", cfg_.gate_reservation,
                        cfg_.gate_license));
    }
}

// The top-priority slice job that cannot start yet gets the racks that free
// up soonest kept for it, as Slurm's backfill keeps nodes for a blocked
// plain job: a reservation on those racks' nodes from its expected start
// (the end times of the jobs there). Slurm keeps off them every job that
// would still run then, and lets shorter ones in; the helper places other
// slice jobs there on the same terms. Dropped once the job starts or
// leaves; `sinfo -T` shows it.
void Cycle::protect_top() {
    if (!cfg_.protect || cfg_.protect_reservation.empty()) return;
    const SliceJob* top = nullptr;
    for (const auto& sj : slice_jobs_) {
        if (sj.job->id != top_) continue;
        top = &sj;
        break;
    }
    std::string want;
    int64_t start = 0, end = 0;
    auto w = top ? waits_.find(top->job->id) : waits_.end();
    if (top && w != waits_.end() &&
        (w->second == Reason::Busy || w->second == Reason::Fragmented || w->second == Reason::WouldConsumeSpares)) {
        const int k = top->tag.slice, c = top->tag.count;
        std::unordered_map<JobId, int64_t> ends;
        for (const auto& j : jobs_)
            if (j.state == JobState::Running) ends[j.id] = j.end_time > 0 ? j.end_time : INT64_MAX;
        // per rack: when it has room for one slice, and the nodes it would take
        struct RackTime {
            int64_t when;
            DomainId d;
            std::vector<NodeId> nodes;
        };
        std::vector<RackTime> racks;
        std::vector<std::pair<int64_t, NodeId>> avail;
        for (DomainId d = 0; d < map_.domains().size(); ++d) {
            const Domain& dom = map_.domain(d);
            const DomainCounts& dc = snap_.counts(d);
            const int kept = kept_spares(dom, dc);
            if (!dom.allows_slice(k) || dc.healthy - kept < k) continue;
            avail.clear();
            for (NodeId id : dom.nodes) {
                const NodeStatus& st = snap_.node(id);
                if (st.state == NodeState::Idle) {
                    avail.emplace_back(now_, id);
                } else if (is_healthy(st.state) && !is_free(st.state) && st.job_id) {
                    auto e = ends.find(st.job_id);
                    avail.emplace_back(e == ends.end() ? INT64_MAX : e->second, id);
                }
            }
            // the slice's nodes, earliest free first; the reserved spares stay out
            if (int(avail.size()) < k) continue;
            std::sort(avail.begin(), avail.end());
            const int64_t when = avail[size_t(k - 1)].first;
            if (when == INT64_MAX) continue;
            RackTime rt{when, d, {}};
            for (int i = 0; i < k; ++i) rt.nodes.push_back(avail[size_t(i)].second);
            racks.push_back(std::move(rt));
        }
        if (int(racks.size()) >= c) {
            std::sort(racks.begin(), racks.end(), [](const RackTime& a, const RackTime& b) {
                return a.when != b.when ? a.when < b.when : a.d < b.d;
            });
            std::vector<NodeId> nodes;
            for (int i = 0; i < c; ++i) {
                start = std::max(start, racks[size_t(i)].when);
                nodes.insert(nodes.end(), racks[size_t(i)].nodes.begin(), racks[size_t(i)].nodes.end());
            }
            std::sort(nodes.begin(), nodes.end());
            start = std::max(start, now_ + 1);
            end = top->job->time_limit > 0 ? start + top->job->time_limit : 0;
            want = hl(nodes);
        }
    }
    const bool have = protection_ && !protection_->nodes.empty();
    if (want.empty()) {
        if (have) {
            out_.actions.insert(out_.actions.begin(), Action{ActionKind::Protect, 0, {}});
            log("protect: dropped (no slice job waits for racks)");
        }
        return;
    }
    // a start that moved less than a minute is not worth a new reservation
    if (have && protection_->nodes == want &&
        (protection_->start_time <= now_ || std::llabs(protection_->start_time - start) < 60))
        return;
    Action a{ActionKind::Protect, 0, want};
    a.start_at = start;
    a.end_at = end;
    act(std::move(a));
    char when[32] = {};
    std::time_t t = std::time_t(start);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
    log(fmt::format("job {}: top priority, waits: racks kept for it, {} from {} (in {} s); shorter jobs may still "
                    "run there",
                    top->job->id, want, when, start - now_));
}

bool Cycle::backing_off(const SliceJob& sj) {
    auto it = mem_.backoff.find(sj.job->id);
    if (it == mem_.backoff.end() || it->second.until <= now_) return false;
    auto& b = it->second;
    if (!b.recorded) {
        // said once, in the job's record and the log
        b.recorded = true;
        PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
        if (!sj.rec) rec.state = RecordState::Waiting;
        rec.reason = fmt::format("nvlsliced could not act on this job ({} time(s)): {}; next try in {} s", b.failures,
                                 b.error, b.until - now_);
        record(sj, rec);
        log(fmt::format("job {}: left alone for {} s after a refused action: {}", sj.job->id, b.until - now_,
                        b.error));
    }
    return true;
}

CycleOutput Cycle::run() {
    build_snapshot();
    collect_slice_jobs();
    // forget the failures of jobs that are gone
    if (!mem_.backoff.empty()) {
        std::unordered_set<JobId> present;
        for (const auto& j : jobs_) present.insert(j.id);
        for (auto it = mem_.backoff.begin(); it != mem_.backoff.end();)
            it = present.count(it->first) ? std::next(it) : mem_.backoff.erase(it);
    }
    if (!mem_.said.empty()) {
        std::unordered_set<JobId> present;
        for (const auto& j : jobs_) present.insert(j.id);
        for (auto it = mem_.said.begin(); it != mem_.said.end();)
            it = present.count(it->first) ? std::next(it) : mem_.said.erase(it);
    }
    for (const auto& sj : slice_jobs_) {
        if (backing_off(sj)) {
            settled_.insert(sj.job->id);
            continue;
        }
        try {
            if (sj.job->state == JobState::Running)
                handle_running(sj);
            else if (sj.job->state == JobState::Pending)
                finish_placed(sj);
        } catch (const Error& e) {
            log(fmt::format("job {}: skipped this cycle: {}", sj.job->id, e.what()));
        }
    }
    // Jobs that yielded their nodes to defragmentation come last, so the
    // job they yielded to gets the freed rack first.
    for (int yielded = 0; yielded < 2; ++yielded)
        for (const auto& sj : slice_jobs_) {
            if ((sj.rec && sj.rec->state == RecordState::Yielded) != (yielded == 1)) continue;
            try {
                if (sj.job->state == JobState::Pending) place_waiting(sj);
            } catch (const Error& e) {
                log(fmt::format("job {}: skipped this cycle: {}", sj.job->id, e.what()));
            }
        }
    protect_top();
    keep_spares();
    keep_weights();
    keep_gate();
    return std::move(out_);
}

} // namespace

CycleOutput reconcile(const RackMap& map, const ClusterView& view, const HelperConfig& cfg, int64_t now,
                      HelperMemory& mem) {
    return Cycle(map, view, cfg, now, mem).run();
}

std::vector<ApplyFailure> apply(ClusterApi& api, const HelperConfig& cfg, const std::vector<Action>& actions,
                                void (*after_each)(const Action&)) {
    const std::string& reservation = cfg.reservation;
    std::vector<ApplyFailure> failures;
    std::unordered_set<JobId> failed_jobs;
    for (const auto& a : actions) {
        if (a.job && failed_jobs.count(a.job)) continue; // builds on the action that failed
        try {
            switch (a.kind) {
            case ActionKind::Hold: api.hold(a.job); break;
            case ActionKind::Pin: api.pin_job(a.job, a.arg, a.start_at); break;
            case ActionKind::PinOnly: api.pin_job(a.job, a.arg, 0); break;
            case ActionKind::Release: api.release(a.job); break;
            case ActionKind::RequeueHold: api.requeue_hold(a.job); break;
            case ActionKind::Requeue: api.requeue(a.job); break;
            case ActionKind::SetRecord: api.set_admin_comment(a.job, a.arg); break;
            case ActionKind::SetReservation: api.set_reservation(reservation, a.arg); break;
            case ActionKind::SetWeight: api.set_node_weight(a.arg, a.weight); break;
            case ActionKind::SetLicenses: api.set_licenses(a.job, a.arg); break;
            case ActionKind::Protect: api.set_reservation(cfg.protect_reservation, a.arg, a.start_at, a.end_at); break;
            case ActionKind::Gate: api.ensure_gate(cfg.gate_reservation, cfg.gate_license); break;
            }
        } catch (const std::exception& e) {
            failures.push_back({a.job, a.kind,
                                fmt::format("{}{}: {}", to_string(a.kind),
                                            a.arg.empty() || a.kind == ActionKind::SetRecord ? "" : " (" + a.arg + ")",
                                            e.what())});
            if (a.job) failed_jobs.insert(a.job);
            continue;
        }
        if (after_each) after_each(a);
    }
    return failures;
}

void note_applied(HelperMemory& mem, const std::vector<Action>& actions, const std::vector<ApplyFailure>& failures,
                  int64_t now) {
    std::unordered_set<JobId> failed;
    for (const auto& f : failures) {
        if (!f.job || !failed.insert(f.job).second) continue;
        auto& b = mem.backoff[f.job];
        b.failures += 1;
        b.until = now + std::min<int64_t>(300, int64_t(1) << std::min(b.failures, 9));
        b.error = f.error;
        b.recorded = false;
    }
    for (const auto& a : actions)
        if (a.job && !failed.count(a.job)) mem.backoff.erase(a.job);
}

} // namespace nvl
