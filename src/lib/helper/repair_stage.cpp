// The repair stage: decisions about running slice jobs (repair_stage.hpp).
#include "repair_stage.hpp"

#include "hostlist.hpp"

#include <algorithm>

namespace nvl {

const char* to_string(RunningCase c) {
    switch (c) {
    case RunningCase::Yielding: return "yielding";
    case RunningCase::Healthy: return "healthy";
    case RunningCase::Followed: return "followed";
    case RunningCase::Recovered: return "recovered";
    case RunningCase::Started: return "started";
    case RunningCase::Evacuee: return "evacuee";
    case RunningCase::NotRepairable: return "not repairable";
    case RunningCase::RepairWaits: return "repair waits";
    case RunningCase::Repair: return "repair";
    }
    return "?";
}

const char* to_string(StartCase c) {
    switch (c) {
    case StartCase::Native: return "native";
    case StartCase::Ours: return "ours";
    case StartCase::ArrayTask: return "array task";
    case StartCase::GateOff: return "gate off";
    case StartCase::Escaped: return "escaped";
    case StartCase::RanRackBlind: return "ran rack-blind";
    case StartCase::Said: return "said";
    }
    return "?";
}

const char* to_string(MoveCase c) {
    switch (c) {
    case MoveCase::NotMovable: return "not movable";
    case MoveCase::MoveWaits: return "move waits";
    case MoveCase::Move: return "move";
    }
    return "?";
}

Placement placement_of(const RackMap& map, const SliceJob& sj, const std::vector<std::string>& nodes) {
    Placement p;
    p.job_id = sj.job->id;
    p.slice_size = sj.tag.slice;
    std::vector<std::vector<NodeId>> slices;
    // A running job whose record says repairing runs where it ran: the
    // record names the target of a repair whose requeue did not happen.
    const bool record_is_target =
        sj.rec && sj.rec->state == RecordState::Repairing && sj.job->state == JobState::Running;
    if (sj.rec && !sj.rec->slices.empty() && !record_is_target) {
        for (const auto& h : sj.rec->slices) {
            std::vector<NodeId> ids;
            for (const auto& n : hostlist_expand(h))
                if (auto id = map.find_node(n)) ids.push_back(*id);
            slices.push_back(std::move(ids));
        }
    } else {
        slices = derive_slices(map, nodes, sj.tag.slice);
    }
    for (size_t i = 0; i < slices.size(); ++i) {
        PlacedSlice ps;
        ps.index = int(i);
        ps.nodes = slices[i];
        ps.domain = ps.nodes.empty() ? kNoDomain : map.domain_of(ps.nodes.front());
        for (NodeId n : ps.nodes)
            if (map.domain_of(n) != ps.domain) ps.domain = kNoDomain;
        p.split = p.split || ps.domain == kNoDomain;
        p.slices.push_back(std::move(ps));
    }
    return p;
}

WhereRunning record_where_running(const RackMap& map, const SliceJob& sj, PlacementRecord r) {
    const SlurmJob& j = *sj.job;
    r.state = RecordState::Placed;
    r.hold = false;
    r.slice = sj.tag.slice;
    r.slices.clear();
    r.clear_reason();
    const auto slices = try_derive_slices(map, j.nodes, sj.tag.slice);
    const bool whole = slices.has_value();
    if (whole) {
        for (const auto& s : *slices) r.slices.push_back(hostlist_compress(map.node_names(s)));
    } else {
        // not whole slices of one rack each
        r.slices = {hostlist_compress(j.nodes)};
    }
    r.split = !whole;
    return {std::move(r), whole};
}

namespace {

// The record of a running native job whose record says placed, when Slurm
// restarted it elsewhere (its own requeue, expedited after a node failure,
// 25.11+, or an admin's, started again before a cycle saw it pending), else
// nullopt: its record is where it runs. Looked at only for a job that ran
// before (one that never restarted runs where it was recorded when it
// started), and without allocating while every node of it is one of its
// record's (the snapshot marks them with their slice index).
std::optional<PlacementRecord> restarted_elsewhere(const RackMap& map, const Observation& obs, const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    if (!native(sj) || !sj.rec || sj.rec->state != RecordState::Placed || j.restarts == 0) return std::nullopt;
    bool recorded = int(j.nodes.size()) == sj.tag.nodes;
    for (size_t i = 0; recorded && i < j.nodes.size(); ++i) {
        const auto id = map.find_node(j.nodes[i]);
        recorded = id && obs.snap.node(*id).job_id == j.id && obs.snap.node(*id).slice >= 0;
    }
    if (recorded) return std::nullopt;
    // The exact test (a node it shares with another job, a record of
    // another size): its nodes against its record's.
    const std::vector<NodeId> was = recorded_nodes(map, *sj.rec);
    std::vector<NodeId> now_ids;
    now_ids.reserve(j.nodes.size());
    for (const auto& n : j.nodes)
        if (auto id = map.find_node(n)) now_ids.push_back(*id);
    std::sort(now_ids.begin(), now_ids.end());
    if (now_ids == was) return std::nullopt;
    WhereRunning now = record_where_running(map, sj, *sj.rec);
    now.rec.lent = false; // lent spares are the helper's to give, where it pinned the job
    // A node of its old placement failed: a repair, Slurm's own, counted in
    // the job's record (a move for each rack it did not run on before).
    const bool lost_node = std::any_of(was.begin(), was.end(), [&](NodeId id) { return obs.failed.contains(id); });
    if (lost_node) {
        now.rec.repairs += 1;
        std::vector<DomainId> moved_to;
        for (NodeId id : now_ids) {
            const DomainId dom = map.domain_of(id);
            const bool ran_there =
                std::any_of(was.begin(), was.end(), [&](NodeId w) { return map.domain_of(w) == dom; });
            if (!ran_there && std::find(moved_to.begin(), moved_to.end(), dom) == moved_to.end())
                moved_to.push_back(dom);
        }
        now.rec.moves += int(moved_to.size());
    }
    if (!now.whole)
        now.rec.set_reason(Why::AcrossRacks, "Slurm placed its segments across racks: do topology.conf and the rack "
                                             "map agree (nvl-topo check)?");
    return std::move(now.rec);
}

} // namespace

RunningDecision decide_running(const RackMap& map, const Observation& obs, const Snapshot& snap, const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    RunningDecision d;
    if (sj.rec && sj.rec->state == RecordState::Yielded) {
        // the helper died between the record and the requeue
        d.kind = RunningCase::Yielding;
        return d;
    }
    for (const auto& n : j.nodes)
        if (auto id = map.find_node(n); id && needs_repair(obs, snap, *id)) d.failed.push_back(*id);
    // Native: restarted by Slurm elsewhere than its record says: the
    // record follows, and a repair starts from where it runs.
    std::optional<PlacementRecord> followed = restarted_elsewhere(map, obs, sj);
    if (d.failed.empty()) {
        if (followed) {
            d.kind = RunningCase::Followed;
            d.recorded = std::move(followed);
        } else if (sj.rec && sj.rec->state == RecordState::Placed) {
            d.kind = sj.rec->reason.empty() ? RunningCase::Healthy : RunningCase::Recovered;
        } else {
            d.kind = RunningCase::Started;
        }
        return d;
    }
    const SliceJob* job = &sj;
    SliceJob with_record;
    if (followed || (native(sj) && !has_placement(sj))) {
        // Slurm started it (again) and a node failed before a cycle
        // recorded where: its placement is where it runs.
        with_record = sj;
        with_record.rec = d.recorded =
            followed ? std::move(followed) : record_where_running(map, sj, sj.rec.value_or(PlacementRecord{})).rec;
        job = &with_record;
    }
    const bool own_failure =
        std::any_of(d.failed.begin(), d.failed.end(), [&](NodeId id) { return obs.failed.contains(id); });
    if (!own_failure) {
        d.kind = RunningCase::Evacuee; // only its rack is degraded
        return d;
    }
    if (!j.requeue || !j.batch) {
        // Slurm requeues only batch jobs that allow it
        d.kind = RunningCase::NotRepairable;
        return d;
    }
    d.plan = plan_repair(snap, placement_of(map, *job, j.nodes), d.failed, obs.unprotected);
    d.kind = d.plan.feasible ? RunningCase::Repair : RunningCase::RepairWaits;
    d.retried = d.plan.feasible && job->rec && job->rec->state == RecordState::Repairing;
    return d;
}

StartDecision decide_started(const RackMap& map, const SliceJob& sj, LendScope lend) {
    const SlurmJob& j = *sj.job;
    StartDecision d;
    const PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
    // started where the helper pinned it: the record catches up
    const bool ours = sj.rec && (sj.rec->state == RecordState::Repairing || sj.rec->state == RecordState::Restarting);
    WhereRunning placed = record_where_running(map, sj, rec);
    placed.rec.repair_wait = false; // it runs again
    if (native(sj) && !ours) {
        // Slurm placed it with --segment: each segment in one block, which
        // the rack map and topology.conf make one rack
        d.kind = StartCase::Native;
        d.rec = std::move(placed.rec);
        // Lent work by the placement's rule, whoever started it: Slurm
        // starts such work at submission or by its backfill while the
        // helper saw no room for it, before any record said lent, and it
        // would then never stand in for its rack's spares. A repaired job
        // waiting for room was given spares, not lent them.
        if (!(sj.rec && sj.rec->repair_wait))
            d.rec.lent = stands_in_for_spares({sj.tag.checkpointable, j.requeue, j.batch, int(j.nodes.size())}, lend,
                                              map.defaults().default_slice);
        if (!placed.whole)
            d.rec.set_reason(Why::AcrossRacks, "Slurm placed its segments across racks: do topology.conf and the rack "
                                               "map agree (nvl-topo check)?");
        return d;
    }
    if (placed.whole || ours) {
        d.kind = ours ? StartCase::Ours : sj.copied_from ? StartCase::ArrayTask : StartCase::GateOff;
        d.rec = std::move(placed.rec);
        return d;
    }
    // It escaped its gate and Slurm started it rack-blind: only its owner
    // can have done that, and only their own job pays.
    const std::string where = hostlist_compress(j.nodes);
    d.rec = rec;
    if (j.requeue && j.batch) {
        d.kind = StartCase::Escaped;
        d.rec.state = RecordState::Waiting;
        d.rec.slices.clear();
        d.rec.set_reason(Why::Escaped, "its gate was taken off and Slurm started it rack-blind on " + where +
                                           "; requeued to be placed");
    } else if (rec.why != Why::RanRackBlind) {
        d.kind = StartCase::RanRackBlind;
        d.rec.set_reason(Why::RanRackBlind,
                         "ran rack-blind on " + where + ": its gate was taken off, and Slurm cannot requeue it");
    }
    return d;
}

const char* to_string(PlacedCase c) {
    switch (c) {
    case PlacedCase::OthersHold: return "others' hold";
    case PlacedCase::NoPlacement: return "no placement";
    case PlacedCase::Released: return "released";
    case PlacedCase::TargetBusy: return "target busy";
    case PlacedCase::Start: return "start";
    case PlacedCase::PinnedFailed: return "pinned failed";
    case PlacedCase::NotRequeueable: return "not requeueable";
    }
    return "?";
}

std::vector<NodeId> recorded_nodes(const RackMap& map, const PlacementRecord& r) {
    NodeSet s(map.node_count());
    for (const auto& h : r.slices) s.add(map, h);
    return s.ids();
}

std::vector<NodeId> pinned_nodes(const RackMap& map, const SliceJob& sj) {
    if (native(sj)) return has_placement(sj) ? recorded_nodes(map, *sj.rec) : std::vector<NodeId>{};
    std::vector<NodeId> pinned;
    if (!sj.job->req_nodes.empty())
        for (const auto& n : hostlist_expand(sj.job->req_nodes))
            if (auto id = map.find_node(n)) pinned.push_back(*id);
    return pinned;
}

bool took_its_placement(const Observation& obs, JobId other, JobId id) {
    for (const auto& p : obs.jobs)
        if (p.job->id == other) return p.job->state == JobState::Running && p.copied_from == id;
    return false;
}

PlacedDecision decide_placed(const RackMap& map, const Observation& obs, const Snapshot& snap, const SliceJob& sj,
                             bool gated, bool held_by_us) {
    const SlurmJob& j = *sj.job;
    PlacedDecision d;
    if (j.held && !held_by_us) {
        d.kind = PlacedCase::OthersHold;
        return d;
    }
    const bool placed = has_placement(sj);
    // A native job that Slurm placed, ran and requeued (a node went DOWN)
    // is held to nothing: its record says where it ran.
    d.pinned = pinned_nodes(map, sj);
    // A repair's or restart's target is its record, written first: the pin
    // may not have followed (the helper died in between).
    if (!native(sj) && placed && sj.rec->state != RecordState::Placed && !sj.rec->slices.empty()) {
        std::vector<NodeId> want = recorded_nodes(map, *sj.rec), have = d.pinned;
        std::sort(have.begin(), have.end());
        if (want != have) {
            d.pinned = std::move(want);
            d.repin = true;
        }
    }
    // Native mode: its pin in Slurm (a node pool, or an exclusion of every
    // other node) is an earlier placement's where it contradicts the
    // record (a helper that died between the record and the pin; another
    // took over): asked for again.
    if (native(sj) && placed && sj.rec->state != RecordState::Placed && !d.pinned.empty()) {
        bool differs = false;
        if (!j.req_nodes.empty()) {
            std::vector<NodeId> have;
            for (const auto& n : hostlist_expand(j.req_nodes))
                if (auto id = map.find_node(n)) have.push_back(*id);
            std::sort(have.begin(), have.end());
            differs = have != d.pinned;
        }
        if (!j.exc_nodes.empty())
            for (const auto& n : hostlist_expand(j.exc_nodes)) {
                const auto id = map.find_node(n);
                differs = differs || (id && std::binary_search(d.pinned.begin(), d.pinned.end(), *id));
            }
        d.repin = differs;
    }
    if (!placed || d.pinned.empty()) {
        d.kind = PlacedCase::NoPlacement;
        return d;
    }
    for (NodeId id : d.pinned)
        if (needs_repair(obs, snap, id)) d.failed.push_back(id);
    const bool open = !j.held && !gated;
    if (open && d.failed.empty()) {
        d.kind = PlacedCase::Released;
        for (NodeId id : d.pinned) {
            const NodeStatus& st = snap.node(id);
            if (st.job_id == 0 || st.job_id == j.id || is_free(st.state)) continue;
            d.taken = true;
            if (!d.split_task && took_its_placement(obs, st.job_id, j.id)) d.split_task = st.job_id;
        }
        return d;
    }
    if (d.failed.empty()) {
        // The second half of a repair (pending again after its requeue), or
        // a crash between pin and gate-off: its target free, or not yet.
        bool usable = true;
        for (NodeId id : d.pinned) {
            const NodeStatus& st = snap.node(id);
            usable = usable && is_healthy(st.state) && (is_free(st.state) || st.job_id == j.id || st.job_id == 0);
        }
        d.kind = usable ? PlacedCase::Start : PlacedCase::TargetBusy;
        if (!usable && sj.rec->state == RecordState::Repairing)
            for (NodeId id : d.pinned) {
                const NodeStatus& st = snap.node(id);
                if (st.preemptible && st.job_id != 0 && st.job_id != j.id && !is_free(st.state) &&
                    std::find(d.borrowers.begin(), d.borrowers.end(), st.job_id) == d.borrowers.end())
                    d.borrowers.push_back(st.job_id);
            }
        return d;
    }
    // Pinned to a node that failed since (or requeued by Slurm after a node
    // went down): the placement is repaired before it runs again; gated
    // first in gate mode, so that the repair decides where it runs.
    d.gate_first = open && !native(sj);
    if (!j.requeue) {
        d.kind = PlacedCase::NotRequeueable;
        return d;
    }
    d.kind = PlacedCase::PinnedFailed;
    d.resumed = sj.rec->state == RecordState::Repairing;
    return d;
}

RepairPlan plan_pinned_repair(const RackMap& map, const Snapshot& snap, const SliceJob& sj, const PlacedDecision& d,
                              const NodeSet& unprotected) {
    return plan_repair(snap, placement_of(map, sj, map.node_names(d.pinned)), d.failed, unprotected);
}

ReleasedCase decide_released(const SliceJob& sj, const PlacedDecision& d, bool holds, bool overdue, bool waited_past) {
    if (d.split_task) return ReleasedCase::ArraySplit;
    if (!native(sj) && (holds || (overdue && !d.taken)))
        return holds ? ReleasedCase::HeldBack : ReleasedCase::NotStarted;
    if (d.taken && (overdue || waited_past)) return ReleasedCase::NodesTaken;
    return ReleasedCase::Waits;
}

StartStep decide_start_step(const SlurmJob& j, int64_t start, int64_t now, bool repin) {
    if (j.restarts > 0 && (j.begin_time > start || repin)) return StartStep::BringForward;
    if (j.restarts > 0 && j.begin_time > now) return StartStep::WaitSecond;
    return StartStep::Release;
}

void order_evacuees(std::vector<SliceJob>& evacuees) {
    std::stable_partition(evacuees.begin(), evacuees.end(), [](const SliceJob& sj) { return sj.tag.checkpointable; });
}

MoveDecision decide_move(const RackMap& map, const Snapshot& snap, const SliceJob& sj, const NodeSet& unprotected) {
    const SlurmJob& j = *sj.job;
    MoveDecision d;
    std::vector<DomainId> seen;
    for (const auto& n : j.nodes) {
        auto id = map.find_node(n);
        if (!id || !snap.degraded(map.domain_of(*id))) continue;
        d.out.push_back(*id);
        const DomainId r = map.domain_of(*id);
        if (std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
        seen.push_back(r);
        d.racks += (d.racks.empty() ? "" : ", ") + map.domain(r).name;
    }
    if (!j.requeue || !j.batch) {
        d.kind = MoveCase::NotMovable;
        return d;
    }
    d.plan = plan_repair(snap, placement_of(map, sj, j.nodes), d.out, unprotected);
    d.kind = d.plan.feasible ? MoveCase::Move : MoveCase::MoveWaits;
    d.retried = d.plan.feasible && sj.rec && sj.rec->state == RecordState::Repairing;
    return d;
}

} // namespace nvl
