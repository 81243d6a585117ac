// nvlslice — a set of nodes of one RackMap: a bit per NodeId.
//
// The one representation of "these nodes" inside the core (a reservation,
// the nodes a job may use, the failed ones): membership and insertion in
// O(1), intersection a word at a time, and a hostlist read or written once.
#pragma once

#include "model.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

class NodeSet {
  public:
    // Unsized: no set at all (where an API reads that as "no limit").
    NodeSet() = default;
    // Over `universe` node ids, none in it (all = false) or every one.
    explicit NodeSet(size_t universe, bool all = false);
    // The nodes of a hostlist that the map knows (others are ignored: a
    // node outside the map is none of the core's business).
    static NodeSet of(const RackMap& map, std::string_view hostlist);
    // Adds the nodes of a hostlist that the map knows (the same rule).
    void add(const RackMap& map, std::string_view hostlist);

    bool unsized() const { return n_ == 0; }
    size_t universe() const { return n_; }
    bool contains(NodeId id) const { return id < n_ && ((w_[id >> 6] >> (id & 63)) & 1u); }
    void insert(NodeId id) {
        if (id < n_) w_[id >> 6] |= uint64_t(1) << (id & 63);
    }
    void erase(NodeId id) {
        if (id < n_) w_[id >> 6] &= ~(uint64_t(1) << (id & 63));
    }
    void set(NodeId id, bool in) { in ? insert(id) : erase(id); }
    size_t count() const;
    bool none() const;
    // Intersection; both over the same universe.
    NodeSet& operator&=(const NodeSet& o);
    bool operator==(const NodeSet& o) const { return n_ == o.n_ && w_ == o.w_; }
    // The members, in id (map) order.
    std::vector<NodeId> ids() const;
    std::string hostlist(const RackMap& map) const;

  private:
    size_t n_ = 0;
    std::vector<uint64_t> w_;
};

} // namespace nvl
