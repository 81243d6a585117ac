// The cycle's upkeep stage alone (upkeep.hpp): the spare reservation, the
// nodes' weights and the healthy-rack feature wanted for a snapshot.
#include "fixtures.hpp"
#include "upkeep.hpp"

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
    // a degraded rack keeps every free node from Slurm
    snap.set_degraded(0, "3 failed nodes, more than its 2 spares");
    const auto deg = wanted_spares(snap, NodeSet::of(m, "n[018,035-036]"), true);
    REQUIRE(deg);
    CHECK(*deg == "n[002-004,006-016,018,035-036]");
}

TEST_CASE("upkeep: weights steer Slurm to racks in use; the feature leaves degraded racks", "[upkeep][quick]") {
    const RackMap m = make_map(2, 18);
    Snapshot snap(m);
    std::vector<SlurmNode> nodes;
    for (NodeId i = 0; i < m.node_count(); ++i) {
        SlurmNode n;
        n.name = m.node_name(i);
        n.state = NodeState::Idle;
        n.weight = 1;
        n.features = n.active_features = "gpu,nvlslice_ok";
        nodes.push_back(n);
    }
    for (const char* n : {"n019", "n020"}) snap.set_state(id(m, n), NodeState::Allocated);
    const auto w = weight_changes(snap, nodes);
    REQUIRE(w.size() == 2);
    CHECK(w[0].nodes == "n[019-036]"); // the rack in use: the lower weight, filled first
    CHECK(w[1].nodes == "n[001-018]");
    CHECK(w[0].weight < w[1].weight);
    CHECK(feature_changes(snap, nodes, "nvlslice_ok").changes.empty()); // all healthy, all have it
    snap.set_degraded(1, "NVLink contained error");
    nodes[20].features = nodes[20].active_features = "gpu"; // not given the feature: left alone
    const auto f = feature_changes(snap, nodes, "nvlslice_ok");
    REQUIRE(f.changes.size() == 1);
    CHECK(f.changes[0].features == "gpu");
    CHECK(f.changes[0].nodes == "n[019-020,022-036]");
    REQUIRE(f.racks.size() == 1);
    CHECK(f.racks[0] == std::make_pair(DomainId(1), false));
    CHECK(feature_changes(snap, nodes, "").changes.empty()); // off
}
