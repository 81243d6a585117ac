#include "error.hpp"
#include "fabric.hpp"
#include "gpu_fabric.hpp"
#include "map_io.hpp"

#include "catch.hpp"

#include <chrono>
#include <cstdlib>

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
    CHECK_FALSE(gpu_fabric_problem(g));
    CHECK(fabric_domain_key(g) == std::string(kU1) + ".32766");
    CHECK_THROWS_WITH(parse_gpu_fabric("abc, 1"), Catch::Contains("expected UUID, CLIQUE, STATE, STATUS"));

    GpuFabric joining = g;
    joining.state = "In Progress";
    CHECK_THAT(gpu_fabric_problem(joining).value_or(""),
               Catch::Contains("fabric state In Progress (expected Completed"));
    GpuFabric failed = g;
    failed.status = "NVLink training failed";
    CHECK_THAT(gpu_fabric_problem(failed).value_or(""), Catch::Contains("fabric status NVLink training failed"));
    GpuFabric clique0 = g;
    clique0.clique = "0";
    CHECK_THAT(gpu_fabric_problem(clique0).value_or(""), Catch::Contains("CliqueId 0"));
    GpuFabric zero = g;
    zero.cluster_uuid = "00000000-0000-0000-0000-000000000000";
    CHECK_THAT(gpu_fabric_problem(zero).value_or(""), Catch::Contains("ClusterUUID 00000000"));
    GpuFabric sick = g;
    sick.health = "Degraded Bandwidth";
    CHECK_THAT(gpu_fabric_problem(sick).value_or(""), Catch::Contains("fabric health Degraded Bandwidth"));
    sick.health = "Healthy";
    CHECK_FALSE(gpu_fabric_problem(sick));
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
    RackMap intended = read_rack_map_yaml(
        write_rack_map_yaml(discover_map(parse_fabric_report(read("two-racks.txt"), "two-racks.txt"), {}).map),
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

TEST_CASE("fabric: the map carries each rack's NVLink domain for the node-side check", "[fabric][quick]") {
    CHECK(looks_like_fabric_key(std::string(kU1) + ".32766"));
    CHECK(looks_like_fabric_key("2f8c1a9e5b3d4c7e9a106d4e8b2c1f01.1"));
    CHECK_FALSE(looks_like_fabric_key("rack001"));
    CHECK_FALSE(looks_like_fabric_key(std::string(kU1) + ".x1"));
    CHECK_FALSE(looks_like_fabric_key("2f8c1a9e.1"));

    auto nodes = parse_fabric_report(read("cluster-36.txt"), "cluster-36.txt");
    DiscoverOptions o;
    o.rename = "rack{index:03}";
    Discovery d = discover_map(nodes, o);
    const std::string yaml = write_rack_map_yaml(d.map);
    CHECK_THAT(yaml, Catch::Contains("  - name: rack001\n    nodes: nvl[0001-0018]\n    fabric: "
                                     "5d0e7c2a-8b41-4f63-a9d2-1c7b3e90f4a1.32766\n"));
    RackMap back = read_rack_map_yaml(yaml, "discovered.yaml");
    CHECK(expected_fabric_key(back.domain(1)) == "b3a94f10-6e2d-4c87-8f15-9a0c2d7e6b34.32766");
    CHECK(write_rack_map_yaml(back) == yaml);
    // named <uuid>.<clique>: the name is the key, not written twice
    Discovery plain = discover_map(nodes, {});
    CHECK(expected_fabric_key(plain.map.domain(0)) == plain.map.domain(0).name);
    CHECK_THAT(write_rack_map_yaml(plain.map), !Catch::Contains("fabric:"));
    // a hand-written map without the key expects nothing
    RackMap hand = read_rack_map_yaml("version: 1\ndomains:\n  - name: r1\n    nodes: n[1-4]\n", "m.yaml");
    CHECK(expected_fabric_key(hand.domain(0)).empty());
    CHECK_THROWS_WITH(
        read_rack_map_yaml("version: 1\ndomains:\n  - name: r1\n    nodes: n[1-4]\n    fabric: rack1\n", "m.yaml"),
        Catch::Contains("m.yaml:5") && Catch::Contains("\"fabric\": \"rack1\" is not <ClusterUUID>.<CliqueId>"));
}

TEST_CASE("fabric: the node-side check names the node, the GPU and the reason", "[fabric][quick]") {
    auto nodes = parse_fabric_report(read("cluster-36.txt"), "cluster-36.txt");
    const std::string k1 = "5d0e7c2a-8b41-4f63-a9d2-1c7b3e90f4a1.32766";
    const std::string k2 = "b3a94f10-6e2d-4c87-8f15-9a0c2d7e6b34.32766";
    const auto& good = nodes[19].gpus; // nvl0020, rack002
    CHECK(check_node_fabric("nvl0020", good, "rack002", k2).empty());
    CHECK(check_node_fabric("nvl0020", good, "rack002", "").empty()); // no expectation: state and health only

    // the clique the map expects
    auto wrong = check_node_fabric("nvl0020", good, "rack001", k1);
    REQUIRE(wrong.size() == 4);
    CHECK_THAT(wrong[0], Catch::Contains("node nvl0020 GPU 0: in NVLink domain " + k2 +
                                         ", but the rack map puts nvl0020 in rack001 (domain " + k1 + ")"));
    // fabric state and health
    auto gpus = good;
    gpus[1].state = "In Progress";
    gpus[1].status = "N/A";
    gpus[3].health = "Degraded Bandwidth";
    auto bad = check_node_fabric("nvl0020", gpus, "rack002", k2);
    REQUIRE(bad.size() == 2);
    CHECK_THAT(bad[0], Catch::StartsWith("node nvl0020 GPU 1: fabric state In Progress (expected Completed"));
    CHECK_THAT(bad[1], Catch::StartsWith("node nvl0020 GPU 3: fabric health Degraded Bandwidth (expected Healthy)"));
}

TEST_CASE("fabric: NVML's numbers in nvidia-smi's words", "[fabric][quick]") {
    CHECK(fabric_state_name(3) == "Completed");
    CHECK(fabric_state_name(2) == "In Progress");
    CHECK(fabric_state_name(9) == "Unknown (9)");
    const unsigned char b[16] = {0x5d, 0x0e, 0x7c, 0x2a, 0x8b, 0x41, 0x4f, 0x63,
                                 0xa9, 0xd2, 0x1c, 0x7b, 0x3e, 0x90, 0xf4, 0xa1};
    CHECK(fabric_uuid_string(b) == "5d0e7c2a-8b41-4f63-a9d2-1c7b3e90f4a1");
    CHECK(fabric_health_from_mask(0).empty()); // nothing reported
    const unsigned healthy = 2u | 2u << 2 | 2u << 4 | 2u << 6 | 1u << 8;
    CHECK(fabric_health_from_mask(healthy) == "Healthy");
    CHECK(fabric_health_from_mask((healthy & ~(3u << 4)) | 1u << 4) == "Route Unhealthy");
    CHECK(fabric_health_from_mask((healthy & ~3u) | 1u | 5u << 8) == "Degraded Bandwidth, Insufficient NVLinks");
}

TEST_CASE("fabric: a driver that hangs costs the caller at most the time limit", "[fabric][quick]") {
    // the same answer through the time-limited child
    LocalFabric f = read_local_fabric_within(5000, NVL_FAKE_NVML);
    REQUIRE(f.source == "NVML");
    REQUIRE(f.gpus.size() == 4);
    CHECK(f.gpus[2].health == "Degraded Bandwidth");
    CHECK_FALSE(f.timed_out);
    setenv("FAKE_NVML_HANG", "1", 1);
    const auto t0 = std::chrono::steady_clock::now();
    LocalFabric hung = read_local_fabric_within(300, NVL_FAKE_NVML);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    unsetenv("FAKE_NVML_HANG");
    CHECK(hung.timed_out);
    CHECK(hung.source.empty());
    CHECK_THAT(hung.why_none, Catch::Contains("did not answer within 300 ms"));
    CHECK(secs < 2.0);
}

TEST_CASE("fabric: this node's GPUs read through NVML by dlopen, else said why not", "[fabric][quick]") {
    LocalFabric f = read_local_fabric(NVL_FAKE_NVML);
    REQUIRE(f.source == "NVML");
    REQUIRE(f.gpus.size() == 4);
    CHECK(f.gpus[0].cluster_uuid == "5d0e7c2a-8b41-4f63-a9d2-1c7b3e90f4a1");
    CHECK(f.gpus[0].clique == "32766");
    CHECK(f.gpus[0].state == "Completed");
    CHECK(f.gpus[0].status == "Success");
    CHECK(f.gpus[0].health == "Healthy");
    auto problems = check_node_fabric("nvl0001", f.gpus, "rack001", "5d0e7c2a-8b41-4f63-a9d2-1c7b3e90f4a1.32766");
    REQUIRE(problems.size() == 2);
    CHECK_THAT(problems[0], Catch::StartsWith("node nvl0001 GPU 2: fabric health Degraded Bandwidth"));
    CHECK_THAT(problems[1], Catch::StartsWith("node nvl0001 GPU 3: fabric state In Progress"));

    // no NVML here and no nvidia-smi: nothing can be checked, and why
    LocalFabric none = read_local_fabric("/nonexistent/libnvidia-ml.so.1");
    if (none.source.empty()) {
        CHECK(none.gpus.empty());
        CHECK_THAT(none.why_none, Catch::Contains("NVML not loadable") && Catch::Contains("nvidia-smi"));
    }

    // a recorded report
    LocalFabric rec = read_fabric_report(std::string(NVL_TEST_DATA) + "/fabric/cluster-36.txt", "nvl0019");
    CHECK(rec.gpus.size() == 4);
    CHECK(rec.gpus[0].clique == "32766");
    CHECK_THAT(read_fabric_report(std::string(NVL_TEST_DATA) + "/fabric/cluster-36.txt", "nvl9999").why_none,
               Catch::Contains("nvl9999 is not in"));
    CHECK_THROWS_WITH(read_fabric_report("/nonexistent/report.txt", "nvl0001"),
                      Catch::Contains("fabric_report=/nonexistent/report.txt: cannot read"));
}
