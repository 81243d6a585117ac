// Reader of nvlslice's own YAML rack map.
#include "map_io.hpp"
#include "fabric.hpp"
#include "map_readers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nvl {

using namespace map_detail;

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
        doc.for_each_pair(item, {"name", "nodes", "gpus_per_node", "spares", "slice_sizes", "feature", "fabric"},
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
                              } else if (k == "fabric") {
                                  d.fabric = doc.scalar(val, k);
                                  if (!looks_like_fabric_key(d.fabric))
                                      doc.fail(val, fmt::format("\"fabric\": \"{}\" is not <ClusterUUID>.<CliqueId> "
                                                                "(as nvl-topo discover writes it, e.g. "
                                                                "\"8f3c0d52-1c7e-4c2a-9a51-0d6f2b7e4a10.1\")",
                                                                d.fabric));
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

} // namespace nvl
