// Kill anywhere, converge everywhere: for every cycle of the repair, move,
// defragmentation and lending scenarios, the helper dies after every prefix
// of its action list (a fresh helper with an empty memory takes over), or
// one of its actions fails; the cycles after it must reach the same end as
// the run without either: no job held, no spare lost, no repair counted
// twice or lost, every job where the undisturbed run has it.
//
// The cluster is the tests' fake with Slurm's side on (fake_cluster.hpp):
// its refusals and its scheduler (gate mode): a job starts when it is
// neither held nor gated, its begin time has come and its required nodes
// are idle outside the spare reservation; a requeued job completes for a
// second (it is neither running nor pending then), then waits with a begin
// time later; a node marked DOWN requeues its job.
#include "action.hpp"
#include "cluster_api.hpp"
#include "error.hpp"
#include "fake_cluster.hpp"
#include "fixtures.hpp"
#include "hostlist.hpp"
#include "reconcile.hpp"
#include "slice_job.hpp"

#include "catch.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

using namespace nvl;
using namespace nvl::test;

namespace {

// Slurm as these runs need it: every node idle, its refusals and its
// scheduler; a requeued job pends 3 s after its old allocation completed.
FakeCluster slurm_model(const RackMap& map) {
    FakeCluster s;
    s.now = 100000;
    s.as_slurmctld = true;
    s.requeue_completes = false; // schedule() completes it a second later
    s.requeue_delay = 3;         // Slurm: the requeue time plus cred_expire
    s.add_nodes(map);
    s.jobs.reserve(64);
    return s;
}

struct Scenario {
    const char* name;
    int racks;
    std::function<void(FakeCluster&, HelperConfig&)> setup;
    // disturbances by cycle (a node drained, a job ending)
    std::function<void(FakeCluster&, int cycle)> at;
};

// Submitted 100 s ago, ordered by id (Slurm's priority: the lower first).
SlurmJob slice_job(JobId id, int slice, int count, bool ckpt, int64_t now) {
    SlurmJob j = nvl::test::slice_job(id, slice, count, ckpt, now, true, 100);
    j.priority = 1000 - id;
    return j;
}

void drain(FakeCluster& s, const std::string& n) {
    s.failed.insert(n);
    s.node(n).reason = "gpu xid 79";
    s.refresh_nodes();
}

const std::vector<Scenario>& scenarios() {
    static const std::vector<Scenario> all = {
        {"repair from the rack's spare", 2,
         [](FakeCluster& s, HelperConfig&) { s.jobs.push_back(slice_job(7, 16, 2, false, s.now)); },
         [](FakeCluster& s, int c) {
             if (c == 6) drain(s, "n005");
         }},
        {"move to another rack when the spares are gone", 2,
         [](FakeCluster& s, HelperConfig&) {
             s.jobs.push_back(slice_job(7, 16, 1, false, s.now));
             drain(s, "n017");
             drain(s, "n018");
         },
         [](FakeCluster& s, int c) {
             if (c == 6) drain(s, "n003");
         }},
        {"lending: a lent spare taken back by a repair", 2,
         [](FakeCluster& s, HelperConfig&) {
             s.jobs.push_back(slice_job(7, 16, 2, false, s.now));
             s.jobs.push_back(slice_job(8, 1, 1, true, s.now));
             s.jobs.push_back(slice_job(9, 1, 1, true, s.now));
             drain(s, "n035");
             drain(s, "n036");
         },
         [](FakeCluster& s, int c) {
             if (c == 6) drain(s, "n005");
         }},
        {"a degraded rack: the checkpointable job moves first, the other waits for room", 2,
         [](FakeCluster& s, HelperConfig& cfg) {
             cfg.rack_failure_reasons = "contained";
             SlurmJob a = slice_job(7, 8, 1, false, s.now);
             SlurmJob c = slice_job(8, 8, 1, true, s.now);
             a.req_nodes = "n[001-008]";
             c.req_nodes = "n[009-016]";
             a.licenses.clear();
             c.licenses.clear();
             a.admin_comment = "nvlslice/1 placed slice=8 slices=n[001-008] repairs=0 moves=0 job=7";
             c.admin_comment = "nvlslice/1 placed slice=8 slices=n[009-016] repairs=0 moves=0 job=8";
             SlurmJob filler; // a plain job: rack r2 has room for one 8-node slice
             filler.id = 30;
             filler.num_nodes = 8;
             filler.req_nodes = "n[019-026]";
             filler.priority = 10;
             s.jobs.push_back(a);
             s.jobs.push_back(c);
             s.jobs.push_back(filler);
             s.schedule();
         },
         [](FakeCluster& s, int c) {
             if (c == 6) {
                 s.failed.insert("n017");
                 s.node("n017").reason = "Xid 145: NVLink contained error";
                 s.refresh_nodes();
             }
         }},
        {"native lending: the borrower waits for its spare in a reservation of its own, then a repair takes it back", 2,
         [](FakeCluster& s, HelperConfig& cfg) {
             // Slurm 25.11+ (node pools: the helper's pin is a node list)
             cfg.hand_off = HandOff::Native;
             cfg.node_pools = true;
             auto native = [&](JobId id, int slice, int count, bool ckpt) {
                 SlurmJob j = slice_job(id, slice, count, ckpt, s.now);
                 RequestTag t = *RequestTag::parse(j.comment);
                 t.hand_off = HandOff::Native;
                 j.comment = t.str();
                 j.licenses.clear();
                 return j;
             };
             SlurmJob big = native(7, 16, 2, false);
             big.req_nodes = "n[001-016,019-034]";
             big.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0 job=7";
             s.jobs.push_back(big);
             s.reservations["nvlslice_spares"] = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
             s.schedule();
             s.jobs.push_back(native(6, 16, 1, false)); // ahead of the borrower, no room: Slurm's to place
             s.jobs.push_back(native(8, 1, 1, true));
         },
         [](FakeCluster& s, int c) {
             if (c == 6) drain(s, "n005");
         }},
        {"defragmentation frees a rack from checkpointable jobs", 2,
         [](FakeCluster& s, HelperConfig& cfg) {
             cfg.defrag_after_s = 0;
             cfg.defrag_interval_s = 0;
             cfg.lend = LendScope::None;
             // small checkpointable jobs scattered over both racks
             JobId id = 20;
             for (const char* n : {"n001", "n002", "n019", "n020"}) {
                 SlurmJob j = slice_job(id++, 1, 1, true, s.now);
                 j.licenses.clear();
                 j.req_nodes = n;
                 j.admin_comment = fmt::format("nvlslice/1 placed slice=1 slices={} repairs=0 moves=0", n);
                 s.jobs.push_back(j);
             }
             s.schedule();
             s.jobs.push_back(slice_job(7, 16, 1, false, s.now));
         },
         [](FakeCluster&, int) {}},
    };
    return all;
}

// One helper's life: its memory (lost when it dies) and the clocks.
struct Run {
    const RackMap& map;
    HelperConfig cfg;
    FakeCluster slurm;
    HelperMemory mem;
    int64_t mono = 1000;

    Run(const RackMap& m, const Scenario& sc) : map(m), slurm(slurm_model(m)) {
        cfg.steer_weights = false;
        sc.setup(slurm, cfg);
    }
    // One helper cycle: decide, then apply the first `keep` actions (the
    // helper dies after them: -1 = all).
    std::vector<Action> cycle(int keep = -1) {
        const ClusterRead read = slurm.read_view(ViewRequest::of(cfg, false));
        CycleOutput out = reconcile(map, read.view(), cfg, slurm.now, mem, mono);
        std::vector<Action> acts = out.actions;
        if (keep >= 0 && size_t(keep) < acts.size()) acts.resize(size_t(keep));
        auto failures = apply(slurm, cfg, acts);
        note_applied(mem, acts, failures, mono);
        return out.actions;
    }
    // Slurm's turn and a second of time.
    void tick() {
        slurm.schedule();
        slurm.now += 1;
        mono += 1;
    }
};

// What the end state must agree on with the undisturbed run.
struct Outcome {
    std::string state; // per job: running/pending and its record's repairs= count
    int spare_nodes = 0;
    int held = 0;
    int on_failed = 0;
    int max_repairs = 0;     // the most repairs= of one job's record
    int lends = 0;           // lend reservations left, and jobs still in one
    size_t last_actions = 0; // what the last cycles asked for: 0 when it has settled
};

Outcome outcome(const FakeCluster& s) {
    Outcome o;
    for (const auto& j : s.jobs) {
        std::string repairs = "?";
        try {
            if (auto r = PlacementRecord::parse(j.admin_comment)) {
                repairs = std::to_string(r->repairs);
                o.max_repairs = std::max(o.max_repairs, r->repairs);
            }
        } catch (const Error&) {}
        o.state +=
            fmt::format("job {} {} repairs={}; ", j.id, j.state == JobState::Running ? "running" : "pending", repairs);
        o.held += j.held;
        if (j.state == JobState::Running)
            for (const auto& n : j.nodes) o.on_failed += s.failed.count(n) != 0;
    }
    const HelperConfig cfg;
    for (const auto& [name, r] : s.reservations) o.lends += r && cfg.lend_job(name) != 0;
    for (const auto& j : s.jobs) o.lends += !j.reservation.empty();
    auto it = s.reservations.find("nvlslice_spares");
    if (it != s.reservations.end() && it->second) o.spare_nodes = int(hostlist_expand(it->second->nodes).size());
    return o;
}

constexpr int kCycles = 24; // the scenario's own span
constexpr int kSettle = 40; // cycles allowed to converge after a disturbance

// The run with the helper dying after `keep` actions of cycle `k` (or the
// action `fail` of that cycle refused), to its end.
Outcome disturbed(const RackMap& map, const Scenario& sc, int k, int keep, int fail) {
    Run r(map, sc);
    size_t last = 0;
    for (int c = 0; c < kCycles + kSettle; ++c) {
        sc.at(r.slurm, c);
        if (c == k && fail >= 0) {
            r.slurm.fail_call = int(r.slurm.calls.size()) + fail;
        }
        const size_t n = r.cycle(c == k ? keep : -1).size();
        last = c >= kCycles + kSettle - 3 ? last + n : 0;
        r.slurm.fail_call = -1;
        if (c == k && keep >= 0) r.mem = HelperMemory{}; // a new helper starts with nothing
        r.tick();
    }
    Outcome o = outcome(r.slurm);
    o.last_actions = last;
    return o;
}

} // namespace

TEST_CASE("kill anywhere, converge everywhere: every prefix of every cycle, every failing action", "[converge][slow]") {
    const RackMap map = make_map(2, 18);
    int runs = 0;
    for (const Scenario& sc : scenarios()) {
        INFO("scenario: " << sc.name);
        // the undisturbed run, and each cycle's action count
        Run ref(map, sc);
        std::vector<size_t> counts;
        std::string kinds = " "; // every action of the run, by kind
        for (int c = 0; c < kCycles + kSettle; ++c) {
            sc.at(ref.slurm, c);
            const auto acts = ref.cycle();
            counts.push_back(acts.size());
            for (const auto& a : acts) kinds += std::string(a.name()) + " ";
            ref.tick();
        }
        const Outcome want = outcome(ref.slurm);
        CAPTURE(want.state);
        if (std::string(sc.name).rfind("native lending", 0) == 0) {
            // the scenario does what it says: a lend, ended, no lend left
            CHECK(kinds.find(" lend ") != std::string::npos);
            CHECK(kinds.find("end-lend ") != std::string::npos);
            for (const auto& [name, r] : ref.slurm.reservations) CHECK_FALSE((r && ref.cfg.lend_job(name)));
        }
        REQUIRE(want.held == 0);
        REQUIRE(want.lends == 0);
        REQUIRE(want.on_failed == 0);
        size_t acted = 0;
        for (int c = 0; c < kCycles; ++c) {
            if (counts[size_t(c)] == 0) continue;
            acted += 1;
            for (int keep = 0; keep < int(counts[size_t(c)]); ++keep) {
                INFO("helper killed in cycle " << c << " after " << keep << " of " << counts[size_t(c)] << " actions");
                const Outcome got = disturbed(map, sc, c, keep, -1);
                CHECK(got.state == want.state);
                CHECK(got.held == 0);
                CHECK(got.lends == 0);
                CHECK(got.spare_nodes == want.spare_nodes);
                CHECK(got.on_failed == 0);
                CHECK(got.last_actions == 0);
                ++runs;
            }
            for (int fail = 0; fail < int(counts[size_t(c)]); ++fail) {
                // A refused action may rightly lead elsewhere (Slurm would
                // not requeue the job that was to move first: the next one
                // moves): a settled end that keeps every rule, not the same.
                INFO("action " << fail << " of " << counts[size_t(c)] << " refused in cycle " << c);
                const Outcome got = disturbed(map, sc, c, -1, fail);
                CAPTURE(got.state);
                CHECK(got.held == 0);
                CHECK(got.lends == 0);
                CHECK(got.on_failed == 0);
                CHECK(got.max_repairs <= std::max(1, want.max_repairs));
                CHECK(got.last_actions == 0);
                ++runs;
            }
        }
        CHECK(acted >= 3); // the scenario did act: placement, repair or defragmentation
    }
    CHECK(runs > 40);
}
