// nvlslice — the rack / NVLink-domain model and a cluster snapshot.
//
// A RackMap is the static description of the cluster (what an admin writes
// once): domains (one NVL72 rack = one NVLink domain), their ordered nodes,
// GPUs per node, the spares each domain keeps, and the slice sizes allowed.
// A Snapshot is the live state on top of a map: per node its state and
// owner. The core never includes a Slurm header: adapters translate Slurm's
// node and job records into a Snapshot.
#pragma once

#include "error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nvl {

using NodeId = uint32_t;
using DomainId = uint32_t;
using JobId = uint32_t;
inline constexpr DomainId kNoDomain = UINT32_MAX;

struct Domain {
    std::string name;
    std::vector<NodeId> nodes; // in map order: the order slices are cut in
    int gpus_per_node = 4;
    int spares = 2;
    std::vector<int> slice_sizes; // allowed slice sizes; empty = any size
    std::string feature;          // Slurm node feature naming the rack
    // The NVLink domain its GPUs report, "<ClusterUUID>.<CliqueId>" (map key
    // fabric:, written by nvl-topo discover); "" = the name, when it has that
    // form, else none (fabric.hpp, expected_fabric_key).
    std::string fabric;
    SourcePos pos; // where the domain was defined, if from a file

    int size() const { return int(nodes.size()); }
    // The largest slice this domain can ever host while keeping its spares.
    int capacity() const { return size() > spares ? size() - spares : 0; }
    bool allows_slice(int k) const;
};

struct MapDefaults {
    int gpus_per_node = 4;
    int spares = 2;
    int default_slice = 16;       // used when a job asks for a slice without a size
    std::vector<int> slice_sizes; // empty = any size up to a domain's capacity
};

class RackMap {
  public:
    RackMap() = default;
    explicit RackMap(MapDefaults d) : defaults_(std::move(d)) {}

    // Adds a domain whose nodes are given by name. Throws nvl::Error (with
    // the domain's SourcePos) on a duplicate domain name, a node already in
    // another domain, an empty domain, or spares/gpus out of range.
    DomainId add_domain(Domain d, const std::vector<std::string>& node_names);

    const MapDefaults& defaults() const { return defaults_; }
    MapDefaults& defaults() { return defaults_; }
    const std::vector<Domain>& domains() const { return domains_; }
    const Domain& domain(DomainId d) const { return domains_[d]; }
    size_t node_count() const { return names_.size(); }
    const std::string& node_name(NodeId n) const { return names_[n]; }
    DomainId domain_of(NodeId n) const { return node_domain_[n]; }
    std::optional<NodeId> find_node(std::string_view name) const;
    std::optional<DomainId> find_domain(std::string_view name) const;

    // The per-rack limit: the largest capacity() of any domain.
    int max_slice() const;
    // Site overrides (map_io.hpp, apply_overrides): every domain at once.
    // Throw nvl::Error when a domain cannot take the value.
    void set_spares(int spares);
    void set_gpus_per_node(int gpus);
    // Hostlist expression of a domain's nodes.
    std::string domain_hostlist(DomainId d) const;
    std::vector<std::string> node_names(const std::vector<NodeId>& ids) const;

  private:
    MapDefaults defaults_;
    std::vector<Domain> domains_;
    std::vector<std::string> names_;
    size_t name_bytes_ = 0; // of all names_, capped (add_domain)
    std::vector<DomainId> node_domain_;
    std::unordered_map<std::string, NodeId> node_index_;
    // The fast path of find_node(): names are a prefix and a number
    // (nvl0001); per prefix, the node of each number. A name found here is
    // checked against names_ (zero padding), else the hash index answers.
    struct NumberedNames {
        std::string prefix;
        std::vector<NodeId> by_number; // UINT32_MAX: none
    };
    std::vector<NumberedNames> numbered_;
    void index_number(const std::string& name, NodeId id);
    std::unordered_map<std::string, DomainId> domain_index_;
};

// A regular cluster: `racks` domains of `nodes_per_rack` nodes, named as
// contrib/gen-map.sh names them (rack001 = nvl[0001-0018], ...; wider
// numbers for larger clusters). The one map builder of the simulator, the
// capacity model and the benchmarks.
RackMap regular_map(int racks, int nodes_per_rack, int spares, int gpus_per_node = 4);

enum class NodeState : uint8_t {
    Idle,          // up, no job
    Allocated,     // fully allocated to a job
    Mixed,         // partly allocated (not free for a whole-node slice)
    Draining,      // a job still runs, the node will drain
    Drained,       // no job, out of service
    Down,          // not responding / failed
    SpareReserved, // up, no job, inside the spare pool of its domain
    Unknown,
};

const char* to_string(NodeState s);
std::optional<NodeState> parse_node_state(std::string_view s);

// Up and not on its way out: counts toward a domain's healthy nodes.
inline bool is_healthy(NodeState s) {
    return s == NodeState::Idle || s == NodeState::Allocated || s == NodeState::Mixed || s == NodeState::SpareReserved;
}
// Up and without a job: can take a new slice node.
inline bool is_free(NodeState s) {
    return s == NodeState::Idle || s == NodeState::SpareReserved;
}

struct NodeStatus {
    NodeState state = NodeState::Idle;
    JobId job_id = 0;         // the (first) job on the node, 0 = none
    int16_t slice = -1;       // slice index of that job on this node, -1 = not a slice job
    bool preemptible = false; // a repair or defragmentation may requeue the job (checkpointable)
    // The job runs as lent work (on spares lent to it, or preemptible work
    // smaller than a slice anywhere: place_or_borrow()): its nodes stand in
    // for the domain's kept spares, since a repair of another job takes
    // them back. A job's own nodes cannot repair it, so a preemptible slice
    // job does not stand in for them (else the real spares go to other work
    // and its own failure finds none); lent work's own failure may find
    // none in its rack, and it moves or goes back to the queue.
    bool lent = false;
};

// Per-domain counts kept up to date by Snapshot::set(); placement reads
// these instead of walking every node (the hot path).
struct DomainCounts {
    int free = 0;    // idle + spare-reserved
    int healthy = 0; // is_healthy()
    int lent = 0;    // healthy busy nodes of jobs lent spares (NodeStatus::lent)
    // Out of service as a whole (rack_health.hpp): no new slice, no repair
    // inside it; its slice jobs move out.
    bool degraded = false;
};

// The spares are a domain's failure budget: a domain with f failed nodes
// keeps max(0, spares - f) of its healthy nodes idle for repairs, so a rack of
// 18 with 1 or 2 failed nodes still hosts a full 16-node slice. "Failed" is
// every node that is not healthy (draining, drained, down, unknown).
inline int kept_spares(int spares, int failed) {
    return failed >= spares ? 0 : spares - failed;
}
inline int kept_spares(const Domain& dom, const DomainCounts& c) {
    return kept_spares(dom.spares, dom.size() - c.healthy);
}

// Free nodes of a domain a new slice may take: free minus the spares it
// keeps, where nodes lent to preemptible work count as kept spares (a repair
// takes them back). With `use_spares`, every free node.
inline int domain_room(const Domain& dom, const DomainCounts& c, bool use_spares) {
    if (c.degraded) return 0;
    if (use_spares) return c.free;
    const int kept = kept_spares(dom, c);
    return c.free + (c.lent < kept ? c.lent : kept) - kept;
}

// Kept spares of a domain that are idle, not lent out: what a borrower may
// take there (none in a degraded domain, which hosts nothing).
inline int idle_kept_spares(const Domain& dom, const DomainCounts& c) {
    if (c.degraded) return 0;
    const int kept = kept_spares(dom, c);
    const int unlent = kept - (c.lent < kept ? c.lent : kept);
    return c.free < unlent ? c.free : unlent;
}

class Snapshot {
  public:
    // Every node starts Idle. The map must outlive the snapshot.
    explicit Snapshot(const RackMap& map);

    const RackMap& map() const { return *map_; }
    const NodeStatus& node(NodeId n) const { return nodes_[n]; }
    void set(NodeId n, const NodeStatus& st);
    void set_state(NodeId n, NodeState s);
    const DomainCounts& counts(DomainId d) const { return counts_[d]; }
    const std::vector<DomainCounts>& all_counts() const { return counts_; }
    int total_free() const;
    int total_healthy() const;
    // A degraded domain, and why ("" = not degraded). See rack_health.hpp.
    void set_degraded(DomainId d, std::string why);
    bool degraded(DomainId d) const { return counts_[d].degraded; }
    const std::string& degraded_why(DomainId d) const { return degraded_why_[d]; }

  private:
    void account(DomainId d, const NodeStatus& st, int sign);

    const RackMap* map_;
    std::vector<NodeStatus> nodes_;
    std::vector<DomainCounts> counts_;
    std::vector<std::string> degraded_why_;
};

} // namespace nvl
