// The cycle's first two stages alone: observe (observe.hpp), what Slurm
// reports read once into one immutable value, and rack health
// (rack_health.hpp, judge_racks()), its verdicts on that value.
#include "fixtures.hpp"
#include "observe.hpp"
#include "rack_health.hpp"

#include "catch.hpp"

using namespace nvl;
using namespace nvl::test;

namespace {
std::vector<SlurmNode> idle_nodes(const RackMap& m) {
    std::vector<SlurmNode> nodes;
    for (NodeId i = 0; i < m.node_count(); ++i) {
        SlurmNode n;
        n.name = m.node_name(i);
        n.state = NodeState::Idle;
        nodes.push_back(n);
    }
    return nodes;
}
} // namespace

TEST_CASE("observe: the node sets, the snapshot and the parsed jobs, read once", "[observe][quick]") {
    const RackMap m = make_map(2, 18);
    auto nodes = idle_nodes(m);
    nodes[2].state = NodeState::Drained; // n003: drained for a reason the repair pattern names
    nodes[2].reason = "Xid 79";
    nodes[3].state = NodeState::Drained; // n004: an admin's maintenance, not a failure
    nodes[3].reason = "bios update";
    nodes[20].failed = true; // n021: not responding
    std::vector<SlurmJob> jobs(1);
    jobs[0].id = 7;
    jobs[0].state = JobState::Running;
    jobs[0].nodes = {"n019", "n020"};
    jobs[0].comment = "garbage nvlslice tag";
    const std::optional<Reservation> spares = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    const std::optional<Reservation> gate, protection = Reservation{"nvlslice_protect", "n[019-036]"};
    const auto drain = reason_regex("xid", "repair_drain_reasons");
    const Observation o = observe(m, {nodes, jobs, spares, gate, protection}, LendScope::None, drain, std::nullopt);
    CHECK(o.failed.hostlist(m) == "n[003,021]");
    CHECK(o.reserved.hostlist(m) == "n[017-018,035-036]");
    CHECK(o.unprotected.hostlist(m) == "n[001-018]");
    CHECK(o.snap.node(id(m, "n017")).state == NodeState::SpareReserved);
    CHECK(o.snap.node(id(m, "n019")).job_id == 7);
    REQUIRE(o.jobs.size() == 1);
    CHECK(o.jobs[0].job == &jobs[0]);
    CHECK(o.reasons[id(m, "n004")] == "bios update");
    // r1's two drained nodes (one a failure, one an admin's) are within its two spares
    CHECK_FALSE(o.snap.degraded(0));
    // no protection, no spare reservation: an unsized mask, an empty set
    const std::optional<Reservation> none;
    const Observation bare = observe(m, {nodes, jobs, none, none, none}, LendScope::None, std::nullopt, std::nullopt);
    CHECK(bare.unprotected.unsized());
    CHECK(bare.reserved.none());
    CHECK(bare.failed.hostlist(m) == "n[003-004,021]"); // no pattern: every drain is a failure
    CHECK_FALSE(bare.snap.degraded(0));                 // its two failed nodes are within its two spares
}

TEST_CASE("rack health stage: stats, the verdicts that changed, the nodes out of service", "[observe][rack][quick]") {
    const RackMap m = make_map(3, 18);
    auto nodes = idle_nodes(m);
    nodes[4].state = NodeState::Drained;
    nodes[4].reason = "NVLink contained error"; // r1: a rack-level failure
    nodes[40].state = NodeState::Drained;       // r3: one failed node, within its spares
    std::vector<SlurmJob> jobs;
    const std::optional<Reservation> none;
    const auto rack = reason_regex("contained", "rack_failure_reasons");
    const Observation o = observe(m, {nodes, jobs, none, none, none}, LendScope::None, std::nullopt, rack);
    // the first look: r1 degraded, a change
    const RackVerdicts v = judge_racks(o.snap, {});
    REQUIRE(v.stats.size() == 3);
    CHECK(v.stats[0].degraded);
    CHECK(v.stats[0].failed == 1);
    CHECK(v.stats[0].free == 17);
    CHECK_FALSE(v.stats[2].degraded);
    CHECK(v.stats[2].failed == 1);
    REQUIRE(v.changes.size() == 1);
    CHECK(v.changes[0].domain == 0);
    CHECK_THAT(v.changes[0].why, Catch::Contains("n005 is out with a rack-level failure"));
    CHECK(v.out_of_service.hostlist(m) == "n[001-018]");
    // judged the same as before: no change; r2 said degraded before and is not: recovered
    std::vector<std::string> before = {v.changes[0].why, "3 failed node(s)", ""};
    const RackVerdicts again = judge_racks(o.snap, before);
    REQUIRE(again.changes.size() == 1);
    CHECK(again.changes[0].domain == 1);
    CHECK(again.changes[0].why.empty());
    // the value it judged is not changed by judging
    CHECK(o.snap.degraded(0));
}

TEST_CASE("node health: silent nodes of running slice jobs are marked DOWN after a while", "[observe][quick]") {
    const RackMap m = make_map(1, 18);
    auto nodes = idle_nodes(m);
    nodes[0].not_responding = true; // n001: a slice job's node
    nodes[1].not_responding = true; // n002: another job's
    nodes[2].not_responding = true; // n003: idle
    nodes[3].not_responding = true; // n004: DOWN already
    nodes[3].failed = true;
    Snapshot s(m);
    set_all(s, "n001", NodeState::Allocated, 7);
    set_all(s, "n002", NodeState::Allocated, 8);
    auto slice_job = [](JobId id) { return id == 7; };
    // first seen now: remembered, nothing marked yet
    auto first = judge_silent(m, nodes, s, {}, 1000, 30, 0, slice_job);
    CHECK(first.down.empty());
    CHECK(first.since.size() == 3);
    CHECK(first.since.at("n001") == 1000);
    // 30 s later: the slice job's node only
    auto later = judge_silent(m, nodes, s, first.since, 1030, 30, 0, slice_job);
    REQUIRE(later.down.size() == 1);
    CHECK(later.down[0].node == "n001");
    CHECK(later.down[0].job == 7);
    CHECK(later.down[0].silent_s == 30);
    // answering again: forgotten
    nodes[0].not_responding = false;
    CHECK_FALSE(judge_silent(m, nodes, s, later.since, 1031, 30, 0, slice_job).since.count("n001"));
    // not asked for (repair_not_responding_after=0): nothing kept
    CHECK(judge_silent(m, nodes, s, later.since, 1031, 0, 0, slice_job).since.empty());
}

TEST_CASE("observe: repair_not_responding_after within the ping interval at TCPTimeout 1 is warned of at the start",
          "[observe][quick]") {
    // SlurmdTimeout 60: slurmctld pings every 20 s
    auto w = not_responding_warning(5, 1, 60);
    REQUIRE(w);
    CHECK(w->find("repair_not_responding_after: 5 s with slurm.conf's TCPTimeout=1") != std::string::npos);
    CHECK(w->find("SlurmdTimeout/3 = 20 s later") != std::string::npos);
    CHECK(w->find("Set it above 20 s, or 0") != std::string::npos);
    CHECK(not_responding_warning(20, 1, 60)); // the flag may last the whole interval
    CHECK_FALSE(not_responding_warning(21, 1, 60));
    CHECK_FALSE(not_responding_warning(5, 2, 60)); // Slurm's default: a lost SYN is sent again in time
    CHECK_FALSE(not_responding_warning(0, 1, 60)); // off
    CHECK_FALSE(not_responding_warning(5, 0, 0));  // Slurm's configuration not read
}

TEST_CASE("observe: a node the helper's own probe finds silent for silent_after, a slice job's only; a blip is not",
          "[observe][quick]") {
    const RackMap m = make_map(1, 18);
    auto nodes = idle_nodes(m);
    Snapshot s(m);
    set_all(s, "n001", NodeState::Allocated, 7);
    set_all(s, "n002", NodeState::Allocated, 8);
    auto slice_job = [](JobId id) { return id == 7; };
    nodes[0].unanswered_s = 3;  // a 3-second blip: under silent_after
    nodes[1].unanswered_s = 60; // another job's node
    nodes[2].unanswered_s = 60; // idle
    auto blip = judge_silent(m, nodes, s, {}, 1000, 0, 8, slice_job);
    CHECK(blip.down.empty());
    // its verdict is due within seconds: the cycle is to come then
    CHECK(blip.suspect);
    nodes[0].unanswered_s = 0;
    CHECK_FALSE(judge_silent(m, nodes, s, {}, 1000, 0, 8, slice_job).suspect); // another job's, an idle node's: no
    nodes[0].unanswered_s = 8;
    auto out = judge_silent(m, nodes, s, {}, 1000, 0, 8, slice_job);
    CHECK_FALSE(out.suspect);
    REQUIRE(out.down.size() == 1);
    CHECK(out.down[0].node == "n001");
    CHECK(out.down[0].probe);
    CHECK(out.down[0].silent_s == 8);
    CHECK(out.since.empty()); // slurmctld's flag is what `since` remembers
    // off: nothing
    CHECK(judge_silent(m, nodes, s, {}, 1000, 0, 0, slice_job).down.empty());
    // DOWN already: Slurm's own
    nodes[0].failed = true;
    CHECK(judge_silent(m, nodes, s, {}, 1000, 0, 8, slice_job).down.empty());
}

TEST_CASE("observe: which unfinished jobs are slice jobs of this cycle", "[observe][quick]") {
    RequestTag t;
    t.slice = 16;
    t.count = 1;
    t.nodes = 16;
    auto job = [&](JobId id, JobState st, std::string comment, std::string admin = "") {
        SlurmJob j;
        j.id = id;
        j.state = st;
        j.num_nodes = 16;
        j.comment = std::move(comment);
        j.admin_comment = std::move(admin);
        return j;
    };
    PlacementRecord lent;
    lent.job = 3;
    lent.state = RecordState::Placed;
    lent.slice = 16;
    lent.slices = {"n[001-016]"};
    lent.lent = true;
    PlacementRecord other = lent;
    other.job = 99;
    other.lent = false;
    std::vector<SlurmJob> jobs = {
        job(1, JobState::Pending, t.str()),                     // a slice job
        job(2, JobState::Pending, "plain job"),                 // none of ours
        job(3, JobState::Running, t.str() + " x", lent.str()),  // on a lent spare
        job(4, JobState::Pending, t.str(), other.str()),        // carries job 99's record
        job(5, JobState::Pending, t.str(), "nvlslice/1 bogus"), // admin_comment no record
        job(6, JobState::Completing, t.str()),                  // not pending or running
    };
    jobs[2].requeue = false; // its owner turned Requeue off; its tag now lies too (checkpointable below)
    jobs.push_back(job(7, JobState::Pending, t.str()));
    jobs.back().num_nodes = 32; // its tag (typed by hand?) asks for 16
    const auto parsed = parse_jobs(jobs);
    std::vector<JobVerdict> v;
    for (const auto& p : parsed) v.push_back(judge_job(p));
    REQUIRE(v.size() == 7);
    CHECK(v[0].kind == JobVerdict::Kind::Slice);
    CHECK(v[0].slice->job == &jobs[0]);
    CHECK(v[1].kind == JobVerdict::Kind::Other);
    CHECK(v[2].kind == JobVerdict::Kind::Slice);
    CHECK(v[2].restore_requeue); // a lent spare is reclaimed by requeue
    CHECK(v[3].kind == JobVerdict::Kind::Slice);
    CHECK(v[3].copied_record_of == 99);
    CHECK_FALSE(v[3].slice->rec);
    CHECK(v[4].kind == JobVerdict::Kind::Slice);
    CHECK_FALSE(v[4].bad_record.empty());
    CHECK(v[5].kind == JobVerdict::Kind::Other);
    REQUIRE(v[6].kind == JobVerdict::Kind::Ignored);
    REQUIRE(v[6].ignored);
    CHECK(v[6].ignored->state == RecordState::Ignored);
    CHECK(v[6].wrong == "its tag asks for 16 nodes, the job for 32");
    // its record says so already: nothing to write; its tag fixed: taken back
    jobs[6].admin_comment = v[6].ignored->str();
    CHECK_FALSE(judge_job(parse_jobs(jobs)[6]).ignored);
    jobs[6].num_nodes = 16;
    const JobVerdict back = judge_job(parse_jobs(jobs)[6]);
    CHECK(back.kind == JobVerdict::Kind::Slice);
    CHECK(back.taken_back);
    CHECK(back.slice->rec->state == RecordState::Waiting);
    // Slurm's order: priority, then submission, then id
    std::vector<SliceJob> order = {*v[3].slice, *v[0].slice, *v[4].slice};
    jobs[3].priority = 10;
    jobs[4].priority = 20;
    sort_by_priority(order);
    CHECK(order[0].job->id == 5);
    CHECK(order[1].job->id == 4);
    CHECK(order[2].job->id == 1);
}
