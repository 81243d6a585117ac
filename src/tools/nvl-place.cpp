// nvl-place — what nvlslice would do with one job on a rack map: a dry run
// of the placement engine, on an idle cluster or on a synthetic busy one.
#include "cli.hpp"
#include "hostlist.hpp"
#include "map_io.hpp"
#include "placement.hpp"

#include <fmt/format.h>

#include <cstdio>

using namespace nvl;

static const char* kUsage = R"(usage: nvl-place --map FILE --nodes N [options]

Places one job with nvlslice's engine and prints the slices.

  --map FILE              rack map: nvlslice YAML, Slurm topology.conf or topology.yaml
  --nodes N               nodes the job asks for (sbatch -N)
  --nvl-slice SIZE|auto   slice size (default: the map's default_slice); auto = balanced
  --nvl-placement strict|prefer
  --split                 prefer mode after its wait: allow the fewest-racks fallback
  --plain                 a job without slices (packed into broken racks first)
  --fill FRACTION         scatter small jobs over FRACTION of the nodes first (0..1)
  --seed S                seed for --fill (default 1)
  --idle-racks K          then empty K random racks (jobs that ended)
  --down HOSTLIST         mark these nodes down
  --drain HOSTLIST        mark these nodes drained
  --gpus-per-node G       every rack's GPUs per node (default: the map's; 4 for Slurm files)
  --spares S              every rack's spares (default: the map's; 2 for Slurm files)
  --json                  print one JSON object
)";

static void mark(Snapshot& snap, const std::string& list, NodeState st, const char* opt) {
    for (const auto& name : hostlist_expand(list)) {
        auto id = snap.map().find_node(name);
        if (!id) throw Error(fmt::format("--{}: node \"{}\" is not in the map", opt, name));
        snap.set(*id, {st, 0, -1, false});
    }
}

int main(int argc, char** argv) {
    try {
        cli::Options o(argc, argv,
                       {{"map", true},
                        {"nodes", true},
                        {"nvl-slice", true},
                        {"nvl-placement", true},
                        {"split", false},
                        {"plain", false},
                        {"fill", true},
                        {"seed", true},
                        {"idle-racks", true},
                        {"down", true},
                        {"drain", true},
                        {"gpus-per-node", true},
                        {"spares", true},
                        {"json", false},
                        {"help", false}});
        if (o.has("help")) {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (!o.has("map")) throw Error("--map FILE is required (e.g. --map /etc/nvlslice/nvlslice-map.yaml)");
        if (!o.has("nodes")) throw Error("--nodes N is required");
        MapOverrides over;
        if (o.has("gpus-per-node")) over.gpus_per_node = int(o.integer("gpus-per-node", 4, 1, 1024));
        if (o.has("spares")) over.spares = int(o.integer("spares", 2, 0, 4096));
        RackMap map = load_map(o.str("map"), over, "--map " + o.str("map"));
        Snapshot snap(map);
        int busy = 0;
        if (o.has("fill"))
            busy = cli::scatter_jobs(snap, o.real("fill", 0, 0, 1), uint64_t(o.integer("seed", 1, 0, 1L << 62)),
                                     int(o.integer("idle-racks", 0, 0, 1 << 20)));
        if (o.has("down")) mark(snap, o.str("down"), NodeState::Down, "down");
        if (o.has("drain")) mark(snap, o.str("drain"), NodeState::Drained, "drain");

        SliceRequest req;
        req.job_id = 1;
        req.total_nodes = int(o.integer("nodes", 0, 1, 1 << 20));
        req.sliced = !o.has("plain");
        std::string slice = o.str("nvl-slice", std::to_string(map.defaults().default_slice));
        if (slice == "auto") {
            req.slice_size = 0;
        } else {
            req.slice_size = int(o.integer("nvl-slice", 0, 1, 4096));
        }
        std::string mode = o.str("nvl-placement", "strict");
        if (mode == "prefer")
            req.mode = PlacementMode::Prefer;
        else if (mode != "strict")
            throw Error(fmt::format("--nvl-placement={}: expected strict or prefer", mode));
        req.allow_split = o.has("split");

        PlacementResult r = place(snap, req);
        if (o.has("json")) {
            std::string slices;
            for (const auto& s : r.placement.slices) {
                if (!slices.empty()) slices += ",";
                slices += fmt::format(R"({{"index":{},"domain":"{}","nodes":"{}","leader":"{}"}})", s.index,
                                      s.domain == kNoDomain ? "" : map.domain(s.domain).name,
                                      hostlist_compress(map.node_names(s.nodes)), map.node_name(s.nodes.front()));
            }
            fmt::print(R"({{"ok":{},"reason":"{}","detail":"{}","slice_size":{},"split":{},"slices":[{}]}})"
                       "\n",
                       r.ok, to_string(r.reason), r.detail, r.placement.slice_size, r.placement.split, slices);
            return r.ok ? 0 : 2;
        }
        fmt::print("map: {} domains, {} nodes; {} nodes busy, {} free\n", map.domains().size(), map.node_count(), busy,
                   snap.total_free());
        fmt::print("request: {} nodes, --nvl-slice={}, {}{}\n", req.total_nodes, slice, mode,
                   req.sliced ? "" : " (plain job)");
        if (!r.ok) {
            fmt::print("not placed: {}\n", r.detail);
            return 2;
        }
        fmt::print("placed: {} slice(s) of {} on {} domain(s){}\n", r.placement.slices.size(), r.placement.slice_size,
                   r.placement.domain_count(map), r.placement.split ? "\n  " + r.detail : "");
        for (const auto& s : r.placement.slices)
            fmt::print("  slice {:<3} {:<10} {:<28} leader {}\n", s.index,
                       s.domain == kNoDomain ? "(split)" : map.domain(s.domain).name,
                       hostlist_compress(map.node_names(s.nodes)), map.node_name(s.nodes.front()));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvl-place: %s\n", e.what());
        return 1;
    }
}
