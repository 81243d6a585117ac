// nvlslice — the node's NVIDIA GPUs as hwloc sees them. The one place that
// touches hwloc; the core only compares counts (plugin_config.hpp).
#pragma once

#include <string>

namespace nvl {

// Counts NVIDIA display-class PCI devices (vendor 0x10de, class 0x03xx: the
// GPUs, not NVSwitches or NICs) of this node, or of the topology saved in
// `xml_path` when it is not empty. Throws nvl::Error naming the cause.
int count_nvidia_gpus(const std::string& xml_path = {});

} // namespace nvl
