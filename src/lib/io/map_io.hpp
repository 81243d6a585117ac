// nvlslice — readers and writers of rack maps.
//
// Three inputs give the same RackMap:
//  - nvlslice's own YAML rack map (schema in README and etc/nvlslice-map.yaml);
//  - Slurm's topology.conf: BlockName= lines (topology/block) or SwitchName=
//    lines (topology/tree; every leaf switch, a switch with Nodes=, is a domain);
//  - Slurm's topology.yaml (25.05+): a block or a tree topology.
// Slurm's files carry no GPU or spare counts: those come from MapDefaults.
// Every error is a ParseError naming file:line:column, the key and what
// would be accepted.
#pragma once

#include "model.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

RackMap read_rack_map_yaml(std::string_view text, const std::string& file);
RackMap read_topology_conf(std::string_view text, const std::string& file, const MapDefaults& defaults = {});
// `topology` selects an entry by name; empty: the cluster_default one, else
// the first block or tree topology of the file.
RackMap read_topology_yaml(std::string_view text, const std::string& file, const MapDefaults& defaults = {},
                           std::string_view topology = {});

// Slurm's rule for topology/block BlockSizes: the first value is the base
// block size, every later one the base times a power of two, increasing.
// nullopt when `sizes` follows it, else why not (with the fix).
std::optional<std::string> block_sizes_problem(const std::vector<int>& sizes);

enum class MapFormat { Auto, NvlYaml, TopologyConf, TopologyYaml };
// Reads a file; Auto tells the format from the name and content: *.conf is
// topology.conf, a YAML list is Slurm's topology.yaml, a YAML mapping is
// nvlslice's map.
RackMap load_map(const std::string& path, MapFormat fmt = MapFormat::Auto, const MapDefaults& defaults = {});

// A site's overrides of what a map says (plugstack.conf arguments,
// nvlsliced's configuration, the tools' options), applied the same way to
// every map format: Slurm's files carry no spare or GPU counts, and an
// nvlslice map's own values give way to an explicit argument.
struct MapOverrides {
    std::optional<int> spares;        // every domain's spares
    std::optional<int> gpus_per_node; // every domain's GPUs per node
    std::optional<int> default_slice;
};
// Throws nvl::Error naming `origin` and the argument when an override does
// not fit the map (spares >= a domain's nodes, a default_slice larger than
// any domain can hold).
void apply_overrides(RackMap& map, const MapOverrides& o, const std::string& origin);
// load_map() + apply_overrides().
RackMap load_map(const std::string& path, const MapOverrides& o, const std::string& origin);

std::string write_rack_map_yaml(const RackMap& map);
std::string write_topology_conf_block(const RackMap& map);
// One leaf switch per domain under one top switch named `top`.
std::string write_topology_conf_tree(const RackMap& map, std::string_view top = "spine");
std::string write_topology_yaml(const RackMap& map, bool tree = false, std::string_view name = "nvlslice");
// Slurm's topology.yaml (25.05+) with a site's own topology kept beside
// the map's blocks: `site` is the site's topology.conf (a tree or blocks,
// which becomes the topology "site") or topology.yaml (each of its
// topologies kept as it is, comments dropped, but one named "nvlslice":
// this writer's own, from an earlier run, which it replaces). The site's
// cluster_default stays the default; the map's blocks are the topology
// `name`, cluster_default false, for the partitions that name it
// (Topology=nvlslice). Errors name the site's file:line.
std::string write_topology_yaml_beside(const RackMap& map, std::string_view site, const std::string& site_file,
                                       std::string_view name = "nvlslice");

} // namespace nvl
