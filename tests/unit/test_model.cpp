#include "fixtures.hpp"
#include "node_set.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

TEST_CASE("rack map indexes nodes and domains", "[model][quick]") {
    RackMap m = make_map(3, 18);
    CHECK(m.node_count() == 54);
    CHECK(m.domains().size() == 3);
    CHECK(m.domain_of(id(m, "n019")) == 1);
    CHECK(*m.find_domain("r3") == 2);
    CHECK_FALSE(m.find_node("nope"));
    CHECK(m.domain_hostlist(1) == "n[019-036]");
    CHECK(m.max_slice() == 16);
    CHECK(m.domain(0).capacity() == 16);
    CHECK(m.domain(0).feature == "r1");
}

TEST_CASE("rack map finds nodes by number where names are a prefix and a number, by name otherwise", "[model][quick]") {
    RackMap m;
    Domain a;
    a.name = "ra";
    a.spares = 0;
    m.add_domain(a, {"gpu01", "gpu2", "gpu003", "cpu7", "odd-x", "big999999999"});
    Domain b;
    b.name = "rb";
    b.spares = 0;
    m.add_domain(b, {"gpu1", "node-12"});
    CHECK(*m.find_node("gpu01") == 0);
    CHECK(*m.find_node("gpu2") == 1);
    CHECK(*m.find_node("gpu003") == 2);
    CHECK(*m.find_node("cpu7") == 3);
    CHECK(*m.find_node("odd-x") == 4);
    CHECK(*m.find_node("big999999999") == 5); // beyond the numbered table: by name
    CHECK(*m.find_node("gpu1") == 6);         // same number as gpu01, other padding: by name
    CHECK(*m.find_node("node-12") == 7);
    CHECK_FALSE(m.find_node("gpu3"));  // gpu003's number, not its name
    CHECK_FALSE(m.find_node("gpu02")); // gpu2's number, not its name
    CHECK_FALSE(m.find_node("gpu4"));
    CHECK_FALSE(m.find_node("cpu"));
    CHECK_FALSE(m.find_node(""));
    CHECK_FALSE(m.find_node("gpu12345678901")); // more digits than a number holds
    // the failed add leaves no number behind
    Domain c;
    c.name = "rc";
    c.spares = 0;
    CHECK_THROWS(m.add_domain(c, {"gpu5", "gpu2"}));
    CHECK_FALSE(m.find_node("gpu5"));
    RackMap big = regular_map(200, 18, 2);
    for (NodeId id = 0; id < big.node_count(); id += 97) CHECK(*big.find_node(big.node_name(id)) == id);
}

TEST_CASE("rack map refuses inconsistent domains", "[model][quick]") {
    RackMap m = make_map(1, 4);
    Domain d;
    d.name = "r1";
    d.spares = 0;
    CHECK_THROWS_WITH(m.add_domain(d, {"x1"}), Catch::Contains("defined twice"));
    d.name = "r9";
    CHECK_THROWS_WITH(m.add_domain(d, {"x1", "n002"}), Catch::Contains("already in domain \"r1\""));
    CHECK(m.node_count() == 4); // the failed call left nothing behind
    CHECK_FALSE(m.find_node("x1"));
    CHECK_THROWS_WITH(m.add_domain(d, {"x1", "x1", "x2"}), Catch::Contains("listed twice"));
    d.spares = 3;
    CHECK_THROWS_WITH(m.add_domain(d, {"y1", "y2", "y3"}), Catch::Contains("spares must be between 0 and 2"));
    d.spares = 0;
    CHECK_THROWS_WITH(m.add_domain(d, {}), Catch::Contains("has no nodes"));
}

TEST_CASE("snapshot keeps per-domain counts in step with node states", "[model][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    CHECK(s.counts(0).free == 18);
    CHECK(s.total_free() == 36);
    s.set_state(id(m, "n001"), NodeState::Allocated);
    s.set_state(id(m, "n002"), NodeState::Down);
    s.set_state(id(m, "n003"), NodeState::SpareReserved);
    s.set_state(id(m, "n004"), NodeState::Draining);
    s.set(id(m, "n005"), {NodeState::Allocated, 7, -1, true, true});
    s.set(id(m, "n006"), {NodeState::Allocated, 8, -1, true}); // preemptible, not lent
    CHECK(s.counts(0).free == 18 - 5);                         // spare-reserved is still free
    CHECK(s.counts(0).healthy == 18 - 2);
    CHECK(s.counts(0).lent == 1);
    s.set_state(id(m, "n006"), NodeState::Idle);
    s.set_state(id(m, "n002"), NodeState::Idle);
    CHECK(s.counts(0).free == 15);
    CHECK(s.counts(0).healthy == 17);
    CHECK(s.counts(1).free == 18);
}

TEST_CASE("node states print and parse", "[model][quick]") {
    for (auto st : {NodeState::Idle, NodeState::Allocated, NodeState::Mixed, NodeState::Draining, NodeState::Drained,
                    NodeState::Down, NodeState::SpareReserved, NodeState::Unknown})
        CHECK(parse_node_state(to_string(st)) == st);
    CHECK_FALSE(parse_node_state("bogus"));
}

TEST_CASE("NodeSet: a bit per node of the map, read from and written to a hostlist once", "[model][quick]") {
    const RackMap m = make_map(4, 18); // 72 nodes: more than one 64-bit word
    const NodeSet s = NodeSet::of(m, "n[003-005,070],nope,n999");
    CHECK(s.universe() == 72);
    CHECK(s.count() == 4); // names outside the map ignored
    CHECK(s.contains(*m.find_node("n070")));
    CHECK_FALSE(s.contains(*m.find_node("n006")));
    CHECK_FALSE(s.contains(500)); // past the universe: not in it, no fault
    CHECK(s.hostlist(m) == "n[003-005,070]");
    const NodeSet all(72, true);
    CHECK(all.count() == 72); // nothing past the universe in the last word
    NodeSet both = all;
    both &= s;
    CHECK(both == s);
    both.erase(*m.find_node("n004"));
    CHECK(both.ids() == std::vector<NodeId>{2, 4, 69});
    CHECK(NodeSet(72).none());
    CHECK(NodeSet().unsized());
    CHECK(NodeSet::of(m, "").none());
}
