// nvlslice — the cycle's first stage: observe. What Slurm reports, read
// once per cycle into one immutable value that every later stage reads:
// the nodes as a snapshot (the jobs on them, degraded racks marked), the
// node sets the stages test against (failed, reserved, unprotected) and
// every unfinished job with its tag and record parsed. Nothing in it
// depends on the helper's memory or on what this cycle decides; the stages
// that follow (rack health here, then repairs and moves, placement and
// protection, defragmentation and lending, upkeep) take it by const
// reference, and their decisions are kept apart from it.
#pragma once

#include "node_set.hpp"
#include "reconcile.hpp"
#include "report.hpp"

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace nvl {

struct Observation {
    Snapshot snap;                    // as Slurm reports it; degraded racks marked (rack_health.hpp)
    NodeSet failed;                   // a slice on such a node needs a repair (down, or drained for a repair reason)
    NodeSet reserved;                 // in the spare reservation
    NodeSet unprotected;              // outside the protection (unsized: no protection)
    std::vector<ParsedJob> jobs;      // every unfinished job, in Slurm's order, its tag and record parsed once
    std::vector<std::string> reasons; // each map node's Slurm reason, by NodeId
};

// `drain`: repair_drain_reasons compiled (none: every drain is a failure);
// `rack`: rack_failure_reasons compiled (none: only failures beyond the
// spares degrade a rack).
Observation observe(const RackMap& map, const ClusterView& view, LendScope lend, const std::optional<std::regex>& drain,
                    const std::optional<std::regex>& rack);

} // namespace nvl
