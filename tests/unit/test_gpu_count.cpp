#include "error.hpp"
#include "gpu_count.hpp"

#include "catch.hpp"

#include <string>

using namespace nvl;

TEST_CASE("hwloc counts the NVIDIA GPUs of a node, not its NVSwitch or NIC", "[hwloc][quick]") {
    const std::string dir = std::string(NVL_TEST_DATA) + "/hwloc/";
    CHECK(count_nvidia_gpus(dir + "node-4gpu.xml") == 4);
    CHECK(count_nvidia_gpus(dir + "node-3gpu.xml") == 3);
    CHECK_THROWS_WITH(count_nvidia_gpus(dir + "missing.xml"), Catch::Contains("missing.xml"));
    // this machine: whatever it has, the call works and is not negative
    CHECK(count_nvidia_gpus() >= 0);
}
