#include "error.hpp"
#include "sim.hpp"

#include "catch.hpp"

using namespace nvl;

TEST_CASE("the trace simulation is deterministic and keeps its books", "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.mtbf_days = 60; // enough failures in a short run to exercise repairs
    auto a = run_trace(p), b = run_trace(p);
    REQUIRE(a.size() == 4);
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i].policy == b[i].policy);
        CHECK(a[i].slice_goodput == b[i].slice_goodput);
        CHECK(a[i].restarts == b[i].restarts);
        // useful work never exceeds what was allocated, nor the cluster
        CHECK(a[i].goodput <= a[i].utilization + 1e-9);
        CHECK(a[i].utilization <= 1.0 + 1e-9);
        CHECK(a[i].slice_goodput <= a[i].goodput + 1e-9);
    }
    CHECK(a[0].policy == "first_fit");
    CHECK(a[0].split_slices > 0); // rack-blind placement splits slices
    CHECK(a[1].split_slices < a[0].split_slices / 10); // whole racks: only small packed jobs may span racks
    CHECK(a[2].split_slices == 0);
    CHECK(a[3].split_slices == 0);
    CHECK(a[3].policy == "nvlslice");
    CHECK(a[3].repairs > 0); // failures repaired in place from spares...
    CHECK(a[3].restarts >= a[3].repairs + a[3].defrag_preemptions); // ...each a restart too
    CHECK(a[3].mean_recovery_h < a[2].mean_recovery_h);              // back at work sooner than requeued
    CHECK(a[3].mean_recovery_h >= p.restart_hours);                  // but never free of the restart delay
    CHECK(a[2].repairs == 0);
    CHECK(a[3].busy_healthy > 0);
    CHECK(a[3].busy_healthy <= 1.0 + 1e-9);
    p.seed = 2;
    CHECK(run_trace(p)[0].slice_goodput != a[0].slice_goodput);
    p.slice = 17;
    CHECK_THROWS_AS(run_trace(p), Error);
}

TEST_CASE("defragmentation in the simulation requeues only checkpointable work", "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.checkpointable = 0; // nothing may be requeued
    CHECK(run_trace(p)[3].defrag_preemptions == 0);
    p.checkpointable = 0.8;
    auto r = run_trace(p);
    CHECK(r[3].defrag_preemptions > 0);
    CHECK(r[2].defrag_preemptions == 0); // block has no defragmenter
}

TEST_CASE("every policy pays the restart delay", "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.mtbf_days = 60;
    p.restart_hours = 0;
    auto free_restarts = run_trace(p);
    p.restart_hours = 2;
    auto costly = run_trace(p);
    for (size_t i = 0; i < costly.size(); ++i) {
        CAPTURE(costly[i].policy);
        CHECK(costly[i].goodput < free_restarts[i].goodput);
    }
}

TEST_CASE("lending scopes: none leaves spares idle, checkpointable lends them", "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.lend = LendScope::None;
    p.defrag = false;
    auto idle = run_trace(p)[3];
    p.lend = LendScope::Checkpointable;
    auto lent = run_trace(p)[3];
    CHECK(lent.utilization > idle.utilization);
}
