#include "fixtures.hpp"
#include "repair.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

namespace {

// A running 2 x 16 job on r1 and r2 of a `racks` x 18 cluster; spares of r1
// and r2 marked spare-reserved, as the helper keeps them.
struct Running {
    RackMap map;
    Snapshot snap;
    Placement placement;
    explicit Running(int racks) : map(make_map(racks, 18)), snap(map) {
        SliceRequest r;
        r.job_id = 42;
        r.slice_size = 16;
        r.slice_count = 2;
        auto p = place(snap, r);
        REQUIRE(p.ok);
        placement = p.placement;
        for (const auto& s : placement.slices)
            for (NodeId n : s.nodes) snap.set(n, {NodeState::Allocated, 42, int16_t(s.index), false});
        set_all(snap, "n[017-018,035-036]", NodeState::SpareReserved);
    }
    void fail(const std::string& hl, NodeState st = NodeState::Down) {
        for (const auto& n : hostlist_expand(hl)) snap.set(id(map, n), {st, 42, 0, false});
    }
    std::vector<NodeId> ids(const std::string& hl) {
        std::vector<NodeId> v;
        for (const auto& n : hostlist_expand(hl)) v.push_back(id(map, n));
        return v;
    }
};

} // namespace

TEST_CASE("repair takes a spare of the same rack first", "[repair][quick]") {
    Running j(3);
    j.fail("n003", NodeState::Drained);
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n003"));
    REQUIRE(p.feasible);
    CHECK(p.replaced_in_domain == 1);
    CHECK(p.moved == 0);
    CHECK(p.slices[0].action == RepairAction::ReplaceInDomain);
    CHECK(p.slices[1].action == RepairAction::Keep);
    CHECK(names(j.map, p.slices[0].added) == "n017");
    CHECK(names(j.map, p.placement.slices[0].nodes) == "n[001-002,004-017]");
    CHECK(names(j.map, p.placement.slices[1].nodes) == "n[019-034]");
}

TEST_CASE("repair in the rack: free nodes outside the reservation, then the spares, then nodes the protection holds",
          "[repair][quick]") {
    // r1 runs an 8-node slice job; n009-016 are idle
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    Placement running;
    running.job_id = 7;
    running.slice_size = 8;
    PlacedSlice s;
    s.domain = 0;
    for (int i = 1; i <= 8; ++i) {
        s.nodes.push_back(id(m, fmt::format("n{:03d}", i)));
        snap.set(s.nodes.back(), {NodeState::Allocated, 7, 0, false});
    }
    running.slices.push_back(s);
    set_all(snap, "n[017-018,035-036]", NodeState::SpareReserved);
    snap.set(id(m, "n003"), {NodeState::Down, 7, 0, false});
    const std::vector<NodeId> failed{id(m, "n003")};
    // an idle node first: the rack keeps its spares
    CHECK(names(m, plan_repair(snap, running, failed).slices[0].added) == "n009");
    // the protection holds n009-016 for the top job: the spare, not a node
    // the job could not start on
    NodeSet unprotected(m.node_count(), true);
    for (NodeId n : NodeSet::of(m, "n[009-016]").ids()) unprotected.erase(n);
    CHECK(names(m, plan_repair(snap, running, failed, unprotected).slices[0].added) == "n017");
    // no spare left: a held node is still the same rack's
    set_all(snap, "n[017-018]", NodeState::Allocated);
    CHECK(names(m, plan_repair(snap, running, failed, unprotected).slices[0].added) == "n009");
}

TEST_CASE("two failures in one slice use both spares", "[repair][quick]") {
    Running j(2);
    j.fail("n[005,009]");
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[005,009]"));
    REQUIRE(p.feasible);
    CHECK(names(j.map, p.slices[0].removed) == "n[005,009]");
    CHECK(names(j.map, p.slices[0].added) == "n[017-018]");
}

TEST_CASE("failures in two slices at once are repaired each in its own rack", "[repair][quick]") {
    Running j(2);
    j.fail("n[002,020]");
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[002,020]"));
    REQUIRE(p.feasible);
    CHECK(names(j.map, p.slices[0].added) == "n017");
    CHECK(names(j.map, p.slices[1].added) == "n035");
    CHECK(p.replaced_in_domain == 2);
}

TEST_CASE("spares gone: the slice moves to another healthy rack", "[repair][quick]") {
    Running j(3);
    j.fail("n[001-003]");
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"));
    REQUIRE(p.feasible);
    CHECK(p.moved == 1);
    CHECK(p.slices[0].action == RepairAction::MoveDomain);
    CHECK(j.map.domain(p.slices[0].to).name == "r3");
    CHECK(names(j.map, p.placement.slices[0].nodes) == "n[037-052]");
    CHECK(p.placement.slices[0].domain == 2);
    CHECK_THAT(p.slices[0].detail,
               Catch::Contains("r1 has 2 usable free node(s) for 3 (2 spare(s), 3 failed node(s)); moved to r3"));
}

TEST_CASE("no rack has room: the job waits with the reason", "[repair][quick]") {
    Running j(3);
    occupy(j.snap, 2, 3, 77); // r3: 15 free, room 13 < 16
    j.fail("n[001-003]");
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"));
    CHECK_FALSE(p.feasible);
    CHECK(p.slices[0].action == RepairAction::Wait);
    CHECK_THAT(p.reason,
               Catch::Contains("for 3 (2 spare(s), 3 failed node(s)) and no other domain has room for 16 nodes"));
    CHECK(p.placement.nodes() == j.placement.nodes()); // nothing half-planned
}

TEST_CASE("a spare lent to preemptible work is taken back, the lender requeued", "[repair][quick]") {
    Running j(2);
    j.snap.set(id(j.map, "n017"), {NodeState::Allocated, 555, -1, true});
    j.snap.set(id(j.map, "n018"), {NodeState::Allocated, 556, -1, true});
    j.fail("n004");
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n004"));
    REQUIRE(p.feasible);
    CHECK(names(j.map, p.slices[0].added) == "n017");
    CHECK(p.preempt == std::vector<JobId>{555});
}

TEST_CASE("a move does not eat the target rack's spares", "[repair][quick]") {
    Running j(3);
    occupy(j.snap, 2, 1, 77); // r3: 17 free, room 15: cannot take a 16-node slice
    j.fail("n[019-021]");
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[019-021]"));
    CHECK_FALSE(p.feasible);
    CHECK(p.slices[1].action == RepairAction::Wait);
}

TEST_CASE("nodes the snapshot shows failed count even if not listed", "[repair][quick]") {
    Running j(2);
    j.fail("n010", NodeState::Draining);
    RepairPlan p = plan_repair(j.snap, j.placement, {});
    REQUIRE(p.feasible);
    CHECK(names(j.map, p.slices[0].removed) == "n010");
}

TEST_CASE("spare rule: two failures are repaired in the rack, the third moves the slice", "[repair][spares][quick]") {
    Running j(3); // slices on r1 (n001-n016) and r2; spares n017-n018 in r1
    j.fail("n003");
    RepairPlan p1 = plan_repair(j.snap, j.placement, j.ids("n003"));
    REQUIRE(p1.feasible);
    CHECK(p1.replaced_in_domain == 1);
    // n017 joins the slice; the rack keeps 1 spare for its 1 failed node
    for (NodeId n : p1.placement.nodes()) j.snap.set(n, {NodeState::Allocated, 42, 0, false});
    CHECK(kept_spares(j.map.domain(0), j.snap.counts(0)) == 1);
    j.fail("n004");
    RepairPlan p2 = plan_repair(j.snap, p1.placement, j.ids("n004"));
    REQUIRE(p2.feasible);
    CHECK(p2.replaced_in_domain == 1);
    CHECK(names(j.map, p2.placement.slices[0].nodes) == "n[001-002,005-018]");
    for (NodeId n : p2.placement.nodes()) j.snap.set(n, {NodeState::Allocated, 42, 0, false});
    CHECK(kept_spares(j.map.domain(0), j.snap.counts(0)) == 0);
    j.fail("n005");
    RepairPlan p3 = plan_repair(j.snap, p2.placement, j.ids("n005"));
    REQUIRE(p3.feasible);
    CHECK(p3.moved == 1);
    CHECK(j.map.domain(p3.placement.slices[0].domain).name == "r3");
    CHECK_THAT(p3.slices[0].detail, Catch::Contains("r1 has 0 usable free node(s) for 1 (2 spare(s), 3 failed"));
}

TEST_CASE("spare rule: a move target keeps only the spares its failures left", "[repair][spares][quick]") {
    Running j(3);
    j.fail("n001");
    j.fail("n[017-018]");                     // r1: no free node left
    set_all(j.snap, "n037", NodeState::Down); // r3: 17 healthy, keeps 1: room 16
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n001"));
    REQUIRE(p.feasible);
    CHECK(p.moved == 1);
    CHECK(names(j.map, p.placement.slices[0].nodes) == "n[038-053]");
    set_all(j.snap, "n[038-039]", NodeState::Down); // r3: 15 healthy: no 16-node slice
    CHECK_FALSE(plan_repair(j.snap, j.placement, j.ids("n001")).feasible);
}

TEST_CASE("room that frees later: a move keeps the target rack's spares unless they let it start sooner",
          "[repair][spares][quick]") {
    // r1 lost 3 nodes (spares gone); r3 full: its spares n053-054 taken by a
    // plain job that ends at 500 s, while 2 nodes lent to checkpointable
    // work stand in for them (n051-052); the other 14 run work ending at 100 s
    Running j(3);
    j.fail("n[001-003]");
    std::unordered_map<JobId, int64_t> ends{{70, 100}, {71, 500}, {72, 5000}};
    for (const auto& n : hostlist_expand("n[037-050]")) j.snap.set(id(j.map, n), {NodeState::Allocated, 70, -1, false});
    for (const auto& n : hostlist_expand("n[053-054]")) j.snap.set(id(j.map, n), {NodeState::Allocated, 71, -1, false});
    for (const auto& n : hostlist_expand("n[051-052]")) {
        NodeStatus st{NodeState::Allocated, 72, -1, true};
        st.lent = true;
        j.snap.set(id(j.map, n), st);
    }
    const LaterRoom later{&ends, 0, 1000, true};
    SECTION("the stand-ins taken back: beside them the slice would wait 400 s more for plain work") {
        RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"), NodeSet(), &later);
        REQUIRE(p.feasible);
        CHECK(p.slices[0].action == RepairAction::MoveDomain);
        CHECK(names(j.map, p.placement.slices[0].nodes) == "n[037-052]");
        CHECK(p.ready_at == 100);
        CHECK(p.preempt == std::vector<JobId>{72});
        CHECK_THAT(p.slices[0].detail, Catch::Contains("2 of its 2 spares taken"));
    }
    SECTION("a rack whose spares cannot be kept is a target when they give it room") {
        // the plain job on n053-054 has no end within the hold: r3 has 14
        // nodes for the slice beside its 2 stand-ins, 16 with them
        ends[71] = 5000;
        RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"), NodeSet(), &later);
        REQUIRE(p.feasible);
        CHECK(names(j.map, p.placement.slices[0].nodes) == "n[037-052]");
        CHECK(p.ready_at == 100);
    }
    SECTION("no room within the hold even with its spares: the job waits") {
        ends[70] = 5000;
        RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"), NodeSet(), &later);
        CHECK_FALSE(p.feasible);
        CHECK(p.slices[0].action == RepairAction::Wait);
    }
    SECTION("its reserved spares kept, ahead of idle nodes, when taking them starts it no sooner") {
        set_all(j.snap, "n[051-052]", NodeState::SpareReserved);
        set_all(j.snap, "n[053-054]", NodeState::Idle);
        RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"), NodeSet(), &later);
        REQUIRE(p.feasible);
        CHECK(names(j.map, p.placement.slices[0].nodes) == "n[037-050,053-054]");
        CHECK(p.ready_at == 100);
        CHECK_THAT(p.slices[0].detail, !Catch::Contains("spares taken"));
    }
    SECTION("as few spares as start it now, the reserved ones before stand-ins") {
        // 14 idle, n051-052 plain work ending at 500 s, n053 reserved, n054
        // lent: both spares go (2 nodes short), the slice starts now
        set_all(j.snap, "n[037-050]", NodeState::Idle);
        for (const auto& n : hostlist_expand("n[051-052]"))
            j.snap.set(id(j.map, n), {NodeState::Allocated, 71, -1, false});
        set_all(j.snap, "n053", NodeState::SpareReserved);
        NodeStatus st{NodeState::Allocated, 72, -1, true};
        st.lent = true;
        j.snap.set(id(j.map, "n054"), st);
        RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"), NodeSet(), &later);
        REQUIRE(p.feasible);
        CHECK(names(j.map, p.placement.slices[0].nodes) == "n[037-050,053-054]");
        CHECK(p.ready_at == 0);
        // one node short: only the reserved spare goes, the stand-in stays
        set_all(j.snap, "n051", NodeState::Idle);
        p = plan_repair(j.snap, j.placement, j.ids("n[001-003]"), NodeSet(), &later);
        REQUIRE(p.feasible);
        CHECK(names(j.map, p.placement.slices[0].nodes) == "n[037-051,053]");
        CHECK(p.ready_at == 0);
        CHECK(p.preempt.empty());
        CHECK_THAT(p.slices[0].detail, Catch::Contains("1 of its 2 spares taken"));
    }
}

TEST_CASE("room that frees later: the slice's own rack gives its spares to the slice", "[repair][spares][quick]") {
    // r1 lost n003; its spares run plain work ending at 50 s: the repair
    // waits for one of them, its own rack's spare, as step 1 would use it
    Running j(2);
    j.fail("n003");
    std::unordered_map<JobId, int64_t> ends{{70, 50}, {80, 5000}};
    for (const auto& n : hostlist_expand("n[017-018]")) j.snap.set(id(j.map, n), {NodeState::Allocated, 70, -1, false});
    for (const auto& n : hostlist_expand("n[035-036]")) j.snap.set(id(j.map, n), {NodeState::Allocated, 80, -1, false});
    const LaterRoom later{&ends, 0, 1000, true};
    RepairPlan p = plan_repair(j.snap, j.placement, j.ids("n003"), NodeSet(), &later);
    REQUIRE(p.feasible);
    CHECK(p.slices[0].action == RepairAction::ReplaceInDomain);
    CHECK(names(j.map, p.slices[0].added) == "n017");
    CHECK(p.ready_at == 50);
}
