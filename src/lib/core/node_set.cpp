#include "node_set.hpp"

#include "hostlist.hpp"

#include <bitset>

namespace nvl {

NodeSet::NodeSet(size_t universe, bool all) : n_(universe), w_((universe + 63) / 64, all ? ~uint64_t(0) : 0) {
    if (all && (n_ & 63)) w_.back() = (uint64_t(1) << (n_ & 63)) - 1; // nothing past the universe
}

NodeSet NodeSet::of(const RackMap& map, std::string_view hostlist) {
    NodeSet s(map.node_count());
    s.add(map, hostlist);
    return s;
}

void NodeSet::add(const RackMap& map, std::string_view hostlist) {
    if (hostlist.empty()) return;
    for (const auto& n : hostlist_expand(hostlist))
        if (auto id = map.find_node(n)) insert(*id);
}

size_t NodeSet::count() const {
    size_t c = 0;
    for (uint64_t w : w_) c += std::bitset<64>(w).count();
    return c;
}

bool NodeSet::none() const {
    for (uint64_t w : w_)
        if (w) return false;
    return true;
}

NodeSet& NodeSet::operator&=(const NodeSet& o) {
    for (size_t i = 0; i < w_.size(); ++i) w_[i] &= i < o.w_.size() ? o.w_[i] : 0;
    return *this;
}

std::vector<NodeId> NodeSet::ids() const {
    std::vector<NodeId> out;
    for (size_t i = 0; i < w_.size(); ++i)
        for (uint64_t w = w_[i]; w; w &= w - 1) out.push_back(NodeId(i * 64 + size_t(__builtin_ctzll(w))));
    return out;
}

std::string NodeSet::hostlist(const RackMap& map) const {
    return hostlist_compress(map.node_names(ids()));
}

} // namespace nvl
