#include "step_tree.hpp"

namespace nvl {

StepTreePlace step_tree_place(int rank, int nodes, int width) {
    if (width < 2 || nodes < 1 || rank < 0 || rank >= nodes || width > nodes) return {};
    // the depth of a full tree of this width that holds every node: the
    // nodes below the root, width + width^2 + ..., reach nodes - 1
    int max_depth = 0;
    long below = 0, level = 1;
    while (below < nodes - 1) {
        level *= width;
        below += level;
        ++max_depth;
    }
    if (rank == 0) return {0, max_depth, nodes - 1};
    // down from the root: each child heads an equal part of its parent's
    // full subtree, laid out one after the other
    long node = 0, under = below;
    int depth = 0;
    for (;;) {
        const long part = under / width; // a child and its own subtree
        const long child = node + 1 + (rank - node - 1) / part * part;
        ++depth;
        if (child == rank) {
            long d = part - 1;
            if (rank + d >= nodes) d = nodes - rank - 1;
            return {depth, max_depth, static_cast<int>(d)};
        }
        node = child;
        under = part - 1;
    }
}

} // namespace nvl
