// nvlslice — the capacity model (SPEC §1): how many nodes of a cluster can
// do slice work when each node is independently unavailable with
// probability p. Exact binomial figures, and a Monte Carlo run that samples
// failures and places slices with the real engine, side by side.
#pragma once

#include <cstdint>
#include <vector>

namespace nvl {

struct CapacityParams {
    int racks = 128;
    int nodes_per_rack = 18;
    int slice = 16;
    int spares = 2;
    double unavail = 0.02;
    // nvlslice's own policy: degraded racks serve these smaller slice sizes
    // (empty: slice/2, slice/4, ... down to 1), and the nodes left over
    // (spares included) are lent to preemptible single-node work, which
    // fills this share of them.
    std::vector<int> degraded_sizes;
    double lend = 0.9;
    int trials = 1000;
    uint64_t seed = 1;
};

struct CapacityFigures {
    double healthy = 0;           // expected healthy nodes
    double slice_usable = 0;      // nodes in full-size slices (spares absorb failures)
    double whole_rack_usable = 0; // nodes in racks with every node healthy
    double mixed_usable = 0;      // nvlslice: full + smaller slices + lent nodes
    double mixed_slices_only = 0; // the same without lending
};

// Exact expectations over Binomial(nodes_per_rack, 1 - unavail) per rack.
CapacityFigures capacity_binomial(const CapacityParams& p);
// Mean over p.trials sampled clusters, slices placed by nvl::place().
CapacityFigures capacity_monte_carlo(const CapacityParams& p);

// The slice sizes a degraded rack may use, largest first.
std::vector<int> degraded_slice_sizes(const CapacityParams& p);
// nvlslice's slice nodes in a rack with `healthy` nodes: full-size slices
// while the rack has their nodes (its spares absorbed the failures), then
// smaller slices, largest first, into what is left minus the spares (a
// degraded rack keeps spares for its smaller slices).
int mixed_slice_nodes(const CapacityParams& p, int healthy);

} // namespace nvl
