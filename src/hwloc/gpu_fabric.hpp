// nvlslice — this node's GPUs' NVLink fabric identity and health, read where
// the node has them: NVML (loaded with dlopen, so nothing links against the
// NVIDIA driver), else nvidia-smi, else nothing can be checked. A recorded
// report (nvl-topo discover's input format) stands in for both in tests and
// for sites that collect it some other way.
#pragma once

#include "fabric.hpp"

#include <string>
#include <vector>

namespace nvl {

struct LocalFabric {
    std::string source;          // "NVML", "nvidia-smi", the report's path; "" = none
    std::vector<GpuFabric> gpus; // in device index order
    std::string why_none;        // when source is "": why nothing can be checked
    bool timed_out = false;      // read_local_fabric_within: the driver did not answer in time
};

// NVML from `nvml_library` (default: the driver's libnvidia-ml.so.1), then
// nvidia-smi. Never throws: a failure becomes why_none.
LocalFabric read_local_fabric(const std::string& nvml_library = "libnvidia-ml.so.1");

// The same in a child process that is killed after `timeout_ms`: a wedged
// GPU or driver, the very case the check is for, must not hang the caller
// (slurmstepd, as root). Then timed_out is set and why_none says so.
LocalFabric read_local_fabric_within(int timeout_ms, const std::string& nvml_library = "libnvidia-ml.so.1");

// `node`'s GPUs from a recorded report (one line per node: the node name,
// then nvidia-smi's CSV lines for its GPUs joined by ';'). Throws nvl::Error
// naming the file when it cannot be read or parsed.
LocalFabric read_fabric_report(const std::string& path, const std::string& node);

} // namespace nvl
