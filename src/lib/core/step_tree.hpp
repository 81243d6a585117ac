// Where a node of a job step sits in the step's reverse tree: the tree
// over which Slurm's slurmstepds report the step's end, each node to its
// parent and the first node (rank 0) to slurmctld. The tree is Slurm's:
// width 7 (fixed in every release from 22.05 to 26.05), the ranks laid
// out depth first, each of a node's children heading an equal share of
// its full subtree; a step on fewer nodes than the width has no tree
// (every node reports to slurmctld itself).
//
// The SPANK plugin reads it after an aborted step: a node with children
// stays a moment longer for their reports (nvlslice(8), ABORTED STEPS).
#pragma once

namespace nvl {

// Slurm's reverse-tree width for step completion.
inline constexpr int kStepTreeWidth = 7;

struct StepTreePlace {
    int depth = 0;       // 0: rank 0 (or no tree)
    int max_depth = 0;   // the tree's depth (0: no tree)
    int descendants = 0; // nodes below this one that report through it
};

// Rank `rank` of a step on `nodes` nodes; a rank outside 0..nodes-1, or a
// width below 2, is the place of no tree ({0, 0, 0}).
StepTreePlace step_tree_place(int rank, int nodes, int width = kStepTreeWidth);

} // namespace nvl
