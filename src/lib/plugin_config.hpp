// nvlslice — the plugin's plugstack.conf arguments, parsed strictly:
//   required /usr/lib/.../spank_nvlslice.so map=/etc/slurm/nvlslice.yaml [key=value ...]
// Defaults first; every key matched exactly; an unknown key, a missing '='
// or a bad value is refused with the key and what would be accepted. Takes
// (argc, argv) as Slurm hands them over, so it is tested without Slurm.
#pragma once

#include "placement.hpp"
#include "slice_job.hpp"

#include <optional>
#include <string>

namespace nvl {

enum class GpuCheck { Off, Warn, Fail };
const char* to_string(GpuCheck g);

struct PluginConfig {
    std::string map;                  // rack map (required)
    std::optional<int> default_slice; // overrides the map's default_slice
    std::optional<int> spares;        // overrides spares of Slurm topology maps
    std::optional<int> gpus_per_node; // for Slurm topology maps (no GPU count in them)
    GpuCheck check_gpus = GpuCheck::Warn;
    PlacementMode default_placement = PlacementMode::Strict;
    std::string hwloc_xml; // read the node topology from this XML; %n = node name
    // The node-side NVLink fabric check (fabric.hpp): each GPU's fabric
    // state, status and health, and the domain the map expects.
    GpuCheck check_fabric = GpuCheck::Off;
    std::string fabric_report; // read the GPUs from this recorded report; %n = node name
    bool fabric_drain = false; // drain a node that fails the check (check_fabric=fail)
    // NVML and nvidia-smi are read in a child killed after this long: a
    // wedged driver fails the check instead of hanging the step.
    int fabric_timeout_s = 10;
    // The license slice jobs wait behind (nvlsliced's gate_license).
    std::string gate = "nvlslice_gate";
    // How slice jobs are handed to Slurm (slice_job.hpp): auto = native
    // where the running Slurm offers topology/block and --segment.
    HandOff hand_off = HandOff::Auto;
    // Native mode: slice jobs are constrained to nodes where this feature
    // is active (nvlsliced's healthy_feature takes it off degraded racks).
    // "" = no constraint.
    std::string feature;
};

PluginConfig parse_plugin_args(int argc, const char* const* argv);

// A Slurm node feature name as nvlslice accepts it: letters, digits, '_',
// '.', '-' (nothing of a constraint's syntax), at most 64 characters.
bool valid_feature_name(std::string_view f);
// The user's --constraint with `feature` required too, in Slurm's syntax
// (one level of parentheses, no nesting); nullopt when the two cannot be
// joined (the user's expression has parentheses or brackets): the job
// keeps its own, without the feature.
std::optional<std::string> constraint_with(std::string_view user, std::string_view feature);

// The GPU check's verdict for one node: nullopt when all is well.
std::optional<std::string> gpu_check_message(const std::string& node, int expected, int found);

} // namespace nvl
