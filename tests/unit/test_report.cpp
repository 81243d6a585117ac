#include "fixtures.hpp"
#include "map_io.hpp"
#include "rack_health.hpp"
#include "report.hpp"
#include "yaml_doc.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

TEST_CASE("snapshot files round-trip and name bad lines", "[report][quick]") {
    RackMap m = make_map(2, 18);
    Snapshot s(m);
    s.set(id(m, "n001"), {NodeState::Allocated, 42, 0, false});
    s.set(id(m, "n017"), {NodeState::SpareReserved, 0, -1, false});
    s.set(id(m, "n020"), {NodeState::Down, 0, -1, false});
    s.set(id(m, "n021"), {NodeState::Allocated, 7, -1, false});
    Snapshot back = read_snapshot(m, write_snapshot(s), "snap");
    for (NodeId n = 0; n < m.node_count(); ++n) {
        CHECK(back.node(n).state == s.node(n).state);
        CHECK(back.node(n).job_id == s.node(n).job_id);
        CHECK(back.node(n).slice == s.node(n).slice);
    }
    auto err = [&](const char* t) {
        try {
            read_snapshot(m, t, "snap");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(err("n001 idle\nzz9 idle\n"), Catch::StartsWith("snap:2:1: node \"zz9\" is not in the rack map"));
    CHECK_THAT(err("n001 sleepy\n"), Catch::Contains("state \"sleepy\": expected idle, allocated"));
    CHECK_THAT(err("n001\n"), Catch::Contains("expected NODE STATE [JOB [SLICE [lent|preemptible]]]"));
    CHECK_THAT(err("n001 allocated x\n"), Catch::Contains("job \"x\": expected an integer"));
}

TEST_CASE("the live snapshot takes spares from the reservation and slices from the records", "[report][quick]") {
    RackMap m = make_map(2, 18);
    std::vector<SlurmNode> nodes;
    for (NodeId i = 0; i < m.node_count(); ++i) {
        SlurmNode n;
        n.name = m.node_name(i);
        n.state = NodeState::Idle;
        nodes.push_back(n);
    }
    nodes[4].state = NodeState::Drained;
    SlurmJob j;
    j.id = 9;
    j.state = JobState::Running;
    j.nodes = hostlist_expand("n[001-004,006-017]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-004,006-017] repairs=1 moves=0";
    for (auto& n : j.nodes) nodes[id(m, n)].state = NodeState::Allocated;
    Snapshot s = snapshot_from_slurm(m, nodes, {j}, Reservation{"nvlslice_spares", "n018,n[035-036]"});
    CHECK(s.node(id(m, "n017")).slice == 0);
    CHECK(s.node(id(m, "n017")).job_id == 9);
    CHECK(s.node(id(m, "n018")).state == NodeState::SpareReserved);
    std::string show = render_show(s, {"r1"}, false);
    CHECK_THAT(show, Catch::Contains("RackName=r1 Nodes=n[001-018] NodeCnt=18 GPUsPerNode=4 Spares=2"));
    CHECK_THAT(show, Catch::Contains("Free=0 Spare=1 Allocated=16 Draining=0 Drained=1 Down=0 SliceRoom=0"));
    CHECK_THAT(show, Catch::Contains("Slice JobId=9 Index=0 Nodes=n[001-004,006-017]"));
    CHECK_THAT(show, Catch::Contains("Cluster Racks=1 Nodes=18"));
    std::string js = render_show(s, {}, true);
    CHECK_THAT(js, Catch::Contains("\"rack\":\"r2\"") && Catch::Contains("\"whole_free_racks\":1") &&
                       Catch::Contains("{\"job\":9,\"slice\":0,\"nodes\":\"n[001-004,006-017]\"}"));
    CHECK_THROWS_WITH(render_show(s, {"r9"}, false), Catch::Contains("rack \"r9\" is not in the map"));
    std::string text = render_map_text(s, false);
    CHECK_THAT(text,
               Catch::Contains("r1   SSSSDSSSSSSSSSSSSs    1 free") && Catch::Contains("r2   ................ss"));
    std::string svg = render_map_svg(s);
    CHECK_THAT(svg, Catch::StartsWith("<svg") && Catch::Contains("<title>n005 drained</title>") &&
                        Catch::EndsWith("</svg>\n"));
}

TEST_CASE("show and map name a degraded rack and why", "[report][rack][quick]") {
    RackMap m = make_map(2, 18);
    std::vector<SlurmNode> nodes;
    for (NodeId i = 0; i < m.node_count(); ++i) {
        SlurmNode n;
        n.name = m.node_name(i);
        n.state = NodeState::Idle;
        nodes.push_back(n);
    }
    nodes[20].state = NodeState::Drained;
    nodes[20].reason = "NVLink contained error";
    Snapshot s = snapshot_from_slurm(m, nodes, {}, std::nullopt);
    CHECK(mark_degraded_racks(s, node_reasons(m, nodes), std::nullopt) == 0);
    CHECK(mark_degraded_racks(s, node_reasons(m, nodes), reason_regex("contained", "--rack-failure-reasons")) == 1);
    const std::string show = render_show(s, {}, false);
    CHECK_THAT(show, Catch::Contains("RackName=r2") &&
                         Catch::Contains("   Degraded: n021 is out with a rack-level failure: \"NVLink contained "
                                         "error\" (no new slices") &&
                         Catch::Contains("DegradedRacks=1"));
    CHECK_THAT(render_show(s, {}, true), Catch::Contains("\"degraded\":\"n021 is out with a rack-level failure: "
                                                         "\\\"NVLink contained error\\\"\"") &&
                                             Catch::Contains("\"degraded\":false") &&
                                             Catch::Contains("\"degraded_racks\":1"));
    CHECK_THAT(render_map_text(s, false), Catch::Contains("  18 free\nr2 ") &&
                                              Catch::Contains("17 free  DEGRADED: n021 is out with a rack-level"));
}

TEST_CASE("check: missing and extra nodes, rack features", "[report][quick]") {
    RackMap m = make_map(2, 3, 1);
    std::vector<SlurmNode> nodes;
    for (const char* n : {"n001", "n002", "n004", "n005", "n006", "x1"}) {
        SlurmNode s;
        s.name = n;
        s.features = std::string(n) == "n002" ? "gpu" : (std::string(n) < "n004" ? "gpu,r1" : "r2");
        nodes.push_back(s);
    }
    auto f = check_map_against_slurm(m, nodes);
    REQUIRE(f.size() == 3);
    CHECK(f[0] == "extra: 1 Slurm node(s) are in no rack of the map: x1");
    CHECK(f[1] == "missing: 1 node(s) of the map are not Slurm nodes: n003");
    CHECK_THAT(f[2], Catch::StartsWith("feature: node n002 is in rack r1 but its Slurm features are \"gpu\""));
}

TEST_CASE("the shipped example snapshot reads and reports", "[report][quick]") {
    RackMap m = load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml");
    Snapshot s = read_snapshot(m, read_file(std::string(NVL_ETC) + "/example-snapshot.txt"), "example-snapshot.txt");
    CHECK_THAT(render_show(s, {}, false), Catch::Contains("Slice JobId=5 Index=1 Nodes=nvl[019-034]"));
}

TEST_CASE("snapshot files keep lent nodes", "[report][quick]") {
    RackMap m = nvl::test::make_map(1, 18);
    Snapshot s(m);
    s.set(*m.find_node("n003"), {NodeState::Allocated, 7, 0, true, true});
    s.set(*m.find_node("n004"), {NodeState::Allocated, 8, 0, true});
    std::string text = write_snapshot(s);
    CHECK_THAT(text, Catch::Contains("n003 allocated 7 0 lent"));
    CHECK_THAT(text, Catch::Contains("n004 allocated 8 0 preemptible"));
    Snapshot back = read_snapshot(m, text, "s.txt");
    CHECK(back.node(*m.find_node("n003")).preemptible);
    CHECK(back.node(*m.find_node("n003")).lent);
    CHECK(back.node(*m.find_node("n004")).preemptible);
    CHECK_FALSE(back.node(*m.find_node("n004")).lent);
    CHECK(back.counts(0).lent == 1);
    CHECK_THROWS_WITH(read_snapshot(m, "n001 allocated 7 0 borrowed\n", "s.txt"),
                      Catch::Contains("s.txt:1:1") && Catch::Contains("only be \"lent\""));
}

TEST_CASE("nvl-topo show marks the racks kept for the top-priority slice job", "[report][quick]") {
    RackMap m = nvl::test::make_map(2, 18);
    Snapshot s(m);
    Reservation p{"nvlslice_protect", "n[019-034]", 1700000000, 0};
    std::string show = render_show(s, {}, false, p);
    CHECK_THAT(show, Catch::Contains("RackName=r2") && Catch::Contains("   Protected Nodes=n[019-034] From="));
    CHECK_THAT(render_show(s, {"r1"}, false, p), !Catch::Contains("Protected"));
    CHECK_THAT(render_show(s, {}, true, p), Catch::Contains("\"protected\":{\"nodes\":\"n[019-034]\",\"from\":\""));
}
