// nvlslice — NVLink fabric identity: the rack map from what the GPUs say.
//
// Every GPU of an NVL72 rack reports its NVLink domain as a ClusterUUID and
// a CliqueId (nvidia-smi --query-gpu=fabric.clusterUuid,fabric.cliqueId,
// fabric.state,fabric.status; NVML's GPU fabric info), with the fabric
// state, status and (newer drivers) a health summary. Tools that build
// Slurm block topologies name a domain "<ClusterUUID>.<CliqueId>".
//
// Discovery input, one line per node (or several lines per node, whose GPUs
// add up):
//   NODE UUID, CLIQUE, STATE, STATUS[, HEALTH][; UUID, CLIQUE, ...]
// i.e. the node name, a blank, then nvidia-smi's CSV lines for its GPUs
// joined by ';'. Blank lines and lines starting with '#' are skipped.
#pragma once

#include "model.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

struct GpuFabric {
    std::string cluster_uuid;
    std::string clique;
    std::string state;  // Completed, In Progress, Not Started, Not Supported
    std::string status; // Success, or the error nvidia-smi names
    std::string health; // Healthy, ... ("" when not reported)
};

// One GPU's CSV line: "UUID, CLIQUE, STATE, STATUS[, HEALTH]". Throws
// nvl::Error saying what is missing.
GpuFabric parse_gpu_fabric(std::string_view csv);

// Why a GPU cannot place its node in a domain (nullopt when it can): the fabric
// state must be Completed and the status Success, the CliqueId not 0 and
// the ClusterUUID not all zeros; a health summary, when reported, Healthy.
std::optional<std::string> gpu_fabric_problem(const GpuFabric& g);

// "<ClusterUUID>.<CliqueId>"
std::string fabric_domain_key(const GpuFabric& g);

struct NodeFabric {
    std::string node;
    std::vector<GpuFabric> gpus;
    int line = 0; // first line that named it
};

// Throws ParseError with file:line on a malformed line.
std::vector<NodeFabric> parse_fabric_report(std::string_view text, const std::string& file);

// Why a node is left out of a discovered map (nullopt when it is not): no GPUs,
// a GPU with a fabric problem (named by its index), or GPUs in more than one
// domain.
std::optional<std::string> node_fabric_problem(const NodeFabric& n);

struct DiscoverOptions {
    int spares = 2;
    int default_slice = 16;
    // Domain names: empty = "<ClusterUUID>.<CliqueId>"; else an fmt pattern
    // with {index} (1, 2, ... in the order of the domains' first nodes),
    // {uuid} and {clique}, e.g. "rack{index:03}".
    std::string rename;
};

struct Discovery {
    RackMap map;
    std::vector<std::pair<std::string, std::string>> left_out; // node, reason
    std::vector<std::string> notes;                            // e.g. a domain too small for its spares
    std::vector<std::string> keys;                             // per map domain: its "<uuid>.<clique>"
};

// Nodes of one domain in natural name order (nvl2 before nvl10); domains in
// the order of their first node. Throws nvl::Error when nothing is valid or
// the rename pattern is bad (naming the option).
Discovery discover_map(const std::vector<NodeFabric>& nodes, const DiscoverOptions& o);

// The node-side check (plugstack check_fabric): ---------------------------

// "<ClusterUUID>.<CliqueId>" with a UUID of 32 hex digits (dashes allowed)
// and a decimal CliqueId.
bool looks_like_fabric_key(std::string_view s);

// The NVLink domain the map expects a domain's GPUs to report: its fabric:
// key, else its name when that is a fabric key; "" = no expectation.
std::string expected_fabric_key(const Domain& d);

// One line per problem of this node's GPUs, each naming the node, the GPU
// (its index) and the reason: a GPU that cannot be in a domain
// (gpu_fabric_problem), or one in another domain than the map's rack
// `rack` expects (`expected_key`, "" = not checked). Empty = all is well.
std::vector<std::string> check_node_fabric(const std::string& node, const std::vector<GpuFabric>& gpus,
                                           const std::string& rack, const std::string& expected_key);

// NVML's numbers in nvidia-smi's words: the fabric state (0-3), the
// ClusterUUID bytes, and the health mask ("" when no field is reported,
// "Healthy", or the conditions found, e.g. "Degraded Bandwidth").
std::string fabric_state_name(unsigned state);
std::string fabric_uuid_string(const unsigned char* bytes16);
std::string fabric_health_from_mask(unsigned mask);

// A map against a discovery: nodes the fabric puts in another rack than the
// map, racks split over fabric domains or sharing one, nodes left out or
// missing. Empty when they agree.
std::vector<std::string> compare_with_fabric(const RackMap& map, const std::vector<NodeFabric>& nodes);

} // namespace nvl
