// nvl-topo — topology reports. This version: `export`, a rack map written
// as Slurm's topology.conf (block or tree) or topology.yaml, or as
// nvlslice's own YAML map (any input format to any output format).
#include "cli.hpp"
#include "map_io.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

using namespace nvl;

static const char* kUsage = R"(usage: nvl-topo export --map FILE [--format block|tree|yaml|yaml-tree|nvl]

  --map FILE          rack map: nvlslice YAML, Slurm topology.conf or topology.yaml
  --format F          block:     topology.conf for topology/block (default)
                      tree:      topology.conf for topology/tree (one leaf switch per rack)
                      yaml:      topology.yaml (Slurm 25.05+), block topology
                      yaml-tree: topology.yaml, tree topology
                      nvl:       nvlslice's YAML rack map
  --gpus-per-node G   for Slurm topology inputs (default 4)
  --spares S          for Slurm topology inputs (default 2)
)";

int main(int argc, char** argv) {
    try {
        if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
            std::fputs(kUsage, argc < 2 ? stderr : stdout);
            return argc < 2 ? 2 : 0;
        }
        if (std::strcmp(argv[1], "export") != 0)
            throw Error(fmt::format("unknown subcommand \"{}\" (available: export)", argv[1]));
        cli::Options o(argc - 1, argv + 1,
                       {{"map", true}, {"format", true}, {"gpus-per-node", true}, {"spares", true}, {"help", false}});
        if (o.has("help")) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (!o.has("map")) throw Error("--map FILE is required");
        MapDefaults defs;
        defs.gpus_per_node = int(o.integer("gpus-per-node", 4, 1, 1024));
        defs.spares = int(o.integer("spares", 2, 0, 4096));
        RackMap map = load_map(o.str("map"), MapFormat::Auto, defs);
        const std::string f = o.str("format", "block");
        std::string out;
        if (f == "block") out = write_topology_conf_block(map);
        else if (f == "tree") out = write_topology_conf_tree(map);
        else if (f == "yaml") out = write_topology_yaml(map, false);
        else if (f == "yaml-tree") out = write_topology_yaml(map, true);
        else if (f == "nvl") out = write_rack_map_yaml(map);
        else throw Error(fmt::format("--format={}: expected block, tree, yaml, yaml-tree or nvl", f));
        std::fputs(out.c_str(), stdout);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvl-topo: %s\n", e.what());
        return 1;
    }
}
