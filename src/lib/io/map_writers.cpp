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
    const bool control = std::any_of(s.begin(), s.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
    });
    bool plain = !s.empty() && !control && s.find_first_of(":#{}&*!|>'\"%@`,") == std::string::npos &&
                 s.front() != '-' && s.front() != '[' && s.front() != ' ' && s.back() != ' ';
    if (plain) return s;
    // double-quoted: a line break or tab written as itself would fold into
    // a blank when read back, so every control character is escaped
    std::string q = "\"";
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            q += '\\';
            q += c;
        } else if (c == '\n') {
            q += "\\n";
        } else if (c == '\t') {
            q += "\\t";
        } else if (c == '\r') {
            q += "\\r";
        } else if (u < 0x20 || u == 0x7f) {
            q += fmt::format("\\x{:02x}", unsigned(u));
        } else {
            q += c;
        }
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

namespace {

// One topology of a topology.yaml: the map's racks as leaf switches (tree)
// or blocks, named `name`.
std::string yaml_topology(const RackMap& map, bool tree, std::string_view name, bool cluster_default) {
    std::string out = fmt::format("- topology: {}\n  cluster_default: {}\n", name, cluster_default);
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

} // namespace

std::string write_topology_yaml(const RackMap& map, bool tree, std::string_view name) {
    return fmt::format("# topology.yaml written by nvlslice: one {} per NVLink domain\n",
                       tree ? "leaf switch" : "block") +
           yaml_topology(map, tree, name, true);
}

} // namespace nvl

namespace nvl {

namespace {

// Whether a node is written on its key's line ("key: value", "key: []"):
// a scalar and an empty list or mapping; the caller writes the blank
// (without it, "key:[]" reads back as one scalar).
bool on_key_line(const yaml_node_t* n) {
    switch (n->type) {
    case YAML_SCALAR_NODE: return true;
    case YAML_SEQUENCE_NODE: return n->data.sequence.items.start == n->data.sequence.items.top;
    case YAML_MAPPING_NODE: return n->data.mapping.pairs.start == n->data.mapping.pairs.top;
    default: return false;
    }
}

// A YAML node written back in block style, `indent` blanks deep (the caller
// has written its "key:" or "- " on the current line).
void emit_node(YamlDoc& doc, yaml_node_t* n, int indent, std::string& out) {
    const std::string pad(size_t(indent), ' ');
    switch (n->type) {
    case YAML_SCALAR_NODE:
        out += yaml_str(std::string(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length));
        out += '\n';
        return;
    case YAML_SEQUENCE_NODE: {
        if (n->data.sequence.items.start == n->data.sequence.items.top) {
            out += "[]\n";
            return;
        }
        out += '\n';
        doc.for_each_item(n, [&](yaml_node_t* item) {
            out += pad + "- ";
            if (item->type == YAML_MAPPING_NODE && item->data.mapping.pairs.start != item->data.mapping.pairs.top) {
                bool first = true;
                doc.for_each_entry(item, [&](yaml_node_t* k, yaml_node_t* v) {
                    if (!first) out += pad + "  ";
                    first = false;
                    out += doc.scalar(k, "key") + ":";
                    if (on_key_line(v)) out += ' ';
                    emit_node(doc, v, indent + 4, out);
                });
            } else {
                emit_node(doc, item, indent + 2, out);
            }
        });
        return;
    }
    case YAML_MAPPING_NODE: {
        if (n->data.mapping.pairs.start == n->data.mapping.pairs.top) {
            out += "{}\n";
            return;
        }
        out += '\n';
        doc.for_each_entry(n, [&](yaml_node_t* k, yaml_node_t* v) {
            out += pad + doc.scalar(k, "key") + ":";
            if (on_key_line(v)) out += ' ';
            emit_node(doc, v, indent + 2, out);
        });
        return;
    }
    default: out += "\n"; return;
    }
}

// "key=value" tokens of one topology.conf line (comments gone).
std::vector<std::pair<std::string, std::string>> conf_tokens(std::string_view line) {
    std::vector<std::pair<std::string, std::string>> toks;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        const size_t s = i;
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        if (i == s) break;
        std::string_view tok = line.substr(s, i - s);
        const size_t eq = tok.find('=');
        std::string key(tok.substr(0, eq));
        for (auto& c : key) c = char(std::tolower(static_cast<unsigned char>(c)));
        toks.emplace_back(key, eq == std::string_view::npos ? "" : std::string(tok.substr(eq + 1)));
    }
    return toks;
}

// A site's topology.conf as the topology "site" of a topology.yaml: its
// switches (a tree) or its blocks, as Slurm reads them.
std::string conf_as_yaml(std::string_view text, const std::string& file) {
    (void)read_topology_conf(text, file); // refuses what Slurm would not read, naming file:line
    std::string switches, blocks, sizes;
    for (size_t start = 0; start <= text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const auto toks = conf_tokens(text.substr(start, end - start));
        start = end + 1;
        if (toks.empty()) continue;
        if (toks[0].first == "blocksizes") {
            std::string v = toks[0].second;
            for (auto& c : v)
                if (c == ',') c = ' ';
            for (size_t a = 0, b; a < v.size(); a = b + 1) {
                b = v.find(' ', a);
                if (b == std::string::npos) b = v.size();
                sizes += fmt::format("      - {}\n", v.substr(a, b - a));
            }
            continue;
        }
        std::string entry = fmt::format("      - {}: {}\n", toks[0].first == "blockname" ? "block" : "switch",
                                        yaml_str(toks[0].second));
        for (size_t t = 1; t < toks.size(); ++t) {
            if (toks[t].first == "nodes") entry += fmt::format("        nodes: {}\n", yaml_str(toks[t].second));
            if (toks[t].first == "switches") entry += fmt::format("        children: {}\n", yaml_str(toks[t].second));
            // LinkSpeed: topology.yaml has no such field, and Slurm's
            // tree does not use it
        }
        (toks[0].first == "blockname" ? blocks : switches) += entry;
    }
    std::string out = "- topology: site\n  cluster_default: true\n";
    if (!switches.empty()) return out + "  tree:\n    switches:\n" + switches;
    out += "  block:\n";
    if (!sizes.empty()) out += "    block_sizes:\n" + sizes;
    return out + "    blocks:\n" + blocks;
}

} // namespace

std::string write_topology_yaml_beside(const RackMap& map, std::string_view site, const std::string& site_file,
                                       std::string_view name) {
    std::string kept;
    bool yaml = false;
    for (size_t i = 0; i < site.size(); ++i) { // a YAML list, or topology.conf lines
        const char c = site[i];
        if (c == '#') {
            i = site.find('\n', i);
            if (i == std::string_view::npos) break;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) continue;
        yaml = c == '-' || c == '[';
        break;
    }
    if (yaml) {
        YamlDoc doc(site, site_file);
        yaml_node_t* root = doc.root();
        doc.expect_sequence(root, "topology.yaml");
        doc.for_each_item(root, [&](yaml_node_t* item) {
            doc.expect_mapping(item, "a topology");
            std::string topo;
            doc.for_each_entry(item, [&](yaml_node_t* k, yaml_node_t* v) {
                if (doc.scalar(k, "key") == "topology") topo = doc.scalar(v, "topology");
            });
            if (topo.empty()) doc.fail(item, "a topology needs a \"topology\" name");
            if (topo == name) return; // this writer's own, from an earlier run
            std::string one;          // the item alone, as a one-item list
            bool first = true;
            doc.for_each_entry(item, [&](yaml_node_t* k, yaml_node_t* v) {
                one += first ? "- " : "  ";
                first = false;
                one += doc.scalar(k, "key") + ":";
                if (on_key_line(v)) one += ' ';
                emit_node(doc, v, 4, one);
            });
            kept += one;
        });
    } else {
        kept = conf_as_yaml(site, site_file);
    }
    std::string out = fmt::format("# topology.yaml written by nvlslice: the site's topologies from {}, then one block "
                                  "per NVLink domain as topology \"{}\" (Topology={} on its partitions)\n",
                                  site_file, name, name);
    out += kept;
    out += yaml_topology(map, false, name, false);
    // what was written reads back: the blocks as the map's racks
    const RackMap back = read_topology_yaml(out, "the topology.yaml written", {}, name);
    if (back.domains().size() != map.domains().size())
        throw Error(fmt::format("{}: the topology.yaml written does not read back as the map's {} racks", site_file,
                                map.domains().size()));
    return out;
}

} // namespace nvl
