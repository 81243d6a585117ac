// The placement and protection stage alone (place_stage.hpp): where a
// waiting job goes or why it waits, and which racks are kept for the top
// job, from a snapshot, with no cycle around it.
#include "fixtures.hpp"
#include "place_stage.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

namespace {
SlurmJob pending(JobId id, uint32_t nodes) {
    SlurmJob j;
    j.id = id;
    j.state = JobState::Pending;
    j.num_nodes = nodes;
    return j;
}
SliceJob waiting(const SlurmJob& j, int slice, PlacementMode mode = PlacementMode::Strict) {
    RequestTag t;
    t.slice = slice;
    t.count = j.num_nodes / slice;
    t.nodes = j.num_nodes;
    t.mode = mode;
    return SliceJob{&j, t, std::nullopt};
}

SlurmJob running(JobId id, int64_t end_time) {
    SlurmJob j = pending(id, 0);
    j.state = JobState::Running;
    j.end_time = end_time;
    return j;
}
} // namespace

TEST_CASE("place stage: the request, and who the protected racks are closed to", "[place_stage][quick]") {
    const int64_t now = 1'000'000;
    SlurmJob j = slice_job(1, 16, 2, false, now, true, 100);
    CHECK_FALSE(slice_request(waiting(j, 16, PlacementMode::Prefer), now, 300).allow_split);
    CHECK(slice_request(waiting(j, 16, PlacementMode::Prefer), now, 60).allow_split); // waited long enough
    CHECK_FALSE(slice_request(waiting(j, 16), now, 60).allow_split);                  // strict: never split
    const SliceRequest r = slice_request(waiting(j, 16), now, 60);
    CHECK(r.slice_size == 16);
    CHECK(r.slice_count == 2);

    const RackMap m = make_map(2, 18);
    NodeSet unprotected(m.node_count(), true);
    const std::optional<Reservation> protection = Reservation{"nvlslice_protect", "n[019-036]", now + 600};
    CHECK_FALSE(kept_from_protection(j, false, NodeSet(), protection, now));  // no protection: open
    CHECK_FALSE(kept_from_protection(j, true, unprotected, protection, now)); // the top job itself
    CHECK(kept_from_protection(j, false, unprotected, protection, now));      // no time limit: runs past it
    j.time_limit = 600;
    CHECK_FALSE(kept_from_protection(j, false, unprotected, protection, now)); // ends by its start: backfilled
    j.time_limit = 601;
    CHECK(kept_from_protection(j, false, unprotected, protection, now));
}

TEST_CASE("place stage: a placement, a reason, and a shape that failed is not tried again", "[place_stage][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot s(m);
    occupy(s, 0, 8); // r1: 8 busy, 10 free with its 2 spares
    ShapeMemo memo;
    SliceRequest one;
    one.job_id = 1;
    one.slice_size = 16;
    one.slice_count = 1;
    auto d = decide_place(s, one, {}, memo);
    REQUIRE(d.result.ok);
    CHECK(names(m, d.result.placement.nodes()) == "n[019-034]"); // the rack with room, its spares kept
    CHECK_FALSE(d.lent);
    SliceRequest two = one;
    two.slice_count = 2;
    auto busy = decide_place(s, two, {}, memo);
    CHECK_FALSE(busy.result.ok);
    CHECK_FALSE(busy.remembered);
    CHECK(memo.failed.size() == 1);
    auto again = decide_place(s, two, {}, memo);
    CHECK(again.remembered);
    CHECK(again.result.reason == busy.result.reason);
    memo.clear(); // the cycle took nodes: tried afresh
    CHECK_FALSE(decide_place(s, two, {}, memo).remembered);
}

TEST_CASE("place stage: protected racks, the freed rack, and lent spares", "[place_stage][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot s(m);
    occupy(s, 0, 2); // r1: 16 free with its 2 spares
    SliceRequest one;
    one.job_id = 1;
    one.slice_size = 16;
    one.slice_count = 1;
    // r2 is kept for the top job: r1 has no room without its spares; the
    // reason is the kept racks, not fragmentation
    NodeSet unprotected(m.node_count(), true);
    for (NodeId id : m.domain(1).nodes) unprotected.erase(id);
    PlaceLimits kept;
    kept.unprotected = &unprotected;
    kept.protection_start = 2'000'000;
    ShapeMemo memo;
    auto d = decide_place(s, one, kept, memo);
    CHECK_FALSE(d.result.ok);
    CHECK(d.result.reason == Reason::Busy);
    CHECK(d.result.detail.find("kept for a higher-priority slice job") != std::string::npos);
    // off the rack defragmentation freed for another job: the same
    PlaceLimits off;
    off.off_target = &unprotected;
    CHECK_FALSE(decide_place(s, one, off, memo).result.ok);
    // a checkpointable job may borrow r1's spares
    PlaceLimits lend = kept;
    lend.may_lend = true;
    auto lent = decide_place(s, one, lend, memo);
    REQUIRE(lent.result.ok);
    CHECK(lent.lent);
    CHECK(names(m, lent.result.placement.nodes()) == "n[003-018]");
}

TEST_CASE("place stage: the racks that free up soonest are kept for the top job", "[place_stage][quick]") {
    const int64_t now = 1'000'000;
    const RackMap m = make_map(3, 18);
    Snapshot s(m);
    set_all(s, "n[001-016]", NodeState::Allocated, 10);                 // r1 frees in 300 s
    set_all(s, "n[019-034]", NodeState::Allocated, 11);                 // r2 in 100 s
    set_all(s, "n[037-052]", NodeState::Allocated, 12);                 // r3: no time limit
    set_all(s, "n[017-018,035-036,053-054]", NodeState::SpareReserved); // the spares stay out
    std::vector<SlurmJob> jobs = {running(10, now + 300), running(11, now + 100), running(12, 0)};
    auto p = plan_protection(s, jobs, 16, 1, 3600, now);
    REQUIRE(p);
    CHECK(names(m, p->nodes) == "n[019-034]");
    CHECK(p->start == now + 100);
    CHECK(p->end == now + 100 + 3600);
    auto two = plan_protection(s, jobs, 16, 2, 0, now);
    REQUIRE(two);
    CHECK(names(m, two->nodes) == "n[001-016,019-034]");
    CHECK(two->start == now + 300); // when the later of the two is free
    CHECK(two->end == 0);           // no time limit
    // r3's job never ends for this: three racks cannot be kept
    CHECK_FALSE(plan_protection(s, jobs, 16, 3, 0, now));
    // a degraded rack is never kept
    s.set_degraded(1, "NVLink contained error");
    auto off = plan_protection(s, jobs, 16, 1, 0, now);
    REQUIRE(off);
    CHECK(names(m, off->nodes) == "n[001-016]");
    // idle racks: from the next second
    Snapshot idle(m);
    CHECK(plan_protection(idle, {}, 16, 1, 0, now)->start == now + 1);
}

TEST_CASE("place stage: the protection reservation changes only when it must", "[place_stage][quick]") {
    const int64_t now = 1'000'000;
    const std::optional<Reservation> none;
    const std::optional<Reservation> have = Reservation{"nvlslice_protect", "n[019-034]", now + 100};
    CHECK(protection_change("", 0, none, now) == ProtectChange::Keep);
    CHECK(protection_change("", 0, have, now) == ProtectChange::Drop);
    CHECK(protection_change("n[019-034]", now + 100, none, now) == ProtectChange::Set);
    CHECK(protection_change("n[019-034]", now + 159, have, now) == ProtectChange::Keep); // moved < 1 min
    CHECK(protection_change("n[019-034]", now + 160, have, now) == ProtectChange::Set);
    CHECK(protection_change("n[001-016]", now + 100, have, now) == ProtectChange::Set);
    // started already: kept while the nodes are the same
    CHECK(protection_change("n[019-034]", now + 900, have, now + 200) == ProtectChange::Keep);
}

TEST_CASE("place stage: which pending jobs the placement pass places", "[place_stage][quick]") {
    const int64_t now = 1'000'000;
    SlurmJob j = slice_job(1, 16, 1, false, now);
    PlacementRecord placed;
    placed.job = 1;
    placed.state = RecordState::Placed;
    placed.slice = 16;
    placed.slices = {"n[001-016]"};
    const SliceJob fresh = waiting(j, 16);
    SliceJob pinned = fresh;
    pinned.rec = placed;
    SliceJob native = fresh;
    native.tag.hand_off = HandOff::Native;
    CHECK(decide_waiting(fresh, true, true, false, false) == WaitingCase::Done);
    CHECK(decide_waiting(fresh, false, true, false, false) == WaitingCase::Behind);
    CHECK(decide_waiting(native, false, false, false, false) == WaitingCase::Native);
    CHECK(decide_waiting(pinned, false, false, false, true) == WaitingCase::WaitsForSlurm);
    CHECK(decide_waiting(pinned, false, true, false, true) == WaitingCase::Place); // its gate is on again
    j.held = true;
    CHECK(decide_waiting(fresh, false, true, false, false) == WaitingCase::OthersHold);
    CHECK(decide_waiting(fresh, false, true, true, false) == WaitingCase::HandBack); // the helper's hold, no placement
    CHECK(decide_waiting(pinned, false, true, true, true) == WaitingCase::Place);    // the helper's hold, placed
    // why one behind its gate stays there
    CHECK_FALSE(stays_behind(fresh, std::nullopt, false));
    auto held = stays_behind(fresh, HeldBack{ReasonKind::BeginTime, "BeginTime"}, true);
    REQUIRE(held);
    CHECK(held->why == Why::HeldBack);
    CHECK(held->text == "held back by Slurm: BeginTime");
    auto retry = stays_behind(fresh, std::nullopt, true);
    REQUIRE(retry);
    CHECK(retry->why == Why::Retry);
    SliceJob said = fresh;
    said.rec = PlacementRecord{};
    said.rec->set_reason(Why::NotStarted, "placed 300 s ago and not started");
    CHECK(stays_behind(said, std::nullopt, true)->why == Why::NotStarted); // its record's reason kept
}

TEST_CASE("place stage: the hand-off's pin, as the actions that do it", "[place][pin][quick]") {
    const RackMap m = make_map(2, 4); // n001..n008
    std::vector<SlurmNode> nodes;
    for (int i = 1; i <= 8; ++i) nodes.push_back(SlurmNode{fmt::format("n{:03d}", i)});
    const std::vector<NodeId> ids{id(m, "n001"), id(m, "n002")};
    SlurmJob j;
    j.id = 5;
    // gate mode: its node list, from its start second
    auto a = pin_actions(j, false, false, m, nodes, ids, 100);
    REQUIRE(a.size() == 1);
    REQUIRE(a[0].get<action::Pin>());
    CHECK(a[0].get<action::Pin>()->nodes == "n[001-002]");
    CHECK(a[0].get<action::Pin>()->start_at == 100);
    // no start second: the node list alone
    a = pin_actions(j, false, false, m, nodes, ids, 0);
    REQUIRE(a.size() == 1);
    CHECK(a[0].kind() == ActionKind::PinOnly);
    // native mode before node pools: every other node excluded, a user's -w lifted first
    j.req_nodes = "n007";
    a = pin_actions(j, true, false, m, nodes, ids, 100);
    REQUIRE(a.size() == 2);
    REQUIRE(a[0].get<action::PinOnly>());
    CHECK(a[0].get<action::PinOnly>()->nodes.empty());
    REQUIRE(a[1].get<action::Exclude>());
    CHECK(a[1].get<action::Exclude>()->nodes == "n[003-008]");
    CHECK(a[1].get<action::Exclude>()->start_at == 100);
    // native mode with node pools: an earlier exclusion of the new nodes leaves first, the rest stays
    j.req_nodes.clear();
    j.exc_nodes = "n[002-003]";
    a = pin_actions(j, true, true, m, nodes, ids, 0);
    REQUIRE(a.size() == 2);
    REQUIRE(a[0].get<action::Exclude>());
    CHECK(a[0].get<action::Exclude>()->nodes == "n003");
    CHECK(a[1].kind() == ActionKind::PinOnly);
    CHECK(excludes_any(m, j, ids));
    CHECK_FALSE(excludes_any(m, j, {id(m, "n004")}));
}

TEST_CASE("place stage: what holds a slice job back, its record's word kept while Slurm's reason is reset",
          "[place][held][quick]") {
    SlurmJob j = pending(40, 16);
    SliceJob sj = waiting(j, 16);
    HoldInputs in;
    in.now = 1000;
    in.gate_license = "nvlslice_gate";
    CHECK_FALSE(held_back(sj, in)); // nothing known holds it
    // a record that says Slurm held it back: kept while Slurm's reason is None
    PlacementRecord r;
    r.state = RecordState::Waiting;
    r.why = Why::HeldBack;
    r.reason = std::string(kHeldBack) + "PartitionDown (partition batch)";
    sj.rec = r;
    auto h = held_back(sj, in);
    REQUIRE(h);
    CHECK(h->kind == ReasonKind::Partition);
    // an array throttle, counted from the running tasks of its array
    sj.rec.reset();
    j.array_id = 30;
    j.array_throttle = 2;
    SlurmJob t1 = j, t2 = j;
    t1.id = 41;
    t2.id = 42;
    t1.state = t2.state = JobState::Running;
    const auto running = count_array_tasks({j, t1, t2});
    CHECK(running.at(30) == 2);
    SlurmGates g;
    in.gates = &g;
    in.array_running = &running;
    h = held_back(sj, in);
    REQUIRE(h);
    CHECK(h->kind == ReasonKind::ArrayThrottle);
}

TEST_CASE("place stage: a native job kept off degraded racks by its exclusion, and let back when they recover",
          "[place][degraded][quick]") {
    SlurmJob j = pending(50, 16);
    SliceJob sj = waiting(j, 16);
    // no rack degraded, none was: nothing to do
    auto d = keep_off_degraded(sj, "");
    CHECK_FALSE(d.rec);
    CHECK_FALSE(d.exclusion);
    // a rack degraded: excluded, the record says the helper did it
    d = keep_off_degraded(sj, "n[001-018]");
    REQUIRE(d.rec);
    CHECK(d.rec->off_degraded);
    CHECK(d.rec->state == RecordState::Waiting);
    CHECK(d.rec->slice == 16);
    REQUIRE(d.exclusion);
    CHECK(*d.exclusion == "n[001-018]");
    // already excluded so (in another order): only the record
    j.exc_nodes = "n[010-018],n[001-009]";
    sj.rec = d.rec;
    d = keep_off_degraded(sj, "n[001-018]");
    REQUIRE(d.rec);
    CHECK_FALSE(d.exclusion);
    // the rack recovered: the exclusion lifted, the record's flag down
    d = keep_off_degraded(sj, "");
    REQUIRE(d.rec);
    CHECK_FALSE(d.rec->off_degraded);
    REQUIRE(d.exclusion);
    CHECK(d.exclusion->empty());
    // a user's own --exclude, no rack degraded and none was: left alone
    j.exc_nodes = "n005";
    sj.rec.reset();
    CHECK_FALSE(keep_off_degraded(sj, "").exclusion);
}

TEST_CASE("place stage: a placement's record, its slices in node order, and how it is handed to Slurm",
          "[place][record][quick]") {
    const RackMap m = make_map(2, 4); // n001..n008
    SlurmJob j = pending(60, 4);
    SliceJob sj = waiting(j, 2);
    Placement p;
    p.slice_size = 2;
    p.slices = {{0, 1, {id(m, "n005"), id(m, "n006")}}, {1, 0, {id(m, "n001"), id(m, "n002")}}};
    PlacementRecord before;
    before.state = RecordState::Waiting;
    before.why = Why::HeldBack;
    before.reason = "held back by Slurm: Dependency";
    // a first start: numbered in node order, its reason cleared, placed
    auto d = placed_record(sj, p, before, false, m);
    CHECK(d.route == PlacedRecord::Route::FirstStart);
    CHECK(d.rec.state == RecordState::Placed);
    CHECK(d.rec.slices == std::vector<std::string>{"n[001-002]", "n[005-006]"});
    CHECK(d.placement.slices[0].index == 0);
    CHECK(d.placement.slices[0].nodes.front() == id(m, "n001"));
    CHECK(d.rec.reason.empty());
    CHECK_FALSE(d.rec.hold);
    // a running job's repair: requeued held onto it
    d = placed_record(sj, p, before, true, m);
    CHECK(d.route == PlacedRecord::Route::RequeueHeld);
    CHECK(d.rec.state == RecordState::Repairing);
    CHECK(d.rec.hold);
    // a job that ran before: a repair when it was placed, a restart otherwise
    j.restarts = 1;
    d = placed_record(sj, p, before, false, m);
    CHECK(d.route == PlacedRecord::Route::Restart);
    CHECK(d.rec.state == RecordState::Restarting);
    PlacementRecord placed;
    placed.state = RecordState::Placed;
    sj.rec = placed;
    CHECK(placed_record(sj, p, placed, false, m).rec.state == RecordState::Repairing);
}
