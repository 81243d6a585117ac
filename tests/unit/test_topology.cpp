#include "map_io.hpp"

#include "catch.hpp"

#include <cstdio>
#include <fstream>
#include <string>

using namespace nvl;

namespace {

template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

void same_domains(const RackMap& a, const RackMap& b) {
    REQUIRE(a.domains().size() == b.domains().size());
    for (DomainId d = 0; d < a.domains().size(); ++d) {
        CHECK(a.domain(d).name == b.domain(d).name);
        CHECK(a.domain_hostlist(d) == b.domain_hostlist(d));
    }
}

} // namespace

TEST_CASE("topology.conf block lines become domains", "[topology][quick]") {
    const char* conf =
        "# racks\nBlockName=b1 Nodes=nvl[01-18]\nblockname=b2   nodes=nvl[19-36]  # second\n\nBlockSizes=18,36\n";
    MapDefaults defs;
    defs.gpus_per_node = 4;
    defs.spares = 2;
    RackMap m = read_topology_conf(conf, "topology.conf", defs);
    REQUIRE(m.domains().size() == 2);
    CHECK(m.domain(1).name == "b2");
    CHECK(m.domain_hostlist(1) == "nvl[19-36]");
    CHECK(m.domain(1).spares == 2);
    CHECK(m.max_slice() == 16);
}

TEST_CASE("topology.conf tree: every leaf switch is a domain", "[topology][quick]") {
    const char* conf =
        "SwitchName=s1 Nodes=n[1-4] LinkSpeed=400\nSwitchName=s2 Nodes=n[5-8]\nSwitchName=top Switches=s[1-2]\n";
    RackMap m = read_topology_conf(conf, "t.conf");
    REQUIRE(m.domains().size() == 2);
    CHECK(m.domain(0).name == "s1");
    CHECK(m.domain(0).spares == 2);
    CHECK(m.domain_hostlist(1) == "n[5-8]");
}

TEST_CASE("topology.conf errors name line and column", "[topology][quick]") {
    auto err = [](const char* text) { return error_of([&] { read_topology_conf(text, "t.conf"); }); };
    CHECK_THAT(err("BlockName=b1 Nodes=n[1-4]\nSwitchName=s1 Nodes=n[5-8]\n"),
               Catch::StartsWith("t.conf:2:1: SwitchName= in a file of BlockName= lines"));
    CHECK_THAT(
        err("BlockName=b1 Nodes=n[1-4] Speed=3\n"),
        Catch::StartsWith("t.conf:1:27: unknown or repeated key \"speed\" on a blockname line (accepted: nodes)"));
    CHECK_THAT(err("PartitionName=x\n"), Catch::StartsWith("t.conf:1:1: unknown line key \"partitionname\""));
    CHECK_THAT(err("BlockName=b1\n"), Catch::StartsWith("t.conf:1:1: block \"b1\" needs Nodes="));
    CHECK_THAT(err("BlockName=b1 Nodes=n[1-4\n"), Catch::StartsWith("t.conf:1:14: Nodes=: hostlist"));
    CHECK_THAT(err("  BlockName=b1 Nodes\n"), Catch::StartsWith("t.conf:1:16: expected Key=Value, got \"Nodes\""));
    CHECK_THAT(err("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[4-5]\n"),
               Catch::StartsWith("t.conf:2:1: node \"n4\" of domain \"b2\" is already in domain \"b1\""));
    CHECK_THAT(err("# nothing\n"), Catch::Contains("no domain found"));
    CHECK_THAT(err("BlockSizes=4,x\nBlockName=b1 Nodes=n[1-4]\n"), Catch::StartsWith("t.conf:1:1: BlockSizes must be"));
    CHECK_THAT(err("BlockName=b1 Nodes=\n"), Catch::StartsWith("t.conf:1:14: \"nodes\" has an empty value"));
}

TEST_CASE("topology.yaml block and tree sections", "[topology][quick]") {
    const char* y = R"(- topology: topo1
  cluster_default: false
  tree:
    switches:
    - switch: sw_root
      children: s[1-2]
    - switch: s1
      nodes: node[01-04]
    - switch: s2
      nodes: node[05-08]
- topology: topo2
  cluster_default: true
  block:
    block_sizes:
      - 4
      - 8
    blocks:
    - block: b1
      nodes: node[01-04]
    - block: b2
      nodes: node[05-08]
- topology: topo3
  flat: true
)";
    RackMap def = read_topology_yaml(y, "topology.yaml");
    REQUIRE(def.domains().size() == 2);
    CHECK(def.domain(0).name == "b1"); // the cluster_default one
    RackMap tree = read_topology_yaml(y, "topology.yaml", {}, "topo1");
    REQUIRE(tree.domains().size() == 2);
    CHECK(tree.domain(0).name == "s1");
    CHECK(tree.domain_hostlist(1) == "node[05-08]");
    CHECK_THAT(error_of([&] { read_topology_yaml(y, "topology.yaml", {}, "topo9"); }),
               Catch::Contains("no block or tree topology named \"topo9\" (found: topo1, topo2, topo3)"));
    CHECK_THAT(error_of([&] { read_topology_yaml("- topology: t\n  block:\n    blockz: []\n", "y"); }),
               Catch::StartsWith("y:3:5: unknown key \"blockz\" (accepted here: block_sizes, blocks)"));
    CHECK_THAT(error_of([&] { read_topology_yaml("- topology: t\n  block:\n    blocks:\n    - nodes: n1\n", "y"); }),
               Catch::StartsWith("y:4:7: a block needs \"block\""));
    CHECK_THAT(error_of([&] { read_topology_yaml("topology: t\n", "y"); }),
               Catch::StartsWith("y:1:1: topology.yaml must be a list"));
}

TEST_CASE("writers round-trip a map through every Slurm format", "[topology][quick]") {
    RackMap m = load_map(std::string(NVL_ETC) + "/nvlslice-map.yaml");
    MapDefaults defs = m.defaults();
    std::string block = write_topology_conf_block(m);
    CHECK_THAT(block, Catch::Contains("BlockName=rack001 Nodes=nvl[0001-0018]\n") &&
                          Catch::Contains("BlockSizes=18,36,72,144,288,576,1152,2304\n"));
    same_domains(m, read_topology_conf(block, "block.conf", defs));
    std::string tree = write_topology_conf_tree(m);
    CHECK_THAT(tree, Catch::Contains("SwitchName=spine Switches=rack[001-128]\n"));
    same_domains(m, read_topology_conf(tree, "tree.conf", defs));
    same_domains(m, read_topology_yaml(write_topology_yaml(m), "t.yaml", defs));
    same_domains(m, read_topology_yaml(write_topology_yaml(m, true), "t.yaml", defs));
    same_domains(m, read_rack_map_yaml(write_rack_map_yaml(m), "m.yaml"));
}

TEST_CASE("load_map tells the formats apart", "[topology][quick]") {
    RackMap m = load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml");
    const std::string dir = NVL_TEST_DATA;
    std::string p = "nvl-unit-topology.yaml";
    { std::ofstream(p) << "---\n# comment\n" << write_topology_yaml(m); }
    same_domains(m, load_map(p));
    std::remove(p.c_str());
    CHECK_THAT(error_of([] { load_map("/nonexistent/map.yaml"); }),
               Catch::Contains("/nonexistent/map.yaml: cannot open"));
}

TEST_CASE("BlockSizes follow Slurm's rule: a base, then the base times powers of two", "[topology][quick]") {
    CHECK_FALSE(block_sizes_problem({18}));
    CHECK_FALSE(block_sizes_problem({16, 32, 64}));
    CHECK_FALSE(block_sizes_problem({18, 72}));
    CHECK_THAT(block_sizes_problem({18, 27}).value_or(""),
               Catch::Contains("27 is not the base size 18 times a power of two"));
    CHECK_THAT(block_sizes_problem({16, 64, 32}).value_or(""), Catch::Contains("32 is not"));
    CHECK_THAT(block_sizes_problem({}).value_or(""), Catch::Contains("at least the base"));
    CHECK_THROWS_WITH(read_topology_conf("BlockName=b1 Nodes=n[1-4]\nBlockSizes=4,6\n", "t.conf"),
                      Catch::Contains("t.conf:2:") && Catch::Contains("BlockSizes=4,6: 6 is not the base size 4"));
    CHECK_THROWS_WITH(
        read_topology_yaml("- topology: t\n  cluster_default: true\n  block:\n    block_sizes: [4, 12]\n    blocks:\n"
                           "      - block: b1\n        nodes: n[1-4]\n",
                           "t.yaml"),
        Catch::Contains("t.yaml:4:") && Catch::Contains("12 is not the base size 4"));
    // what export writes is valid again
    RackMap m = read_topology_conf("BlockName=b1 Nodes=n[1-18]\nBlockName=b2 Nodes=n[19-36]\nBlockSizes=18\n", "t");
    RackMap again = read_topology_conf(write_topology_conf_block(m), "again");
    CHECK(again.node_count() == 36);
}

TEST_CASE("a map's node names are capped in bytes as well as in count", "[topology][quick]") {
    // 12 blocks of 4000 nodes with 1000-byte names: 48 MB of names, which
    // took tens of seconds under ASan (found while fuzzing)
    std::string conf;
    const std::string stem(990, 'n');
    for (int b = 0; b < 12; ++b)
        conf += "BlockName=b" + std::to_string(b) + " Nodes=" + stem + "b" + std::to_string(b) + "x[1-4000]\n";
    CHECK_THROWS_WITH(read_topology_conf(conf, "t.conf"), Catch::Contains("node names would take more than 32 MiB"));
    // a real cluster's names are far below it
    std::string small;
    for (int b = 0; b < 12; ++b)
        small += "BlockName=b" + std::to_string(b) + " Nodes=nvl" + std::to_string(b) + "x[1-18]\n";
    CHECK(read_topology_conf(small, "t.conf").node_count() == 12 * 18);
}

TEST_CASE("topology.yaml beside a site's own topology: its tree kept as the default, the racks as blocks",
          "[topology][quick]") {
    const RackMap map = read_topology_conf("BlockName=r1 Nodes=n[01-18]\nBlockName=r2 Nodes=n[19-36]\n", "m.conf");
    // written again from what it wrote: the same, below the first line
    // (which names the file it read)
    const auto same_again = [&](const std::string& y) {
        const std::string again = write_topology_yaml_beside(map, y, "topology.yaml");
        return again.substr(again.find('\n')) == y.substr(y.find('\n'));
    };
    SECTION("a topology.conf tree becomes the default topology \"site\"") {
        const std::string site = "# InfiniBand\nSwitchName=ib1 Nodes=n[01-20] LinkSpeed=400\n"
                                 "SwitchName=ib2 Nodes=n[21-36]\nSwitchName=top Switches=ib[1-2]\n";
        const std::string y = write_topology_yaml_beside(map, site, "topology.conf");
        // the cluster default is the site's tree, with its leaf switches
        const RackMap def = read_topology_yaml(y, "y");
        REQUIRE(def.domains().size() == 2);
        CHECK(def.domain(0).name == "ib1");
        CHECK(def.domain(0).size() == 20);
        CHECK(y.find("children: ib[1-2]") != std::string::npos);
        // the racks, by name
        const RackMap blocks = read_topology_yaml(y, "y", {}, "nvlslice");
        REQUIRE(blocks.domains().size() == 2);
        CHECK(blocks.domain(1).name == "r2");
        CHECK(y.find("- topology: nvlslice\n  cluster_default: false\n") != std::string::npos);
        // run again on what it wrote: the same topologies, the old blocks replaced, not added twice
        CHECK(same_again(y));
    }
    SECTION("a site's topology.yaml: every topology kept as written") {
        const std::string site =
            "- topology: ib\n  cluster_default: true\n  tree:\n    switches:\n"
            "      - switch: s1\n        nodes: n[01-36]\n"
            "- topology: flat1\n  flat: true\n"
            "- topology: nvlslice\n  block:\n    blocks:\n      - block: old\n        nodes: n01\n";
        const std::string y = write_topology_yaml_beside(map, site, "topology.yaml");
        CHECK(y.find("- topology: ib\n  cluster_default: true\n  tree:\n    switches:\n      - switch: s1\n"
                     "        nodes: n[01-36]\n- topology: flat1\n  flat: true\n") != std::string::npos);
        CHECK(y.find("old") == std::string::npos); // the earlier blocks replaced
        CHECK(read_topology_yaml(y, "y").domain(0).name == "s1");
        CHECK(read_topology_yaml(y, "y", {}, "nvlslice").domains().size() == 2);
    }
    SECTION("a site's empty list or mapping stays one, on its key's line (the fuzzer found key:[])") {
        const std::string site = "- topology: te\n  block:\n    block_sizes: [ ]\n    opts: {}\n";
        const std::string y = write_topology_yaml_beside(map, site, "topology.yaml");
        CHECK(y.find("- topology: te\n  block:\n    block_sizes: []\n    opts: {}\n") != std::string::npos);
        CHECK(same_again(y));
    }
    SECTION("a name with a line break or a tab keeps it, escaped (the fuzzer found a folded name)") {
        const std::string site = "- topology: \"a\\tb\\n\\nc\"\n  flat: true\n";
        const std::string y = write_topology_yaml_beside(map, site, "topology.yaml");
        CHECK(y.find("- topology: \"a\\tb\\n\\nc\"\n  flat: true\n") != std::string::npos);
        CHECK(same_again(y));
    }
    SECTION("blocks of the site's own") {
        const std::string y =
            write_topology_yaml_beside(map, "BlockName=b1 Nodes=n[01-36]\nBlockSizes=36\n", "topology.conf");
        CHECK(y.find("- topology: site\n  cluster_default: true\n  block:\n    block_sizes:\n      - 36\n") !=
              std::string::npos);
        CHECK(read_topology_yaml(y, "y").domains().size() == 1);
    }
    SECTION("what Slurm would not read is refused, naming file:line") {
        CHECK_THROWS_WITH(write_topology_yaml_beside(map, "SwitchName=a Nodes=n1\nSwitchNam=b\n", "topology.conf"),
                          Catch::Contains("topology.conf:2"));
        CHECK_THROWS_WITH(write_topology_yaml_beside(map, "- topology: x\n  tree: [\n", "topology.yaml"),
                          Catch::Contains("topology.yaml:"));
        CHECK_THROWS_WITH(write_topology_yaml_beside(map, "- cluster_default: true\n", "topology.yaml"),
                          Catch::Contains("needs a \"topology\" name"));
    }
}
