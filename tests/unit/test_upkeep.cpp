// The cycle's upkeep stage alone (upkeep_stage.hpp): the spare reservation, the
// nodes' weights wanted for a snapshot.
#include "fixtures.hpp"
#include "repair.hpp"
#include "upkeep_stage.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

TEST_CASE("upkeep: the spares wanted for a snapshot, only when Slurm's differ", "[upkeep][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    // nothing reserved yet: each rack's last two nodes
    CHECK(wanted_spares(snap, NodeSet(m.node_count()), false).value_or("?") == "n[017-018,035-036]");
    // as Slurm has it: nothing to do
    for (const char* n : {"n017", "n018", "n035", "n036"}) snap.set_state(id(m, n), NodeState::SpareReserved);
    CHECK_FALSE(wanted_spares(snap, NodeSet::of(m, "n[017-018,035-036]"), true));
    // a spare handed to a repair (n017 busy): the rack's last idle node instead
    snap.set_state(id(m, "n001"), NodeState::Allocated);
    snap.set(id(m, "n017"), {NodeState::Allocated, 7, 0, false, false});
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[017-018,035-036]"), true).value_or("?") == "n[016,018,035-036]");
    // a failed node uses up one of its rack's two spares
    snap.set_state(id(m, "n005"), NodeState::Drained);
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[017-018,035-036]"), true).value_or("?") == "n[018,035-036]");
    // a degraded rack keeps every node from Slurm: the free ones, the busy
    // ones (their job may end before the next cycle) and the failed one (an
    // admin may resume it)
    snap.set_degraded(0, "3 failed nodes, more than its 2 spares");
    const auto deg = wanted_spares(snap, NodeSet::of(m, "n[018,035-036]"), true);
    REQUIRE(deg);
    CHECK(*deg == "n[001-018,035-036]");
    CHECK_FALSE(wanted_spares(snap, NodeSet::of(m, "n[001-018,035-036]"), true)); // as Slurm has it
}

// A lookup of `ends` (job -> end) as wanted_spares() asks it.
BusyEnd ends_of(const std::unordered_map<JobId, int64_t>& ends) {
    return [&ends](JobId id) -> std::optional<int64_t> {
        const auto e = ends.find(id);
        return e == ends.end() ? std::nullopt : std::optional<int64_t>(e->second);
    };
}

TEST_CASE("upkeep: a rack short of free spares keeps the nodes of the plain work that ends first",
          "[upkeep][spares][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    for (const char* n : {"n035", "n036"}) snap.set_state(id(m, n), NodeState::SpareReserved);
    // r1 full: a slice job on n[001-016] (job 7), plain work on n017 (job 20,
    // ends at 300 s) and n018 (job 21, at 100 s)
    for (int i = 1; i <= 16; ++i) snap.set(id(m, fmt::format("n{:03d}", i)), {NodeState::Allocated, 7, 0, false});
    snap.set(id(m, "n017"), {NodeState::Allocated, 20, -1, false});
    snap.set(id(m, "n018"), {NodeState::Allocated, 21, -1, false});
    const NodeSet reserved = NodeSet::of(m, "n[035-036]");
    // without end times (as before): r1 keeps none
    CHECK_FALSE(wanted_spares(snap, reserved, true));
    std::unordered_map<JobId, int64_t> busy{{20, 300}, {21, 100}};
    CHECK(wanted_spares(snap, reserved, true, NodeSet(), ends_of(busy)).value_or("?") == "n[017-018,035-036]");
    // one node freed (n016 idle): it, then the plain node that frees first
    snap.set(id(m, "n016"), {NodeState::Idle, 0, -1, false});
    CHECK(wanted_spares(snap, reserved, true, NodeSet(), ends_of(busy)).value_or("?") == "n[016,018,035-036]");
    // a node kept already stays, though another job now ends sooner
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[017,035-036]"), true, NodeSet(), ends_of(busy)).value_or("?") ==
          "n[016-017,035-036]");
    // a job the caller left out (a slice job, one in a reservation) is never
    // kept; lent work stands in already; the protection's nodes are not added
    busy.erase(21);
    CHECK(wanted_spares(snap, reserved, true, NodeSet(), ends_of(busy)).value_or("?") == "n[016-017,035-036]");
    NodeStatus lent{NodeState::Allocated, 20, -1, true};
    lent.lent = true;
    snap.set(id(m, "n017"), lent); // standing in for one: n016 the other
    CHECK(wanted_spares(snap, reserved, true, NodeSet(), ends_of(busy)).value_or("?") == "n[016,035-036]");
    snap.set(id(m, "n017"), {NodeState::Allocated, 20, -1, false});
    CHECK(wanted_spares(snap, reserved, true, NodeSet::of(m, "n[001-016,019-036]"), ends_of(busy)).value_or("?") ==
          "n[016,035-036]");
    // a slice job's node, given in `busy` by mistake, is still none
    busy[7] = 50;
    CHECK(wanted_spares(snap, reserved, true, NodeSet::of(m, "n[001-016,019-036]"), ends_of(busy)).value_or("?") ==
          "n[016,035-036]");
}

TEST_CASE("upkeep: lent work stands in for spares only on its healthy nodes", "[upkeep][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    for (const char* n : {"n017", "n018", "n035", "n036"}) snap.set_state(id(m, n), NodeState::SpareReserved);
    // a 1-node lent job on n001 stands in for one of r1's spares
    snap.set(id(m, "n001"), {NodeState::Allocated, 9, -1, true, true});
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[017-018,035-036]"), true).value_or("?") == "n[018,035-036]");
    // its node drains: the failure uses up one spare, and the lent node no
    // longer stands in for the other, which the reservation keeps
    NodeStatus st = snap.node(id(m, "n001"));
    st.state = NodeState::Draining;
    snap.set(id(m, "n001"), st);
    CHECK(snap.counts(0).lent == 0);
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[018,035-036]"), true) == std::nullopt); // n018 kept
}

TEST_CASE("upkeep: a failure gives up the spare a repair takes first, so Slurm's own requeue finds the same one",
          "[upkeep][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    for (int i = 1; i <= 16; ++i)
        snap.set(id(m, fmt::format("n{:03d}", i)), {NodeState::Allocated, 7, 0, false, false});
    for (const char* n : {"n017", "n018", "n035", "n036"}) snap.set_state(id(m, n), NodeState::SpareReserved);
    // n007 fails: its job is requeued (by Slurm, expedited, or by the
    // helper); the rack's budget is one spare now
    snap.set_state(id(m, "n007"), NodeState::Down);
    Placement running;
    running.job_id = 7;
    running.slice_size = 16;
    PlacedSlice s;
    s.domain = 0;
    for (int i = 1; i <= 16; ++i) s.nodes.push_back(id(m, fmt::format("n{:03d}", i)));
    running.slices.push_back(s);
    const RepairPlan plan = plan_repair(snap, running, {id(m, "n007")});
    REQUIRE(plan.feasible);
    REQUIRE(plan.slices.size() == 1);
    REQUIRE(plan.slices[0].added.size() == 1);
    const std::string taken = m.node_name(plan.slices[0].added[0]);
    CHECK(taken == "n017");
    // the reservation gives up that very node (the one Slurm alone would
    // then start the job on), and keeps the rack's last one
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[017-018,035-036]"), true).value_or("?") == "n[018,035-036]");
    // once it has: a repair planned then (the job seen pending after
    // Slurm's requeue) takes that node, a free one outside the reservation
    // before the spare still in it, and the reservation stays as it is
    snap.set_state(id(m, "n017"), NodeState::Idle);
    const RepairPlan later = plan_repair(snap, running, {id(m, "n007")});
    REQUIRE(later.feasible);
    CHECK(m.node_name(later.slices[0].added.at(0)) == "n017");
    CHECK_FALSE(wanted_spares(snap, NodeSet::of(m, "n[018,035-036]"), true));
}

TEST_CASE("upkeep: weights steer Slurm to racks in use", "[upkeep][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    std::vector<SlurmNode> nodes;
    for (NodeId i = 0; i < m.node_count(); ++i) {
        SlurmNode n;
        n.name = m.node_name(i);
        n.state = NodeState::Idle;
        n.weight = 1;
        nodes.push_back(n);
    }
    for (const char* n : {"n019", "n020"}) snap.set_state(id(m, n), NodeState::Allocated);
    const auto w = weight_changes(snap, nodes);
    REQUIRE(w.size() == 2);
    CHECK(w[0].nodes == "n[019-036]"); // the rack in use: the lower weight, filled first
    CHECK(w[1].nodes == "n[001-018]");
    CHECK(w[0].weight < w[1].weight);
}

TEST_CASE("upkeep: a node the protection holds never joins the spares (Slurm refuses overlapping reservations)",
          "[upkeep][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    NodeSet unprotected(m.node_count(), true);
    for (int i = 3; i <= 18; ++i) unprotected.erase(id(m, fmt::format("n{:03d}", i))); // 16 nodes of r1 kept
    // r1's last idle nodes are protected: its spares are its first ones then
    CHECK(wanted_spares(snap, NodeSet(m.node_count()), false, unprotected).value_or("?") == "n[001-002,035-036]");
    // r1 degrades: its nodes join, but for those the protection holds (they
    // join once it has left the rack)
    snap.set_degraded(0, "NVLink contained error");
    CHECK_FALSE(wanted_spares(snap, NodeSet::of(m, "n[001-002,035-036]"), true, unprotected));
    CHECK(wanted_spares(snap, NodeSet::of(m, "n[001-002,035-036]"), true).value_or("?") == "n[001-018,035-036]");
}

TEST_CASE("upkeep: each lend reservation kept, renewed or ended, and who is taken out of it", "[upkeep][lend][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    HelperConfig cfg;
    const int64_t now = 1000000;
    HelperMemory mem;
    // job 7 waits, pinned to the spare lent to it (n017): its lend is kept,
    // and renewed once half of its lease is gone
    snap.set(id(m, "n017"), {NodeState::Allocated, 7, -1, false, false});
    SlurmJob waiting;
    waiting.id = 7;
    waiting.state = JobState::Pending;
    waiting.reservation = cfg.lend_name(7);
    waiting.user_id = 1001;
    // job 8 runs in its lend: ended (it keeps the node); job 9 is gone;
    // job 10 of the same owner runs in 8's lend too: requeued with it, and
    // interactive job 11 is said to keep it
    SlurmJob running = waiting;
    running.id = 8;
    running.state = JobState::Running;
    running.reservation = cfg.lend_name(8);
    SlurmJob intruder = running;
    intruder.id = 10;
    intruder.batch = true;
    SlurmJob interactive = intruder;
    interactive.id = 11;
    interactive.batch = false;
    const std::vector<SlurmJob> jobs{waiting, running, intruder, interactive};
    const std::vector<ParsedJob> parsed = parse_jobs(jobs);
    const NodeSet failed(m.node_count());
    std::vector<Reservation> lends{{cfg.lend_name(7), "n017", now - 100, now + cfg.reservation_lease_s},
                                   {cfg.lend_name(8), "n035", now - 100, now + cfg.reservation_lease_s},
                                   {cfg.lend_name(9), "n036", now - 100, now + cfg.reservation_lease_s},
                                   {"site_resv", "n001", 0, 0}};
    const LendContext c{parsed, cfg, snap, failed, mem, now, 0, nullptr};
    auto v = decide_lends(lends, c);
    REQUIRE(v.size() == 2); // 7's kept as it is; site_resv not a lend
    CHECK(v[0].job == 8);
    CHECK(v[0].kind == LendVerdict::Kind::End);
    CHECK(v[0].why == LendVerdict::Why::RunsThere);
    CHECK(v[0].in);
    CHECK(v[0].others == std::vector<JobId>{10, 11});
    REQUIRE(v[0].requeue.size() == 1);
    CHECK(v[0].requeue[0]->id == 10);
    REQUIRE(v[0].interactive.size() == 1);
    CHECK(v[0].interactive[0]->id == 11);
    CHECK(v[1].job == 9);
    CHECK(v[1].why == LendVerdict::Why::Gone);
    CHECK_FALSE(v[1].in);
    // half of 7's lease gone: renewed
    lends[0].end_time = now + cfg.reservation_lease_s / 2 - 1;
    v = decide_lends(lends, c);
    REQUIRE(v.size() == 3);
    CHECK(v[0].job == 7);
    CHECK(v[0].kind == LendVerdict::Kind::Renew);
    // 7 no longer pinned there (its node went to another job): ended
    snap.set(id(m, "n017"), {NodeState::Allocated, 12, -1, false, false});
    v = decide_lends(lends, c);
    REQUIRE(v.size() == 3);
    CHECK(v[0].kind == LendVerdict::Kind::End);
    CHECK(v[0].why == LendVerdict::Why::NoLongerWaits);
    // a job lent this cycle keeps its new reservation; one backing off is left alone
    const LendContext lent{parsed, cfg, snap, failed, mem, now, 0, [](JobId j) { return j == 7; }};
    CHECK(decide_lends(lends, lent).size() == 2);
    mem.backoff[8].until = 5;
    const LendContext off{parsed, cfg, snap, failed, mem, now, 1, [](JobId j) { return j == 7; }};
    v = decide_lends(lends, off);
    REQUIRE(v.size() == 1);
    CHECK(v[0].job == 9);
}
