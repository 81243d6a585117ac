#include "fixtures.hpp"
#include "placement.hpp"

#include "catch.hpp"

#include <algorithm>

#include <random>

using namespace nvl;
using namespace nvl::test;

namespace {

SliceRequest slices(int k, int c) {
    SliceRequest r;
    r.job_id = 1;
    r.slice_size = k;
    r.slice_count = c;
    return r;
}

SliceRequest nodes_auto(int n) {
    SliceRequest r;
    r.job_id = 1;
    r.total_nodes = n;
    r.slice_size = 0;
    return r;
}

} // namespace

TEST_CASE("auto sizing is balanced and never exceeds the per-rack limit", "[placement][quick]") {
    CHECK(auto_slice_size(24, 16) == 12);
    CHECK(auto_slice_size(48, 16) == 16);
    CHECK(auto_slice_size(40, 16) == 10);
    CHECK(auto_slice_size(64, 16) == 16);
    CHECK(auto_slice_size(16, 16) == 16);
    CHECK(auto_slice_size(12, 16) == 12);
    CHECK(auto_slice_size(34, 16) == 2);             // 34 = 2 x 17 > 16, so 17 x 2
    CHECK(auto_slice_size(24, 16, {16, 8, 4}) == 8); // 12 not allowed: 3 x 8
    CHECK(auto_slice_size(0, 16) == 0);
    CHECK(auto_slice_size(7, 0) == 0);
}

TEST_CASE("auto sizing places 24 as 12 + 12, 48 as 3 x 16, 40 as 4 x 10", "[placement][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    auto r = place(s, nodes_auto(24));
    REQUIRE(r.ok);
    REQUIRE(r.placement.slices.size() == 2);
    CHECK(r.placement.slice_size == 12);
    // 12 + 12 cannot share an 18-node rack with 2 spares: one slice per rack
    CHECK(r.placement.slices[0].domain != r.placement.slices[1].domain);
    auto r48 = place(Snapshot(make_map(3, 18)), nodes_auto(48));
    REQUIRE(r48.ok);
    CHECK(r48.placement.slices.size() == 3);
    CHECK(r48.placement.slice_size == 16);
    auto r40 = place(Snapshot(make_map(4, 18)), nodes_auto(40));
    REQUIRE(r40.ok);
    CHECK(r40.placement.slice_size == 10);
    CHECK(r40.placement.slices.size() == 4);
}

TEST_CASE("slices stay inside one rack and leave the spares free", "[placement][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    auto r = place(s, slices(16, 2));
    REQUIRE(r.ok);
    CHECK(r.placement.slices[0].domain == 0);
    CHECK(r.placement.slices[1].domain == 1);
    CHECK(names(m, r.placement.slices[0].nodes) == "n[001-016]");
    CHECK(names(m, r.placement.slices[1].nodes) == "n[019-034]");
    CHECK(names(m, r.placement.nodes()) == "n[001-016,019-034]");
    for (const auto& sl : r.placement.slices)
        for (NodeId n : sl.nodes) CHECK(m.domain_of(n) == sl.domain);
}

TEST_CASE("every rack has 15 free: a strict 16-node slice is refused as fragmented", "[placement][quick]") {
    RackMap m = make_map(4, 18);
    Snapshot s(m);
    for (DomainId d = 0; d < 4; ++d) occupy(s, d, 3);
    auto r = place(s, slices(16, 1));
    CHECK_FALSE(r.ok);
    CHECK(r.reason == Reason::Fragmented);
    CHECK_THAT(r.detail, Catch::Contains("fragmented") && Catch::Contains("4 racks with 13 free"));
}

TEST_CASE("best fit keeps whole racks whole", "[placement][quick]") {
    RackMap m = make_map(3, 18);
    Snapshot s(m);
    occupy(s, 1, 5); // r2: 13 free, room 11
    auto r = place(s, slices(8, 1));
    REQUIRE(r.ok);
    CHECK(r.placement.slices[0].domain == 1);
    CHECK(names(m, r.placement.slices[0].nodes) == "n[024-031]");
    // two 8-node slices share one rack (room 16) rather than breaking two
    Snapshot idle(m);
    auto two = place(idle, slices(8, 2));
    REQUIRE(two.ok);
    CHECK(two.placement.slices[0].domain == 0);
    CHECK(two.placement.slices[1].domain == 0);
    CHECK(names(m, two.placement.nodes()) == "n[001-016]");
}

TEST_CASE("a rack with 3 failed nodes takes only smaller slices", "[placement][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    set_all(s, "n[001-003]", NodeState::Down);
    auto big = place(s, slices(16, 1));
    REQUIRE(big.ok);
    CHECK(big.placement.slices[0].domain == 1);
    auto small = place(s, slices(13, 1));
    REQUIRE(small.ok);
    CHECK(small.placement.slices[0].domain == 0); // 15 healthy - 2 spares = 13: best fit
    auto two = place(s, slices(16, 2));
    CHECK_FALSE(two.ok);
    CHECK(two.reason == Reason::NoDomainLargeEnough);
    CHECK_THAT(two.detail, Catch::Contains("1 of 2 16-node slices") && Catch::Contains("1 degraded"));
}

TEST_CASE("the other refusal reasons", "[placement][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    SECTION("would consume spares") {
        occupy(s, 0, 1);
        occupy(s, 1, 1);
        auto r = place(s, slices(16, 1));
        CHECK(r.reason == Reason::WouldConsumeSpares);
    }
    SECTION("slice too large for any rack") {
        auto r = place(s, slices(17, 1));
        CHECK(r.reason == Reason::SliceTooLarge);
        CHECK_THAT(r.detail, Catch::Contains("the largest takes 16"));
    }
    SECTION("busy") {
        occupy(s, 0, 18);
        occupy(s, 1, 10);
        auto r = place(s, slices(8, 2));
        CHECK(r.reason == Reason::Busy);
    }
    SECTION("invalid requests") {
        SliceRequest r = slices(16, 0);
        r.total_nodes = 20;
        auto res = place(s, r);
        CHECK(res.reason == Reason::InvalidRequest);
        CHECK_THAT(res.detail, Catch::Contains("not a multiple of the slice size 16 (use -N 16 or -N 32"));
        SliceRequest a = nodes_auto(0);
        CHECK(place(s, a).reason == Reason::InvalidRequest);
        SliceRequest c = slices(8, 3);
        c.total_nodes = 16;
        CHECK_THAT(place(s, c).detail, Catch::Contains("3 slices of 8 nodes are 24 nodes, not 16"));
    }
}

TEST_CASE("prefer mode falls back to the fewest racks only when allowed", "[placement][quick]") {
    RackMap m = make_map(3, 18);
    Snapshot s(m);
    occupy(s, 0, 4); // rooms 12, 13, 14
    occupy(s, 1, 3);
    occupy(s, 2, 2);
    SliceRequest r = slices(16, 1);
    r.mode = PlacementMode::Prefer;
    CHECK_FALSE(place(s, r).ok);
    r.allow_split = true;
    auto p = place(s, r);
    REQUIRE(p.ok);
    CHECK(p.placement.split);
    CHECK(p.placement.slices[0].domain == kNoDomain);
    CHECK(p.placement.slices[0].nodes.size() == 16);
    // fewest racks: 14 from r3 and the rest (2) best fit from r1 (room 12)
    int in_r3 = 0, in_r1 = 0;
    for (NodeId n : p.placement.slices[0].nodes) {
        in_r3 += m.domain_of(n) == 2;
        in_r1 += m.domain_of(n) == 0;
    }
    CHECK(in_r3 == 14);
    CHECK(in_r1 == 2);
    CHECK_THAT(p.detail, Catch::Contains("prefer: placed across 2 domains"));
}

TEST_CASE("plain jobs are packed into broken racks first", "[placement][quick]") {
    RackMap m = make_map(3, 18);
    Snapshot s(m);
    occupy(s, 2, 6);
    SliceRequest r;
    r.sliced = false;
    r.total_nodes = 4;
    auto p = place(s, r);
    REQUIRE(p.ok);
    CHECK(p.placement.slices[0].domain == 2);
    r.total_nodes = 20; // no single rack: broken r3 first, then a whole one
    auto q = place(s, r);
    REQUIRE(q.ok);
    CHECK(q.placement.slices[0].nodes.size() == 20);
    int in_r3 = 0;
    for (NodeId n : q.placement.slices[0].nodes) in_r3 += m.domain_of(n) == 2;
    CHECK(in_r3 == 10);
}

TEST_CASE("allowed nodes and borrowed spares", "[placement][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    SliceRequest r = slices(16, 1);
    r.allowed = NodeSet(m.node_count());
    for (NodeId n : m.domain(1).nodes) r.allowed.insert(n);
    auto p = place(s, r);
    REQUIRE(p.ok);
    CHECK(p.placement.slices[0].domain == 1);

    occupy(s, 0, 16);
    occupy(s, 1, 16);
    set_all(s, "n[017-018,035-036]", NodeState::SpareReserved);
    SliceRequest one;
    one.sliced = false;
    one.total_nodes = 1;
    CHECK_FALSE(place(s, one).ok);
    one.use_spares = true; // checkpointable single-node work may borrow a spare
    auto q = place(s, one);
    REQUIRE(q.ok);
    CHECK(s.node(q.placement.slices[0].nodes[0]).state == NodeState::SpareReserved);
}

TEST_CASE("slices take plain idle nodes before the helper's spare-reserved ones", "[placement][quick]") {
    RackMap m = make_map(1, 18);
    Snapshot s(m);
    set_all(s, "n[001-002]", NodeState::SpareReserved);
    auto p = place(s, slices(16, 1));
    REQUIRE(p.ok);
    CHECK(names(m, p.placement.nodes()) == "n[003-018]");
}

TEST_CASE("the engine is deterministic and agrees with the naive reference", "[placement][slow]") {
    RackMap m = make_map(40, 18);
    std::mt19937_64 g(12345);
    for (int round = 0; round < 200; ++round) {
        Snapshot s(m);
        for (NodeId n = 0; n < m.node_count(); ++n) {
            auto x = g() % 100;
            if (x < 20)
                s.set_state(n, NodeState::Allocated);
            else if (x < 23)
                s.set_state(n, NodeState::Down);
            else if (x < 25)
                s.set_state(n, NodeState::SpareReserved);
        }
        for (int i = 0; i < 4; ++i) { // some whole racks free
            DomainId d = DomainId(g() % 40);
            for (NodeId n : m.domain(d).nodes) s.set_state(n, NodeState::Idle);
        }
        int k = 1 + int(g() % 16), c = 1 + int(g() % 6);
        auto a = place(s, slices(k, c));
        auto b = place_naive(s, slices(k, c));
        auto again = place(s, slices(k, c));
        REQUIRE(a.ok == b.ok);
        CHECK(a.placement.nodes() == again.placement.nodes());
        if (!a.ok) continue;
        CHECK(a.placement.nodes() == b.placement.nodes());
        // invariants: one domain per slice, no node twice, spares kept
        std::vector<int> used(m.domains().size(), 0);
        std::vector<NodeId> all = a.placement.nodes();
        std::sort(all.begin(), all.end());
        CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
        for (const auto& sl : a.placement.slices) {
            CHECK(int(sl.nodes.size()) == k);
            for (NodeId n : sl.nodes) {
                CHECK(m.domain_of(n) == sl.domain);
                CHECK(is_free(s.node(n).state));
            }
            used[sl.domain] += k;
        }
        // spares kept: the rack's budget minus its failed nodes
        for (DomainId d = 0; d < m.domains().size(); ++d) {
            const int failed = m.domain(d).size() - s.counts(d).healthy;
            if (used[d]) CHECK(s.counts(d).free - used[d] >= std::max(0, m.domain(d).spares - failed));
        }
    }
}

// The spares are the rack's failure budget: a rack keeps
// max(0, spares - failed) nodes idle for repairs.
TEST_CASE("spare rule: failed nodes count against the spares", "[placement][spares][quick]") {
    RackMap m = make_map(2, 18);
    SECTION("no failed node: 16 of 18 free fits, 17 free minus 2 spares does not") {
        Snapshot s(m);
        occupy(s, 1, 1); // r2: 17 free
        auto p = place(s, slices(16, 2));
        CHECK_FALSE(p.ok);
        CHECK(p.reason == Reason::WouldConsumeSpares);
        auto one = place(s, slices(16, 1));
        REQUIRE(one.ok);
        CHECK(one.placement.slices[0].domain == 0); // r1, whole: 2 spares stay
    }
    SECTION("1 failed node per rack (the issue's nvl005, nvl020): a 16-node slice in each, 1 spare left") {
        Snapshot s(m);
        set_all(s, "n005,n020", NodeState::Drained);
        auto p = place(s, slices(16, 2));
        REQUIRE(p.ok);
        CHECK(names(m, p.placement.slices[0].nodes) == "n[001-004,006-017]");
        CHECK(names(m, p.placement.slices[1].nodes) == "n[019,021-035]");
        for (DomainId d = 0; d < 2; ++d) CHECK(kept_spares(m.domain(d), s.counts(d)) == 1);
    }
    SECTION("2 failed nodes: a full slice, no spare left") {
        Snapshot s(m);
        set_all(s, "n001", NodeState::Down);
        set_all(s, "n002", NodeState::Draining, 9); // a job still runs there, but the node is lost
        CHECK(kept_spares(m.domain(0), s.counts(0)) == 0);
        auto p = place(s, slices(16, 1));
        REQUIRE(p.ok);
        CHECK(names(m, p.placement.nodes()) == "n[003-018]");
    }
    SECTION("3 failed nodes: beyond the budget, only smaller slices") {
        Snapshot s(m);
        set_all(s, "n[001-003]", NodeState::Down);
        set_all(s, "n[019-021]", NodeState::Drained);
        set_all(s, "n[022-036]", NodeState::Allocated, 5);
        auto p = place(s, slices(16, 1));
        CHECK_FALSE(p.ok);
        CHECK(p.reason == Reason::NoDomainLargeEnough);
        CHECK_THAT(p.detail, Catch::Contains("(2 degraded by failed nodes or a rack-level failure)"));
        auto small = place(s, slices(15, 1));
        REQUIRE(small.ok); // no node kept: the budget is spent
        CHECK(names(m, small.placement.nodes()) == "n[004-018]");
        auto two = place(s, slices(8, 2)); // 8 + 7 left over would not take a second 8
        CHECK_FALSE(two.ok);
    }
    SECTION("a lent spare still counts as one of the kept spares") {
        Snapshot s(m);
        set_all(s, "n001", NodeState::Down);
        s.set(id(m, "n018"), {NodeState::Allocated, 44, -1, true, true}); // lent to preemptible work
        set_all(s, "n[019-036]", NodeState::Allocated, 5);
        auto p = place(s, slices(16, 1));
        REQUIRE(p.ok);
        CHECK(names(m, p.placement.nodes()) == "n[002-017]");
        s.set(id(m, "n018"), {NodeState::Allocated, 44, -1, false}); // not preemptible: no spare left
        CHECK_FALSE(place(s, slices(16, 1)).ok);
    }
    SECTION("a checkpointable slice job's own nodes are not the spares that protect it") {
        // a 16-node checkpointable job that was not lent spares: a repair
        // may requeue it for another job, but its own failure needs a real
        // spare, so the rack still keeps 2 (before, its nodes stood in for
        // them and plain work took the last two nodes)
        Snapshot s(m);
        for (NodeId n = id(m, "n001"); n <= id(m, "n016"); ++n) s.set(n, {NodeState::Allocated, 9, 0, true});
        set_all(s, "n[019-036]", NodeState::Allocated, 5);
        CHECK_FALSE(place(s, slices(1, 1)).ok);
        SliceRequest lend = slices(1, 1);
        lend.use_spares = true; // lent: a spare borrowed by preemptible work
        CHECK(place(s, lend).ok);
    }
    SECTION("plain jobs keep the budgeted spares too") {
        Snapshot s(m);
        set_all(s, "n001", NodeState::Down);
        set_all(s, "n[019-036]", NodeState::Allocated, 5);
        SliceRequest plain;
        plain.sliced = false;
        plain.total_nodes = 17;
        CHECK_FALSE(place(s, plain).ok); // 17 free, 1 kept
        plain.total_nodes = 16;
        CHECK(place(s, plain).ok);
    }
    SECTION("the naive reference applies the same rule") {
        Snapshot s(m);
        set_all(s, "n005,n020", NodeState::Drained);
        auto a = place(s, slices(16, 2));
        auto b = place_naive(s, slices(16, 2));
        REQUIRE(b.ok);
        CHECK(a.placement.nodes() == b.placement.nodes());
    }
}
