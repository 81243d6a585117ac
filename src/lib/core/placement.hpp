// nvlslice — placement of slice jobs on NVLink domains.
//
// place() is pure: snapshot + request in, a Placement or a typed reason out.
// Rules (SPEC §2):
//  - every slice lies inside one domain;
//  - best fit: the domain with the fewest usable free nodes that still fits,
//    so that whole racks stay whole; ties go to the lower domain index, so
//    the same snapshot always gives the same answer;
//  - the spares are the domain's failure budget: it keeps
//    max(0, spares - failed) nodes free for repairs (kept_spares()), so a rack
//    of 18 with 1 or 2 failed nodes still takes a 16-node slice, and one with
//    more failed nodes than spares serves only smaller slices;
//  - `auto` sizing is balanced: the fewest domains, equal slices, never more
//    than the per-rack limit (24 -> 12+12, 48 -> 3x16, 40 -> 4x10);
//  - plain (non-slice) jobs are packed into already-broken domains first.
#pragma once

#include "model.hpp"
#include "node_set.hpp"

#include <string>
#include <vector>

namespace nvl {

enum class PlacementMode { Strict, Prefer };

struct SliceRequest {
    JobId job_id = 0;
    int total_nodes = 0; // N; 0 = slice_size * slice_count
    int slice_size = 0;  // k; 0 = auto (balanced)
    int slice_count = 0; // 0 = total_nodes / slice_size
    bool sliced = true;  // false: a plain job with no slice constraint
    PlacementMode mode = PlacementMode::Strict;
    // Prefer mode once its wait has passed: if no slice-per-domain placement
    // exists, place on the fewest domains and mark the placement split.
    bool allow_split = false;
    // Checkpointable single-node work may borrow spare nodes.
    bool use_spares = false;
    // Nodes the job may use (partition, --exclude, racks kept for another
    // job); unsized = every node of the map.
    NodeSet allowed;
};

struct PlacedSlice {
    int index = 0;
    DomainId domain = kNoDomain; // kNoDomain when the slice spans domains
    std::vector<NodeId> nodes;   // in map order
};

struct Placement {
    JobId job_id = 0;
    int slice_size = 0;
    std::vector<PlacedSlice> slices; // tasks are laid out slice by slice
    bool split = false;              // prefer-mode fallback: a slice crosses domains

    // Every node, slice by slice.
    std::vector<NodeId> nodes() const;
    // Distinct domains the job's nodes lie in.
    int domain_count(const RackMap& map) const;
};

enum class Reason {
    None,
    InvalidRequest,      // the request itself is wrong (sizes, divisibility)
    SliceTooLarge,       // no domain of the map could ever hold one slice
    NoDomainLargeEnough, // too few healthy domains big enough (failed nodes)
    WouldConsumeSpares,  // it would fit only by taking domains' spares
    Fragmented,          // enough usable free nodes, but no domain has room
    Busy,                // not enough free nodes: wait for running jobs
};

const char* to_string(Reason r);

struct PlacementResult {
    bool ok = false;
    Placement placement;
    Reason reason = Reason::None;
    std::string detail; // one line for logs and squeue's reason

    explicit operator bool() const { return ok; }
};

// Balanced slice size for `total` nodes when no domain takes more than
// `limit` nodes, among `allowed` sizes (empty = any). 0 when impossible.
int auto_slice_size(int total, int limit, const std::vector<int>& allowed = {});

PlacementResult place(const Snapshot& snap, const SliceRequest& req);

// The reference used by the benchmark and the property tests: one scan of
// every node per decision, no per-domain counts kept. Same rules, same
// answers as place() for sliced strict requests.
PlacementResult place_naive(const Snapshot& snap, const SliceRequest& req);

} // namespace nvl
