#include "error.hpp"
#include "gpu_count.hpp"

#include "catch.hpp"

#include <fstream>
#include <string>

#include <dirent.h>

using namespace nvl;

TEST_CASE("hwloc counts the NVIDIA GPUs of a node, not its NVSwitch or NIC", "[hwloc][quick]") {
    const std::string dir = std::string(NVL_TEST_DATA) + "/hwloc/";
    CHECK(count_nvidia_gpus(dir + "node-4gpu.xml") == 4);
    CHECK(count_nvidia_gpus(dir + "node-3gpu.xml") == 3);
    CHECK_THROWS_WITH(count_nvidia_gpus(dir + "missing.xml"), Catch::Contains("missing.xml"));
    // this machine, live: the same count as the kernel's own PCI list
    // (vendor 0x10de, display class 0x03), read here without hwloc
    int in_sysfs = 0;
    if (DIR* d = opendir("/sys/bus/pci/devices")) {
        while (dirent* e = readdir(d)) {
            if (e->d_name[0] == '.') continue;
            auto field = [&](const char* f) {
                std::ifstream in(std::string("/sys/bus/pci/devices/") + e->d_name + "/" + f);
                std::string v;
                in >> v;
                return v;
            };
            if (field("vendor") == "0x10de" && field("class").rfind("0x03", 0) == 0) ++in_sysfs;
        }
        closedir(d);
    }
    CHECK(count_nvidia_gpus() == in_sysfs);
}
