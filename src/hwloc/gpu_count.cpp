#include "gpu_count.hpp"

#include "error.hpp"

#include <hwloc.h>

#include <fmt/format.h>

namespace nvl {

int count_nvidia_gpus(const std::string& xml_path) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) throw Error("hwloc: cannot initialise a topology");
    struct Guard {
        hwloc_topology_t t;
        ~Guard() { hwloc_topology_destroy(t); }
    } guard{topo};
    // PCI devices are filtered out by default; keep them, but nothing else extra.
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (!xml_path.empty() && hwloc_topology_set_xml(topo, xml_path.c_str()) != 0)
        throw Error(fmt::format("hwloc: cannot read topology XML {}", xml_path));
    if (hwloc_topology_load(topo) != 0)
        throw Error(xml_path.empty() ? std::string("hwloc: cannot load this node's topology")
                                     : fmt::format("hwloc: cannot load topology XML {}", xml_path));
    int n = 0;
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o; o = hwloc_get_next_pcidev(topo, o))
        if (o->attr->pcidev.vendor_id == 0x10de && (o->attr->pcidev.class_id >> 8) == 0x03) ++n;
    return n;
}

} // namespace nvl
