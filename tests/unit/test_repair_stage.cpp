// The repair stage alone (repair_stage.hpp): the decision about each running
// slice job, from an observation and a working snapshot, with no cycle
// around it.
#include "fixtures.hpp"
#include "observe.hpp"
#include "rack_health.hpp"
#include "repair_stage.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

namespace {

// 3 racks of 18 (r1 n001-018, r2 n019-036, r3 n037-054), their last two
// nodes in the spare reservation, every node idle unless a job runs there.
struct World {
    RackMap map = make_map(3, 18);
    std::vector<SlurmNode> nodes;
    std::vector<SlurmJob> jobs;
    std::optional<Reservation> spares = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    std::optional<Reservation> none;
    std::optional<std::regex> rack_scope = reason_regex("contained", "rack_failure_reasons");

    World() {
        for (NodeId i = 0; i < map.node_count(); ++i) {
            SlurmNode n;
            n.name = map.node_name(i);
            n.state = NodeState::Idle;
            nodes.push_back(n);
        }
        jobs.reserve(16); // SliceJob keeps pointers into it
    }
    void drain(const std::string& node, const std::string& reason = "Xid 79") {
        nodes[id(map, node)].state = NodeState::Drained;
        nodes[id(map, node)].reason = reason;
    }
    const SlurmJob& run(JobId id, const std::string& hostlist, bool requeue = true, bool batch = true) {
        SlurmJob j;
        j.id = id;
        j.state = JobState::Running;
        j.nodes = hostlist_expand(hostlist);
        j.num_nodes = int(j.nodes.size());
        j.requeue = requeue;
        j.batch = batch;
        jobs.push_back(j);
        return jobs.back();
    }
    Observation observe_now() const {
        return observe(map, {nodes, jobs, spares, none, none}, LendScope::None, std::nullopt, rack_scope);
    }
};

SliceJob slice_job_of(const SlurmJob& j, int slice, std::optional<PlacementRecord> rec = std::nullopt,
                      bool native = false, bool ckpt = false) {
    RequestTag t;
    t.slice = slice;
    t.count = j.num_nodes / slice;
    t.nodes = j.num_nodes;
    t.checkpointable = ckpt;
    t.hand_off = native ? HandOff::Native : HandOff::Gate;
    return SliceJob{&j, t, std::move(rec)};
}

PlacementRecord placed(JobId job, std::vector<std::string> slices, RecordState st = RecordState::Placed) {
    PlacementRecord r;
    r.job = job;
    r.state = st;
    r.slice = 16;
    r.slices = std::move(slices);
    return r;
}

} // namespace

TEST_CASE("repair stage: a running job with no failed node", "[repair_stage][quick]") {
    World w;
    const SlurmJob& a = w.run(1, "n[001-016]");
    const Observation o = w.observe_now();
    // placed, nothing failed: nothing to do
    auto d = decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {"n[001-016]"})));
    CHECK(d.kind == RunningCase::Healthy);
    CHECK(d.failed.empty());
    // the reason of a repair that waited, its node resumed since: stale
    PlacementRecord waited = placed(1, {"n[001-016]"});
    waited.set_reason(Why::RepairWaits, "repair waits: no room");
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(a, 16, waited)).kind == RunningCase::Recovered);
    // no record that says placed: how it started is decide_started()'s
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(a, 16)).kind == RunningCase::Started);
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {"n[001-016]"}, RecordState::Restarting)))
              .kind == RunningCase::Started);
    // its record says it yielded its nodes, yet it runs: the requeue follows
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {}, RecordState::Yielded))).kind ==
          RunningCase::Yielding);
}

TEST_CASE("repair stage: a native job Slurm restarted elsewhere has its record follow it", "[repair_stage][quick]") {
    World w;
    w.drain("n007");
    // Slurm requeued it itself (expedited) after n007 failed and started it
    // on the rack's spare before a cycle saw it pending
    SlurmJob& a = const_cast<SlurmJob&>(w.run(1, "n[001-006,008-017]"));
    a.restarts = 1;
    const Observation o = w.observe_now();
    PlacementRecord was = placed(1, {"n[001-016]"});
    was.repairs = 2;
    auto d = decide_running(w.map, o, o.snap, slice_job_of(a, 16, was, true));
    REQUIRE(d.kind == RunningCase::Followed);
    REQUIRE(d.recorded);
    CHECK(d.recorded->state == RecordState::Placed);
    CHECK(d.recorded->slices == std::vector<std::string>{"n[001-006,008-017]"});
    CHECK(d.recorded->repairs == 3); // a node of its placement failed: a repair, Slurm's own
    CHECK(d.recorded->moves == 0);   // the same rack
    // restarted on another rack: a move too
    SlurmJob& b = const_cast<SlurmJob&>(w.run(2, "n[019-034]"));
    b.restarts = 1;
    const Observation o2 = w.observe_now();
    auto moved = decide_running(w.map, o2, o2.snap, slice_job_of(b, 16, placed(2, {"n[001-016]"}), true));
    REQUIRE(moved.kind == RunningCase::Followed);
    CHECK(moved.recorded->repairs == 1);
    CHECK(moved.recorded->moves == 1);
    // an admin's requeue, restarted elsewhere, no node failed: followed, no repair counted
    SlurmJob& c = const_cast<SlurmJob&>(w.run(3, "n[037-052]"));
    c.restarts = 1;
    const Observation o3 = w.observe_now();
    auto req = decide_running(w.map, o3, o3.snap, slice_job_of(c, 16, placed(3, {"n[019-034]"}), true));
    REQUIRE(req.kind == RunningCase::Followed);
    CHECK(req.recorded->repairs == 0);
    CHECK(req.recorded->slices == std::vector<std::string>{"n[037-052]"});
    // a job lent spares, restarted elsewhere by Slurm: no longer on them
    PlacementRecord lent = placed(3, {"n[019-034]"});
    lent.lent = true;
    auto unlent = decide_running(w.map, o3, o3.snap, slice_job_of(c, 16, lent, true));
    REQUIRE(unlent.kind == RunningCase::Followed);
    CHECK_FALSE(unlent.recorded->lent);
    // where its record says: healthy; gate mode, or never restarted: not looked at
    CHECK(decide_running(w.map, o3, o3.snap, slice_job_of(c, 16, placed(3, {"n[037-052]"}), true)).kind ==
          RunningCase::Healthy);
    CHECK(decide_running(w.map, o3, o3.snap, slice_job_of(c, 16, placed(3, {"n[019-034]"}), false)).kind ==
          RunningCase::Healthy);
}

TEST_CASE("repair stage: a native job Slurm restarted elsewhere, whose new node fails, is repaired from where it runs",
          "[repair_stage][quick]") {
    World w;
    w.drain("n007");
    w.drain("n010");
    SlurmJob& a = const_cast<SlurmJob&>(w.run(1, "n[001-006,008-017]"));
    a.restarts = 1;
    const Observation o = w.observe_now();
    auto d = decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {"n[001-016]"}), true));
    REQUIRE(d.kind == RunningCase::Repair);
    REQUIRE(d.recorded);
    CHECK(d.recorded->slices == std::vector<std::string>{"n[001-006,008-017]"});
    CHECK(d.recorded->repairs == 1); // Slurm's; the helper's repair counts its own
    // n010 replaced by the rack's last spare; n017, where it runs, kept
    REQUIRE(d.plan.slices.size() == 1);
    CHECK(hostlist_compress(w.map.node_names(d.plan.slices[0].removed)) == "n010");
    CHECK(hostlist_compress(w.map.node_names(d.plan.slices[0].added)) == "n018");
}

TEST_CASE("repair stage: a native job that shares a node with another runs where its record says",
          "[repair_stage][quick]") {
    World w;
    SlurmJob& a = const_cast<SlurmJob&>(w.run(1, "n[001-016]"));
    a.restarts = 1;
    w.run(2, "n016"); // a job on one of its nodes, which the snapshot shows
    const Observation o = w.observe_now();
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {"n[001-016]"}), true)).kind ==
          RunningCase::Healthy);
    // two slices in one rack, recorded in the repair's order: the same nodes
    SlurmJob& b = const_cast<SlurmJob&>(w.run(3, "n[019-034]"));
    b.restarts = 1;
    w.run(4, "n034");
    const Observation o2 = w.observe_now();
    PlacementRecord two = placed(3, {"n[019-026]", "n[027-034]"});
    two.slice = 8;
    SliceJob sj = slice_job_of(b, 8, two, true);
    CHECK(decide_running(w.map, o2, o2.snap, sj).kind == RunningCase::Healthy);
}

TEST_CASE("repair stage: a failed node is repaired from its rack's spare, or waits, or cannot be",
          "[repair_stage][quick]") {
    World w;
    const SlurmJob& a = w.run(1, "n[001-016]");
    const SlurmJob& interactive = w.run(2, "n[019-034]", true, false);
    const SlurmJob& no_requeue = w.run(3, "n[037-052]", false, true);
    w.drain("n003");
    w.drain("n020");
    w.drain("n040");
    const Observation o = w.observe_now();
    auto d = decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {"n[001-016]"})));
    REQUIRE(d.kind == RunningCase::Repair);
    CHECK(names(w.map, d.failed) == "n003");
    CHECK(d.plan.replaced_in_domain == 1);
    CHECK(d.plan.moved == 0);
    CHECK(names(w.map, d.plan.placement.nodes()) == "n[001-002,004-017]"); // its rack's first spare
    CHECK_FALSE(d.retried);
    // its record names a repair already (the requeue failed part way): retried, not counted again
    auto again = decide_running(w.map, o, o.snap,
                                slice_job_of(a, 16, placed(1, {"n[001-002,004-017]"}, RecordState::Repairing)));
    CHECK(again.kind == RunningCase::Repair);
    CHECK(again.retried);
    // Slurm requeues only batch jobs that allow it
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(interactive, 16, placed(2, {"n[019-034]"}))).kind ==
          RunningCase::NotRepairable);
    CHECK(decide_running(w.map, o, o.snap, slice_job_of(no_requeue, 16, placed(3, {"n[037-052]"}))).kind ==
          RunningCase::NotRepairable);
    // the working snapshot as earlier decisions leave it: r1's spares taken,
    // every other rack full: the repair waits, and says why
    Snapshot taken = o.snap;
    set_all(taken, "n[017-018]", NodeState::Allocated, 50);
    set_all(taken, "n[035-036,053-054]", NodeState::Allocated, 51);
    auto waits = decide_running(w.map, o, taken, slice_job_of(a, 16, placed(1, {"n[001-016]"})));
    CHECK(waits.kind == RunningCase::RepairWaits);
    CHECK_FALSE(waits.plan.reason.empty());
}

TEST_CASE("repair stage: a job on a degraded rack is an evacuee, a native job is recorded where it runs",
          "[repair_stage][quick]") {
    World w;
    const SlurmJob& a = w.run(1, "n[019-034]");
    const SlurmJob& b = w.run(2, "n[001-016]");
    w.drain("n036", "NVLink contained error"); // r2 degraded, none of a's own nodes failed
    w.drain("n005");
    const Observation o = w.observe_now();
    REQUIRE(o.snap.degraded(1));
    auto d = decide_running(w.map, o, o.snap, slice_job_of(a, 16, placed(1, {"n[019-034]"})));
    CHECK(d.kind == RunningCase::Evacuee);
    CHECK(d.failed.size() == 16);
    // native: Slurm started it, and a node failed before a cycle recorded where
    auto n = decide_running(w.map, o, o.snap, slice_job_of(b, 16, std::nullopt, true));
    REQUIRE(n.recorded);
    CHECK(n.recorded->state == RecordState::Placed);
    CHECK(n.recorded->slices == std::vector<std::string>{"n[001-016]"});
    CHECK(n.kind == RunningCase::Repair);
    CHECK(names(w.map, n.plan.placement.nodes()) == "n[001-004,006-017]");
}

TEST_CASE("repair stage: how a job started without a record of ours", "[repair_stage][quick]") {
    World w;
    const SlurmJob& whole = w.run(1, "n[001-016]");
    const SlurmJob& across = w.run(2, "n[009-024]");
    const SlurmJob& stuck = w.run(3, "n[009-024]", false, true);
    auto native = decide_started(w.map, slice_job_of(whole, 16, std::nullopt, true), LendScope::Checkpointable);
    CHECK(native.kind == StartCase::Native);
    CHECK(native.rec.why == Why::None);
    CHECK(native.rec.slices == std::vector<std::string>{"n[001-016]"});
    auto native_across = decide_started(w.map, slice_job_of(across, 16, std::nullopt, true), LendScope::Checkpointable);
    CHECK(native_across.kind == StartCase::Native);
    CHECK(native_across.rec.why == Why::AcrossRacks);
    CHECK(native_across.rec.split);
    // started where the helper pinned it: the record catches up, even across racks
    auto ours = decide_started(w.map, slice_job_of(across, 16, placed(2, {"n[009-024]"}, RecordState::Restarting)),
                               LendScope::Checkpointable);
    CHECK(ours.kind == StartCase::Ours);
    CHECK(ours.rec.state == RecordState::Placed);
    CHECK_FALSE(ours.rec.hold);
    SliceJob task = slice_job_of(whole, 16);
    task.copied_from = 9;
    CHECK(decide_started(w.map, task, LendScope::Checkpointable).kind == StartCase::ArrayTask);
    CHECK(decide_started(w.map, slice_job_of(whole, 16), LendScope::Checkpointable).kind == StartCase::GateOff);
    // rack-blind: requeued to be placed, or said once when it cannot be
    auto escaped = decide_started(w.map, slice_job_of(across, 16), LendScope::Checkpointable);
    CHECK(escaped.kind == StartCase::Escaped);
    CHECK(escaped.rec.state == RecordState::Waiting);
    CHECK(escaped.rec.slices.empty());
    CHECK(escaped.rec.why == Why::Escaped);
    auto blind = decide_started(w.map, slice_job_of(stuck, 16), LendScope::Checkpointable);
    CHECK(blind.kind == StartCase::RanRackBlind);
    CHECK(blind.rec.why == Why::RanRackBlind);
    CHECK(decide_started(w.map, slice_job_of(stuck, 16, blind.rec), LendScope::Checkpointable).kind == StartCase::Said);
}

TEST_CASE("repair stage: work Slurm started natively stands in for spares by the placement's rule",
          "[repair_stage][quick]") {
    World w;
    const SlurmJob& small = w.run(1, "n[001-004]");
    const SlurmJob& slice = w.run(2, "n[019-034]");
    const SlurmJob& interactive = w.run(3, "n[037-038]", true, false);
    const auto lent = [&](const SlurmJob& j, bool ckpt, std::optional<PlacementRecord> rec = std::nullopt,
                          LendScope lend = LendScope::Checkpointable) {
        const StartDecision d = decide_started(w.map, slice_job_of(j, int(j.nodes.size()), rec, true, ckpt), lend);
        CHECK(d.kind == StartCase::Native);
        return d.rec.lent;
    };
    // started at submission, or by Slurm's backfill while the helper saw no
    // room: no record said lent, and its nodes stood in for no spare
    CHECK(lent(small, true));
    // a record written while it waited (no room then) changes nothing
    PlacementRecord waiting;
    waiting.job = 1;
    waiting.state = RecordState::Waiting;
    CHECK(lent(small, true, waiting));
    // not checkpointable, a slice or more, interactive, or lending off
    CHECK_FALSE(lent(small, false));
    CHECK_FALSE(lent(slice, true));
    CHECK_FALSE(lent(interactive, true));
    CHECK_FALSE(lent(small, true, std::nullopt, LendScope::None));
    CHECK_FALSE(lent(small, true, std::nullopt, LendScope::SingleNode));
    // a repaired job waiting for room was given the spares, not lent them
    waiting.repair_wait = true;
    CHECK_FALSE(lent(small, true, waiting));
}

TEST_CASE("repair stage: evacuees move to a healthy rack, checkpointable first", "[repair_stage][quick]") {
    World w;
    const SlurmJob& a = w.run(1, "n[019-034]");
    const SlurmJob& b = w.run(2, "n[001-016]");
    const SlurmJob& interactive = w.run(3, "n[019-034]", true, false);
    w.drain("n036", "NVLink contained error");
    const Observation o = w.observe_now();
    std::vector<SliceJob> ev = {slice_job_of(a, 16, placed(1, {"n[019-034]"})),
                                slice_job_of(b, 16, placed(2, {"n[001-016]"}), false, true)};
    order_evacuees(ev);
    CHECK(ev[0].job->id == 2); // checkpointable first
    auto d = decide_move(w.map, o.snap, slice_job_of(a, 16, placed(1, {"n[019-034]"})));
    REQUIRE(d.kind == MoveCase::Move);
    CHECK(d.racks == "r2");
    CHECK(d.out.size() == 16);
    CHECK(d.plan.moved == 1);
    for (NodeId n : d.plan.placement.nodes()) CHECK_FALSE(o.snap.degraded(w.map.domain_of(n)));
    CHECK(decide_move(w.map, o.snap, slice_job_of(interactive, 16, placed(3, {"n[019-034]"}))).kind ==
          MoveCase::NotMovable);
    // no healthy rack with room (r1 and r3 taken by earlier decisions): it waits where it runs
    Snapshot full = o.snap;
    set_all(full, "n[001-016,037-052]", NodeState::Allocated, 60);
    auto waits = decide_move(w.map, full, slice_job_of(a, 16, placed(1, {"n[019-034]"})));
    CHECK(waits.kind == MoveCase::MoveWaits);
    CHECK_FALSE(waits.plan.reason.empty());
}

namespace {
// A pending job pinned to `req_nodes` (gate mode), its record `rec`.
SlurmJob pending(JobId id, const std::string& req_nodes, bool held = false) {
    SlurmJob j;
    j.id = id;
    j.state = JobState::Pending;
    j.num_nodes = 16;
    j.req_nodes = req_nodes;
    j.held = held;
    j.requeue = true;
    j.batch = true;
    return j;
}
} // namespace

TEST_CASE("repair stage: a pending job that has a placement", "[repair_stage][quick]") {
    World w;
    // job 5 runs on n005 with a copy of job 1's record: a task of job 1's
    // array that Slurm started on its placement
    SlurmJob& task = w.jobs.emplace_back();
    task.id = 5;
    task.state = JobState::Running;
    task.nodes = {"n005"};
    task.num_nodes = 1;
    task.admin_comment = placed(1, {"n[001-016]"}).str();
    const SlurmJob& other = w.run(6, "n020");
    (void)other;
    const Observation o = w.observe_now();
    const SlurmJob released = pending(1, "n[001-016]");
    // a user's or an admin's hold: theirs
    const SlurmJob theirs = pending(1, "n[001-016]", true);
    CHECK(decide_placed(w.map, o, o.snap, slice_job_of(theirs, 16, placed(1, {"n[001-016]"})), false, false).kind ==
          PlacedCase::OthersHold);
    // no placement of ours
    PlacementRecord waiting = placed(1, {}, RecordState::Waiting);
    CHECK(decide_placed(w.map, o, o.snap, slice_job_of(released, 16, waiting), true, false).kind ==
          PlacedCase::NoPlacement);
    // released: its array's task took a node of its placement
    auto d = decide_placed(w.map, o, o.snap, slice_job_of(released, 16, placed(1, {"n[001-016]"})), false, false);
    REQUIRE(d.kind == PlacedCase::Released);
    CHECK(d.taken);
    CHECK(d.split_task == 5);
    CHECK(decide_released(slice_job_of(released, 16), d, false, false, false) == ReleasedCase::ArraySplit);
    // released on r2, another job on n020: taken, not a task of its array
    const SlurmJob on_r2 = pending(2, "n[019-034]");
    auto t = decide_placed(w.map, o, o.snap, slice_job_of(on_r2, 16, placed(2, {"n[019-034]"})), false, false);
    CHECK(t.taken);
    CHECK(t.split_task == 0);
    const SliceJob gate_job = slice_job_of(on_r2, 16), native_job = slice_job_of(on_r2, 16, std::nullopt, true);
    CHECK(decide_released(gate_job, t, false, false, false) == ReleasedCase::Waits);
    CHECK(decide_released(gate_job, t, false, false, true) == ReleasedCase::NodesTaken);
    CHECK(decide_released(gate_job, t, true, false, false) == ReleasedCase::HeldBack);
    CHECK(decide_released(native_job, t, true, false, false) == ReleasedCase::Waits); // Slurm's own to hold
    PlacedDecision free_nodes;
    CHECK(decide_released(gate_job, free_nodes, false, true, false) == ReleasedCase::NotStarted);
    CHECK(decide_released(native_job, free_nodes, false, true, false) == ReleasedCase::Waits);
}

TEST_CASE("repair stage: the second half of a repair, and a pinned node that failed", "[repair_stage][quick]") {
    World w;
    w.drain("n040");
    const SlurmJob& borrower = w.run(9, "n[017-018]");
    const Observation o = w.observe_now();
    // held by the helper, its record the repair's target, the pin not
    // followed (ReqNodeList still the old nodes): asked for again
    SlurmJob held = pending(1, "n[001-015,019]", true);
    PlacementRecord target = placed(1, {"n[001-016]"}, RecordState::Repairing);
    target.hold = true;
    auto d = decide_placed(w.map, o, o.snap, slice_job_of(held, 16, target), true, true);
    CHECK(d.kind == PlacedCase::Start);
    CHECK(d.repin);
    CHECK(names(w.map, d.pinned) == "n[001-016]");
    // its target still runs the borrower of a lent spare: it yields again
    Snapshot lent = o.snap;
    lent.set(id(w.map, "n017"), {NodeState::Allocated, borrower.id, -1, true});
    PlacementRecord on_spare = placed(1, {"n[002-017]"}, RecordState::Repairing);
    on_spare.hold = true;
    held.req_nodes = "n[002-017]";
    auto busy = decide_placed(w.map, o, lent, slice_job_of(held, 16, on_spare), true, true);
    CHECK(busy.kind == PlacedCase::TargetBusy);
    CHECK(busy.borrowers == std::vector<JobId>{9});
    CHECK_FALSE(busy.repin);
    // native mode: the pin an earlier repair left (a node pool, or an
    // exclusion) contradicts the record's target: asked for again
    for (const bool pool : {true, false}) {
        CAPTURE(pool);
        SlurmJob native_held = pending(1, "", true);
        if (pool)
            native_held.req_nodes = "n[001-015,019]";
        else
            native_held.exc_nodes = "n[016-018,020-072]"; // n016 of the target excluded
        auto nd = decide_placed(w.map, o, o.snap, slice_job_of(native_held, 16, target, true), false, true);
        CHECK(nd.kind == PlacedCase::Start);
        CHECK(nd.repin);
        CHECK(names(w.map, nd.pinned) == "n[001-016]");
        // pinned as its record says: nothing asked again
        if (pool)
            native_held.req_nodes = "n[001-016]";
        else
            native_held.exc_nodes = "n[017-072]";
        CHECK_FALSE(decide_placed(w.map, o, o.snap, slice_job_of(native_held, 16, target, true), false, true).repin);
    }
    // requeued by Slurm after its node n040 went down, open: gated first, then repaired
    const SlurmJob requeued = pending(2, "n[037-052]");
    auto r = decide_placed(w.map, o, o.snap, slice_job_of(requeued, 16, placed(2, {"n[037-052]"})), false, false);
    REQUIRE(r.kind == PlacedCase::PinnedFailed);
    CHECK(r.gate_first);
    CHECK_FALSE(r.resumed);
    CHECK(names(w.map, r.failed) == "n040");
    const SliceJob rj = slice_job_of(requeued, 16, placed(2, {"n[037-052]"}));
    const RepairPlan plan = plan_pinned_repair(w.map, o.snap, rj, r);
    REQUIRE(plan.feasible);
    CHECK(names(w.map, plan.placement.nodes()) == "n[037-039,041-053]");
    SlurmJob no_requeue = requeued;
    no_requeue.requeue = false;
    CHECK(decide_placed(w.map, o, o.snap, slice_job_of(no_requeue, 16, placed(2, {"n[037-052]"})), false, false).kind ==
          PlacedCase::NotRequeueable);
    Snapshot full = o.snap;
    set_all(full, "n[001-036,053-054]", NodeState::Allocated, 70);
    auto gated = decide_placed(w.map, o, full, rj, true, false);
    CHECK(gated.kind == PlacedCase::PinnedFailed);
    CHECK_FALSE(gated.gate_first); // gated already
    const RepairPlan none = plan_pinned_repair(w.map, full, rj, gated);
    CHECK_FALSE(none.feasible); // no room: it waits, and says why
    CHECK_FALSE(none.reason.empty());
}

TEST_CASE("repair stage: when a requeued job is released", "[repair_stage][quick]") {
    const int64_t now = 1'000'000;
    SlurmJob j;
    CHECK(decide_start_step(j, now, now, false) == StartStep::Release); // a first start
    j.restarts = 1;
    j.begin_time = now + 120; // Slurm's cred_expire wait
    CHECK(decide_start_step(j, now + 1, now, false) == StartStep::BringForward);
    j.begin_time = now + 1;
    CHECK(decide_start_step(j, now + 1, now, false) == StartStep::WaitSecond);
    CHECK(decide_start_step(j, now + 1, now, true) == StartStep::BringForward); // the pin asked for again
    CHECK(decide_start_step(j, now + 1, now + 1, false) == StartStep::Release);
}
