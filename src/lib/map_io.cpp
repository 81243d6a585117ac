#include "map_io.hpp"

#include "hostlist.hpp"
#include "yaml_doc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nvl {
namespace {

constexpr long kMaxNodesPerDomain = 4096;
constexpr long kMaxGpus = 1024;

std::vector<std::string> expand_at(YamlDoc& doc, yaml_node_t* n, std::string_view key) {
    std::vector<std::string> names;
    auto one = [&](yaml_node_t* item) {
        std::string expr = doc.scalar(item, key);
        try {
            auto part = hostlist_expand(expr);
            names.insert(names.end(), part.begin(), part.end());
        } catch (const ParseError&) {
            throw;
        } catch (const Error& e) {
            doc.fail(item, fmt::format("\"{}\": {}", key, e.what()));
        }
    };
    if (n->type == YAML_SEQUENCE_NODE)
        doc.for_each_item(n, one);
    else
        one(n);
    if (names.empty()) doc.fail(n, fmt::format("\"{}\" names no node", key));
    return names;
}

void check_slice_sizes(YamlDoc& doc, yaml_node_t* n, const std::vector<int>& sizes) {
    for (size_t i = 1; i < sizes.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (sizes[i] == sizes[j]) doc.fail(n, fmt::format("\"slice_sizes\" lists {} twice", sizes[i]));
}

} // namespace

RackMap read_rack_map_yaml(std::string_view text, const std::string& file) {
    YamlDoc doc(text, file);
    yaml_node_t* root = doc.root();
    if (!root) throw ParseError({file, 1, 1}, "the rack map is empty (expected keys version, defaults, domains)");
    doc.expect_mapping(root, "the rack map");
    MapDefaults defs;
    yaml_node_t* domains = nullptr;
    yaml_node_t* default_slice_node = nullptr;
    bool have_version = false;
    doc.for_each_pair(
        root, {"version", "defaults", "domains"}, [&](const std::string& key, yaml_node_t*, yaml_node_t* v) {
            if (key == "version") {
                if (doc.integer(v, key, 1, 1000) != 1)
                    doc.fail(v, "\"version\" must be 1 (the only rack map version this nvlslice reads)");
                have_version = true;
            } else if (key == "defaults") {
                doc.expect_mapping(v, "\"defaults\"");
                doc.for_each_pair(v, {"gpus_per_node", "spares", "slice_sizes", "default_slice"},
                                  [&](const std::string& k, yaml_node_t*, yaml_node_t* val) {
                                      if (k == "gpus_per_node")
                                          defs.gpus_per_node = int(doc.integer(val, k, 1, kMaxGpus));
                                      else if (k == "spares")
                                          defs.spares = int(doc.integer(val, k, 0, kMaxNodesPerDomain));
                                      else if (k == "slice_sizes") {
                                          defs.slice_sizes = doc.int_list(val, k, 1, kMaxNodesPerDomain);
                                          check_slice_sizes(doc, val, defs.slice_sizes);
                                      } else {
                                          defs.default_slice = int(doc.integer(val, k, 1, kMaxNodesPerDomain));
                                          default_slice_node = val;
                                      }
                                  });
            } else {
                domains = v;
            }
        });
    if (!have_version) doc.fail(root, "missing \"version: 1\" at the top of the rack map");
    if (!domains) doc.fail(root, "missing \"domains\" (the list of racks / NVLink domains)");
    doc.expect_sequence(domains, "\"domains\"");
    RackMap map(defs);
    doc.for_each_item(domains, [&](yaml_node_t* item) {
        doc.expect_mapping(item, "a domain");
        Domain d;
        d.gpus_per_node = defs.gpus_per_node;
        d.spares = defs.spares;
        d.slice_sizes = defs.slice_sizes;
        d.pos = doc.pos(item);
        std::vector<std::string> names;
        yaml_node_t* spares_node = item;
        doc.for_each_pair(item, {"name", "nodes", "gpus_per_node", "spares", "slice_sizes", "feature"},
                          [&](const std::string& k, yaml_node_t*, yaml_node_t* val) {
                              if (k == "name") {
                                  d.name = doc.scalar(val, k);
                                  if (d.name.empty()) doc.fail(val, "\"name\" must not be empty");
                              } else if (k == "nodes") {
                                  names = expand_at(doc, val, k);
                              } else if (k == "gpus_per_node") {
                                  d.gpus_per_node = int(doc.integer(val, k, 1, kMaxGpus));
                              } else if (k == "spares") {
                                  d.spares = int(doc.integer(val, k, 0, kMaxNodesPerDomain));
                                  spares_node = val;
                              } else if (k == "slice_sizes") {
                                  d.slice_sizes = doc.int_list(val, k, 1, kMaxNodesPerDomain);
                                  check_slice_sizes(doc, val, d.slice_sizes);
                              } else {
                                  d.feature = doc.scalar(val, k);
                              }
                          });
        if (d.name.empty()) doc.fail(item, "a domain needs a \"name\"");
        if (names.empty())
            doc.fail(item, fmt::format("domain \"{}\" needs \"nodes\" (a hostlist such as nvl[0001-0018])", d.name));
        if (int(names.size()) > kMaxNodesPerDomain)
            doc.fail(item,
                     fmt::format("domain \"{}\" has {} nodes, more than {}", d.name, names.size(), kMaxNodesPerDomain));
        if (d.spares >= int(names.size()))
            doc.fail(spares_node, fmt::format("domain \"{}\": spares ({}) must be fewer than its {} nodes", d.name,
                                              d.spares, names.size()));
        map.add_domain(std::move(d), names); // errors name d.pos
    });
    if (map.domains().empty()) doc.fail(domains, "\"domains\" is empty: describe at least one rack");
    if (default_slice_node && defs.default_slice > map.max_slice())
        doc.fail(default_slice_node,
                 fmt::format("\"default_slice\" {} is larger than any domain can hold ({} = nodes - spares)",
                             defs.default_slice, map.max_slice()));
    if (!default_slice_node) map.defaults().default_slice = std::min(defs.default_slice, map.max_slice());
    return map;
}

namespace {

struct ConfToken {
    std::string key; // lower case
    std::string value;
    int column;
};

std::string lower(std::string s) {
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

} // namespace

RackMap read_topology_conf(std::string_view text, const std::string& file, const MapDefaults& defaults) {
    RackMap map(defaults);
    enum { None, Block, Tree } kind = None;
    int line_no = 0;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        ++line_no;
        size_t hash = line.find('#');
        if (hash != std::string_view::npos) line = line.substr(0, hash);
        std::vector<ConfToken> toks;
        size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
            if (i >= line.size()) break;
            size_t s = i;
            while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
            std::string_view tok = line.substr(s, i - s);
            size_t eq = tok.find('=');
            SourcePos p{file, line_no, int(s) + 1};
            if (eq == std::string_view::npos || eq == 0)
                throw ParseError(p, fmt::format("expected Key=Value, got \"{}\"", tok));
            toks.push_back({lower(std::string(tok.substr(0, eq))), std::string(tok.substr(eq + 1)), int(s) + 1});
        }
        start = end + 1;
        if (toks.empty()) continue;
        auto at = [&](const ConfToken& t) { return SourcePos{file, line_no, t.column}; };
        const std::string& head = toks[0].key;
        std::vector<std::string_view> known;
        if (head == "switchname")
            known = {"switchname", "switches", "nodes", "linkspeed"};
        else if (head == "blockname")
            known = {"blockname", "nodes"};
        else if (head == "blocksizes")
            known = {"blocksizes"};
        else
            throw ParseError(
                at(toks[0]),
                fmt::format("unknown line key \"{}\" (expected SwitchName=, BlockName= or BlockSizes=)", toks[0].key));
        const ConfToken* nodes = nullptr;
        for (size_t t = 0; t < toks.size(); ++t) {
            if (std::find(known.begin(), known.end(), toks[t].key) == known.end() || (t > 0 && toks[t].key == head)) {
                std::string list;
                for (size_t k = 1; k < known.size(); ++k) list += (list.empty() ? "" : ", ") + std::string(known[k]);
                throw ParseError(at(toks[t]), fmt::format("unknown or repeated key \"{}\" on a {} line (accepted: {})",
                                                          toks[t].key, head, list.empty() ? "nothing else" : list));
            }
            if (toks[t].value.empty())
                throw ParseError(at(toks[t]), fmt::format("\"{}\" has an empty value", toks[t].key));
            if (toks[t].key == "nodes") nodes = &toks[t];
        }
        if (head == "blocksizes") {
            if (kind == Tree)
                throw ParseError(at(toks[0]),
                                 "BlockSizes= in a file of SwitchName= lines (one topology per file: block or tree)");
            kind = Block;
            std::vector<int> sizes;
            for (size_t a = 0, b; a <= toks[0].value.size(); a = b + 1) {
                b = toks[0].value.find(',', a);
                if (b == std::string::npos) b = toks[0].value.size();
                std::string n = toks[0].value.substr(a, b - a);
                if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos)
                    throw ParseError(at(toks[0]),
                                     fmt::format("BlockSizes must be a comma-separated list of node counts, got \"{}\"",
                                                 toks[0].value));
                sizes.push_back(std::stoi(n));
            }
            if (auto why = block_sizes_problem(sizes); !why.empty())
                throw ParseError(at(toks[0]), fmt::format("BlockSizes={}: {}", toks[0].value, why));
            continue;
        }
        if (head == "blockname") {
            if (kind == Tree)
                throw ParseError(at(toks[0]),
                                 "BlockName= in a file of SwitchName= lines (one topology per file: block or tree)");
            kind = Block;
            if (!nodes) throw ParseError(at(toks[0]), fmt::format("block \"{}\" needs Nodes=", toks[0].value));
        } else {
            if (kind == Block)
                throw ParseError(at(toks[0]),
                                 "SwitchName= in a file of BlockName= lines (one topology per file: block or tree)");
            kind = Tree;
            if (!nodes) continue; // an upper-level switch: not a domain
        }
        std::vector<std::string> names;
        try {
            names = hostlist_expand(nodes->value);
        } catch (const Error& e) {
            throw ParseError(at(*nodes), fmt::format("Nodes=: {}", e.what()));
        }
        Domain d;
        d.name = toks[0].value;
        d.gpus_per_node = defaults.gpus_per_node;
        d.spares = std::min(defaults.spares, int(names.size()) - 1);
        d.slice_sizes = defaults.slice_sizes;
        d.pos = at(toks[0]);
        map.add_domain(std::move(d), names); // errors name d.pos
    }
    if (map.domains().empty())
        throw ParseError({file, line_no, 0},
                         "no domain found: expected BlockName=... Nodes=... or leaf SwitchName=... Nodes=... lines");
    map.defaults().default_slice = std::min(defaults.default_slice, map.max_slice());
    return map;
}

RackMap read_topology_yaml(std::string_view text, const std::string& file, const MapDefaults& defaults,
                           std::string_view topology) {
    YamlDoc doc(text, file);
    yaml_node_t* root = doc.root();
    if (!root) throw ParseError({file, 1, 1}, "topology.yaml is empty (expected a list of topologies)");
    doc.expect_sequence(root, "topology.yaml");
    yaml_node_t* chosen = nullptr;
    yaml_node_t* first = nullptr;
    bool chosen_default = false;
    std::vector<std::string> seen_names;
    doc.for_each_item(root, [&](yaml_node_t* item) {
        doc.expect_mapping(item, "a topology");
        std::string name;
        bool is_default = false, usable = false;
        doc.for_each_pair(item, {"topology", "cluster_default", "block", "tree", "flat"},
                          [&](const std::string& k, yaml_node_t*, yaml_node_t* v) {
                              if (k == "topology")
                                  name = doc.scalar(v, k);
                              else if (k == "cluster_default")
                                  is_default = doc.boolean(v, k);
                              else if (k == "block" || k == "tree")
                                  usable = true;
                          });
        if (name.empty()) doc.fail(item, "a topology needs a \"topology\" name");
        seen_names.push_back(name);
        if (!usable) return;
        if (!topology.empty()) {
            if (name == topology) chosen = item;
        } else if (is_default && !chosen_default) {
            chosen = item;
            chosen_default = true;
        }
        if (!first) first = item;
    });
    if (topology.empty() && !chosen) chosen = first;
    if (!chosen) {
        std::string list;
        for (auto& n : seen_names) list += (list.empty() ? "" : ", ") + n;
        if (!topology.empty())
            doc.fail(root, fmt::format("no block or tree topology named \"{}\" (found: {})", topology, list));
        doc.fail(root, "no block or tree topology in the file (flat topologies have no domains)");
    }
    RackMap map(defaults);
    auto add = [&](yaml_node_t* item, const std::string& name, yaml_node_t* nodes_node) {
        std::vector<std::string> names = expand_at(doc, nodes_node, "nodes");
        Domain d;
        d.name = name;
        d.gpus_per_node = defaults.gpus_per_node;
        d.spares = std::min(defaults.spares, int(names.size()) - 1);
        d.slice_sizes = defaults.slice_sizes;
        d.pos = doc.pos(item);
        map.add_domain(std::move(d), names); // errors name d.pos
    };
    doc.for_each_pair(
        chosen, {"topology", "cluster_default", "block", "tree", "flat"},
        [&](const std::string& k, yaml_node_t*, yaml_node_t* v) {
            if (k == "block") {
                doc.expect_mapping(v, "\"block\"");
                yaml_node_t* blocks = nullptr;
                doc.for_each_pair(v, {"block_sizes", "blocks"},
                                  [&](const std::string& bk, yaml_node_t*, yaml_node_t* bv) {
                                      if (bk == "block_sizes") {
                                          auto sizes = doc.int_list(bv, bk, 1, kMaxNodesPerDomain);
                                          if (auto why = block_sizes_problem(sizes); !why.empty())
                                              doc.fail(bv, fmt::format("\"block_sizes\": {}", why));
                                      }
                                      else
                                          blocks = bv;
                                  });
                if (!blocks) doc.fail(v, "\"block\" needs \"blocks\"");
                doc.expect_sequence(blocks, "\"blocks\"");
                doc.for_each_item(blocks, [&](yaml_node_t* b) {
                    doc.expect_mapping(b, "a block");
                    std::string name;
                    yaml_node_t* nodes = nullptr;
                    doc.for_each_pair(b, {"block", "nodes"}, [&](const std::string& bk, yaml_node_t*, yaml_node_t* bv) {
                        if (bk == "block")
                            name = doc.scalar(bv, bk);
                        else
                            nodes = bv;
                    });
                    if (name.empty()) doc.fail(b, "a block needs \"block\" (its name)");
                    if (!nodes) doc.fail(b, fmt::format("block \"{}\" needs \"nodes\"", name));
                    add(b, name, nodes);
                });
            } else if (k == "tree") {
                doc.expect_mapping(v, "\"tree\"");
                yaml_node_t* switches = nullptr;
                doc.for_each_pair(v, {"switches"},
                                  [&](const std::string&, yaml_node_t*, yaml_node_t* sv) { switches = sv; });
                if (!switches) doc.fail(v, "\"tree\" needs \"switches\"");
                doc.expect_sequence(switches, "\"switches\"");
                doc.for_each_item(switches, [&](yaml_node_t* s) {
                    doc.expect_mapping(s, "a switch");
                    std::string name;
                    yaml_node_t* nodes = nullptr;
                    doc.for_each_pair(s, {"switch", "children", "nodes"},
                                      [&](const std::string& sk, yaml_node_t*, yaml_node_t* sv) {
                                          if (sk == "switch")
                                              name = doc.scalar(sv, sk);
                                          else if (sk == "nodes")
                                              nodes = sv;
                                      });
                    if (name.empty()) doc.fail(s, "a switch needs \"switch\" (its name)");
                    if (nodes) add(s, name, nodes); // leaf switch = domain
                });
            }
        });
    if (map.domains().empty()) doc.fail(chosen, "the topology defines no block and no leaf switch with nodes");
    map.defaults().default_slice = std::min(defaults.default_slice, map.max_slice());
    return map;
}

RackMap load_map(const std::string& path, MapFormat fmt, const MapDefaults& defaults) {
    std::string text = read_file(path);
    if (fmt == MapFormat::Auto) {
        auto ends = [&](std::string_view suf) {
            return path.size() >= suf.size() && path.compare(path.size() - suf.size(), suf.size(), suf) == 0;
        };
        if (ends(".conf")) {
            fmt = MapFormat::TopologyConf;
        } else {
            // the first meaningful character: '-' starts a YAML list
            fmt = MapFormat::NvlYaml;
            for (size_t i = 0; i < text.size(); ++i) {
                char c = text[i];
                if (c == '#') {
                    i = text.find('\n', i);
                    if (i == std::string::npos) break;
                    continue;
                }
                if (std::isspace(static_cast<unsigned char>(c))) continue;
                if (text.compare(i, 3, "---") == 0) {
                    i += 2;
                    continue;
                }
                if (c == '-' || c == '[') fmt = MapFormat::TopologyYaml;
                break;
            }
        }
    }
    switch (fmt) {
    case MapFormat::TopologyConf: return read_topology_conf(text, path, defaults);
    case MapFormat::TopologyYaml: return read_topology_yaml(text, path, defaults);
    default: return read_rack_map_yaml(text, path);
    }
}

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
    }
    return out;
}

std::string block_sizes_problem(const std::vector<int>& sizes) {
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
    out += fmt::format("BlockSizes={}\n", min_domain_size(map));
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
        out += fmt::format("  block:\n    block_sizes:\n      - {}\n    blocks:\n", min_domain_size(map));
        for (DomainId i = 0; i < map.domains().size(); ++i)
            out += fmt::format("      - block: {}\n        nodes: {}\n", yaml_str(map.domain(i).name),
                               yaml_str(map.domain_hostlist(i)));
    }
    return out;
}

void apply_overrides(RackMap& map, const MapOverrides& o, const std::string& origin) {
    try {
        if (o.spares) map.set_spares(*o.spares);
        if (o.gpus_per_node) map.set_gpus_per_node(*o.gpus_per_node);
    } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", origin, e.what()));
    }
    if (o.default_slice) {
        if (*o.default_slice < 1 || *o.default_slice > map.max_slice())
            throw Error(fmt::format("{}: default_slice={} is larger than any rack of the map can hold ({})", origin,
                                    *o.default_slice, map.max_slice()));
        map.defaults().default_slice = *o.default_slice;
    }
}

RackMap load_map(const std::string& path, const MapOverrides& o, const std::string& origin) {
    RackMap map = load_map(path);
    apply_overrides(map, o, origin);
    return map;
}

} // namespace nvl
