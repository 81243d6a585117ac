#include "model.hpp"

#include "hostlist.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nvl {

bool Domain::allows_slice(int k) const {
    if (k <= 0 || k > capacity()) return false;
    return slice_sizes.empty() || std::find(slice_sizes.begin(), slice_sizes.end(), k) != slice_sizes.end();
}

DomainId RackMap::add_domain(Domain d, const std::vector<std::string>& node_names) {
    // Errors carry the domain's position when it came from a file.
    auto fail = [&](const std::string& msg) -> void {
        if (d.pos.line) throw ParseError(d.pos, msg);
        throw Error(msg);
    };
    if (d.name.empty()) fail("domain without a name");
    if (domain_index_.count(d.name))
        fail(fmt::format("domain \"{}\" is defined twice (domain names must be unique)", d.name));
    if (node_names.empty()) fail(fmt::format("domain \"{}\" has no nodes", d.name));
    if (d.gpus_per_node < 1)
        fail(fmt::format("domain \"{}\": gpus_per_node must be at least 1, got {}", d.name, d.gpus_per_node));
    if (d.spares < 0 || d.spares >= int(node_names.size()))
        fail(fmt::format("domain \"{}\": spares must be between 0 and {} (its node count - 1), got {}", d.name,
                         node_names.size() - 1, d.spares));
    // A whole map as large as one hostlist may be: the cap of each line's
    // hostlist alone let a 300-byte topology.conf of 1M-node lines take
    // minutes and gigabytes (found while fuzzing the readers).
    constexpr size_t kMaxNodes = size_t(1) << 20;
    if (node_names.size() > kMaxNodes - names_.size())
        fail(fmt::format("domain \"{}\": the map would have more than {} nodes", d.name, kMaxNodes));
    // and as many bytes of names: 2^20 names of 300 bytes each took 36 s
    // under ASan (fuzzing), no site has node names that long
    constexpr size_t kMaxNameBytes = size_t(32) << 20;
    size_t bytes = 0;
    for (const auto& n : node_names) bytes += n.size();
    if (bytes > kMaxNameBytes - std::min(kMaxNameBytes, name_bytes_))
        fail(fmt::format("domain \"{}\": the map's node names would take more than {} MiB", d.name,
                         kMaxNameBytes >> 20));
    name_bytes_ += bytes;
    DomainId id = DomainId(domains_.size());
    std::vector<NodeId> ids;
    ids.reserve(node_names.size());
    for (const auto& n : node_names) {
        auto it = node_index_.find(n);
        if (it != node_index_.end()) {
            const bool own = it->second >= names_.size() - ids.size();
            const std::string other = own ? d.name : domains_[node_domain_[it->second]].name;
            // Roll back what this call added so the map stays consistent.
            for (NodeId added : ids) node_index_.erase(names_[added]);
            names_.resize(names_.size() - ids.size());
            name_bytes_ -= bytes;
            node_domain_.resize(node_domain_.size() - ids.size());
            if (own) fail(fmt::format("node \"{}\" is listed twice in domain \"{}\"", n, d.name));
            fail(fmt::format("node \"{}\" of domain \"{}\" is already in domain \"{}\" (a node belongs to one domain)",
                             n, d.name, other));
        }
        NodeId nid = NodeId(names_.size());
        names_.push_back(n);
        node_domain_.push_back(id);
        node_index_.emplace(n, nid);
        ids.push_back(nid);
    }
    for (NodeId nid : ids) index_number(names_[nid], nid);
    d.nodes = std::move(ids);
    if (d.feature.empty()) d.feature = d.name;
    domain_index_.emplace(d.name, id);
    domains_.push_back(std::move(d));
    return id;
}

namespace {
// "nvl0012" -> prefix "nvl", number 12; false when the name does not end in
// 1 to 9 digits.
bool split_number(std::string_view name, std::string_view& prefix, uint32_t& number) {
    size_t i = name.size();
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
    const size_t digits = name.size() - i;
    if (digits == 0 || digits > 9) return false;
    uint32_t v = 0;
    for (size_t k = i; k < name.size(); ++k) v = v * 10 + uint32_t(name[k] - '0');
    prefix = name.substr(0, i);
    number = v;
    return true;
}
constexpr NodeId kNoNode = UINT32_MAX;
constexpr size_t kMaxPrefixes = 16;
} // namespace

void RackMap::index_number(const std::string& name, NodeId id) {
    std::string_view prefix;
    uint32_t number = 0;
    // numbers far beyond the node count would make the table sparse: the
    // hash index serves those names alone
    if (!split_number(name, prefix, number) || number > 4 * names_.size() + 1024) return;
    NumberedNames* t = nullptr;
    for (auto& x : numbered_)
        if (x.prefix == prefix) t = &x;
    if (!t) {
        if (numbered_.size() >= kMaxPrefixes) return;
        numbered_.push_back({std::string(prefix), {}});
        t = &numbered_.back();
    }
    if (t->by_number.size() <= number) t->by_number.resize(size_t(number) + 1, kNoNode);
    if (t->by_number[number] == kNoNode) t->by_number[number] = id; // "nvl01" and "nvl1": the first
}

std::optional<NodeId> RackMap::find_node(std::string_view name) const {
    std::string_view prefix;
    uint32_t number = 0;
    if (split_number(name, prefix, number))
        for (const auto& t : numbered_)
            if (t.prefix == prefix) {
                if (number < t.by_number.size() && t.by_number[number] != kNoNode &&
                    names_[t.by_number[number]] == name)
                    return t.by_number[number];
                break;
            }
    auto it = node_index_.find(std::string(name));
    if (it == node_index_.end()) return std::nullopt;
    return it->second;
}

std::optional<DomainId> RackMap::find_domain(std::string_view name) const {
    auto it = domain_index_.find(std::string(name));
    if (it == domain_index_.end()) return std::nullopt;
    return it->second;
}

void RackMap::set_spares(int spares) {
    for (const auto& d : domains_)
        if (spares < 0 || spares >= d.size())
            throw Error(fmt::format("spares={}: domain \"{}\" has {} nodes (spares must be 0 to {})", spares, d.name,
                                    d.size(), d.size() - 1));
    defaults_.spares = spares;
    for (auto& d : domains_) d.spares = spares;
}

void RackMap::set_gpus_per_node(int gpus) {
    if (gpus < 1) throw Error(fmt::format("gpus_per_node={}: must be at least 1", gpus));
    defaults_.gpus_per_node = gpus;
    for (auto& d : domains_) d.gpus_per_node = gpus;
}

int RackMap::max_slice() const {
    int m = 0;
    for (const auto& d : domains_) m = std::max(m, d.capacity());
    return m;
}

std::vector<std::string> RackMap::node_names(const std::vector<NodeId>& ids) const {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (NodeId n : ids) out.push_back(names_[n]);
    return out;
}

std::string RackMap::domain_hostlist(DomainId d) const {
    return hostlist_compress(node_names(domains_[d].nodes));
}

RackMap regular_map(int racks, int nodes_per_rack, int spares, int gpus_per_node) {
    if (racks < 1 || nodes_per_rack < 1)
        throw Error(fmt::format("a regular map needs at least 1 rack of 1 node, got {} x {}", racks, nodes_per_rack));
    MapDefaults defs;
    defs.spares = spares;
    defs.gpus_per_node = gpus_per_node;
    RackMap map(defs);
    const int total = racks * nodes_per_rack;
    const int nw = std::max(4, int(std::to_string(total).size()));
    const int rw = std::max(3, int(std::to_string(racks).size()));
    std::vector<std::string> names;
    for (int r = 0; r < racks; ++r) {
        names.clear();
        for (int i = 0; i < nodes_per_rack; ++i)
            names.push_back(fmt::format("nvl{:0{}d}", r * nodes_per_rack + i + 1, nw));
        Domain d;
        d.name = fmt::format("rack{:0{}d}", r + 1, rw);
        d.spares = spares;
        d.gpus_per_node = gpus_per_node;
        map.add_domain(std::move(d), names);
    }
    return map;
}

const char* to_string(NodeState s) {
    switch (s) {
    case NodeState::Idle: return "idle";
    case NodeState::Allocated: return "allocated";
    case NodeState::Mixed: return "mixed";
    case NodeState::Draining: return "draining";
    case NodeState::Drained: return "drained";
    case NodeState::Down: return "down";
    case NodeState::SpareReserved: return "spare";
    case NodeState::Unknown: return "unknown";
    }
    return "unknown";
}

std::optional<NodeState> parse_node_state(std::string_view s) {
    static const NodeState all[] = {NodeState::Idle,          NodeState::Allocated, NodeState::Mixed,
                                    NodeState::Draining,      NodeState::Drained,   NodeState::Down,
                                    NodeState::SpareReserved, NodeState::Unknown};
    for (NodeState st : all)
        if (s == to_string(st)) return st;
    return std::nullopt;
}

Snapshot::Snapshot(const RackMap& map)
    : map_(&map), nodes_(map.node_count()), counts_(map.domains().size()), degraded_why_(map.domains().size()) {
    for (DomainId d = 0; d < counts_.size(); ++d) {
        counts_[d].free = map.domain(d).size();
        counts_[d].healthy = map.domain(d).size();
    }
}

void Snapshot::account(DomainId d, const NodeStatus& st, int sign) {
    DomainCounts& c = counts_[d];
    if (is_free(st.state)) c.free += sign;
    if (is_healthy(st.state)) c.healthy += sign;
    if (st.lent && is_healthy(st.state) && !is_free(st.state)) c.lent += sign;
}

void Snapshot::set(NodeId n, const NodeStatus& st) {
    DomainId d = map_->domain_of(n);
    account(d, nodes_[n], -1);
    nodes_[n] = st;
    account(d, st, +1);
}

void Snapshot::set_state(NodeId n, NodeState s) {
    NodeStatus st = nodes_[n];
    st.state = s;
    set(n, st);
}

void Snapshot::set_degraded(DomainId d, std::string why) {
    counts_[d].degraded = !why.empty();
    degraded_why_[d] = std::move(why);
}

int Snapshot::total_free() const {
    int t = 0;
    for (const auto& c : counts_) t += c.free;
    return t;
}

int Snapshot::total_healthy() const {
    int t = 0;
    for (const auto& c : counts_) t += c.healthy;
    return t;
}

} // namespace nvl
