#include "defrag.hpp"
#include "error.hpp"
#include "fixtures.hpp"
#include "helper_config.hpp"

#include "catch.hpp"

#include <map>

using namespace nvl;
using namespace nvl::test;

TEST_CASE("lending: which work may borrow spares", "[defrag][quick]") {
    JobTraits ckpt{true, true, true, 4};
    CHECK(may_borrow_spares(ckpt));
    CHECK_FALSE(may_borrow_spares(ckpt, LendScope::SingleNode)); // 4 nodes
    CHECK_FALSE(may_borrow_spares(ckpt, LendScope::None));
    CHECK(may_borrow_spares({true, true, true, 1}, LendScope::SingleNode));
    CHECK_FALSE(may_borrow_spares({false, true, true, 1})); // not checkpointable
    CHECK_FALSE(may_borrow_spares({true, false, true, 1})); // --no-requeue
    CHECK_FALSE(may_borrow_spares({true, true, false, 1})); // salloc/srun: Slurm cannot requeue it
    CHECK(parse_lend_scope("single-node") == LendScope::SingleNode);
    CHECK_THROWS_WITH(parse_lend_scope("all"), Catch::Contains("accepted: none, single-node, checkpointable"));
    auto s = read_helper_config("map: m.yaml\nlend_spares: none\n", "h.yaml");
    CHECK(s.reconcile.lend == LendScope::None);
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nlend_spares: some\n", "h.yaml"),
                      Catch::Contains("h.yaml:2:14") && Catch::Contains("not a lending scope"));
}

TEST_CASE("defragmentation's cost: the work a victim loses and its next start", "[defrag][quick]") {
    JobTraits t{true, true, true, 4};
    // not saying how often it checkpoints: all it has run may be lost
    CHECK(victim_info(t, 4800).cost == 4800 * 4);
    CHECK(victim_info(t, 4800, 900, 900).cost == (4800 + 900) * 4);
    // every hour after a 900 s startup: 300 s since its last checkpoint
    t.checkpoint_s = 3600;
    CHECK(victim_info(t, 900 + 3600 + 300, 900, 900).cost == (300 + 900) * 4);
    // still starting: the startup so far is what it loses
    CHECK(victim_info(t, 600, 900, 900).cost == (600 + 900) * 4);
    // so a job that has just checkpointed is cheaper than one that has just started
    CHECK(victim_info(t, 900 + 3600 + 10, 900, 900).cost < victim_info(t, 900 + 1200, 900, 900).cost);
    CHECK(victim_info(t, 0).cost == 1 * 4); // a second at least
    CHECK_FALSE(victim_info({false, true, true, 4, 3600}, 100).eligible);
    auto cfg = read_helper_config("map: m.yaml\ndefrag:\n  restart_cost: 300\n", "h.yaml");
    CHECK(cfg.reconcile.defrag_restart_cost_s == 300);
    CHECK(read_helper_config("map: m.yaml\n", "h.yaml").reconcile.defrag_restart_cost_s == 900);
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\ndefrag:\n  restart_cost: -1\n", "h.yaml"),
                      Catch::Contains("h.yaml:3"));
}

TEST_CASE("defragmentation: the cheapest rack from eligible jobs alone", "[defrag][quick]") {
    RackMap m = make_map(3, 18);
    Snapshot s(m);
    // r1: job 1 (3 nodes, eligible, cost 30) ; r2: job 2 (1 node, ineligible)
    // r3: jobs 3 and 4 (2 nodes each, eligible, cost 5 + 5)
    set_all(s, "n[001-003]", NodeState::Allocated, 1);
    set_all(s, "n019", NodeState::Allocated, 2);
    set_all(s, "n[037-038]", NodeState::Allocated, 3);
    set_all(s, "n[039-040]", NodeState::Allocated, 4);
    std::map<JobId, VictimInfo> info{{1, {true, 30}}, {2, {false, 1}}, {3, {true, 5}}, {4, {true, 5}}};
    int asked = 0;
    auto victim = [&](JobId id) {
        ++asked;
        return info.at(id);
    };
    DefragPlan p = plan_defrag(s, 16, victim);
    REQUIRE(p);
    // r1 needs job 1 (cost 30); r3 needs both 3 and 4 (cost 10): r3 is cheaper
    CHECK(m.domain(p.domain).name == "r3");
    CHECK(p.victims == std::vector<JobId>{3, 4});
    CHECK(p.cost == Approx(10));
    CHECK(asked == 4); // once per (rack, job)
    info[3].eligible = false;
    p = plan_defrag(s, 16, victim);
    REQUIRE(p);
    CHECK(m.domain(p.domain).name == "r1");
    info[1].eligible = false;
    CHECK_FALSE(plan_defrag(s, 16, victim));
}

TEST_CASE("defragmentation stage: paced for a blocked job, at once for a repair", "[defrag][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    set_all(s, "n[001-003]", NodeState::Allocated, 1);
    set_all(s, "n[019-021]", NodeState::Allocated, 2);
    auto victim = [](JobId id) { return VictimInfo{true, double(id)}; };
    DefragPace pace;
    pace.after_s = 600;
    pace.interval_s = 300;
    pace.waited_s = 599;
    CHECK_FALSE(decide_defrag(s, 16, pace, victim)); // blocked for less than after_s
    pace.waited_s = 600;
    auto plan = decide_defrag(s, 16, pace, victim);
    REQUIRE(plan);
    REQUIRE(*plan);
    CHECK(plan->victims == std::vector<JobId>{1}); // the cheaper rack
    pace.since_last_s = 299;
    CHECK_FALSE(decide_defrag(s, 16, pace, victim)); // one ran less than interval_s ago
    pace.for_repair = true;
    pace.waited_s = 0;
    CHECK(decide_defrag(s, 16, pace, victim)); // a repair: at once, unpaced
    // due, but no rack can be freed from eligible jobs alone: a plan without a rack
    auto none = decide_defrag(s, 16, pace, [](JobId) { return VictimInfo{}; });
    REQUIRE(none);
    CHECK_FALSE(*none);
}

TEST_CASE("defragmentation: lent nodes already count as spares", "[defrag][quick]") {
    RackMap m = make_map(1, 18);
    Snapshot s(m);
    for (const char* n : {"n001", "n002", "n003"}) s.set(id(m, n), {NodeState::Allocated, 7, 0, true});
    // 15 free + 2 lent counted as spares: room 15; requeuing job 7 frees 3
    DefragPlan p = plan_defrag(s, 16, [](JobId) { return VictimInfo{true, 1}; });
    REQUIRE(p);
    CHECK(p.victims == std::vector<JobId>{7});
    // a rack too degraded for the slice is never a candidate
    set_all(s, "n[016-018]", NodeState::Down);
    CHECK_FALSE(plan_defrag(s, 16, [](JobId) { return VictimInfo{true, 1}; }));
}

TEST_CASE("lending: work that fits in a rack's idle spares goes there first", "[defrag][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot s(m);
    occupy(s, 0, 16, 5); // r1: a slice job, its 2 spares idle; r2 empty
    SliceRequest one;
    one.job_id = 1;
    one.total_nodes = 1;
    one.slice_size = 1;
    bool lent = false;
    // a borrower takes an idle spare, so r2 stays whole for a slice job
    PlacementResult r = place_or_borrow(s, one, true, lent);
    REQUIRE(r.ok);
    CHECK(lent);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 0);
    // work that may not borrow goes to the free rack, not lent
    r = place_or_borrow(s, one, false, lent);
    REQUIRE(r.ok);
    CHECK_FALSE(lent);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 1);
    // a borrower of n nodes in one slice
    auto borrow = [&](int n) {
        SliceRequest q = one;
        q.total_nodes = q.slice_size = n;
        return place_or_borrow(s, q, true, lent);
    };
    // more than the idle spares: placed as before, without them, but as
    // lent work: smaller than a slice, it stands in for r2's spares (a
    // repair there takes it back)
    r = borrow(3);
    REQUIRE(r.ok);
    CHECK(lent);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 1);
    // the largest that does: one node less than the map's default slice
    r = borrow(15);
    REQUIRE(r.ok);
    CHECK(lent);
    // a slice job does not stand in for spares: its own failure needs them
    r = borrow(16);
    REQUIRE(r.ok);
    CHECK_FALSE(lent);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 1);
    // one spare already lent: the other still takes a 1-node job; a 2-node
    // one goes to the spares of the empty rack, whose slice room stays 16
    s.set(id(m, "n017"), {NodeState::Allocated, 7, -1, true, true});
    r = place_or_borrow(s, one, true, lent);
    REQUIRE(r.ok);
    CHECK(lent);
    CHECK(names(m, r.placement.nodes()) == "n018");
    SliceRequest two = one;
    two.total_nodes = two.slice_size = 2;
    r = place_or_borrow(s, two, true, lent);
    REQUIRE(r.ok);
    CHECK(lent);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 1);
    // the racks a job may use still bound it: r1's idle spare is not offered
    one.allowed = NodeSet(m.node_count());
    for (NodeId n : m.domain(1).nodes) one.allowed.insert(n);
    r = place_or_borrow(s, one, true, lent);
    REQUIRE(r.ok);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 1);
    // r2's spares taken too: nothing left to borrow, placed on free nodes,
    // where it stands in for the spares as lent work
    for (NodeId n : r.placement.nodes()) s.set(n, {NodeState::Allocated, 8, -1, false, false});
    s.set(id(m, "n035"), {NodeState::Allocated, 9, -1, true, true});
    s.set(id(m, "n036"), {NodeState::Allocated, 9, -1, true, true});
    r = place_or_borrow(s, one, true, lent);
    REQUIRE(r.ok);
    CHECK(lent);
    CHECK(m.domain_of(r.placement.nodes()[0]) == 1);
}

TEST_CASE("nvlsliced's mode: auto by default; a bad value names file:line", "[native][quick]") {
    CHECK(read_helper_config("map: m.yaml\n", "h.yaml").reconcile.hand_off == HandOff::Auto);
    CHECK(read_helper_config("map: m.yaml\nmode: native\n", "h.yaml").reconcile.hand_off == HandOff::Native);
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nmode: blocks\n", "h.yaml"),
                      Catch::Contains("h.yaml:2:7") && Catch::Contains("expected auto, gate or native"));
}

TEST_CASE("helper configuration: rack-level failures, silent nodes and the log", "[config][rack][quick]") {
    auto d = read_helper_config("map: m.yaml\n", "h.yaml");
    CHECK(d.reconcile.rack_failure_reasons.empty());
    CHECK(d.reconcile.repair_not_responding_after_s == 0);
    CHECK(d.log == "auto");
    auto s = read_helper_config(
        "map: m.yaml\nrack_failure_reasons: \"contained|nvswitch\"\nrepair_not_responding_after: 20\nlog: syslog\n",
        "h.yaml");
    CHECK(s.reconcile.rack_failure_reasons == "contained|nvswitch");
    CHECK(s.reconcile.repair_not_responding_after_s == 20);
    CHECK(s.log == "syslog");
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nrack_failure_reasons: \"(\"\n", "h.yaml"),
                      Catch::Contains("h.yaml:2") && Catch::Contains("\"rack_failure_reasons\" is not a valid"));
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nrepair_not_responding_after: -1\n", "h.yaml"),
                      Catch::Contains("h.yaml:2"));
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nlog: journal\n", "h.yaml"),
                      Catch::Contains("\"log\": \"journal\": expected auto, stderr or syslog"));
}

TEST_CASE("helper configuration: healthy_feature (an older file) still loads, with a notice",
          "[config][native][quick]") {
    CHECK(read_helper_config("map: m.yaml\n", "h.yaml").notices.empty());
    CHECK(read_helper_config("map: m.yaml\nhealthy_feature: \"\"\n", "h.yaml").notices.empty());
    const auto s = read_helper_config("map: m.yaml\nhealthy_feature: nvlslice_ok\n", "h.yaml");
    REQUIRE(s.notices.size() == 1);
    CHECK_THAT(s.notices[0], Catch::StartsWith("h.yaml:2") &&
                                 Catch::Contains("\"healthy_feature\" is no longer used") &&
                                 Catch::Contains("the spare reservation holds every node of a degraded rack"));
}

TEST_CASE("reservation_lease: an hour by default; out of range names file:line", "[quick]") {
    CHECK(read_helper_config("map: m.yaml\n", "h.yaml").reconcile.reservation_lease_s == 3600);
    CHECK(read_helper_config("map: m.yaml\nreservation_lease: 7200\n", "h.yaml").reconcile.reservation_lease_s == 7200);
    CHECK_THROWS_WITH(read_helper_config("map: m.yaml\nreservation_lease: 10\n", "h.yaml"),
                      Catch::Contains("h.yaml:2:") && Catch::Contains("reservation_lease"));
}
