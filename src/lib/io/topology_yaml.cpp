// Reader of Slurm's topology.yaml (25.05+): a block or a tree topology.
#include "map_io.hpp"
#include "map_readers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nvl {

using namespace map_detail;

namespace {

// The topology the map is read from: the one named `topology`, else the
// cluster_default one, else the first block or tree topology.
yaml_node_t* choose_topology(YamlDoc& doc, yaml_node_t* root, std::string_view topology) {
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
    return chosen;
}

// The domains of the chosen topology, each added to the map as read.
struct DomainReader {
    YamlDoc& doc;
    const MapDefaults& defaults;
    RackMap& map;

    void add(yaml_node_t* item, const std::string& name, yaml_node_t* nodes_node) {
        std::vector<std::string> names = expand_at(doc, nodes_node, "nodes");
        Domain d;
        d.name = name;
        d.gpus_per_node = defaults.gpus_per_node;
        d.spares = std::min(defaults.spares, int(names.size()) - 1);
        d.slice_sizes = defaults.slice_sizes;
        d.pos = doc.pos(item);
        map.add_domain(std::move(d), names); // errors name d.pos
    }

    // "block": each block a domain
    void blocks(yaml_node_t* v) {
        doc.expect_mapping(v, "\"block\"");
        yaml_node_t* blocks = nullptr;
        doc.for_each_pair(v, {"block_sizes", "blocks"}, [&](const std::string& bk, yaml_node_t*, yaml_node_t* bv) {
            if (bk == "block_sizes") {
                auto sizes = doc.int_list(bv, bk, 1, kMaxNodesPerDomain);
                if (auto why = block_sizes_problem(sizes)) doc.fail(bv, fmt::format("\"block_sizes\": {}", *why));
            } else
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
    }

    // "tree": each leaf switch (one with nodes) a domain
    void tree(yaml_node_t* v) {
        doc.expect_mapping(v, "\"tree\"");
        yaml_node_t* switches = nullptr;
        doc.for_each_pair(v, {"switches"}, [&](const std::string&, yaml_node_t*, yaml_node_t* sv) { switches = sv; });
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
};

} // namespace

RackMap read_topology_yaml(std::string_view text, const std::string& file, const MapDefaults& defaults,
                           std::string_view topology) {
    YamlDoc doc(text, file);
    yaml_node_t* root = doc.root();
    if (!root) throw ParseError({file, 1, 1}, "topology.yaml is empty (expected a list of topologies)");
    doc.expect_sequence(root, "topology.yaml");
    yaml_node_t* chosen = choose_topology(doc, root, topology);
    RackMap map(defaults);
    DomainReader reader{doc, defaults, map};
    doc.for_each_pair(chosen, {"topology", "cluster_default", "block", "tree", "flat"},
                      [&](const std::string& k, yaml_node_t*, yaml_node_t* v) {
                          if (k == "block")
                              reader.blocks(v);
                          else if (k == "tree")
                              reader.tree(v);
                      });
    if (map.domains().empty()) doc.fail(chosen, "the topology defines no block and no leaf switch with nodes");
    map.defaults().default_slice = std::min(defaults.default_slice, map.max_slice());
    return map;
}

} // namespace nvl
