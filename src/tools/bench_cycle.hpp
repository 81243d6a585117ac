// nvl-bench's cycle benchmark: the helper's whole decision path, from
// Slurm-shaped records (what ClusterApi::read_view returns) to the actions of
// one reconcile cycle, on a 1,400-rack cluster with running slice jobs of up
// to 2,048 nodes and 10,000 waiting slice jobs.
#pragma once

#include "cluster_api.hpp"
#include "model.hpp"
#include "reconcile.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace nvl::bench {

// The cluster as read_view() would read it (nodes, jobs, the spare and
// gate reservations), and what the scenario holds.
struct CycleScenario : ClusterRead {
    int running_slice_jobs = 0;
    int largest_job = 0; // nodes
    int pending = 0;
};

// Running slice jobs (1 x 2,048, 4 x 512, 16 x 128 and 16-node ones) with
// their records, scattered plain jobs on the other racks, a few empty
// racks, and `pending` gated slice jobs of 16 to 2,048 nodes.
CycleScenario make_cycle_scenario(const RackMap& map, int pending, uint64_t seed);

// What the helper's first cycle asked Slurm for is applied to the records,
// as Slurm would store them (waiting records, the spare reservation), so
// that later cycles see the steady state.
void settle(CycleScenario& sc, const CycleOutput& first);

// The baseline decision path: the same Slurm-shaped input, the node states
// built in one pass, then one scan of every node per waiting job
// (place_naive: no per-domain counts kept, no memory between jobs).
// Returns the number of jobs placed.
int baseline_cycle(const RackMap& map, const CycleScenario& sc);

// The time reconcile() is run at in the scenario (epoch seconds).
inline constexpr int64_t kScenarioNow = 1700000000;

} // namespace nvl::bench
