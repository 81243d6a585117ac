// nvl-topo — topology reports: show (like `scontrol show topology`), map
// (one cell per node, ANSI or SVG), snapshot (save the live state), export
// (a map in Slurm's formats). show and map read live Slurm through the
// adapter, or a snapshot file with --snapshot, so they work without Slurm.
#include "cli.hpp"
#include "fabric.hpp"
#include "gpu_count.hpp"
#include "map_io.hpp"
#include "rack_health.hpp"
#include "report.hpp"
#include "slurm_cluster.hpp"
#include "slurm_features.hpp"
#include "yaml_doc.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>

using namespace nvl;

// The options every command reads (commands name theirs in their help).
static const char* kOptions = R"(
  --map FILE          rack map: nvlslice YAML, Slurm topology.conf or topology.yaml
  --snapshot FILE     read the state from a snapshot file instead of live Slurm
  --reservation NAME  the spare reservation (default nvlslice_spares)
  --protect-reservation NAME  racks kept for the top slice job (nvlslice_protect)
  --rack-failure-reasons RE  show, map: the helper's rack_failure_reasons, so that racks
                      degraded by a failed node's reason are shown as it judges them (racks
                      whose failed nodes outnumber their spares are shown degraded anyway)
  --gpus-per-node G   every rack's GPUs per node (default: the map's; 4 for Slurm files)
  --spares S          every rack's spares (default: the map's; 2 for Slurm files)
  --color / --no-color  ANSI colours for map (default: when stdout is a terminal)
  --host NAME         check: the node name of this host (default: the host name)
  --hwloc-xml FILE    check: read this host's topology from an hwloc XML file
  --fabric FILE       check: also compare the map with a recorded discovery
  --live NODES        check: also compare it with one gathered now (srun, nvidia-smi)
)";

// One srun task per node prints the node name and its GPUs' fabric
// identity, as parse_fabric_report() reads it.
static std::string gather_fabric_live(const std::string& nodes) {
    for (char c : nodes)
        if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("[],-_.", c))
            throw Error(fmt::format("--live {}: expected a Slurm node list such as nvl[0001-0036]", nodes));
    const std::string cmd =
        fmt::format("srun --quiet --nodelist='{}' --ntasks-per-node=1 sh -c 'printf \"%s \" \"$SLURMD_NODENAME\"; "
                    "nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status "
                    "--format=csv,noheader 2>/dev/null | paste -sd\";\" -'",
                    nodes);
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) throw Error("--live: cannot run srun");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = pclose(p);
    if (rc != 0) throw Error(fmt::format("--live {}: srun failed (exit {}); is the node list right?", nodes, rc));
    return out;
}

static std::vector<NodeFabric> fabric_input(const cli::Options& o) {
    if (o.has("live")) return parse_fabric_report(gather_fabric_live(o.str("live")), "srun --live " + o.str("live"));
    return parse_fabric_report(read_file(o.str("fabric")), o.str("fabric"));
}

static std::string write_map_as(const RackMap& map, const std::string& f) {
    if (f == "block") return write_topology_conf_block(map);
    if (f == "tree") return write_topology_conf_tree(map);
    if (f == "yaml") return write_topology_yaml(map, false);
    if (f == "yaml-tree") return write_topology_yaml(map, true);
    if (f == "nvl") return write_rack_map_yaml(map);
    throw Error(fmt::format("--format={}: expected block, tree, yaml, yaml-tree or nvl", f));
}

// The map named by --map, with its --gpus-per-node and --spares.
static RackMap map_of(const cli::Options& o) {
    if (!o.has("map")) throw Error("--map FILE is required (the rack map)");
    MapOverrides over;
    if (o.has("gpus-per-node")) over.gpus_per_node = int(o.integer("gpus-per-node", 4, 1, 1024));
    if (o.has("spares")) over.spares = int(o.integer("spares", 2, 0, 4096));
    return load_map(o.str("map"), over, "--map " + o.str("map"));
}

static int cmd_discover(const std::string&, const cli::Options& o) {
    if (o.has("fabric") == o.has("live"))
        throw Error("discover: give --fabric FILE (a recorded discovery) or --live NODES");
    DiscoverOptions d;
    if (o.has("spares")) d.spares = int(o.integer("spares", 2, 0, 4096));
    if (o.has("default-slice")) d.default_slice = int(o.integer("default-slice", 16, 1, 4096));
    d.rename = o.str("rename");
    Discovery found = discover_map(fabric_input(o), d);
    for (const auto& [node, why] : found.left_out)
        std::fprintf(stderr, "nvl-topo: left out %s: %s\n", node.c_str(), why.c_str());
    for (const auto& n : found.notes) std::fprintf(stderr, "nvl-topo: %s\n", n.c_str());
    std::fprintf(stderr, "nvl-topo: %zu NVLink domain(s), %zu node(s), %zu left out\n", found.map.domains().size(),
                 found.map.node_count(), found.left_out.size());
    std::fputs(write_map_as(found.map, o.str("format", "nvl")).c_str(), stdout);
    return 0;
}

static int cmd_export(const std::string&, const cli::Options& o) {
    if (o.has("beside")) {
        if (o.str("format", "yaml") != "yaml")
            throw Error(fmt::format("--beside {}: the site's topology and the blocks go together in topology.yaml "
                                    "only (--format yaml, not {})",
                                    o.str("beside"), o.str("format")));
        const std::string site = o.str("beside");
        std::fputs(write_topology_yaml_beside(map_of(o), read_file(site), site).c_str(), stdout);
        return 0;
    }
    std::fputs(write_map_as(map_of(o), o.str("format", "block")).c_str(), stdout);
    return 0;
}

static int cmd_check(const std::string&, const cli::Options& o) {
    const RackMap map = map_of(o);
    const auto cluster = SlurmCluster::open();
    SlurmCluster& slurm = *cluster;
    std::vector<std::string> findings = check_map_against_slurm(map, slurm.load_nodes());
    if (o.has("fabric") || o.has("live")) {
        // the racks against the NVLink domains the GPUs report
        const auto fabric = fabric_input(o);
        for (auto& f : compare_with_fabric(map, fabric)) findings.push_back(std::move(f));
        if (findings.empty()) std::printf("fabric: %zu node(s) agree with the map\n", fabric.size());
    }
    // this host's GPUs, when it is a node of the map
    std::string host = o.str("host");
    if (host.empty()) {
        char buf[256] = {};
        gethostname(buf, sizeof buf - 1);
        host = buf;
        if (auto dot = host.find('.'); dot != std::string::npos) host.resize(dot);
    }
    if (auto id = map.find_node(host)) {
        int want = map.domain(map.domain_of(*id)).gpus_per_node;
        int have = count_nvidia_gpus(o.str("hwloc-xml"));
        if (have != want)
            findings.push_back(
                fmt::format("gpus: this host {} has {} NVIDIA GPU(s), the map says {}", host, have, want));
        else
            std::printf("gpus: %s has its %d NVIDIA GPUs\n", host.c_str(), have);
    }
    for (const auto& f : findings) std::printf("%s\n", f.c_str());
    std::printf("check: %zu mismatch(es): map %s (%zu racks, %zu nodes)\n", findings.size(), o.str("map").c_str(),
                map.domains().size(), map.node_count());
    return findings.empty() ? 0 : 1;
}

// show, map and snapshot: the state from live Slurm or a snapshot file.
static int cmd_state(const std::string& cmd, const cli::Options& o) {
    const RackMap map = map_of(o);
    Snapshot snap(map);
    std::optional<Reservation> protection;
    std::string mode;
    std::vector<std::string> reasons; // the nodes' Slurm reasons (none from a snapshot file)
    if (o.has("snapshot")) {
        if (cmd == "snapshot") throw Error("snapshot reads live Slurm; --snapshot is for show and map");
        snap = read_snapshot(map, read_file(o.str("snapshot")), o.str("snapshot"));
    } else {
        const auto cluster = SlurmCluster::open();
        SlurmCluster& slurm = *cluster;
        auto resvs = slurm.load_reservations(
            {o.str("reservation", "nvlslice_spares"), o.str("protect-reservation", "nvlslice_protect")});
        const std::vector<SlurmNode> nodes = slurm.load_nodes();
        snap = snapshot_from_slurm(map, nodes, slurm.load_jobs(), resvs[0]);
        reasons = node_reasons(map, nodes);
        protection = resvs[1];
        // the mode nvlslice's auto chooses on this Slurm (plugstack mode=
        // and the helper's mode: may override it)
        const SlurmFeatures f = local_slurm_features();
        mode = fmt::format("{} (auto on Slurm {}, {})", to_string(choose_hand_off(HandOff::Auto, f)), f.version,
                           f.topology_plugin.empty() ? "no topology plugin" : f.topology_plugin);
    }
    // degraded racks as nvlsliced judges them (rack_health.hpp)
    mark_degraded_racks(snap, reasons, reason_regex(o.str("rack-failure-reasons"), "--rack-failure-reasons"));
    if (cmd == "snapshot") {
        std::fputs(write_snapshot(snap).c_str(), stdout);
    } else if (cmd == "show") {
        std::fputs(render_show(snap, o.positional(), o.has("json"), protection, mode).c_str(), stdout);
    } else if (o.has("svg")) {
        std::ofstream(o.str("svg")) << render_map_svg(snap);
        std::fprintf(stderr, "nvl-topo: wrote %s\n", o.str("svg").c_str());
    } else {
        bool color = o.has("color") || (!o.has("no-color") && isatty(1));
        std::fputs(render_map_text(snap, color).c_str(), stdout);
    }
    return 0;
}

// The commands: each once, with its help and what runs it.
struct Command {
    const char* name;
    const char* help;
    int (*run)(const std::string& cmd, const cli::Options& o);
};
static const Command kCommands[] = {
    {"show", R"(  show [RACK...]      per rack: nodes, counts by state, room for a slice, slices with job ids;
                      then a cluster summary. --json for one JSON object.
)",
     cmd_state},
    {"map", R"(  map                 all racks, one cell per node: free, slice job, other job, spare,
                      draining, drained, down. --svg FILE writes an SVG picture instead.
)",
     cmd_state},
    {"snapshot", R"(  snapshot            print the live state as a snapshot file (see --snapshot)
)",
     cmd_state},
    {"check", R"(  check               the map against live Slurm (missing, extra nodes, rack features) and
                      this host's NVIDIA GPUs (hwloc) against the map; exit 1 on a mismatch
)",
     cmd_check},
    {"export", R"(  export              the map as Slurm topology.conf or topology.yaml:
                      --format block|tree|yaml|yaml-tree|nvl (default block);
                      --beside FILE: topology.yaml (Slurm 25.05+) with the site's own
                      topology FILE (topology.conf or topology.yaml) kept as the cluster
                      default and the racks as the block topology "nvlslice"
)",
     cmd_export},
    {"discover", R"(  discover            the rack map from the GPUs' NVLink fabric identity (ClusterUUID,
                      CliqueId): --fabric FILE (recorded) or --live NODES (one srun task per
                      node runs nvidia-smi); --format nvl|block|tree|yaml|yaml-tree (default
                      nvl); domains named <ClusterUUID>.<CliqueId> unless --rename FMT
                      ({index}, {uuid}, {clique}, e.g. "rack{index:03}"); nodes that break a
                      rule are listed on stderr with the reason and left out. No --map.
)",
     cmd_discover},
};

static std::string usage() {
    std::string u = "usage: nvl-topo COMMAND --map FILE [options]\n\n";
    for (const auto& c : kCommands) u += c.help;
    return u + kOptions;
}

int main(int argc, char** argv) {
    try {
        if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
            std::fputs(usage().c_str(), argc < 2 ? stderr : stdout);
            return argc < 2 ? 2 : 0;
        }
        const std::string cmd = argv[1];
        const Command* command = nullptr;
        std::string names;
        for (const auto& c : kCommands) {
            if (cmd == c.name) command = &c;
            names += fmt::format("{}{}", names.empty() ? "" : ", ", c.name);
        }
        if (!command) throw Error(fmt::format("unknown command \"{}\" (available: {})", cmd, names));
        cli::Options o(argc - 1, argv + 1,
                       {{"map", true},
                        {"format", true},
                        {"gpus-per-node", true},
                        {"spares", true},
                        {"snapshot", true},
                        {"reservation", true},
                        {"protect-reservation", true},
                        {"json", false},
                        {"svg", true},
                        {"color", false},
                        {"no-color", false},
                        {"hwloc-xml", true},
                        {"host", true},
                        {"fabric", true},
                        {"live", true},
                        {"rename", true},
                        {"beside", true},
                        {"default-slice", true},
                        {"rack-failure-reasons", true},
                        {"help", false}});
        if (o.has("help")) {
            std::fputs(usage().c_str(), stdout);
            return 0;
        }
        return command->run(cmd, o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "nvl-topo: %s\n", e.what());
        return 1;
    }
}
