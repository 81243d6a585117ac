// Writers: nvlslice's map, topology.conf (block, tree), topology.yaml; and
// the BlockSizes rule they and the readers keep.
#include "map_io.hpp"
#include "map_readers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nvl {

namespace {

std::string int_list(const std::vector<int>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

// Quote a YAML scalar only when it would otherwise not read back as itself.
std::string yaml_str(const std::string& s) {
    bool plain = !s.empty() && s.find_first_of(":#{}&*!|>'\"%@`,\n") == std::string::npos && s.front() != '-' &&
                 s.front() != '[' && s.front() != ' ' && s.back() != ' ';
    if (plain) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') q += '\\';
        q += c;
    }
    return q + "\"";
}

int min_domain_size(const RackMap& map) {
    int m = 0;
    for (const auto& d : map.domains()) m = m ? std::min(m, d.size()) : d.size();
    return m;
}

// The block sizes for the map: the smallest rack as the base, then the
// base times 2, 4, ... while that many racks exist, so that a job of several
// slices may span that many whole blocks (Slurm's block plugin places a job
// larger than a block only in an aggregate of a listed size).
std::vector<int> block_sizes_for(const RackMap& map) {
    std::vector<int> sizes;
    const int base = min_domain_size(map);
    for (size_t racks = 1; racks <= map.domains().size() && base > 0; racks *= 2) sizes.push_back(base * int(racks));
    return sizes;
}

std::string join(const std::vector<int>& v, const char* sep) {
    std::string s;
    for (int x : v) s += (s.empty() ? "" : sep) + std::to_string(x);
    return s;
}

} // namespace

std::string write_rack_map_yaml(const RackMap& map) {
    const MapDefaults& defs = map.defaults();
    std::string out = "# nvlslice rack map\nversion: 1\ndefaults:\n";
    out += fmt::format("  gpus_per_node: {}\n  spares: {}\n  default_slice: {}\n", defs.gpus_per_node, defs.spares,
                       defs.default_slice);
    if (!defs.slice_sizes.empty()) out += "  slice_sizes: " + int_list(defs.slice_sizes) + "\n";
    out += "domains:\n";
    for (DomainId i = 0; i < map.domains().size(); ++i) {
        const Domain& d = map.domain(i);
        out += fmt::format("  - name: {}\n    nodes: {}\n", yaml_str(d.name), yaml_str(map.domain_hostlist(i)));
        if (d.gpus_per_node != defs.gpus_per_node) out += fmt::format("    gpus_per_node: {}\n", d.gpus_per_node);
        if (d.spares != defs.spares) out += fmt::format("    spares: {}\n", d.spares);
        if (d.slice_sizes != defs.slice_sizes) out += "    slice_sizes: " + int_list(d.slice_sizes) + "\n";
        if (d.feature != d.name) out += fmt::format("    feature: {}\n", yaml_str(d.feature));
        if (!d.fabric.empty() && d.fabric != d.name) out += fmt::format("    fabric: {}\n", yaml_str(d.fabric));
    }
    return out;
}

std::optional<std::string> block_sizes_problem(const std::vector<int>& sizes) {
    if (sizes.empty()) return "give at least the base block size";
    const int base = sizes.front();
    if (base < 1) return fmt::format("the base block size must be at least 1, got {}", base);
    for (size_t i = 1; i < sizes.size(); ++i) {
        const int s = sizes[i];
        const bool pow2_multiple = s > sizes[i - 1] && s % base == 0 && ((s / base) & (s / base - 1)) == 0;
        if (!pow2_multiple)
            return fmt::format("{} is not the base size {} times a power of two larger than the size before it "
                               "(Slurm's rule; e.g. {},{},{})",
                               s, base, base, base * 2, base * 4);
    }
    return {};
}

std::string write_topology_conf_block(const RackMap& map) {
    std::string out = "# topology.conf for topology/block, written by nvlslice: one block per NVLink domain\n";
    for (DomainId i = 0; i < map.domains().size(); ++i)
        out += fmt::format("BlockName={} Nodes={}\n", map.domain(i).name, map.domain_hostlist(i));
    out += fmt::format("BlockSizes={}\n", join(block_sizes_for(map), ","));
    return out;
}

std::string write_topology_conf_tree(const RackMap& map, std::string_view top) {
    std::string out = "# topology.conf for topology/tree, written by nvlslice: one leaf switch per NVLink domain\n";
    std::vector<std::string> leaves;
    for (DomainId i = 0; i < map.domains().size(); ++i) {
        out += fmt::format("SwitchName={} Nodes={}\n", map.domain(i).name, map.domain_hostlist(i));
        leaves.push_back(map.domain(i).name);
    }
    out += fmt::format("SwitchName={} Switches={}\n", top, hostlist_compress(leaves));
    return out;
}

std::string write_topology_yaml(const RackMap& map, bool tree, std::string_view name) {
    std::string out = fmt::format(
        "# topology.yaml written by nvlslice: one {} per NVLink domain\n- topology: {}\n  cluster_default: true\n",
        tree ? "leaf switch" : "block", name);
    if (tree) {
        out += "  tree:\n    switches:\n";
        std::vector<std::string> leaves;
        for (DomainId i = 0; i < map.domains().size(); ++i) {
            out += fmt::format("      - switch: {}\n        nodes: {}\n", yaml_str(map.domain(i).name),
                               yaml_str(map.domain_hostlist(i)));
            leaves.push_back(map.domain(i).name);
        }
        out += fmt::format("      - switch: spine\n        children: {}\n", yaml_str(hostlist_compress(leaves)));
    } else {
        out += fmt::format("  block:\n    block_sizes:\n      - {}\n    blocks:\n",
                           join(block_sizes_for(map), "\n      - "));
        for (DomainId i = 0; i < map.domains().size(); ++i)
            out += fmt::format("      - block: {}\n        nodes: {}\n", yaml_str(map.domain(i).name),
                               yaml_str(map.domain_hostlist(i)));
    }
    return out;
}

} // namespace nvl
