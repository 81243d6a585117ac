#include "error.hpp"
#include "fixtures.hpp"
#include "sim.hpp"

#include "catch.hpp"

using namespace nvl;
using nvl::test::first_starts;

namespace {
// a C string, not a std::string: no temporary for the returned reference to
// outlive (GCC 14 warns, -Wdangling-reference)
const PolicyResult& by(const std::vector<PolicyResult>& rs, const char* name) {
    for (const auto& r : rs)
        if (r.policy == name) return r;
    FAIL("no policy " << name);
    return rs.front();
}
} // namespace

TEST_CASE("the trace simulation is deterministic and keeps its books", "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.mtbf_days = 60; // enough failures in a short run to exercise repairs
    auto a = run_trace(p), b = run_trace(p);
    REQUIRE(a.size() == 5);
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
    CHECK(a[0].split_slices > 0);                      // rack-blind placement splits slices
    CHECK(a[1].split_slices < a[0].split_slices / 10); // whole racks: only small packed jobs may span racks
    CHECK(a[2].split_slices == 0);
    CHECK(a[3].split_slices == 0);
    CHECK(a[4].split_slices == 0);
    CHECK(a[2].policy == "block");
    CHECK(a[3].policy == "block_expedite");
    CHECK(a[4].policy == "nvlslice");
    CHECK(a[4].repairs > 0);                                        // failures repaired in place from spares...
    CHECK(a[4].restarts >= a[4].repairs + a[4].defrag_preemptions); // ...each a restart too
    CHECK(a[4].mean_recovery_h < a[2].mean_recovery_h);             // back at work sooner than requeued
    CHECK(a[4].mean_recovery_h >= p.restart_hours);                 // but never free of the restart delay
    CHECK(a[2].repairs == 0);
    CHECK(a[4].busy_healthy > 0);
    CHECK(a[4].busy_healthy <= 1.0 + 1e-9);
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
    CHECK(by(run_trace(p), "nvlslice").defrag_preemptions == 0);
    p.checkpointable = 0.8;
    auto r = run_trace(p);
    CHECK(by(r, "nvlslice").defrag_preemptions > 0);
    CHECK(by(r, "block").defrag_preemptions == 0); // block has no defragmenter
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
        // every comeback is at least the restart delay late
        CHECK(costly[i].mean_recovery_h >= p.restart_hours - 1e-9);
        // and costs goodput where a failed job comes back at once (behind
        // a plain requeue's delay, the queue reorders: no monotone effect)
        if (costly[i].policy == "block_expedite" || costly[i].policy == "nvlslice")
            CHECK(costly[i].goodput < free_restarts[i].goodput);
    }
}

TEST_CASE("lending scopes: none leaves spares idle, checkpointable lends them", "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.lend = LendScope::None;
    p.defrag = false;
    auto idle = by(run_trace(p), "nvlslice");
    p.lend = LendScope::Checkpointable;
    auto lent = by(run_trace(p), "nvlslice");
    CHECK(lent.utilization > idle.utilization);
}

TEST_CASE("per failure: the failure reaches the job as on the bench; Slurm's plain requeue waits its begin-time delay, "
          "expedited and nvlslice do not",
          "[sim][quick]") {
    SimParams p;
    p.racks = 32;
    p.days = 10;
    p.mtbf_days = 60;
    auto rs = run_trace(p);
    const auto& plain = by(rs, "block");
    const auto& exp = by(rs, "block_expedite");
    const auto& nv = by(rs, "nvlslice");
    for (const auto& r : rs) {
        CAPTURE(r.policy);
        CHECK(r.failures_hit > 0);
        CHECK(r.resume_s.n == r.failures_hit); // every failure counted once, waiting ones at the end too
        CHECK(r.resume_s.p50 <= r.resume_s.p90);
        CHECK(r.resume_s.p90 <= r.resume_s.p99);
        CHECK(r.resume_s.p99 <= r.resume_s.max);
        CHECK(r.resume_work_s.p50 >= r.resume_s.p50);
        CHECK(r.lost_gpu_hours_per_failure > 0);
    }
    // a plain requeue never starts again before Slurm's begin time
    CHECK(plain.resume_s.p50 >= p.requeue_delay_s);
    CHECK(exp.resume_s.p50 < plain.resume_s.p50);
    // repaired as soon as it is requeued: a drain's after its nodes
    // complete, a dead node's after the probe too; working again after the
    // restart
    CHECK(nv.resume_s.p50 >= p.complete_s);
    CHECK(nv.resume_s.p50 <= p.probe_s + p.complete_dead_s);
    CHECK(nv.resume_work_s.p50 >= p.restart_hours * 3600 - 1e-6);
    // slice jobs by kind: a dead node costs Slurm alone its SlurmdTimeout
    // and slurmstepd's wait before anything else; nvlslice its probe
    REQUIRE(nv.resume_slice_dead_s.n > 0);
    REQUIRE(nv.resume_slice_drain_s.n > 0);
    CHECK(nv.resume_slice_drain_s.p50 == Approx(p.complete_s));
    CHECK(nv.resume_slice_dead_s.p50 == Approx(p.probe_s + p.complete_dead_s));
    CHECK(exp.resume_slice_dead_s.p50 >= p.slurmd_timeout_s + p.complete_dead_slurm_s - 1e-6);
    CHECK(exp.resume_slice_drain_s.p50 >= p.complete_s - 1e-6);
    CHECK(nv.resume_s.p99 < plain.resume_s.p99);
    // the begin-time delay is plain requeue's alone
    p.requeue_delay_s = 0;
    auto fast = run_trace(p);
    CHECK(by(fast, "block_expedite").goodput == exp.goodput);
    CHECK(by(fast, "nvlslice").goodput == nv.goodput);
    // and it does change plain requeue's (which way is the saturated queue's:
    // a failed job waits days behind the others either way)
    CHECK(by(fast, "block").resume_s.p50 != plain.resume_s.p50);
}

TEST_CASE("a trace written as text replays the same; bad lines name file:line", "[sim][quick]") {
    SimParams p;
    p.racks = 8;
    p.days = 3;
    p.seed = 5;
    const Trace t = make_trace(p);
    REQUIRE_FALSE(t.jobs.empty());
    REQUIRE_FALSE(t.failures.empty());
    const std::string text = write_trace(t);
    const Trace back = read_trace(text, "t.txt");
    REQUIRE(back.jobs.size() == t.jobs.size());
    REQUIRE(back.failures.size() == t.failures.size());
    CHECK(write_trace(back) == text); // printed the same again
    // the simulator on the read trace: the same figures as on the generated one
    // (times kept to 6 decimals of an hour, 3.6 ms)
    const auto a = run_trace(p), b = run_trace(p, back);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].policy);
        CHECK(a[i].jobs_done == b[i].jobs_done);
        CHECK(a[i].failures_hit == b[i].failures_hit);
        CHECK(a[i].goodput == Approx(b[i].goodput).epsilon(1e-4));
    }
    // comments and blank lines are skipped; out-of-order lines are sorted
    const Trace small = read_trace("# two jobs\n\njob 2.5 16 1.0 1\njob 1 4 0.5 0\nfail 1.5 7\n", "s.txt");
    REQUIRE(small.jobs.size() == 2);
    CHECK(small.jobs[0].nodes == 4);
    CHECK(small.jobs[1].ckpt);
    CHECK(small.failures[0].second == 7);
    CHECK_THROWS_WITH(read_trace("job 1 4 0.5\n", "x.txt"), Catch::Contains("x.txt:1: a job line needs four numbers"));
    CHECK_THROWS_WITH(read_trace("job 1 0 0.5 0\n", "x.txt"), Catch::Contains("x.txt:1: a job needs"));
    CHECK_THROWS_WITH(read_trace("#\nfail -1 3\n", "x.txt"), Catch::Contains("x.txt:2: a failure needs"));
    CHECK_THROWS_WITH(read_trace("boom 1 2\n", "x.txt"), Catch::Contains("x.txt:1: unknown line kind"));
    CHECK_THROWS_WITH(read_trace("failjob 1 0 3\n", "x.txt"), Catch::Contains("x.txt:1: a failjob line needs"));
    CHECK_THROWS_WITH(read_trace("job 0 4 1 0\nfailjob 1 0 3 gone\n", "x.txt"),
                      Catch::Contains("x.txt:2: a job's failure needs"));
    CHECK_THROWS_WITH(read_trace("job 0 4 1 0\nfailjob 1 2 3 dead\n", "x.txt"),
                      Catch::Contains("x.txt: a failjob line names job 2, but the trace has 1 jobs"));
}

TEST_CASE("a failure of a job's node, whichever it is then: the bench's failures on the measured job", "[sim][quick]") {
    SimParams p;
    p.racks = 3;
    p.days = 0.25;
    p.restart_hours = 0;
    p.node_repair_hours = 0.04;
    const Trace t = read_trace("job 0 32 100 0\nfailjob 0.1 0 5 drain\nfailjob 0.2 0 9 dead\n"
                               "failjob 0.3 0 40 drain\n",
                               "m.txt");
    CHECK(read_trace(write_trace(t), "again").job_failures.size() == 3); // written and read back
    const auto nv = by(run_trace(p, t), "nvlslice");
    CHECK(nv.failures_hit == 3); // every one on the job, repaired each time
    CHECK(nv.resume_slice_drain_s.n == 2);
    CHECK(nv.resume_slice_dead_s.n == 1);
    CHECK(nv.resume_slice_drain_s.max == Approx(p.complete_s));
    CHECK(nv.resume_slice_dead_s.max == Approx(p.probe_s + p.complete_dead_s));
    // Slurm alone on an idle cluster: a dead node waits SlurmdTimeout and
    // slurmstepd's wait, then the job runs again at once
    const auto ex = by(run_trace(p, t), "block_expedite");
    CHECK(ex.resume_slice_dead_s.max == Approx(p.slurmd_timeout_s + p.complete_dead_slurm_s));
    // times and hours the simulator could never reach: refused, not run
    CHECK_THROWS_WITH(read_trace("job inf 4 0.5 0\n", "x.txt"),
                      Catch::Contains("x.txt:1: a job needs a finite arrival"));
    CHECK_THROWS_WITH(read_trace("job 1 4 1e999 0\n", "x.txt"), Catch::Contains("x.txt:1: a job needs"));
    CHECK_THROWS_WITH(read_trace("fail inf 3\n", "x.txt"), Catch::Contains("x.txt:1: a failure needs a finite time"));
    CHECK_THROWS_WITH(read_trace("job 1 4 0.5 0 extra\n", "x.txt"), Catch::Contains("x.txt:1: a job line needs"));
    // a trace that does not fit the cluster
    SimParams tiny;
    tiny.racks = 1;
    CHECK_THROWS_WITH(run_trace(tiny, read_trace("fail 1 99\n", "f.txt")), Catch::Contains("names node 99"));
}

TEST_CASE("a repair with no room anywhere frees a rack from checkpointable work, as the helper does", "[sim][quick]") {
    // 2 racks: a 16-node job on r1, a checkpointable one on r2. Two failures
    // on r1 use up its spares; a third finds no room in r1 or r2.
    SimParams p;
    p.racks = 2;
    p.days = 2;
    Trace t;
    t.jobs = {{0.0, 16, 40, false}, {0.1, 16, 40, true}};
    t.failures = {{1, 0}, {2, 1}, {3, 2}};
    auto with = by(run_trace(p, t), "nvlslice");
    CHECK(with.failures_hit == 3);
    CHECK(with.resume_s.max <= p.probe_s + p.complete_dead_s); // every failure: running again once requeued
    CHECK(with.defrag_preemptions == 1);
    p.defrag_repairs = false;
    auto without = by(run_trace(p, t), "nvlslice");
    CHECK(without.defrag_preemptions == 0);
    CHECK(without.resume_s.max > 3600); // the third waits for r2's job to end
}

TEST_CASE("spares go to borrowers anywhere in the queue, and only the spares", "[sim][quick]") {
    // 2 racks, a 16-node job on each: only the kept spares are free. Eight
    // single-node jobs that may not borrow fill the look-ahead; behind them
    // a checkpointable one that fits on a spare, and a checkpointable 4-node
    // one that fits on no rack's spares.
    SimParams p;
    p.racks = 2;
    p.days = 2;
    p.defrag = false;
    Trace t;
    t.jobs = {{0.0, 16, 10, false}, {0.01, 16, 10, false}};
    for (int i = 0; i < 8; ++i) t.jobs.push_back({0.1 + i * 0.01, 1, 1, false});
    t.jobs.push_back({0.2, 1, 1, true}); // id 11
    t.jobs.push_back({0.3, 4, 1, true}); // id 12
    auto started = first_starts(p, t);
    REQUIRE(started.count(11));
    CHECK(started.at(11).hours == Approx(0.2)); // at once, beyond the look-ahead of 8
    CHECK(started.at(11).lent);
    REQUIRE(started.count(12));
    CHECK(started.at(12).hours >= 10); // no spares fit it: it waits for the slices to end
    for (JobId id = 3; id <= 10; ++id) {
        REQUIRE(started.count(id));
        CHECK(started.at(id).hours >= 10); // never on the spares
    }
    // the spare pass off, or not deep enough to reach it (8 eligible jobs
    // ahead of it): it waits behind the look-ahead
    for (int depth : {0, 8}) {
        p.lend_depth = depth;
        started = first_starts(p, t);
        REQUIRE(started.count(11));
        CHECK(started.at(11).hours >= 10);
    }
    p.lend_depth = 9; // reaches it
    started = first_starts(p, t);
    REQUIRE(started.count(11));
    CHECK(started.at(11).hours == Approx(0.2));
    p.lend_depth = 0;
    // a look-ahead deep enough reaches it without the spare pass
    p.lookahead = 9;
    started = first_starts(p, t);
    REQUIRE(started.count(11));
    CHECK(started.at(11).hours == Approx(0.2));
    p.lookahead = 0;
    CHECK_THROWS_WITH(run_trace(p, t), Catch::Contains("look-ahead >= 1"));
}

TEST_CASE("the spare pass takes spares only, never a rack's slice room", "[sim][quick]") {
    // 2 racks: a 16-node job on rack 1, rack 2 idle. Eight 32-node jobs
    // that cannot start fill the look-ahead; behind them a checkpointable
    // 3-node job (it would fit in rack 2's slice room, but in no rack's 2
    // idle kept spares) and a checkpointable 2-node job (it fits on spares).
    SimParams p;
    p.racks = 2;
    p.days = 2;
    p.defrag = false;
    Trace t;
    t.jobs = {{0.0, 16, 10, false}};
    for (int i = 0; i < 8; ++i) t.jobs.push_back({0.1 + i * 0.01, 32, 1, false});
    t.jobs.push_back({0.2, 3, 1, true}); // id 10
    t.jobs.push_back({0.3, 2, 1, true}); // id 11
    auto started = first_starts(p, t);
    REQUIRE(started.count(11));
    CHECK(started.at(11).hours == Approx(0.3));
    CHECK(started.at(11).lent);
    REQUIRE(started.count(10));
    CHECK(started.at(10).hours >= 0.3 + 1e-9); // not at its arrival: the slice room is not lent
    // with a look-ahead that reaches it, it starts at once in rack 2's room
    p.lookahead = 9;
    started = first_starts(p, t);
    REQUIRE(started.count(10));
    CHECK(started.at(10).hours == Approx(0.2));
}

namespace {
SimParams queue_only(int racks) { // the queue alone: no spares, lending, defragmentation or startup
    SimParams p;
    p.racks = racks;
    p.spares = 0;
    p.lend = LendScope::None;
    p.defrag = false;
    p.restart_hours = 0;
    p.days = 0.5;
    return p;
}
} // namespace

TEST_CASE("Slurm's backfill keeps the first waiting job's nodes from smaller jobs that would delay it",
          "[sim][quick]") {
    // 36 nodes: a 30-node job runs 1 h; a 32-node job waits for it; then a
    // stream of one-node jobs of 2 h, each of which would fit at once
    std::string text = "job 0 30 1 0\njob 0.001 32 1 0\n";
    for (int k = 1; k <= 20; ++k) text += fmt::format("job {:.3f} 1 2 0\n", 0.01 * k);
    const Trace t = read_trace(text, "bf.txt");
    SimParams p = queue_only(2);
    p.days = 0.25;
    const auto on = first_starts(p, t);
    REQUIRE(on.count(2));
    CHECK(on.at(2).hours == Approx(1.0)); // it starts when the 30-node job ends
    int beside = 0;                       // small jobs still start before it, on free nodes it will not need
    for (JobId id = 3; id <= 22; ++id) beside += on.count(id) && on.at(id).hours < 1.0;
    CHECK(beside == 4);
    p.backfill = false; // pure look-ahead: the small jobs take every node that frees
    const auto off = first_starts(p, t);
    CHECK((!off.count(2) || off.at(2).hours > 1.5));
    // a time limit longer than the runs: the same reservation, read from the limits
    p.backfill = true;
    p.time_limit_s = 600;
    CHECK(first_starts(p, t).at(2).hours == Approx(1.0));
}

TEST_CASE("the busy bench's queue: a top job first, a backlog that asks for nodes alone, a rack that fails whole, "
          "failures on a saturated cluster",
          "[sim][quick]") {
    SECTION("top jobs sort before every other, and only they ask for slices") {
        // two 10-node jobs hold 8 free nodes in each rack; a 16-node job
        // that asks for nodes alone starts across the racks at once
        const Trace t = read_trace("job 0 10 1 0\njob 0 10 1 0\njob 0.01 16 1 0\n", "top.txt");
        SimParams p = queue_only(2);
        p.days = 0.1;
        CHECK(first_starts(p, t).at(3).hours == Approx(1.0)); // a slice of 16 in one rack: once the others end
        p.sliced_top_only = true;
        p.top_jobs = 2;
        const auto s = first_starts(p, t);
        REQUIRE(s.count(3));
        CHECK(s.at(3).hours == Approx(0.01));
        // and the first two (the top jobs) kept their slice each in one rack
        CHECK(s.at(1).nodes.size() == 10);
    }
    SECTION("a job failure that takes its whole rack, struck only once the cluster is saturated") {
        // 3 racks: the 32-node top job and 22 one-node jobs of 20 min keep
        // every node busy from 0.05 h; a whole-rack fault at 0.02 h waits
        // for that
        std::string text = "job 0 32 10 0\n";
        for (int k = 0; k < 22; ++k) text += fmt::format("job {:.3f} 1 0.333 1\n", 0.05);
        text += "failjob 0.02 0 3 drain\n";
        const Trace t = read_trace(text, "rack.txt");
        SimParams p = queue_only(3);
        p.spares = 2;
        p.days = 0.3;
        p.top_jobs = 1;
        p.failjob_rack = true;
        p.failjob_busy_wait_s = 600;
        const auto rs = run_trace(p, t);
        const auto& nv = by(rs, "nvlslice");
        CHECK(nv.failures_hit >= 1);
        CHECK(nv.moves == 1); // its slice left the failed rack (for a rack freed of checkpointable work)
        // Slurm alone: the whole rack is gone, a slice waits for a rack
        // whose one-node jobs end (20 min)
        const auto& ex = by(rs, "block_expedite");
        REQUIRE(ex.resume_slice_drain_s.n == 1);
        CHECK(ex.resume_slice_drain_s.max > 60);
        p.failjob_busy_wait_s = 0; // at its time: the cluster is idle then, the slice moves at once
        CHECK(by(run_trace(p, t), "block_expedite").resume_slice_drain_s.max == Approx(p.complete_s));
    }
}

TEST_CASE("a repair with no room now is held where the nodes free soonest, the lent work there requeued at once, "
          "as the helper's",
          "[sim][quick]") {
    // 3 racks: the 32-node top job on r1 and r2; r3 busy: a checkpointable
    // 8-node job of 10 h (lent work: it stands in for r3's spares) and 8
    // one-node jobs that end at 0.1 h. r1 fails whole at 0.02 h: no rack
    // has room, none frees from checkpointable work alone, so its slice
    // waits for r3's 8 nodes that free first with 6 of the checkpointable
    // job's, requeued at once, and the 2 idle ones; r3 keeps 2 nodes as its
    // spares. Slurm's backfill alone would wait 10 h for the checkpointable job
    std::string text = "job 0 32 10 0\njob 0 8 10 1\n";
    for (int k = 0; k < 8; ++k) text += "job 0 1 0.1 0\n";
    text += "failjob 0.02 0 3 drain\n";
    const Trace t = read_trace(text, "held.txt");
    SimParams p = queue_only(3);
    p.spares = 2;
    p.lend = LendScope::Checkpointable;
    p.days = 0.5;
    p.top_jobs = 1;
    p.sliced_top_only = true;
    p.failjob_rack = true;
    const auto nv = by(run_trace(p, t), "nvlslice");
    REQUIRE(nv.resume_slice_drain_s.n == 1);
    CHECK(nv.moves == 1);
    CHECK(nv.restarts == 2); // the failed job, and the lent work taken back
    CHECK(nv.resume_slice_drain_s.max == Approx((0.1 - 0.02) * 3600).margin(1));
    // the same under Slurm's expedited requeue: its backfill waits for the
    // 10-hour jobs
    CHECK(by(run_trace(p, t), "block_expedite").resume_slice_drain_s.max > 3600);
    // 2 of those one-node jobs a 2-node job of 10 h instead: r3 has room for
    // the slice by 0.1 h only with its spares, which it takes (beside them it
    // would wait 10 h); r3's spares come back as its 10-hour jobs end
    std::string spareless = "job 0 32 10 0\njob 0 8 10 1\n";
    for (int k = 0; k < 6; ++k) spareless += "job 0 1 0.1 0\n";
    spareless += "job 0 2 10 0\nfailjob 0.02 0 3 drain\n";
    const auto taken = by(run_trace(p, read_trace(spareless, "spareless.txt")), "nvlslice");
    CHECK(taken.moves == 1);
    REQUIRE(taken.resume_slice_drain_s.n == 1);
    CHECK(taken.resume_slice_drain_s.max == Approx((0.1 - 0.02) * 3600).margin(1));
}
