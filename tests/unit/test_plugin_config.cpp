#include "error.hpp"
#include "plugin_config.hpp"

#include "catch.hpp"

#include <vector>

using namespace nvl;

namespace {

PluginConfig parse(std::vector<const char*> a) {
    return parse_plugin_args(int(a.size()), a.data());
}

std::string err(std::vector<const char*> a) {
    try {
        parse(a);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_CASE("plugstack arguments: defaults first, each key matched exactly", "[plugin][quick]") {
    PluginConfig c = parse({"map=/etc/slurm/nvlslice.yaml"});
    CHECK(c.map == "/etc/slurm/nvlslice.yaml");
    CHECK(c.check_gpus == GpuCheck::Warn);
    CHECK(c.default_placement == PlacementMode::Strict);
    CHECK_FALSE(c.default_slice);
    PluginConfig d = parse({"map=m.yaml", "default_slice=8", "spares=1", "gpus_per_node=8", "check_gpus=fail",
                            "placement=prefer", "hwloc_xml=/x.xml"});
    CHECK(*d.default_slice == 8);
    CHECK(*d.spares == 1);
    CHECK(*d.gpus_per_node == 8);
    CHECK(d.check_gpus == GpuCheck::Fail);
    CHECK(d.default_placement == PlacementMode::Prefer);
    CHECK(d.hwloc_xml == "/x.xml");
    CHECK(c.spares_first);
    CHECK_FALSE(parse({"map=m", "spares_first=no"}).spares_first);
    CHECK(c.abort_wait);
    CHECK_FALSE(parse({"map=m", "abort_wait=no"}).abort_wait);
}

TEST_CASE("plugstack arguments: bad input names the key and the fix", "[plugin][quick]") {
    CHECK_THAT(err({}), Catch::Contains("map=PATH is required"));
    CHECK_THAT(err({"map=m", "mapp=x"}),
               Catch::Contains("unknown argument \"mapp\" (accepted keys: map, default_slice"));
    CHECK_THAT(err({"map=m", "check_gpus=maybe"}), Catch::Contains("check_gpus=maybe: expected off, warn or fail"));
    CHECK_THAT(err({"map=m", "spares=-1"}), Catch::Contains("spares=-1: expected an integer from 0 to 4096"));
    CHECK_THAT(err({"map=m", "verbose"}), Catch::Contains("\"verbose\": expected key=value"));
    CHECK_THAT(err({"map="}), Catch::Contains("map=: give the rack map's path"));
    CHECK_THAT(err({"map=m", "placement=x"}), Catch::Contains("placement=x: expected strict or prefer"));
    CHECK_THAT(err({"map=m", "check_fabric=on"}), Catch::Contains("check_fabric=on: expected off, warn or fail"));
    CHECK_THAT(err({"map=m", "fabric_drain=true"}), Catch::Contains("fabric_drain=true: expected yes or no"));
    CHECK_THAT(err({"map=m", "check_fabric=warn", "fabric_drain=yes"}),
               Catch::Contains("fabric_drain=yes needs check_fabric=fail (it is warn)"));
    CHECK_THAT(err({"map=m", "spares_first=1"}), Catch::Contains("spares_first=1: expected yes or no"));
    CHECK_THAT(err({"map=m", "abort_wait=maybe"}), Catch::Contains("abort_wait=maybe: expected yes or no"));
    CHECK_THAT(err({"map=m", "fabric_report="}), Catch::Contains("fabric_report=: give a report's path"));
}

TEST_CASE("plugstack arguments: the fabric check is off unless asked for", "[plugin][fabric][quick]") {
    PluginConfig c = parse({"map=m"});
    CHECK(c.check_fabric == GpuCheck::Off);
    CHECK_FALSE(c.fabric_drain);
    PluginConfig d = parse({"map=m", "check_fabric=fail", "fabric_report=/r/%n.txt", "fabric_drain=yes"});
    CHECK(d.check_fabric == GpuCheck::Fail);
    CHECK(d.fabric_report == "/r/%n.txt");
    CHECK(d.fabric_drain);
}

TEST_CASE("the GPU check speaks of the node and the fix", "[plugin][quick]") {
    CHECK_FALSE(gpu_check_message("nvl0001", 4, 4));
    CHECK_THAT(gpu_check_message("nvl0001", 4, 3).value_or(""),
               Catch::Contains("node nvl0001 has 3 NVIDIA GPU(s), the rack map says 4: a GPU is missing"));
}

TEST_CASE("plugstack mode=: auto by default, gate or native to override", "[plugin][native][quick]") {
    CHECK(parse({"map=m.yaml"}).hand_off == HandOff::Auto);
    CHECK(parse({"map=m.yaml", "mode=native"}).hand_off == HandOff::Native);
    CHECK(parse({"map=m.yaml", "mode=gate"}).hand_off == HandOff::Gate);
    CHECK_THAT(err({"map=m.yaml", "mode=block"}),
               Catch::Contains("plugstack.conf argument mode=block: expected auto, gate or native"));
}

TEST_CASE("plugstack feature= (an older plugstack.conf): accepted, reported, no longer used",
          "[plugin][native][quick]") {
    CHECK(parse({"map=m.yaml"}).notices.empty());
    const auto c = parse({"map=m.yaml", "feature=nvlslice_ok"});
    REQUIRE(c.notices.size() == 1);
    CHECK_THAT(c.notices[0], Catch::Contains("feature=nvlslice_ok is no longer used") &&
                                 Catch::Contains("spare reservation keeps degraded racks from new jobs"));
}
