#include "catch.hpp"

#include "step_tree.hpp"

using namespace nvl;

TEST_CASE("step tree: a 32-node step, Slurm's width 7") {
    // rank 0 reports to slurmctld; ranks 1, 9, 17 and 25 (the 2nd, 10th,
    // 18th and 26th nodes) head the four parts; every other rank is a leaf
    const StepTreePlace root = step_tree_place(0, 32);
    CHECK(root.depth == 0);
    CHECK(root.max_depth == 2);
    CHECK(root.descendants == 31);
    for (int r : {1, 9, 17}) {
        const StepTreePlace p = step_tree_place(r, 32);
        CHECK(p.depth == 1);
        CHECK(p.descendants == 7);
    }
    CHECK(step_tree_place(25, 32).descendants == 6); // the last part is short
    for (int r = 1; r < 32; ++r) {
        if (r == 1 || r == 9 || r == 17 || r == 25) continue;
        const StepTreePlace p = step_tree_place(r, 32);
        CHECK(p.depth == 2);
        CHECK(p.descendants == 0);
    }
}

TEST_CASE("step tree: fewer nodes than the width have none") {
    for (int n = 1; n < kStepTreeWidth; ++n)
        for (int r = 0; r < n; ++r) {
            const StepTreePlace p = step_tree_place(r, n);
            CHECK(p.max_depth == 0);
            CHECK(p.descendants == 0);
        }
    const StepTreePlace p = step_tree_place(0, kStepTreeWidth);
    CHECK(p.max_depth == 1);
    CHECK(p.descendants == kStepTreeWidth - 1);
    CHECK(step_tree_place(3, kStepTreeWidth).descendants == 0);
}

TEST_CASE("step tree: out of range is no tree") {
    CHECK(step_tree_place(-1, 32).max_depth == 0);
    CHECK(step_tree_place(32, 32).max_depth == 0);
    CHECK(step_tree_place(0, 0).max_depth == 0);
    CHECK(step_tree_place(0, 32, 1).max_depth == 0);
}

TEST_CASE("step tree: every node is below as many nodes as its depth, at any size") {
    // each node is counted once among the descendants of each of its
    // ancestors, so the sums agree; and no node is deeper than the tree
    for (int n : {7, 8, 31, 32, 49, 57, 58, 400, 2304}) {
        long depths = 0, below = 0;
        int deepest = 0;
        const int max_depth = step_tree_place(0, n).max_depth;
        for (int r = 0; r < n; ++r) {
            const StepTreePlace p = step_tree_place(r, n);
            CHECK(p.max_depth == max_depth);
            depths += p.depth;
            below += p.descendants;
            if (p.depth > deepest) deepest = p.depth;
        }
        INFO("nodes " << n);
        CHECK(depths == below);
        CHECK(deepest == max_depth);
    }
    CHECK(step_tree_place(0, 2304).max_depth == 4);
}
