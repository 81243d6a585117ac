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
#include <vector>

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
    // Native mode: checkpointable work that a rack's kept spares can take
    // whole goes through the gate too (spares_first(), slice_job.hpp), so
    // that nvlsliced puts it on idle spares first; no: Slurm places it.
    bool spares_first = true;
    // A slice job's step whose tasks were killed (SIGKILL: nvlsliced's
    // abort after a node died): on a node with children in the step's
    // reverse tree, slurmstepd waits a second a level below it before it
    // reports, so that its children report once to a slurmstepd still
    // there instead of retrying one that has ended (nvlslice(8), ABORTED
    // STEPS); no: it reports at once, as Slurm's own.
    bool abort_wait = true;
    // Arguments accepted but no longer in effect, each with what replaced
    // it: logged by slurmd's side of the plugin, not to users.
    std::vector<std::string> notices;
};

PluginConfig parse_plugin_args(int argc, const char* const* argv);

// The GPU check's verdict for one node: nullopt when all is well.
std::optional<std::string> gpu_check_message(const std::string& node, int expected, int found);

} // namespace nvl
