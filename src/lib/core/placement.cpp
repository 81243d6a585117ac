#include "placement.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nvl {

const char* to_string(Reason r) {
    switch (r) {
    case Reason::None: return "none";
    case Reason::InvalidRequest: return "invalid_request";
    case Reason::SliceTooLarge: return "slice_too_large";
    case Reason::NoDomainLargeEnough: return "no_domain_large_enough";
    case Reason::WouldConsumeSpares: return "would_consume_spares";
    case Reason::Fragmented: return "fragmented";
    case Reason::Busy: return "busy";
    }
    return "unknown";
}

std::vector<NodeId> Placement::nodes() const {
    std::vector<NodeId> out;
    for (const auto& s : slices) out.insert(out.end(), s.nodes.begin(), s.nodes.end());
    return out;
}

int Placement::domain_count(const RackMap& map) const {
    std::vector<DomainId> ds;
    for (const auto& s : slices)
        for (NodeId n : s.nodes) ds.push_back(map.domain_of(n));
    std::sort(ds.begin(), ds.end());
    return int(std::unique(ds.begin(), ds.end()) - ds.begin());
}

int auto_slice_size(int total, int limit, const std::vector<int>& allowed) {
    if (total <= 0 || limit <= 0) return 0;
    for (int c = (total + limit - 1) / limit; c <= total; ++c) {
        if (total % c) continue;
        int k = total / c;
        if (k > limit) continue;
        if (allowed.empty() || std::find(allowed.begin(), allowed.end(), k) != allowed.end()) return k;
    }
    return 0;
}

namespace {

struct Shape {
    int k = 0; // slice size (plain jobs: total)
    int c = 0; // slice count
    int n = 0; // total nodes
};

PlacementResult fail(Reason r, std::string detail) {
    PlacementResult res;
    res.reason = r;
    res.detail = std::move(detail);
    return res;
}

// Turns the request into k x c = n, or explains why it cannot.
bool resolve_shape(const RackMap& map, const SliceRequest& req, Shape& s, PlacementResult& err) {
    int n = req.total_nodes;
    if (n < 0 || req.slice_size < 0 || req.slice_count < 0) {
        err = fail(Reason::InvalidRequest, "node counts and slice sizes must not be negative");
        return false;
    }
    if (!req.sliced) {
        if (n == 0) n = req.slice_size * std::max(req.slice_count, 1);
        if (n <= 0) {
            err = fail(Reason::InvalidRequest, "a job needs at least one node");
            return false;
        }
        s = {n, 1, n};
        return true;
    }
    int k = req.slice_size;
    if (k == 0) {
        if (n == 0 && req.slice_count == 0) {
            err = fail(Reason::InvalidRequest, "--nvl-slice=auto needs a node count (-N)");
            return false;
        }
        if (n == 0) {
            k = map.defaults().default_slice;
            n = k * req.slice_count;
        } else {
            k = auto_slice_size(n, map.max_slice(), map.defaults().slice_sizes);
            if (k == 0) {
                err = fail(Reason::InvalidRequest,
                           fmt::format("{} nodes cannot be cut into equal slices of at most {} nodes{}", n,
                                       map.max_slice(),
                                       map.defaults().slice_sizes.empty() ? "" : " among the map's slice_sizes"));
                return false;
            }
        }
    } else if (n == 0) {
        n = k * std::max(req.slice_count, 1);
    }
    if (n % k) {
        const std::string hint = n < k ? fmt::format("use -N {} or a slice size that divides {}", k, n)
                                       : fmt::format("use -N {} or -N {}", n / k * k, (n / k + 1) * k);
        err =
            fail(Reason::InvalidRequest,
                 fmt::format("{} nodes are not a multiple of the slice size {} ({}, or --nvl-slice=auto)", n, k, hint));
        return false;
    }
    int c = n / k;
    if (req.slice_count && req.slice_count != c) {
        err = fail(Reason::InvalidRequest, fmt::format("{} slices of {} nodes are {} nodes, not {}", req.slice_count, k,
                                                       req.slice_count * k, n));
        return false;
    }
    s = {k, c, n};
    return true;
}

// Usable free nodes per domain for this request: free minus the spares the
// domain keeps (domain_room()) unless the request may borrow spares. The fast path
// reads the snapshot's per-domain counts; only `allowed` forces a walk.
void compute_rooms(const Snapshot& snap, const SliceRequest& req, std::vector<int>& room, std::vector<int>* healthy) {
    const RackMap& map = snap.map();
    const size_t nd = map.domains().size();
    room.resize(nd);
    if (healthy) healthy->resize(nd);
    for (DomainId d = 0; d < nd; ++d) {
        const Domain& dom = map.domain(d);
        int free_n, healthy_n, lent_n;
        if (req.allowed.unsized()) {
            free_n = snap.counts(d).free;
            healthy_n = snap.counts(d).healthy;
            lent_n = snap.counts(d).lent;
        } else {
            free_n = healthy_n = lent_n = 0;
            for (NodeId id : dom.nodes) {
                if (!req.allowed.contains(id)) continue;
                const NodeStatus& st = snap.node(id);
                free_n += is_free(st.state);
                healthy_n += is_healthy(st.state);
                lent_n += st.lent && is_healthy(st.state) && !is_free(st.state);
            }
        }
        // The failed-node budget is the whole domain's, whatever the job may use.
        DomainCounts c = snap.counts(d);
        c.free = free_n;
        c.lent = lent_n;
        room[d] = domain_room(dom, c, req.use_spares);
        if (healthy) (*healthy)[d] = healthy_n;
    }
}

bool allowed_node(const SliceRequest& req, NodeId id) {
    return req.allowed.unsized() || req.allowed.contains(id);
}

// Takes `want` free nodes of domain `d` not yet in `taken`: plain idle nodes
// first, so that the nodes the helper keeps as spares stay spares.
void take_nodes(const Snapshot& snap, const SliceRequest& req, DomainId d, int want, std::vector<NodeId>& taken,
                std::vector<NodeId>& out) {
    const Domain& dom = snap.map().domain(d);
    for (int pass = 0; pass < 2 && want > 0; ++pass) {
        const NodeState wanted = pass == 0 ? NodeState::Idle : NodeState::SpareReserved;
        for (NodeId id : dom.nodes) {
            if (want == 0) break;
            if (snap.node(id).state != wanted || !allowed_node(req, id)) continue;
            if (std::find(taken.begin(), taken.end(), id) != taken.end()) continue;
            taken.push_back(id);
            out.push_back(id);
            --want;
        }
    }
    std::sort(out.begin(), out.end());
}

// Why a sliced request does not fit, with the figures an admin wants to see.
PlacementResult explain(const Snapshot& snap, const SliceRequest& req, const Shape& s, const std::vector<int>& room,
                        const std::vector<int>& healthy) {
    const RackMap& map = snap.map();
    int largest = 0, ever = 0, degraded = 0, with_spares = 0, usable = 0, fitting = 0;
    int best_room = 0, best_room_count = 0;
    for (DomainId d = 0; d < room.size(); ++d) {
        const Domain& dom = map.domain(d);
        largest = std::max(largest, dom.capacity());
        if (!dom.allows_slice(s.k)) continue;
        if (snap.counts(d).degraded) { // a rack-level failure: out of service
            ++degraded;
            continue;
        }
        const int kept = req.use_spares ? 0 : kept_spares(dom, snap.counts(d));
        int cap = healthy[d] - kept;
        if (cap >= s.k)
            ever += cap / s.k;
        else if (dom.capacity() >= s.k)
            ++degraded;
        int free_n = room[d] + kept;
        with_spares += free_n / s.k;
        usable += std::max(room[d], 0);
        fitting += std::max(room[d], 0) / s.k;
        if (room[d] > best_room) {
            best_room = room[d];
            best_room_count = 1;
        } else if (room[d] == best_room && room[d] > 0) {
            ++best_room_count;
        }
    }
    if (largest < s.k)
        return fail(
            Reason::SliceTooLarge,
            fmt::format("a {}-node slice fits no domain: the largest takes {} (nodes minus spares)", s.k, largest));
    if (ever < s.c)
        return fail(
            Reason::NoDomainLargeEnough,
            fmt::format(
                "no domain large enough: healthy domains hold {} of {} {}-node slices ({} degraded by failed nodes "
                "or a rack-level failure)",
                ever, s.c, s.k, degraded));
    if (with_spares >= s.c)
        return fail(Reason::WouldConsumeSpares,
                    fmt::format("would consume spares: {} of {} {}-node slices fit without taking domains' spares",
                                fitting, s.c, s.k));
    if (usable >= s.n)
        return fail(
            Reason::Fragmented,
            fmt::format(
                "fragmented: {} usable free nodes for {}, but {} of {} {}-node slices fit; {} racks with {} free",
                usable, s.n, fitting, s.c, s.k, best_room_count, best_room));
    return fail(Reason::Busy, fmt::format("busy: {} usable free nodes, {} needed ({} of {} {}-node slices fit)", usable,
                                          s.n, fitting, s.c, s.k));
}

// Prefer mode after its wait: the fewest domains, largest rooms first, the
// last one best fit; then cut the node sequence into slices.
bool place_split(const Snapshot& snap, const SliceRequest& req, const Shape& s, std::vector<int> room, Placement& out) {
    const size_t nd = room.size();
    std::vector<DomainId> order(nd);
    for (DomainId d = 0; d < nd; ++d) order[d] = d;
    std::stable_sort(order.begin(), order.end(), [&](DomainId a, DomainId b) { return room[a] > room[b]; });
    std::vector<std::pair<DomainId, int>> chosen;
    int need = s.n;
    for (size_t i = 0; i < nd && need > 0; ++i) {
        DomainId d = order[i];
        if (room[d] <= 0) break;
        if (room[d] >= need) {
            // best fit for the remainder: the smallest room that still covers it
            DomainId best = d;
            for (size_t j = i + 1; j < nd && room[order[j]] >= need; ++j) best = order[j];
            chosen.emplace_back(best, need);
            need = 0;
            break;
        }
        chosen.emplace_back(d, room[d]);
        need -= room[d];
    }
    if (need > 0) return false;
    std::sort(chosen.begin(), chosen.end());
    std::vector<NodeId> taken, seq;
    for (auto [d, cnt] : chosen) {
        std::vector<NodeId> got;
        take_nodes(snap, req, d, cnt, taken, got);
        seq.insert(seq.end(), got.begin(), got.end());
    }
    const RackMap& map = snap.map();
    out.slices.clear();
    for (int i = 0; i < s.c; ++i) {
        PlacedSlice ps;
        ps.index = i;
        ps.nodes.assign(seq.begin() + i * s.k, seq.begin() + (i + 1) * s.k);
        ps.domain = map.domain_of(ps.nodes.front());
        for (NodeId id : ps.nodes)
            if (map.domain_of(id) != ps.domain) ps.domain = kNoDomain;
        if (ps.domain == kNoDomain) out.split = true;
        out.slices.push_back(std::move(ps));
    }
    return true;
}

// Plain jobs: broken domains (already partly used or degraded) first, best
// fit, so that whole domains stay whole for slices.
PlacementResult place_plain(const Snapshot& snap, const SliceRequest& req, const Shape& s, std::vector<int>& room) {
    const RackMap& map = snap.map();
    const size_t nd = room.size();
    auto whole = [&](DomainId d) { return snap.counts(d).free == map.domain(d).size(); };
    auto better = [&](DomainId a, DomainId b) {
        if (whole(a) != whole(b)) return !whole(a);
        if (room[a] != room[b]) return room[a] < room[b];
        return a < b;
    };
    PlacementResult res;
    res.placement.job_id = req.job_id;
    res.placement.slice_size = s.n;
    PlacedSlice ps;
    std::vector<NodeId> taken;
    DomainId best = kNoDomain;
    for (DomainId d = 0; d < nd; ++d)
        if (room[d] >= s.n && (best == kNoDomain || better(d, best))) best = d;
    if (best != kNoDomain) {
        take_nodes(snap, req, best, s.n, taken, ps.nodes);
        ps.domain = best;
    } else {
        std::vector<DomainId> order;
        int usable = 0;
        for (DomainId d = 0; d < nd; ++d)
            if (room[d] > 0) {
                order.push_back(d);
                usable += room[d];
            }
        if (usable < s.n) return fail(Reason::Busy, fmt::format("busy: {} usable free nodes, {} needed", usable, s.n));
        std::sort(order.begin(), order.end(), better);
        int need = s.n;
        for (DomainId d : order) {
            if (need == 0) break;
            int cnt = std::min(need, room[d]);
            std::vector<NodeId> got;
            take_nodes(snap, req, d, cnt, taken, got);
            ps.nodes.insert(ps.nodes.end(), got.begin(), got.end());
            need -= cnt;
        }
        std::sort(ps.nodes.begin(), ps.nodes.end());
        ps.domain = kNoDomain;
    }
    res.placement.slices.push_back(std::move(ps));
    res.ok = true;
    return res;
}

} // namespace

PlacementResult place(const Snapshot& snap, const SliceRequest& req) {
    const RackMap& map = snap.map();
    Shape s;
    PlacementResult res;
    if (!resolve_shape(map, req, s, res)) return res;

    std::vector<int> room;
    std::vector<int> healthy;
    compute_rooms(snap, req, room, nullptr);
    if (!req.sliced) return place_plain(snap, req, s, room);

    const size_t nd = room.size();
    // Quick feasibility: identical slices packed best fit fit iff the sum
    // of floor(room/k) over the domains reaches c.
    int fitting = 0;
    for (DomainId d = 0; d < nd && fitting < s.c; ++d)
        if (room[d] >= s.k && map.domain(d).allows_slice(s.k)) fitting += room[d] / s.k;

    res.placement.job_id = req.job_id;
    res.placement.slice_size = s.k;
    if (fitting < s.c) {
        compute_rooms(snap, req, room, &healthy);
        PlacementResult why = explain(snap, req, s, room, healthy);
        if (req.mode == PlacementMode::Prefer && req.allow_split &&
            (why.reason == Reason::Fragmented || why.reason == Reason::WouldConsumeSpares) &&
            place_split(snap, req, s, room, res.placement)) {
            res.ok = true;
            res.reason = why.reason;
            res.detail = fmt::format("prefer: placed across {} domains after the wait ({})",
                                     res.placement.domain_count(map), why.detail);
            return res;
        }
        return why;
    }

    res.placement.slices.reserve(size_t(s.c));
    std::vector<NodeId> taken;
    taken.reserve(size_t(s.n));
    for (int i = 0; i < s.c; ++i) {
        DomainId best = kNoDomain;
        int best_room = 0;
        for (DomainId d = 0; d < nd; ++d) {
            const int r = room[d];
            if (r < s.k || (best != kNoDomain && r >= best_room)) continue;
            if (!map.domain(d).allows_slice(s.k)) continue;
            best = d;
            best_room = r;
            if (r == s.k) break; // a perfect fit cannot be beaten
        }
        PlacedSlice ps;
        ps.index = i;
        ps.domain = best;
        ps.nodes.reserve(size_t(s.k));
        take_nodes(snap, req, best, s.k, taken, ps.nodes);
        room[best] -= s.k;
        res.placement.slices.push_back(std::move(ps));
    }
    res.ok = true;
    return res;
}

PlacementResult place_naive(const Snapshot& snap, const SliceRequest& req) {
    const RackMap& map = snap.map();
    Shape s;
    PlacementResult res;
    if (!resolve_shape(map, req, s, res)) return res;
    if (!req.sliced) return place(snap, req);
    const size_t nd = map.domains().size();
    // One scan of every node per decision: what a scheduler without
    // per-domain counts kept up to date does.
    std::vector<int> free_n(nd, 0), lent_n(nd, 0), healthy_n(nd, 0), room(nd, 0);
    for (NodeId id = 0; id < map.node_count(); ++id) {
        const NodeStatus& st = snap.node(id);
        const DomainId d = map.domain_of(id);
        healthy_n[d] += is_healthy(st.state);
        if (!allowed_node(req, id)) continue;
        free_n[d] += is_free(st.state);
        lent_n[d] += st.lent && is_healthy(st.state) && !is_free(st.state);
    }
    for (DomainId d = 0; d < nd; ++d)
        room[d] = domain_room(map.domain(d), DomainCounts{free_n[d], healthy_n[d], lent_n[d], snap.counts(d).degraded},
                              req.use_spares);
    res.placement.job_id = req.job_id;
    res.placement.slice_size = s.k;
    NodeSet taken(map.node_count());
    for (int i = 0; i < s.c; ++i) {
        DomainId best = kNoDomain;
        int best_room = 0;
        for (DomainId d = 0; d < nd; ++d) {
            const int r = room[d];
            if (r < s.k || !map.domain(d).allows_slice(s.k)) continue;
            if (best == kNoDomain || r < best_room) {
                best = d;
                best_room = r;
            }
        }
        if (best == kNoDomain) return place(snap, req); // let the engine explain
        room[best] -= s.k;
        PlacedSlice ps;
        ps.index = i;
        ps.domain = best;
        for (int pass = 0; pass < 2 && int(ps.nodes.size()) < s.k; ++pass)
            for (NodeId id : map.domain(best).nodes) {
                if (int(ps.nodes.size()) == s.k) break;
                NodeState want = pass == 0 ? NodeState::Idle : NodeState::SpareReserved;
                if (snap.node(id).state == want && !taken.contains(id) && allowed_node(req, id)) {
                    taken.insert(id);
                    ps.nodes.push_back(id);
                }
            }
        std::sort(ps.nodes.begin(), ps.nodes.end());
        res.placement.slices.push_back(std::move(ps));
    }
    res.ok = true;
    return res;
}

} // namespace nvl
