#include "map_io.hpp"

#include "catch.hpp"

#include <string>

using namespace nvl;

namespace {

std::string error_of(const std::string& text) {
    try {
        read_rack_map_yaml(text, "map.yaml");
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

const char* kGood = R"(# test map
version: 1
defaults:
  gpus_per_node: 4
  spares: 2
  default_slice: 16
domains:
  - name: rack1
    nodes: nvl[001-018]
  - name: rack2
    nodes: [ "nvl[019-030]", "nvl[031-036]" ]
    spares: 1
    gpus_per_node: 8
    feature: rk2
)";

} // namespace

TEST_CASE("rack map YAML reads domains, defaults and overrides", "[map][quick]") {
    RackMap m = read_rack_map_yaml(kGood, "map.yaml");
    REQUIRE(m.domains().size() == 2);
    CHECK(m.node_count() == 36);
    CHECK(m.domain(0).name == "rack1");
    CHECK(m.domain(0).spares == 2);
    CHECK(m.domain(0).gpus_per_node == 4);
    CHECK(m.domain(0).feature == "rack1");
    CHECK(m.domain(1).spares == 1);
    CHECK(m.domain(1).gpus_per_node == 8);
    CHECK(m.domain(1).feature == "rk2");
    CHECK(m.domain_hostlist(1) == "nvl[019-036]");
    CHECK(m.defaults().default_slice == 16);
    CHECK(m.max_slice() == 17);
}

TEST_CASE("rack map YAML round-trips through its writer", "[map][quick]") {
    RackMap a = read_rack_map_yaml(kGood, "map.yaml");
    RackMap b = read_rack_map_yaml(write_rack_map_yaml(a), "written.yaml");
    REQUIRE(b.domains().size() == a.domains().size());
    for (DomainId d = 0; d < a.domains().size(); ++d) {
        CHECK(b.domain(d).name == a.domain(d).name);
        CHECK(b.domain_hostlist(d) == a.domain_hostlist(d));
        CHECK(b.domain(d).spares == a.domain(d).spares);
        CHECK(b.domain(d).gpus_per_node == a.domain(d).gpus_per_node);
        CHECK(b.domain(d).feature == a.domain(d).feature);
    }
}

TEST_CASE("the shipped example maps load", "[map][quick]") {
    RackMap big = load_map(std::string(NVL_ETC) + "/nvlslice-map.yaml");
    CHECK(big.domains().size() == 128);
    CHECK(big.node_count() == 2304);
    CHECK(big.domain(127).name == "rack128");
    CHECK(big.domain_hostlist(127) == "nvl[2287-2304]");
    RackMap small = load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml");
    CHECK(small.node_count() == 36);
    RackMap conf = load_map(std::string(NVL_ETC) + "/topology-block.conf");
    CHECK(conf.domain_hostlist(1) == small.domain_hostlist(1));
}

TEST_CASE("malformed rack maps name file:line:column, the key and the fix", "[map][quick]") {
    // YAML syntax
    CHECK_THAT(error_of("version: 1\ndomains: [\n"), Catch::StartsWith("map.yaml:3:1: YAML syntax error"));
    // empty / wrong top level
    CHECK_THAT(error_of(""), Catch::Contains("map.yaml:1:1: the rack map is empty"));
    CHECK_THAT(error_of("- a\n"), Catch::Contains("map.yaml:1:1: the rack map must be a mapping"));
    // version
    CHECK_THAT(error_of("domains: []\n"), Catch::Contains("missing \"version: 1\""));
    CHECK_THAT(error_of("version: 2\ndomains: []\n"), Catch::Contains("map.yaml:1:10: \"version\" must be 1"));
    CHECK_THAT(error_of("version: one\n"),
               Catch::Contains("map.yaml:1:10: \"version\" must be an integer, got \"one\""));
    // unknown keys, at every level
    CHECK_THAT(error_of("version: 1\nrack: x\n"),
               Catch::Contains("map.yaml:2:1: unknown key \"rack\" (accepted here: version, defaults, domains)"));
    CHECK_THAT(error_of("version: 1\ndefaults:\n  spare: 2\n"), Catch::Contains("map.yaml:3:3: unknown key \"spare\""));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n    node: n1\n"),
               Catch::Contains("map.yaml:4:5: unknown key \"node\" (accepted here: name, nodes,"));
    CHECK_THAT(error_of("version: 1\nversion: 1\n"), Catch::Contains("map.yaml:2:1: key \"version\" is given twice"));
    // domains
    CHECK_THAT(error_of("version: 1\n"), Catch::Contains("missing \"domains\""));
    CHECK_THAT(error_of("version: 1\ndomains: {}\n"), Catch::Contains("map.yaml:2:10: \"domains\" must be a list"));
    CHECK_THAT(error_of("version: 1\ndomains: []\n"), Catch::Contains("\"domains\" is empty"));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - nodes: n[1-4]\n"),
               Catch::Contains("map.yaml:3:5: a domain needs a \"name\""));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n"), Catch::Contains("domain \"a\" needs \"nodes\""));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n    nodes: n[1-4\n"),
               Catch::Contains("map.yaml:4:12: \"nodes\": hostlist \"n[1-4\"") && Catch::Contains("unmatched '['"));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n    nodes: n[1-4]\n    spares: 4\n"),
               Catch::Contains("map.yaml:5:13: domain \"a\": spares (4) must be fewer than its 4 nodes"));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n    nodes: n[1-4]\n    gpus_per_node: 0\n"),
               Catch::Contains("map.yaml:5:20: \"gpus_per_node\" must be between 1 and 1024, got 0"));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n    nodes: n[1-4]\n  - name: a\n    nodes: m[1-4]\n"),
               Catch::Contains("map.yaml:5:5: domain \"a\" is defined twice"));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: a\n    nodes: n[1-4]\n  - name: b\n    nodes: n[4-8]\n"),
               Catch::Contains("map.yaml:5:5: node \"n4\" of domain \"b\" is already in domain \"a\""));
    CHECK_THAT(error_of("version: 1\ndefaults:\n  slice_sizes: [8, 8]\ndomains: []\n"),
               Catch::Contains("map.yaml:3:16: \"slice_sizes\" lists 8 twice"));
    CHECK_THAT(error_of("version: 1\ndefaults:\n  default_slice: 20\ndomains:\n  - name: a\n    nodes: n[1-18]\n"),
               Catch::Contains("map.yaml:3:18: \"default_slice\" 20 is larger than any domain can hold (16"));
    CHECK_THAT(error_of("version: 1\ndomains:\n  - name: [a]\n    nodes: n1\n"),
               Catch::Contains("map.yaml:3:11: \"name\" must be a single value, found a list"));
}

TEST_CASE("site overrides apply to every map format, once, in the core", "[map][quick]") {
    // the plugstack spares= argument used to be ignored for nvlslice maps
    MapOverrides o;
    o.spares = 1;
    o.gpus_per_node = 8;
    RackMap yaml = load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml", o, "plugstack.conf");
    RackMap conf = load_map(std::string(NVL_ETC) + "/topology-block.conf", o, "plugstack.conf");
    for (const RackMap* m : {&yaml, &conf})
        for (const auto& d : m->domains()) {
            CHECK(d.spares == 1);
            CHECK(d.gpus_per_node == 8);
        }
    CHECK(yaml.max_slice() == 17);
    o.spares = 18;
    CHECK_THROWS_WITH(load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml", o, "plugstack.conf"),
                      Catch::Contains("plugstack.conf: spares=18: domain") &&
                          Catch::Contains("spares must be 0 to 17"));
    o.spares.reset();
    o.default_slice = 17;
    CHECK_THROWS_WITH(load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml", o, "nvlslice.yaml"),
                      Catch::Contains("nvlslice.yaml: default_slice=17 is larger than any rack"));
    o.default_slice = 8;
    CHECK(load_map(std::string(NVL_ETC) + "/nvlslice-map-small.yaml", o, "x").defaults().default_slice == 8);
}
