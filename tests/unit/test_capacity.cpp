#include "capacity.hpp"
#include "error.hpp"

#include "catch.hpp"

#include <cmath>

using namespace nvl;

TEST_CASE("the binomial model reproduces the published figures", "[capacity][quick]") {
    CapacityParams p; // 128 racks x 18, p = 2 %, 16-node slices
    CapacityFigures f = capacity_binomial(p);
    CHECK(std::lround(f.slice_usable) == 2037);
    CHECK(std::lround(f.whole_rack_usable) == 1602);
    CHECK(std::round(100 * f.slice_usable / f.whole_rack_usable) / 100 == Approx(1.27));
    CHECK(f.healthy == Approx(2304 * 0.98));
    // nvlslice: degraded racks take 8/4/2/1-node slices, left-over nodes lent
    CHECK(f.mixed_slices_only > f.slice_usable);
    CHECK(f.mixed_usable / f.healthy >= 0.97);
}

TEST_CASE("degraded racks and their slice sizes", "[capacity][quick]") {
    CapacityParams p;
    CHECK(degraded_slice_sizes(p) == std::vector<int>{16, 8, 4, 2, 1});
    CHECK(mixed_slice_nodes(p, 18) == 16);
    CHECK(mixed_slice_nodes(p, 17) == 16); // a spare replaced the failed node
    CHECK(mixed_slice_nodes(p, 16) == 16); // both spares replaced failed nodes
    CHECK(mixed_slice_nodes(p, 15) == 15); // beyond the budget: 8 + 4 + 2 + 1, no spare left
    p.degraded_sizes = {8, 4};
    CHECK(degraded_slice_sizes(p) == std::vector<int>{16, 8, 4});
    CHECK(mixed_slice_nodes(p, 15) == 12);
    CHECK(mixed_slice_nodes(p, 1) == 0);
    p.degraded_sizes.clear();
    CHECK(mixed_slice_nodes(p, 1) == 1); // a lone healthy node beyond the budget: a 1-node slice
    p.spares = 3;
    p.slice = 15;
    CHECK(mixed_slice_nodes(p, 18) == 15); // 3 kept
    CHECK(mixed_slice_nodes(p, 17) == 15); // 1 failed: 2 kept
    CHECK(mixed_slice_nodes(p, 14) == 14); // 4 failed: none kept, 8 + 4 + 2
    p.spares = 2;
    p.slice = 20;
    CHECK_THROWS_AS(capacity_binomial(p), Error);
}

TEST_CASE("Monte Carlo through the real engine agrees with the binomial model", "[capacity][slow]") {
    CapacityParams p;
    p.trials = 200;
    CapacityFigures b = capacity_binomial(p), m = capacity_monte_carlo(p);
    CHECK(m.healthy == Approx(b.healthy).epsilon(0.005));
    CHECK(m.slice_usable == Approx(b.slice_usable).epsilon(0.01));
    CHECK(m.whole_rack_usable == Approx(b.whole_rack_usable).epsilon(0.03));
    CHECK(m.mixed_slices_only == Approx(b.mixed_slices_only).epsilon(0.01));
    CHECK(m.mixed_usable == Approx(b.mixed_usable).epsilon(0.01));
}
