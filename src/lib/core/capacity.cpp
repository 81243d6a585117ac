#include "capacity.hpp"

#include "error.hpp"
#include "model.hpp"
#include "placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace nvl {

static void check(const CapacityParams& p) {
    if (p.racks < 1 || p.nodes_per_rack < 1 || p.slice < 1 || p.slice > p.nodes_per_rack || p.spares < 0 ||
        p.spares >= p.nodes_per_rack || !(p.unavail >= 0 && p.unavail <= 1) || !(p.lend >= 0 && p.lend <= 1) ||
        p.trials < 1)
        throw Error(fmt::format("capacity: need racks >= 1, 1 <= slice <= nodes per rack ({}), 0 <= spares < nodes "
                                "per rack, 0 <= unavail <= 1, 0 <= lend <= 1, trials >= 1",
                                p.nodes_per_rack));
}

std::vector<int> degraded_slice_sizes(const CapacityParams& p) {
    std::vector<int> s = p.degraded_sizes;
    if (s.empty())
        for (int k = p.slice; k >= 1; k /= 2) s.push_back(k);
    if (std::find(s.begin(), s.end(), p.slice) == s.end()) s.push_back(p.slice);
    std::sort(s.rbegin(), s.rend());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    return s;
}

int mixed_slice_nodes(const CapacityParams& p, int healthy) {
    // The engine's own rule: the rack keeps max(0, spares - failed) nodes
    // for repairs (its spares absorbed its failures); the rest takes
    // full-size slices, then smaller ones, largest first.
    int room = healthy - kept_spares(p.spares, p.nodes_per_rack - healthy);
    int used = 0;
    for (int k : degraded_slice_sizes(p))
        while (room >= k) {
            room -= k;
            used += k;
        }
    return used;
}

CapacityFigures capacity_binomial(const CapacityParams& p) {
    check(p);
    const int n = p.nodes_per_rack;
    const double q = 1.0 - p.unavail;
    CapacityFigures f;
    for (int k = 0; k <= n; ++k) {
        // C(n,k) q^k p^(n-k), in logs so large racks do not overflow
        double logc = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0);
        double pk = std::exp(logc + (k ? k * std::log(q) : 0.0) + ((n - k) ? (n - k) * std::log(p.unavail) : 0.0));
        if (p.unavail == 0) pk = k == n ? 1.0 : 0.0;
        if (p.unavail == 1) pk = k == 0 ? 1.0 : 0.0;
        f.healthy += pk * k;
        // full-size slices under the engine's rule: the rack keeps
        // max(0, spares - failed) of its k healthy nodes for repairs
        const int room = std::max(0, k - kept_spares(p.spares, n - k));
        f.slice_usable += pk * double(room / p.slice * p.slice);
        if (k == n) f.whole_rack_usable += pk * n;
        int slices = mixed_slice_nodes(p, k);
        f.mixed_slices_only += pk * slices;
        f.mixed_usable += pk * (slices + p.lend * (k - slices));
    }
    f.healthy *= p.racks;
    f.slice_usable *= p.racks;
    f.whole_rack_usable *= p.racks;
    f.mixed_slices_only *= p.racks;
    f.mixed_usable *= p.racks;
    return f;
}

CapacityFigures capacity_monte_carlo(const CapacityParams& p) {
    check(p);
    RackMap map = regular_map(p.racks, p.nodes_per_rack, p.spares);
    const std::vector<int> sizes = degraded_slice_sizes(p);
    std::mt19937_64 g(p.seed);
    const uint64_t threshold = uint64_t(p.unavail * 18446744073709551615.0);
    CapacityFigures sum;
    Snapshot snap(map);
    // Slices of one size placed by the engine, one at a time, until none fits:
    // no bypass of its spare rule.
    auto fill = [&snap](int k) {
        int placed = 0;
        SliceRequest req;
        req.slice_size = k;
        req.slice_count = 1;
        for (;;) {
            PlacementResult r = place(snap, req);
            if (!r.ok) break;
            for (NodeId id : r.placement.nodes()) snap.set_state(id, NodeState::Allocated);
            placed += k;
        }
        return placed;
    };
    for (int t = 0; t < p.trials; ++t) {
        for (NodeId id = 0; id < map.node_count(); ++id) {
            NodeState st = (p.unavail >= 1.0 || (p.unavail > 0 && g() < threshold)) ? NodeState::Down : NodeState::Idle;
            snap.set_state(id, st);
        }
        int healthy = snap.total_healthy(), whole = 0;
        for (DomainId d = 0; d < map.domains().size(); ++d)
            if (snap.counts(d).healthy == p.nodes_per_rack) whole += p.nodes_per_rack;
        const int full = fill(p.slice);
        int mixed = full;
        for (int k : sizes)
            if (k != p.slice) mixed += fill(k);
        sum.healthy += healthy;
        sum.whole_rack_usable += whole;
        sum.slice_usable += full;
        sum.mixed_slices_only += mixed;
        sum.mixed_usable += mixed + p.lend * (healthy - mixed);
    }
    const double n = p.trials;
    return {sum.healthy / n, sum.slice_usable / n, sum.whole_rack_usable / n, sum.mixed_usable / n,
            sum.mixed_slices_only / n};
}

} // namespace nvl
