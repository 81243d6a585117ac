#include "plugin_config.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

namespace nvl {

const char* to_string(GpuCheck g) {
    switch (g) {
    case GpuCheck::Off: return "off";
    case GpuCheck::Warn: return "warn";
    case GpuCheck::Fail: return "fail";
    }
    return "off";
}

static int count_arg(std::string_view key, std::string_view v, int min, int max) {
    std::string s(v);
    char* end = nullptr;
    long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || x < min || x > max)
        throw Error(fmt::format("plugstack.conf argument {}={}: expected an integer from {} to {}", key, v, min, max));
    return int(x);
}

static GpuCheck check_arg(std::string_view key, std::string_view v) {
    if (v == "off") return GpuCheck::Off;
    if (v == "warn") return GpuCheck::Warn;
    if (v == "fail") return GpuCheck::Fail;
    throw Error(fmt::format("plugstack.conf argument {}={}: expected off, warn or fail", key, v));
}

static bool yes_no_arg(std::string_view key, std::string_view v) {
    if (v == "yes") return true;
    if (v == "no") return false;
    throw Error(fmt::format("plugstack.conf argument {}={}: expected yes or no", key, v));
}

PluginConfig parse_plugin_args(int argc, const char* const* argv) {
    PluginConfig c;
    static constexpr const char* kKeys =
        "map, default_slice, spares, gpus_per_node, check_gpus, placement, hwloc_xml, check_fabric, "
        "fabric_report, fabric_drain, fabric_timeout, gate, mode, spares_first, abort_wait";
    for (int i = 0; i < argc; ++i) {
        std::string_view a = argv[i] ? argv[i] : "";
        size_t eq = a.find('=');
        if (eq == std::string_view::npos || eq == 0)
            throw Error(fmt::format("plugstack.conf argument \"{}\": expected key=value (keys: {})", a, kKeys));
        std::string_view k = a.substr(0, eq), v = a.substr(eq + 1);
        if (k == "map") {
            if (v.empty()) throw Error("plugstack.conf argument map=: give the rack map's path");
            c.map = std::string(v);
        } else if (k == "default_slice") {
            c.default_slice = count_arg(k, v, 1, 4096);
        } else if (k == "spares") {
            c.spares = count_arg(k, v, 0, 4096);
        } else if (k == "gpus_per_node") {
            c.gpus_per_node = count_arg(k, v, 1, 1024);
        } else if (k == "check_gpus") {
            c.check_gpus = check_arg(k, v);
        } else if (k == "check_fabric") {
            c.check_fabric = check_arg(k, v);
        } else if (k == "fabric_report") {
            if (v.empty()) throw Error("plugstack.conf argument fabric_report=: give a report's path (%n = node name)");
            c.fabric_report = std::string(v);
        } else if (k == "fabric_drain") {
            c.fabric_drain = yes_no_arg(k, v);
        } else if (k == "spares_first") {
            c.spares_first = yes_no_arg(k, v);
        } else if (k == "abort_wait") {
            c.abort_wait = yes_no_arg(k, v);
        } else if (k == "fabric_timeout") {
            c.fabric_timeout_s = count_arg(k, v, 1, 300);
        } else if (k == "placement") {
            if (v == "strict")
                c.default_placement = PlacementMode::Strict;
            else if (v == "prefer")
                c.default_placement = PlacementMode::Prefer;
            else
                throw Error(fmt::format("plugstack.conf argument placement={}: expected strict or prefer", v));
        } else if (k == "hwloc_xml") {
            c.hwloc_xml = std::string(v);
        } else if (k == "gate") {
            if (v.empty() || v.find_first_of(",:=|") != std::string_view::npos)
                throw Error(fmt::format("plugstack.conf argument gate={}: expected a license name (slurm.conf "
                                        "Licenses=NAME:1)",
                                        v));
            c.gate = std::string(v);
        } else if (k == "mode") {
            c.hand_off = parse_hand_off(v, "plugstack.conf argument mode");
        } else if (k == "feature") {
            // Before the spare reservation held degraded racks whole, native
            // slice jobs were constrained to a feature the helper took off
            // them; Slurm then refused submissions the healthy racks were
            // too few for. Accepted, so that an older plugstack.conf still
            // loads (a refused argument would fail every job), and reported.
            c.notices.push_back(fmt::format("plugstack.conf argument feature={} is no longer used: nvlsliced's spare "
                                            "reservation keeps degraded racks from new jobs; remove it",
                                            v));
        } else {
            throw Error(fmt::format("plugstack.conf: unknown argument \"{}\" (accepted keys: {})", k, kKeys));
        }
    }
    if (c.map.empty()) throw Error("plugstack.conf: map=PATH is required (e.g. map=/etc/slurm/nvlslice.yaml)");
    if (c.fabric_drain && c.check_fabric != GpuCheck::Fail)
        throw Error(fmt::format("plugstack.conf: fabric_drain=yes needs check_fabric=fail (it is {}): a node is "
                                "drained only when its steps fail",
                                to_string(c.check_fabric)));
    return c;
}

std::optional<std::string> gpu_check_message(const std::string& node, int expected, int found) {
    if (found == expected) return {};
    return fmt::format("node {} has {} NVIDIA GPU(s), the rack map says {}{}", node, found, expected,
                       found < expected ? ": a GPU is missing or failed (check nvidia-smi, then drain the node)" : "");
}

} // namespace nvl
