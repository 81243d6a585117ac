#include "error.hpp"
#include "fabric.hpp"
#include "map_io.hpp"

#include "catch.hpp"

#include <fstream>
#include <map>
#include <sstream>

using namespace nvl;

namespace {

std::string read(const std::string& name) {
    std::ifstream f(std::string(NVL_TEST_DATA) + "/fabric/" + name);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

const char* kU1 = "2f8c1a9e-5b3d-4c7e-9a10-6d4e8b2c1f01";

} // namespace

TEST_CASE("fabric: one GPU's nvidia-smi line and its validity rules", "[fabric][quick]") {
    GpuFabric g = parse_gpu_fabric(" 2f8c1a9e-5b3d-4c7e-9a10-6d4e8b2c1f01, 32766, Completed, Success ");
    CHECK(g.cluster_uuid == kU1);
    CHECK(g.clique == "32766");
    CHECK(gpu_fabric_problem(g).empty());
    CHECK(fabric_domain_key(g) == std::string(kU1) + ".32766");
    CHECK_THROWS_WITH(parse_gpu_fabric("abc, 1"), Catch::Contains("expected UUID, CLIQUE, STATE, STATUS"));

    GpuFabric joining = g;
    joining.state = "In Progress";
    CHECK_THAT(gpu_fabric_problem(joining), Catch::Contains("fabric state In Progress (expected Completed"));
    GpuFabric failed = g;
    failed.status = "NVLink training failed";
    CHECK_THAT(gpu_fabric_problem(failed), Catch::Contains("fabric status NVLink training failed"));
    GpuFabric clique0 = g;
    clique0.clique = "0";
    CHECK_THAT(gpu_fabric_problem(clique0), Catch::Contains("CliqueId 0"));
    GpuFabric zero = g;
    zero.cluster_uuid = "00000000-0000-0000-0000-000000000000";
    CHECK_THAT(gpu_fabric_problem(zero), Catch::Contains("ClusterUUID 00000000"));
    GpuFabric sick = g;
    sick.health = "Degraded Bandwidth";
    CHECK_THAT(gpu_fabric_problem(sick), Catch::Contains("fabric health Degraded Bandwidth"));
    sick.health = "Healthy";
    CHECK(gpu_fabric_problem(sick).empty());
}

TEST_CASE("fabric: discovery writes a map that round-trips through the readers", "[fabric][quick]") {
    auto nodes = parse_fabric_report(read("two-racks.txt"), "two-racks.txt");
    REQUIRE(nodes.size() == 36);
    Discovery d = discover_map(nodes, {});
    CHECK(d.left_out.empty());
    REQUIRE(d.map.domains().size() == 2);
    CHECK(d.map.domain(0).name == std::string(kU1) + ".32766");
    CHECK(d.map.domain_hostlist(0) == "nvl[0001-0018]");
    CHECK(d.map.domain_hostlist(1) == "nvl[0019-0036]");
    CHECK(d.map.domain(0).gpus_per_node == 4);
    CHECK(d.map.domain(0).spares == 2);

    // the nvlslice map and the block topology read back the same racks
    RackMap back = read_rack_map_yaml(write_rack_map_yaml(d.map), "discovered.yaml");
    RackMap block = read_topology_conf(write_topology_conf_block(d.map), "topology.conf");
    for (const RackMap* m : {&back, &block}) {
        REQUIRE(m->domains().size() == 2);
        for (DomainId i = 0; i < 2; ++i) {
            CHECK(m->domain(i).name == d.map.domain(i).name);
            CHECK(m->domain_hostlist(i) == d.map.domain_hostlist(i));
        }
    }
    CHECK_THAT(write_topology_conf_block(d.map), Catch::Contains("BlockSizes=18,36"));
    CHECK(compare_with_fabric(back, nodes).empty());

    // a rename rule
    DiscoverOptions o;
    o.rename = "rack{index:03}";
    Discovery r = discover_map(nodes, o);
    CHECK(r.map.domain(1).name == "rack002");
    CHECK(r.keys[1] == "7c41e0b2-93aa-4f58-b6d2-0e9f3a5c7d12.32767");
    o.rename = "rack{idx}";
    CHECK_THROWS_WITH(discover_map(nodes, o), Catch::Contains("--rename \"rack{idx}\""));
}

TEST_CASE("fabric: nodes that break a rule are left out, each with its reason", "[fabric][quick]") {
    auto nodes = parse_fabric_report(read("broken-nodes.txt"), "broken-nodes.txt");
    Discovery d = discover_map(nodes, {});
    std::map<std::string, std::string> why(d.left_out.begin(), d.left_out.end());
    REQUIRE(why.size() == 6);
    CHECK_THAT(why["nvl0005"], Catch::Contains("GPU 0: fabric state In Progress"));
    CHECK_THAT(why["nvl0006"], Catch::Contains("CliqueId 0"));
    CHECK_THAT(why["nvl0007"], Catch::Contains("GPUs in two NVLink domains"));
    CHECK_THAT(why["nvl0020"], Catch::Contains("no GPU reported"));
    CHECK_THAT(why["nvl0021"], Catch::Contains("fabric health Degraded Bandwidth"));
    CHECK_THAT(why["nvl0022"], Catch::Contains("ClusterUUID 00000000"));
    CHECK(d.map.domain(0).size() == 15);
    CHECK(d.map.domain(1).size() == 15);

    // check: the recorded discovery against the intended map
    RackMap intended = read_rack_map_yaml(write_rack_map_yaml(discover_map(parse_fabric_report(read("two-racks.txt"),
                                                                                                 "two-racks.txt"),
                                                                            {})
                                                                   .map),
                                          "map.yaml");
    auto findings = compare_with_fabric(intended, nodes);
    CHECK(findings.size() == 6);
    CHECK_THAT(findings.front(), Catch::Contains("nvl0005 cannot be placed: GPU 0: fabric state In Progress"));
}

TEST_CASE("fabric: a map whose racks disagree with the NVLink domains is reported", "[fabric][quick]") {
    auto nodes = parse_fabric_report(read("two-racks.txt"), "two-racks.txt");
    // a hand-written map off by one node: rack1 = 1-19, rack2 = 20-36
    RackMap wrong = read_rack_map_yaml("version: 1\ndomains:\n"
                                       "  - name: rack1\n    nodes: nvl[0001-0019]\n"
                                       "  - name: rack2\n    nodes: nvl[0020-0036]\n",
                                       "wrong.yaml");
    auto f = compare_with_fabric(wrong, nodes);
    REQUIRE(f.size() == 2);
    CHECK_THAT(f[0], Catch::Contains("rack rack1 spans 2 NVLink domains"));
    CHECK_THAT(f[1], Catch::Contains("NVLink domain 7c41e0b2-93aa-4f58-b6d2-0e9f3a5c7d12.32767 is split over racks "
                                     "rack1, rack2"));
    // a node line that cannot be read names file:line
    CHECK_THROWS_WITH(parse_fabric_report("nvl0001 abc, 1\n", "in.txt"), Catch::Contains("in.txt:1:1: node nvl0001"));
    CHECK_THROWS_WITH(discover_map({}, {}), Catch::Contains("no node has a usable NVLink fabric identity"));
}
