// What users, odd inputs and bad times can do to the helper, each case a
// reproduction: a user withdrawing a lent job's requeue, a broken and
// restored tag, control characters in user text, hostlists that wrap, a
// wall clock that steps, slurmctld going away in the middle of a batch, a
// cluster-wide action Slurm keeps refusing.
#include "controller.hpp"
#include "eligibility.hpp"
#include "fake_world.hpp"
#include "fixtures.hpp"
#include "hostlist.hpp"
#include "reconcile.hpp"
#include "slice_job.hpp"
#include "text.hpp"

#include "catch.hpp"

#include <algorithm>

using namespace nvl;
using namespace nvl::test;

namespace {

// The spares reserved, the helper's monotonic clock its own; jobs added
// without the gate (their owners took it off, or wrote them by hand).
struct World : FakeWorld {
    explicit World(int racks) : FakeWorld(racks) {
        resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
        mono = 500;
    }
    SlurmJob& add(JobId id, int slice, int count, bool ckpt = false) {
        return add_slice_job(id, slice, count, /*gated=*/false, ckpt);
    }
};

const Action* find(const CycleOutput& o, ActionKind k, JobId job = 0) {
    for (const auto& a : o.actions)
        if (a.kind() == k && (!job || a.job == job)) return &a;
    return nullptr;
}

// Where the first action of kind `k` for `job` stands in the batch (-1: none).
int index_of(const CycleOutput& o, ActionKind k, JobId job) {
    for (size_t i = 0; i < o.actions.size(); ++i)
        if (o.actions[i].kind() == k && o.actions[i].job == job) return int(i);
    return -1;
}

// The first action of payload T (for `job`, when given).
template <class T> const T* find(const CycleOutput& o, JobId job = 0) {
    for (const auto& a : o.actions)
        if (auto p = a.get<T>(); p && (!job || a.job == job)) return p;
    return nullptr;
}

int count(const std::vector<LogEntry>& log, const std::string& what) {
    return int(std::count_if(log.begin(), log.end(),
                             [&](const LogEntry& l) { return l.line().find(what) != std::string::npos; }));
}

} // namespace

TEST_CASE("a lent spare stays lent whatever its borrower's owner changes", "[safety][quick]") {
    World w(1);
    SlurmJob& big = w.add(7, 16, 1);
    w.run_on(big, "n[001-016]");
    big.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    SlurmJob& small = w.add(8, 1, 1, /*ckpt=*/true);
    w.run_on(small, "n017");
    small.admin_comment = "nvlslice/1 placed slice=1 slices=n017 repairs=0 moves=0 lent=1";
    w.resv = Reservation{"nvlslice_spares", "n018"};
    CHECK(w.cycle().actions.empty());
    // the owner: scontrol update jobid=8 requeue=0 -> set back, said as a warning
    small.requeue = false;
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::AllowRequeue, 8));
    CHECK(count(out.log,
                "job 8: runs as lent work (on a lent spare, or standing in for its rack's spares), and its Requeue was "
                "turned off") == 1);
    // ... and edits the comment so the tag no longer describes the job: still lent
    small.comment = "nvlslice/1 nodes=2 slice=2 count=1 auto=0 placement=strict checkpointable=0 handoff=gate";
    auto ignored = w.cycle();
    const auto* rec = find<action::SetRecord>(ignored, 8);
    REQUIRE(rec);
    CHECK_THAT(rec->text, Catch::StartsWith("nvlslice/1 ignored") && Catch::Contains("lent=1"));
    small.admin_comment = rec->text;
    small.requeue = true;
    // the rack's other spare is down, and a node of the big job fails: the
    // lent spare is taken back (before: it was not reclaimable once the
    // owner withdrew requeue or broke the tag, and the repair waited)
    w.node("n018").state = NodeState::Drained;
    w.resv = Reservation{"nvlslice_spares", ""};
    w.node("n005").state = NodeState::Draining;
    auto rep = w.cycle();
    CAPTURE(rep.log);
    REQUIRE(find(rep, ActionKind::Requeue, 8));
    REQUIRE(find(rep, ActionKind::PinOnly, 7));
    CHECK(find<action::PinOnly>(rep, 7)->nodes == "n[001-004,006-017]");
}

TEST_CASE("a site's AdminComment text survives placement, repair and release, and a record written over comes back",
          "[safety][quick]") {
    World w(2);
    SlurmJob& j = w.add(7, 16, 1);
    // placed with the site's text already there (an accounting tag)
    j.admin_comment = "acct: proj-a";
    w.step();
    CHECK_THAT(j.admin_comment, Catch::StartsWith("acct: proj-a | nvlslice/1 placed slice=16"));
    w.start(j);
    w.step();
    // a health check appends its note after the record
    j.admin_comment += " | nhc: xid 79 on n005";
    CHECK(w.cycle().actions.empty());
    // the node drains: the repair rewrites the record in place, both notes kept
    w.node("n005").state = NodeState::Draining;
    auto rep = w.step();
    CAPTURE(rep.log);
    REQUIRE(find(rep, ActionKind::PinOnly, 7));
    CHECK_THAT(j.admin_comment,
               Catch::StartsWith("acct: proj-a | nvlslice/1 repairing") && Catch::EndsWith(" | nhc: xid 79 on n005"));
    // a site writes the whole field over the record: the helper writes it
    // back after the site's text, says so once, and the cycle goes on
    const std::string before = std::string(split_admin_comment(j.admin_comment).record);
    j.admin_comment = "nhc: rebooted n005";
    auto back = w.step();
    CAPTURE(back.log);
    CHECK(j.admin_comment == "nhc: rebooted n005 | " + before);
    CHECK(count(back.log, "its AdminComment was written over (now \"nhc: rebooted n005\")") == 1);
    CHECK(count(w.step().log, "written over") == 0);
    // a record the helper never saw is not made up
    SlurmJob& other = w.add(9, 16, 1);
    other.state = JobState::Running;
    other.admin_comment = "nhc: ok";
    w.mem.records.erase(9);
    auto none = w.cycle();
    CHECK(count(none.log, "written over") == 0);
}

TEST_CASE("a broken tag, restored, gives the job back to nvlslice: no refused transition, no warning per cycle",
          "[safety][quick]") {
    World w(2);
    SlurmJob& j = w.add(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 ignored slice=0 repairs=0 moves=0 reason=left to Slurm: its tag asks for 16 nodes, "
                      "the job for 2";
    auto out = w.cycle();
    CAPTURE(out.log);
    const auto* rec = find<action::SetRecord>(out, 7);
    REQUIRE(rec);
    CHECK_THAT(rec->text, Catch::StartsWith("nvlslice/1 placed slice=16 slices=n[001-016]"));
    CHECK(count(out.log, "skipped") == 0);
    j.admin_comment = rec->text;
    CHECK(w.cycle().actions.empty());
}

TEST_CASE("a job that cannot be handled is warned about once, not every cycle", "[safety][quick]") {
    World w(2);
    SlurmJob& j = w.add(7, 16, 1);
    w.run_on(j, "n[001-016]");
    // a record that may not move to where the cycle would take it: the
    // repair wants repairing, which a waiting record may not become
    j.admin_comment = "nvlslice/1 waiting slice=16 repairs=0 moves=0";
    w.node("n005").state = NodeState::Draining;
    auto first = w.cycle();
    auto second = w.cycle();
    const int a = count(first.log, "job 7: skipped"), b = count(second.log, "job 7: skipped");
    CHECK(a == 1);
    CHECK(b == 0);
}

TEST_CASE("a tag its owner flips back and forth makes a few record writes and log lines a minute, not one per flip",
          "[safety][quick]") {
    World w(2);
    SlurmJob& j = w.add(7, 16, 1);
    j.begin_time = w.now + 3600; // waits: nothing else happens to it
    j.reason = "BeginTime";
    const std::string good = j.comment;
    const std::string wrong[] = {"nvlslice/1 nodes=16 slice=16 count=2", "nvlslice/1 nodes=abc"};
    int writes = 0, lines = 0;
    for (int k = 0; k < 20; ++k) { // one flip per cycle, a cycle per second
        j.comment = k % 4 == 3 ? good : wrong[k % 2];
        auto out = w.cycle();
        w.apply(out);
        for (const auto& a : out.actions)
            if (a.kind() == ActionKind::SetRecord && a.job == 7) ++writes;
        lines += count(out.log, "left to Slurm") + count(out.log, "describes the job again");
        w.mono += 1;
        w.now += 1;
    }
    CHECK(writes <= 5); // the first 3 changes, and what placement writes once it reads again
    CHECK(lines == 3);
    // a minute on, the next change is written and said at once
    w.mono += 60;
    j.comment = wrong[0];
    auto later = w.cycle();
    CHECK(find(later, ActionKind::SetRecord, 7));
    CHECK(count(later.log, "left to Slurm") == 1);
}

TEST_CASE("every reservation the helper keeps ends within its lease, moved on while the helper runs",
          "[safety][quick]") {
    World w(2);
    w.cfg.reservation_lease_s = 3600;
    // as Slurm reports them: the spares' and the gate's ends
    w.resv->end_time = w.now + 3000; // more than half the lease left: kept as it is
    w.gate->end_time = w.now + 3000;
    CHECK(w.cycle().actions.empty());
    w.resv->end_time = w.now + 1700; // less than half left
    w.gate->end_time = w.now + 1700;
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find<action::SetReservation>(out));
    CHECK(find<action::SetReservation>(out)->nodes == "n[017-018,035-036]");
    CHECK(find<action::SetReservation>(out)->end_at == w.now + 3600);
    REQUIRE(find<action::Gate>(out));
    CHECK(find<action::Gate>(out)->end_at == w.now + 3600);
    // one an earlier version made without end (Slurm: a year on) gets one
    w.resv->end_time = w.now + 365 * 86400;
    w.gate->end_time = w.now + 3600;
    auto old = w.cycle();
    REQUIRE(find<action::SetReservation>(old));
    CHECK(find<action::SetReservation>(old)->end_at == w.now + 3600);
    CHECK_FALSE(find<action::Gate>(old));
    // a new one is made with the lease
    World f(1);
    f.resv.reset();
    f.cfg.reservation_lease_s = 600;
    auto first = f.cycle();
    REQUIRE(find<action::SetReservation>(first));
    CHECK(find<action::SetReservation>(first)->end_at == f.now + 600);
}

TEST_CASE("user text is one line wherever it is printed", "[safety][quick]") {
    CHECK(escape_control("a\nb\r<0>c\td\x1b[2J\x7f") == "a\\nb\\r<0>c\\td\\x1b[2J\\x7f");
    // a typed backslash-n is told from an escaped newline
    CHECK(escape_log("typed \\n, real \n") == "typed \\\\n, real \\n");
    CHECK(escape_control("typed \\n") == "typed \\n"); // records: read back as written
    PlacementRecord r;
    r.state = RecordState::Waiting;
    r.reason = "busy\n<0>forged emergency";
    const std::string s = r.str();
    CHECK(s.find('\n') == std::string::npos);
    auto back = PlacementRecord::parse(s);
    REQUIRE(back);
    CHECK(back->str() == s);
}

TEST_CASE("hostlists that would wrap a 64-bit count are refused, not expanded", "[safety][hostlist][quick]") {
    // 65536 x 2^48 = 2^64: wrapped to 0 and passed the cap, then exhausted memory
    CHECK_THROWS_WITH(hostlist_expand("n[1-65536]x[1-281474976710656]"), Catch::Contains("expands to more than"));
    CHECK_THROWS_WITH(hostlist_expand("n[0-999999999999999999,0-999999999999999999]"),
                      Catch::Contains("expands to more than"));
    std::string many = "n[";
    for (int i = 0; i < 20; ++i) many += std::string(i ? "," : "") + "0-999999999999999999";
    CHECK_THROWS_WITH(hostlist_expand(many + "]"), Catch::Contains("expands to more than"));
    CHECK(hostlist_expand("n[1-3]x[1-2]").size() == 6);
    // a tag whose sizes multiply past int: a mismatch, never undefined behaviour
    RequestTag t;
    t.slice = 1000000;
    t.count = 1000000;
    t.nodes = 16;
    SlurmJob j;
    j.num_nodes = 16;
    World w(1);
    j.id = 9;
    j.comment = t.str();
    j.state = JobState::Pending;
    j.licenses = "nvlslice_gate:1";
    w.jobs.push_back(j);
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::SetRecord, 9));
    CHECK_THAT(find<action::SetRecord>(out, 9)->text, Catch::Contains("ignored"));
}

TEST_CASE("an NTP step of the wall clock does not expire the helper's own timers", "[safety][quick]") {
    World w(1);
    w.cfg.repair_not_responding_after_s = 20;
    SlurmJob& j = w.add(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n005").not_responding = true;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown));
    // one second later, but the wall clock stepped an hour forward
    w.now += 3600;
    w.mono += 1;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown));
    w.mono += 20;
    auto aborted = w.cycle();
    CHECK(find(aborted, ActionKind::AbortSteps));
    w.apply(aborted);
    // the DOWN that follows the abort counts monotonic seconds too
    w.now -= 3600;
    w.mono += kDownAfterAbortS;
    CHECK(find(w.cycle(), ActionKind::NodeDown));
}

TEST_CASE("slurmctld away in the middle of a batch: apply stops there; a stop request ends it too",
          "[safety][apply][quick]") {
    struct Away final : FakeCluster {
        int calls_left = 2;
        void apply(const Action& a, const action::Names& names) override {
            if (a.kind() == ActionKind::SetRecord && calls_left-- <= 0)
                throw Unreachable("Unable to contact slurm controller (connect failure)");
            FakeCluster::apply(a, names);
        }
    } fake;
    for (JobId id : {1u, 2u, 3u, 4u}) {
        SlurmJob j;
        j.id = id;
        fake.jobs.push_back(j);
    }
    std::vector<Action> actions;
    for (JobId id : {1u, 2u, 3u, 4u}) actions.push_back({id, action::SetRecord{"nvlslice/1 placed"}});
    actions.push_back({0, action::SetReservation{"n[017-018]"}});
    auto failures = apply(fake, HelperConfig{}, actions);
    REQUIRE(failures.size() == 1);
    CHECK(failures[0].unreachable);
    CHECK(failures[0].job == 0); // slurmctld's absence is not job 3's fault
    CHECK_THAT(failures[0].error, Catch::Contains("the 2 action(s) after it are left for the next cycle"));
    CHECK(fake.calls == std::vector<std::string>{"record 1", "record 2"});
    HelperMemory mem;
    note_applied(mem, actions, failures, 10);
    CHECK(mem.backoff.empty());
    CHECK(mem.cluster_backoff.empty());

    static int asked = 0;
    asked = 0;
    FakeCluster f2;
    f2.jobs = fake.jobs;
    apply(f2, HelperConfig{}, actions, nullptr, [] { return ++asked > 1; });
    CHECK(f2.calls.size() == 1);
}

TEST_CASE("a cluster-wide action Slurm refuses backs off instead of being retried and logged every cycle",
          "[safety][apply][quick]") {
    World w(1);
    w.gate.reset(); // no gate reservation: the Gate action, refused (no Licenses= line)
    w.faults["gate"] = "Invalid license specification";
    int asked = 0;
    for (int s = 0; s < 40; ++s) {
        auto out = w.cycle();
        if (find(out, ActionKind::Gate)) {
            ++asked;
            auto failures = apply(w, w.cfg, out.actions);
            note_applied(w.mem, out.actions, failures, w.mono);
        }
        w.mono += 1;
        w.now += 1;
    }
    // tried at 0, 2, 6, 14, 30 s: five times in 40 s, not forty
    CHECK(asked == 5);
    // once Slurm accepts it, the backoff is gone
    w.faults.clear();
    w.mono += 300;
    auto out = w.step();
    REQUIRE(find(out, ActionKind::Gate));
    CHECK(w.mem.cluster_backoff.empty());
    CHECK(w.gate); // made
}

TEST_CASE("the plugin gates a job only while the gate is closed", "[safety][quick]") {
    CHECK_FALSE(gate_open_reason("nvlslice_gate", {true, 1, 1}));
    auto none = gate_open_reason("nvlslice_gate", {false, 0, 0});
    REQUIRE(none);
    CHECK_THAT(*none, Catch::Contains("slurm.conf defines no license nvlslice_gate") &&
                          Catch::Contains("Licenses=nvlslice_gate:1"));
    // before nvlsliced has made its reservation, or after it was removed
    auto open = gate_open_reason("nvlslice_gate", {true, 1, 0});
    REQUIRE(open);
    CHECK_THAT(*open, Catch::Contains("the gate is open") && Catch::Contains("0 of 1 reserved") &&
                          Catch::Contains("starts nvlsliced"));
    CHECK(gate_open_reason("nvlslice_gate", {true, 2, 1}));
}

TEST_CASE("a repair retried after a partial failure is counted once", "[safety][quick]") {
    World w(1);
    SlurmJob& j = w.add(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n005").state = NodeState::Draining;
    w.faults["requeue-hold 7"] = "Unable to contact slurm controller";
    auto first = w.cycle();
    CHECK(first.stats.repairs_in_rack == 1);
    apply(w, w.cfg, first.actions); // the record went through, the requeue did not
    w.faults.clear();
    REQUIRE_THAT(j.admin_comment, Catch::StartsWith("nvlslice/1 repairing") && Catch::Contains("repairs=1"));
    auto again = w.cycle();
    CHECK(again.stats.repairs_in_rack == 0);
    REQUIRE(find(again, ActionKind::RequeueHold, 7));
    CHECK_THAT(find<action::SetRecord>(again, 7)->text, Catch::Contains("repairs=1"));
}

TEST_CASE("job arrays: the task Slurm splits off takes the placement; the rest of the array is placed on its own",
          "[safety][quick]") {
    World w(2);
    // The array (job 7) was placed on n[001-016] and released. Slurm started
    // its first task there and split it off under a new id, 9
    // (job_array_split: the task started gets a new job id, the rest of the
    // array keeps 7), copying comment, admin_comment, ReqNodeList and
    // licenses to both.
    const std::string placed = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0 job=7";
    SlurmJob& rest = w.add(7, 16, 1);
    rest.admin_comment = placed;
    rest.req_nodes = "n[001-016]";
    SlurmJob& task = w.add(9, 16, 1);
    w.run_on(task, "n[001-016]");
    task.admin_comment = placed;
    auto out = w.cycle();
    CAPTURE(out.log);
    // the task's record becomes its own, where it runs
    const auto* trec = find<action::SetRecord>(out, 9);
    REQUIRE(trec);
    CHECK_THAT(trec->text,
               Catch::StartsWith("nvlslice/1 placed slice=16 slices=n[001-016]") && Catch::EndsWith("job=9"));
    CHECK(count(out.log, "job 9: a task of job array 7 started on its placement n[001-016]") == 1);
    // the rest is gated again and waits for its own placement, at once (not
    // after replace_after)
    REQUIRE(find(out, ActionKind::SetLicenses, 7));
    // and the node list it was given with the task taken off, after the gate
    REQUIRE(find<action::PinOnly>(out, 7));
    CHECK(find<action::PinOnly>(out, 7)->nodes.empty());
    CHECK(index_of(out, ActionKind::SetLicenses, 7) < index_of(out, ActionKind::PinOnly, 7));
    CHECK_THAT(find<action::SetRecord>(out, 7)->text,
               Catch::StartsWith("nvlslice/1 waiting") && Catch::Contains("task job 9 of its array started"));
    CHECK(out.follow_up);
    // the next cycle (Slurm applied it all) places it on the other rack
    w.apply(out);
    CHECK(rest.licenses == "nvlslice_gate:1");
    CHECK(rest.req_nodes.empty());
    auto next = w.cycle();
    CAPTURE(next.log);
    REQUIRE(find(next, ActionKind::Pin, 7));
    CHECK(find<action::Pin>(next, 7)->nodes == "n[019-034]");
    CHECK_THAT(find<action::SetRecord>(next, 7)->text,
               Catch::StartsWith("nvlslice/1 placed slice=16 slices=n[019-034]") && Catch::EndsWith("job=7"));
    CHECK_FALSE(find(next, ActionKind::SetRecord, 9));
    // a record of an older helper (no job=) is taken as the job's own
    auto old = PlacementRecord::parse("nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0");
    REQUIRE(old);
    CHECK(old->belongs_to(7));
    CHECK_THROWS_WITH(PlacementRecord::parse("nvlslice/1 placed slice=1 job=-3"), Catch::Contains("not a job id"));
}

TEST_CASE("a repair under way asks for a quick next cycle; a quiet cluster does not", "[safety][quick]") {
    World w(1);
    SlurmJob& j = w.add(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0 job=7";
    CHECK_FALSE(w.cycle().follow_up);
    w.node("n005").state = NodeState::Draining;
    auto rep = w.cycle();
    REQUIRE(find(rep, ActionKind::RequeueHold, 7));
    CHECK(rep.follow_up);
    // pending again, held, waiting for its start second: still followed
    w.requeue_delay = 1;
    w.apply(rep);
    CHECK(j.held);
    CHECK(w.node("n005").state == NodeState::Drained);
    CHECK(w.cycle().follow_up);
}

TEST_CASE("with a backup controller only the helper beside the slurmctld in control acts", "[safety][quick]") {
    const std::vector<std::string> hosts = {"ctl1", "ctl2"};
    // one controller: no choice to make
    CHECK(controller_role({"ctl1"}, {false}, {"elsewhere"}).active);
    // the primary answers: its host acts, the backup's stands by
    CHECK(controller_role(hosts, {true, true}, {"ctl1.cluster.example"}).active);
    auto standby = controller_role(hosts, {true, true}, {"CTL2"});
    CHECK_FALSE(standby.active);
    CHECK_THAT(standby.why, Catch::Contains("runs on ctl1 (SlurmctldHost #0), not this host: standing by"));
    // the primary is gone: the backup has taken control, its helper acts
    CHECK(controller_role(hosts, {false, true}, {"ctl2"}).active);
    CHECK_FALSE(controller_role(hosts, {false, true}, {"ctl1"}).active);
    // none answers: nobody acts
    CHECK_FALSE(controller_role(hosts, {false, false}, {"ctl1"}).active);
}

TEST_CASE("a degraded rack's nodes are reserved, the failed one too; once it recovers, its spares are its last "
          "nodes again",
          "[safety][quick]") {
    World w(2);
    w.cfg.rack_failure_reasons = "contained";
    w.node("n009").state = NodeState::Drained;
    w.node("n009").reason = "Xid 145: NVLink contained error";
    auto deg = w.cycle();
    REQUIRE(find(deg, ActionKind::SetReservation));
    CHECK(find<action::SetReservation>(deg)->nodes == "n[001-018,035-036]");
    w.apply(deg);
    w.node("n009").state = NodeState::Idle;
    w.node("n009").reason.clear();
    auto rec = w.cycle();
    REQUIRE(find(rec, ActionKind::SetReservation));
    CHECK(find<action::SetReservation>(rec)->nodes == "n[017-018,035-036]");
}

TEST_CASE("a rack that runs nothing has its last nodes as spares again, a busy one keeps its current ones",
          "[safety][quick]") {
    World w(2);
    // an earlier repair left n007 as a spare of rack 1
    w.resv = Reservation{"nvlslice_spares", "n[007,018,035-036]"};
    w.node("n007").state = NodeState::SpareReserved;
    w.node("n018").state = NodeState::SpareReserved;
    w.node("n017").state = NodeState::Allocated;
    // busy: the spares stay where they are (no reservation churn)
    CHECK_FALSE(find(w.cycle(), ActionKind::SetReservation));
    // the rack runs nothing: home again
    w.node("n017").state = NodeState::Idle;
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::SetReservation));
    CHECK(find<action::SetReservation>(out)->nodes == "n[017-018,035-036]");
}

TEST_CASE("Slurm's own reasons to hold a job back are told from the gate's, priority's and resources'",
          "[safety][eligibility][quick]") {
    for (const char* r :
         {"Dependency", "DependencyNeverSatisfied", "BeginTime", "AssocGrpNodeLimit", "AssocGrpJobsLimit",
          "AssocMaxJobsLimit", "QOSMaxNodePerUserLimit", "QOSGrpNodeLimit", "PartitionNodeLimit", "PartitionTimeLimit",
          "JobArrayTaskLimit", "MaxJobsPerAccount", "MaxNodePerAccount", "Reservation", "ReservationDeleted",
          "JobHeldUser", "AccountingPolicy", "InvalidAccount"})
        CHECK(reason_holds_back(r));
    for (const char* r : {"", "None", "Priority", "Resources", "Licenses", "ReqNodeNotAvail", "Prolog", "NodeDown"})
        CHECK_FALSE(reason_holds_back(r));
    SlurmJob j;
    j.state = JobState::Pending;
    j.reason = "Licenses";
    j.licenses = "nvlslice_gate:1"; // the gate's: the helper's to open
    CHECK_FALSE(held_back_by_slurm(j, 1000, "nvlslice_gate"));
    j.licenses = "matlab:2"; // native mode, or the gate off: Slurm's own
    CHECK(held_back_by_slurm(j, 1000, "nvlslice_gate").value_or(HeldBack{}).text == "Licenses");
    CHECK(held_back_by_slurm(j, 1000, "").value_or(HeldBack{}).text == "Licenses");
    j.licenses.clear();
    j.reason = "Resources";
    j.begin_time = 4600; // an hour on: the start Slurm expects for a job waiting for nodes
    CHECK_FALSE(held_back_by_slurm(j, 1000));
    j.reason = "BeginTime"; // the user's --begin, as Slurm says
    CHECK_THAT(held_back_by_slurm(j, 1000).value_or(HeldBack{}).text, Catch::StartsWith("BeginTime (eligible at "));
    j.reason = "None"; // not looked at by the scheduler yet
    CHECK_THAT(held_back_by_slurm(j, 1000).value_or(HeldBack{}).text, Catch::StartsWith("BeginTime (eligible at "));
    // after a requeue the begin time is Slurm's requeue delay, which a repair may bring forward
    j.restarts = 1;
    j.reason = "BeginTime";
    CHECK_FALSE(held_back_by_slurm(j, 1000));
    j.reason = "AssocGrpNodeLimit";
    CHECK(held_back_by_slurm(j, 1000).value_or(HeldBack{}).text == "AssocGrpNodeLimit");
    j.state = JobState::Running;
    CHECK_FALSE(held_back_by_slurm(j, 1000));
}

TEST_CASE("every pending reason Slurm 22.05-26.05 names is decoded into a kind; an unknown one holds the job back",
          "[safety][eligibility][quick]") {
    // the names of libslurm's tables (job_reason_string, 22.05;
    // job_state_reason_string, 23.02+) besides the accounting limits'
    const std::pair<const char*, ReasonKind> known[] = {
        {"None", ReasonKind::None},
        {"Priority", ReasonKind::Priority},
        {"Resources", ReasonKind::Resources},
        {"ReqNodeNotAvail", ReasonKind::NodesUnavailable},
        {"Licenses", ReasonKind::Licenses},
        {"PartitionDown", ReasonKind::Partition},
        {"PartitionInactive", ReasonKind::Partition},
        {"PartitionNodeLimit", ReasonKind::Partition},
        {"PartitionTimeLimit", ReasonKind::Partition},
        {"PartitionConfig", ReasonKind::Partition},
        {"JobArrayTaskLimit", ReasonKind::ArrayThrottle},
        {"Reservation", ReasonKind::Reservation},
        {"BeginTime", ReasonKind::BeginTime},
        {"Dependency", ReasonKind::Dependency},
        {"JobHeldAdmin", ReasonKind::Held},
        {"QOSMaxWallDurationPerJobLimit", ReasonKind::AcctLimit},
        {"AssocGrpGRES", ReasonKind::AcctLimit},
        {"QOSGrpGRES", ReasonKind::AcctLimit},
        {"MaxCpuRunMinsPerUser", ReasonKind::AcctLimit},
        {"QOSUsageThreshold", ReasonKind::AcctLimit},
        {"BurstBufferStageIn", ReasonKind::Blocked},
        {"NvidiaImexChannels", ReasonKind::Blocked},
        {"MaxPoweredUpNodes", ReasonKind::Blocked},
        {"NodeDown", ReasonKind::LastRun},
        {"Cleaning", ReasonKind::LastRun},
        {"Constraints", ReasonKind::Constraints},
    };
    for (const auto& [name, kind] : known) {
        CAPTURE(name);
        CHECK(reason_kind(name) == kind);
        const PendingReason r(name);
        CHECK(r.name() == name);
        CHECK(r.kind() == kind);
    }
    for (const char* later : {"InvalidReason", "reason#311", "NewReasonOfSlurm27", "Partition"}) {
        CAPTURE(later);
        CHECK(reason_kind(later) == ReasonKind::Unknown);
        CHECK(reason_holds_back(later));
        SlurmJob j;
        j.reason = later;
        CHECK_THAT(held_back_by_slurm(j, 1000).value_or(HeldBack{}).text,
                   Catch::StartsWith(later) && Catch::EndsWith("(a reason this nvlslice does not know)"));
    }
}

TEST_CASE("what a waiting job's reason may hide is read from Slurm's partitions, licenses, reservations and arrays",
          "[safety][eligibility][quick]") {
    SlurmGates g;
    g.partitions = {{"batch", true, 16, 1, 3600}, {"down", false, -1, 0, -1}, {"drain", true, -1, 0, -1}};
    g.licenses = {{"nvlslice_gate", 0, 0, 0}, {"matlab", 4, 3, 0}, {"ansys", 4, 0, 4}};
    g.reservations = {{"later", "n[001-016]", 5000, 9000}, {"now", "n[001-016]", 500, 9000}};
    SlurmJob j;
    j.state = JobState::Pending;
    j.reason = "Licenses"; // the gate's, whatever else holds the job
    j.licenses = "nvlslice_gate:1";
    j.num_nodes = 16;
    j.time_limit = 1800;
    j.partition = "batch";
    auto holds = [&](int running = 0) { return held_back_by_gates(j, g, running, "nvlslice_gate", 1000); };
    CHECK_FALSE(holds());
    j.num_nodes = 32; // above MaxNodes
    CHECK_THAT(holds().value_or(HeldBack{}).text, Catch::StartsWith("PartitionNodeLimit (partition batch)"));
    j.partition = "batch,drain"; // any of them runs it: a DRAIN partition still starts its jobs
    CHECK_FALSE(holds());
    j.num_nodes = 16;
    j.partition = "down";
    CHECK_THAT(holds().value_or(HeldBack{}).text, Catch::StartsWith("PartitionDown"));
    CHECK(holds()->kind == ReasonKind::Partition);
    CHECK_FALSE(holds()->updates_refused);
    g.partitions[1].inactive = true;
    CHECK_THAT(holds().value_or(HeldBack{}).text, Catch::StartsWith("PartitionInactive (partition down)"));
    CHECK(holds()->updates_refused); // Slurm refuses its updates: the helper writes nothing
    {
        // the record's text read back: the same kind and flag
        const HeldBack back = HeldBack::from_text(holds()->text);
        CHECK((back.kind == ReasonKind::Partition && back.updates_refused));
        CHECK(HeldBack::from_text("AssocGrpGRES (gres/gpu: 64 asked)").kind == ReasonKind::AcctLimit);
        CHECK(HeldBack::from_text("JobArrayTaskLimit (1 of its array run, at most 1)").kind ==
              ReasonKind::ArrayThrottle);
        CHECK(HeldBack::from_text("SomeFutureReason").kind == ReasonKind::Unknown);
    }
    g.partitions[1].inactive = false;
    j.partition = "batch";
    j.time_limit = 7200; // above MaxTime
    CHECK_THAT(holds().value_or(HeldBack{}).text, Catch::StartsWith("PartitionTimeLimit"));
    j.time_limit = 1800;
    j.partition = "elsewhere"; // a partition not read: Slurm's reason will say
    CHECK_FALSE(holds());
    j.partition = "batch";
    j.licenses = "nvlslice_gate:1,matlab:1"; // 1 of 4 free
    CHECK_FALSE(holds());
    j.licenses = "nvlslice_gate:1,matlab:2";
    CHECK(holds().value_or(HeldBack{}).text == "Licenses (matlab in use)");
    j.licenses = "matlab:2|ansys:1"; // one of: both short (ansys held by a reservation)
    CHECK(holds());
    j.reservation = "now"; // in a reservation: its licenses are the job's
    CHECK_FALSE(holds());
    j.licenses.clear();
    j.reservation = "later";
    CHECK(holds().value_or(HeldBack{}).text == "Reservation (later starts later)");
    CHECK(holds()->kind == ReasonKind::Reservation);
    j.reservation.clear();
    j.array_id = 77;
    j.array_throttle = 1; // %1
    CHECK_FALSE(holds(0));
    CHECK_THAT(holds(1).value_or(HeldBack{}).text, Catch::StartsWith("JobArrayTaskLimit"));
    CHECK(holds(1)->kind == ReasonKind::ArrayThrottle);
    // a reason other than the gate's Licenses or None: Slurm tested all this
    j.reason = "Resources";
    CHECK_FALSE(holds(1));
    j.reason = "Licenses";
    j.array_id = 0;
    // a QOS that lifts the partition's limits: known only with the limits read
    j.num_nodes = 32;
    j.qos = "big";
    CHECK_FALSE(holds()); // no limits read: Slurm's reason will say
    AcctLimits lim;
    lim.qos.push_back({});
    lim.qos[0].name = "big";
    CHECK(held_back_by_gates(j, g, 0, "nvlslice_gate", 1000, &lim)
              .value_or(HeldBack{})
              .text.rfind("PartitionNodeLimit", 0) == 0);
    lim.qos[0].lifts_partition_limits = true;
    CHECK_FALSE(held_back_by_gates(j, g, 0, "nvlslice_gate", 1000, &lim));
    j.partition = "down"; // no flag lifts a partition's state
    CHECK(held_back_by_gates(j, g, 0, "nvlslice_gate", 1000, &lim));
    j.state = JobState::Running;
    CHECK_FALSE(holds(1));
}

TEST_CASE("gate mode acts only on jobs Slurm would start: others stay behind the gate, untouched",
          "[safety][eligibility][quick]") {
    World w(2);
    // the top job waits on a dependency, the next on an association limit,
    // the third on the user's --begin an hour on; the fourth may start
    SlurmJob& dep = w.add(7, 16, 1);
    dep.priority = 4000;
    dep.reason = "Dependency";
    SlurmJob& lim = w.add(8, 16, 1);
    lim.priority = 3000;
    lim.reason = "AssocGrpJobsLimit";
    SlurmJob& later = w.add(9, 16, 1);
    later.priority = 2000;
    later.reason = "BeginTime";
    later.begin_time = w.now + 3600;
    for (SlurmJob* j : {&dep, &lim, &later}) j->licenses = "nvlslice_gate:1";
    SlurmJob& ok = w.add(10, 16, 1);
    ok.priority = 1000;
    ok.licenses = "nvlslice_gate:1";
    ok.reason = "Licenses";
    auto out = w.cycle();
    CAPTURE(out.log);
    for (JobId id : {7, 8, 9}) {
        CHECK_FALSE(find(out, ActionKind::Pin, id));
        CHECK_FALSE(find(out, ActionKind::SetLicenses, id));
        REQUIRE(find(out, ActionKind::SetRecord, id));
        CHECK_THAT(find<action::SetRecord>(out, id)->text,
                   Catch::StartsWith("nvlslice/1 waiting") && Catch::Contains("held back by Slurm: "));
    }
    CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::EndsWith("held back by Slurm: Dependency"));
    CHECK_THAT(find<action::SetRecord>(out, 9)->text, Catch::Contains("held back by Slurm: BeginTime (eligible at"));
    // no racks kept for a job Slurm will not start; the one that may start is placed
    CHECK_FALSE(find(out, ActionKind::Protect));
    REQUIRE(find(out, ActionKind::Pin, 10));
    CHECK(find<action::Pin>(out, 10)->start_at == 0); // its begin time is Slurm's, never moved
    CHECK(find(out, ActionKind::SetLicenses, 10));
    // said once: the next cycle, as Slurm then shows it, does nothing for them
    w.apply(out);
    auto again = w.cycle();
    for (JobId id : {7, 8, 9}) CHECK_FALSE(find(again, ActionKind::SetRecord, id));
}

namespace {
// A world where Slurm holds five slice jobs back for what their reasons
// hide: as submitted, gate mode's say Licenses (the gate's, whatever else
// holds them), native mode's None (not looked at yet). Top priority first.
struct HiddenHolds {
    World w{2};
    const std::vector<std::pair<JobId, std::string>> held = {{7, "PartitionDown"},
                                                             {8, "PartitionNodeLimit"},
                                                             {9, "Licenses (matlab in use)"},
                                                             {10, "Reservation (course starts later)"},
                                                             {11, "JobArrayTaskLimit"}};
    HiddenHolds(bool native, int slice) {
        w.cfg.protect = true;
        if (native) w.cfg.hand_off = HandOff::Native;
        w.gates = SlurmGates{};
        w.gates->partitions = {{"batch", true, -1, 0, -1}, {"down", false, -1, 0, -1}, {"small", true, 1, 0, -1}};
        w.gates->licenses = {{"nvlslice_gate", 0, 0, 0}, {"matlab", 2, 2, 0}};
        w.gates->reservations = {{"course", "n[001-016]", w.now + 3600, w.now + 7200}};
        auto add = [&](JobId id, uint32_t prio) -> SlurmJob& {
            SlurmJob& j = w.add_slice_job(id, slice, 1, /*gated=*/!native, /*ckpt=*/true);
            if (native) {
                RequestTag t = *RequestTag::parse(j.comment);
                t.hand_off = HandOff::Native;
                j.comment = t.str();
            }
            j.priority = prio;
            j.reason = native ? "None" : "Licenses";
            j.partition = "batch";
            j.time_limit = 600;
            return j;
        };
        add(7, 5000).partition = "down";
        add(8, 4900).partition = "small";
        SlurmJob& lic = add(9, 4800);
        lic.licenses += lic.licenses.empty() ? "matlab:1" : ",matlab:1";
        add(10, 4700).reservation = "course";
        SlurmJob& arr = add(11, 4600);
        arr.array_id = 11;
        arr.array_throttle = 1;
        add(20, 100); // Slurm would start it
    }
    void check_untouched(const CycleOutput& out, bool with_record) const {
        for (const auto& [id, why] : held) {
            CAPTURE(id);
            for (ActionKind k : {ActionKind::Pin, ActionKind::Exclude, ActionKind::SetLicenses, ActionKind::Lend})
                CHECK_FALSE(find(out, k, id));
            if (!with_record) continue;
            REQUIRE(find(out, ActionKind::SetRecord, id));
            CHECK_THAT(find<action::SetRecord>(out, id)->text, Catch::Contains("held back by Slurm: " + why));
        }
    }
};
} // namespace

TEST_CASE("gate mode: a slice job that Slurm holds back for what its reason hides gets no pin, no racks kept, not "
          "for one cycle; once the reason clears it is placed",
          "[safety][eligibility][quick]") {
    HiddenHolds h(/*native=*/false, 16);
    World& w = h.w;
    // busy racks: a top job waiting for room would get racks kept for it
    w.add_plain_job(90, 10, "n[001-004]").end_time = w.now + 600;
    w.add_plain_job(91, 10, "n[019-022]").end_time = w.now + 600;
    SlurmJob& task = w.add_plain_job(12, 10, "n[005-006]"); // a task of job 11's array runs
    task.array_id = 11;
    task.array_throttle = 1;
    w.job(20).comment = slice_job(20, 8, 1, true, w.now).comment;
    w.job(20).num_nodes = 8;
    auto out = w.cycle();
    CAPTURE(out.log);
    h.check_untouched(out, /*with_record=*/true);
    CHECK_FALSE(find(out, ActionKind::Protect)); // no racks kept for a job Slurm would not start
    CHECK(find(out, ActionKind::Pin, 20));
    // the partition up again: job 7 waits for room as any other, top priority
    w.apply(out);
    w.gates->partitions[1].runs_jobs = true;
    w.job(20).reason = "Resources";
    auto later = w.cycle();
    CAPTURE(later.log);
    REQUIRE(find(later, ActionKind::Protect));
    CHECK_THAT(find<action::SetRecord>(later, 7)->text, !Catch::Contains("held back"));
}

TEST_CASE("gate mode: a slice job in an INACTIVE partition is left as it is, its record too (Slurm refuses every "
          "update of it); a refused record inside a backoff is not retried every cycle",
          "[safety][eligibility][quick]") {
    HiddenHolds h(/*native=*/false, 16);
    World& w = h.w;
    w.add_plain_job(90, 10, "n[001-004]").end_time = w.now + 600;
    w.add_plain_job(91, 10, "n[019-022]").end_time = w.now + 600;
    w.gates->partitions[1].runs_jobs = false;
    w.gates->partitions[1].inactive = true;
    auto out = w.cycle();
    CAPTURE(out.log);
    for (ActionKind k : {ActionKind::Pin, ActionKind::SetLicenses, ActionKind::Lend, ActionKind::SetRecord})
        CHECK_FALSE(find(out, k, 7));
    bool said = false;
    for (const auto& l : out.log)
        said = said || l.line().find("held back by Slurm: PartitionInactive (partition down)") != std::string::npos;
    CHECK(said);
    // Slurm refuses a job's updates: its backoff, and the record that says
    // so refused too, is booked once, not each cycle
    HelperMemory mem;
    const Action rec{7, action::SetRecord{"nvlslice/1 waiting"}};
    note_applied(mem, {rec}, {{7, ActionKind::SetRecord, "refused", false, ""}}, 100, 0);
    REQUIRE(mem.backoff.count(7));
    const int64_t until = mem.backoff[7].until;
    CHECK(mem.backoff[7].failures == 1);
    mem.backoff[7].recorded = true; // the record that says it backs off, written and refused in turn
    note_applied(mem, {rec}, {{7, ActionKind::SetRecord, "refused", false, ""}}, 101, 0);
    CHECK(mem.backoff[7].failures == 1);
    CHECK(mem.backoff[7].until == until);
    CHECK(mem.backoff[7].recorded);
    // past its end, a refusal counts again
    note_applied(mem, {rec}, {{7, ActionKind::SetRecord, "refused", false, ""}}, until, 0);
    CHECK(mem.backoff[7].failures == 2);
}

TEST_CASE("gate mode: a placed job whose partition is made INACTIVE before it starts is left pinned as it is, "
          "not gated again (Slurm would refuse both updates)",
          "[safety][eligibility][quick]") {
    World w(2);
    w.gates = SlurmGates{};
    w.gates->partitions = {{"batch", true, -1, 0, -1}};
    w.gates->licenses = {{"nvlslice_gate", 0, 0, 0}};
    SlurmJob& j = w.add_slice_job(7, 16, 1, /*gated=*/true);
    j.partition = "batch";
    j.reason = "Licenses";
    auto placed = w.cycle();
    CAPTURE(placed.log);
    REQUIRE(find(placed, ActionKind::SetLicenses, 7)); // released
    w.apply(placed);
    w.job(7).reason = "None";
    w.gates->partitions[0].runs_jobs = false;
    w.gates->partitions[0].inactive = true;
    auto out = w.cycle();
    CAPTURE(out.log);
    for (ActionKind k : {ActionKind::Pin, ActionKind::SetLicenses, ActionKind::SetRecord, ActionKind::Hold})
        CHECK_FALSE(find(out, k, 7));
    CHECK(count(out.log, "held back by Slurm: PartitionInactive (partition batch)") == 1);
    // said once, not each cycle
    w.apply(out);
    auto again = w.cycle();
    CHECK(count(again.log, "PartitionInactive") == 0);
    // active again: it starts on its pin as it is (Slurm's to start)
    w.gates->partitions[0].runs_jobs = true;
    w.gates->partitions[0].inactive = false;
    auto up = w.cycle();
    CAPTURE(up.log);
    CHECK_FALSE(find(up, ActionKind::SetLicenses, 7));
}

TEST_CASE("native mode: a slice job Slurm holds back for what its reason hides is lent no spare; without the "
          "partitions, licenses and reservations read it would be",
          "[safety][eligibility][quick]") {
    for (const bool read : {true, false}) {
        CAPTURE(read);
        HiddenHolds h(/*native=*/true, 2);
        World& w = h.w;
        w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
        w.cfg.lend = LendScope::Checkpointable;
        w.add_plain_job(90, 10, "n[001-016]");
        w.add_plain_job(91, 10, "n[019-034]");
        SlurmJob& task = w.add_plain_job(12, 10, "n[017]"); // a task of job 11's array runs (on a lent spare)
        task.array_id = 11;
        task.array_throttle = 1;
        if (!read) w.gates.reset();
        auto out = w.cycle();
        CAPTURE(out.log);
        if (read)
            h.check_untouched(out, /*with_record=*/false);
        else
            CHECK(find(out, ActionKind::Lend, 7)); // the top job, in a DOWN partition
    }
}

TEST_CASE("a pending reason this nvlslice does not know holds the job back and is named in the log once",
          "[safety][eligibility][quick]") {
    World w(2);
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    j.reason = "QuantumEntanglementLimit"; // a later Slurm's
    SlurmJob& k = w.add_slice_job(8, 16, 1);
    k.reason = "QuantumEntanglementLimit";
    k.priority = 900;
    auto out = w.cycle();
    CAPTURE(out.log);
    CHECK(count(out.log, "\"QuantumEntanglementLimit\" is one this nvlslice does not know") == 1);
    for (JobId id : {7, 8}) {
        CHECK_FALSE(find(out, ActionKind::Pin, id));
        CHECK_FALSE(find(out, ActionKind::SetLicenses, id));
    }
    w.apply(out);
    for (SlurmJob* x : {&j, &k}) x->reason = "QuantumEntanglementLimit";
    CHECK(count(w.cycle().log, "does not know") == 0);
}

TEST_CASE("a pin that has not started within replace_after is dropped and its racks freed, whatever kept it",
          "[safety][eligibility][quick]") {
    World w(2);
    w.cfg.replace_after_s = 60;
    SlurmJob& j = w.add(7, 16, 1);
    j.licenses = "nvlslice_gate:1";
    j.reason = "Licenses";
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::Pin, 7));
    // as Slurm shows it: released, pinned, but not started (a limit Slurm
    // tests only when it places: on 22.05 the gate hid it)
    w.apply(out);
    CHECK(j.licenses.empty());
    j.reason = "Resources";
    w.mono += 1;
    CHECK(w.cycle().actions.empty());
    w.mono += 61;
    auto drop = w.cycle();
    CAPTURE(drop.log);
    REQUIRE(find(drop, ActionKind::SetLicenses, 7));
    CHECK(find<action::SetLicenses>(drop, 7)->licenses == "nvlslice_gate:1");
    CHECK_THAT(find<action::SetRecord>(drop, 7)->text,
               Catch::StartsWith("nvlslice/1 waiting") && Catch::Contains("and not started (Slurm: Resources)"));
    // gated again: not placed again before replace_after has passed once more
    w.apply(drop);
    j.reason = "Licenses";
    w.mono += 5;
    CHECK_FALSE(find(w.cycle(), ActionKind::Pin, 7));
    w.mono += 60;
    CHECK(find(w.cycle(), ActionKind::Pin, 7));
    // held back by Slurm once placed (a dependency added since): at once
    SlurmJob& k = w.add(8, 16, 1);
    k.admin_comment = "nvlslice/1 placed slice=16 slices=n[019-034] repairs=0 moves=0 job=8";
    k.req_nodes = "n[019-034]";
    k.reason = "Dependency";
    auto held = w.cycle();
    CHECK(find(held, ActionKind::SetLicenses, 8));
    CHECK_THAT(find<action::SetRecord>(held, 8)->text, Catch::EndsWith("held back by Slurm: Dependency"));
}

TEST_CASE("accounting limits Slurm tests only when it places a job are read from its association manager",
          "[safety][eligibility][quick]") {
    AcctLimits a;
    // root account (1) > acct_a (2) > root's association in acct_a (3)
    a.assocs.push_back({1, 0, "root", "", -1, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    a.assocs.push_back({2, 1, "acct_a", "", 16, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    a.assocs.push_back({3, 2, "acct_a", "root", -1, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    SlurmJob j;
    j.state = JobState::Pending;
    j.num_nodes = 16;
    j.assoc_id = 3;
    j.qos = "normal";
    // acct_a runs 16 nodes under GrpTRES=node=16
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "AssocGrpNodeLimit");
    CHECK(held_back_by_limits(j, a)->kind == ReasonKind::AcctLimit);
    a.assocs[1].grp_nodes = 32;
    CHECK_FALSE(held_back_by_limits(j, a));
    // a held account: GrpJobs=0 above it
    a.assocs[0].grp_jobs = 0;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "AssocGrpJobsLimit");
    a.assocs[0].grp_jobs = -1;
    // the job's own association: MaxJobs
    a.assocs[2].max_jobs = 1;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "AssocMaxJobsLimit");
    a.assocs[2].max_jobs = -1;
    // a QOS MaxTRESPerUser=node=16: a 32-node job, and a 16-node one while the user runs 8
    AcctLimits::Qos q;
    q.name = "capped";
    q.max_nodes_per_user = 16;
    q.users.push_back({1000, 8, 1, {}});
    a.qos.push_back(q);
    j.qos = "capped";
    j.user_id = 1000;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "QOSMaxNodePerUserLimit");
    j.num_nodes = 8;
    CHECK_FALSE(held_back_by_limits(j, a));
    // a QOS limit takes the place of the association's of the same kind
    a.qos[0].grp_nodes = 64;
    a.assocs[1].grp_nodes = 16;
    CHECK_FALSE(held_back_by_limits(j, a));
    a.qos[0].grp_nodes = -1;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "AssocGrpNodeLimit");
    // MaxWall: the QOS's, else the association's
    a.assocs[1].grp_nodes = 32;
    REQUIRE_FALSE(held_back_by_limits(j, a));
    j.time_limit = 1800;
    a.assocs[2].max_wall_s = 600;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "AssocMaxWallDurationPerJobLimit");
    a.qos[0].max_wall_s = 3600; // the QOS's takes its place
    CHECK_FALSE(held_back_by_limits(j, a));
    a.qos[0].max_wall_s = 900;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text == "QOSMaxWallDurationPerJobLimit");
    a.qos[0].max_wall_s = a.assocs[2].max_wall_s = -1;
    // a job of an association Slurm did not report: nothing known, nothing held
    j.assoc_id = 99;
    j.qos = "other";
    CHECK_FALSE(held_back_by_limits(j, a));
}

TEST_CASE("every TRES limit is read, not only nodes: GrpTRES=gres/gpu, cpu, mem and license, per job and per user",
          "[safety][eligibility][quick]") {
    // the job's request as Slurm prints it; memory in MB
    auto parse_tres_request = [](std::string_view s) {
        std::vector<TresCount> out;
        for (TresCount t; next_tres_item(s, t);) out.push_back(t);
        return out;
    };
    const auto req = parse_tres_request("cpu=64,mem=1.5G,node=16,billing=64,gres/gpu=64,license/matlab=2,bad,x=1Q");
    REQUIRE(req.size() == 6);
    CHECK(req[1].name == "mem");
    CHECK(req[1].count == 1536);
    CHECK(req[4].name == "gres/gpu");
    CHECK(req[4].count == 64);
    CHECK(parse_tres_request("mem=512K").at(0).count == 1); // rounded up to whole MB
    AcctLimits a;
    a.tres_names = {"cpu", "mem", "energy", "node", "billing", "gres/gpu", "license/matlab"};
    const size_t gpu = 5, cpu = 0, lic = 6;
    std::vector<int64_t> none(a.tres_names.size(), -1), zero(a.tres_names.size(), 0);
    a.assocs.push_back({1, 0, "root", "", -1, -1, -1, -1, 0, 0, -1, none, none, zero});
    a.assocs.push_back({2, 1, "acct_a", "", -1, -1, -1, -1, 0, 0, -1, none, none, zero});
    a.assocs.push_back({3, 2, "acct_a", "root", -1, -1, -1, -1, 0, 0, -1, none, none, zero});
    SlurmJob j;
    j.state = JobState::Pending;
    j.num_nodes = 16;
    j.assoc_id = 3;
    j.user_id = 1000;
    j.tres_req = "cpu=64,mem=16000M,node=16,billing=64,gres/gpu=64";
    CHECK_FALSE(held_back_by_limits(j, a));
    // acct_a: GrpTRES=gres/gpu=96 with 64 in use below it
    a.assocs[1].grp_tres[gpu] = 96;
    a.assocs[1].used_tres[gpu] = 64;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text ==
          "AssocGrpGRES (gres/gpu: 64 asked, 64 in use, limit 96)");
    a.assocs[1].used_tres[gpu] = 32;
    CHECK_FALSE(held_back_by_limits(j, a));
    // the root account's GrpTRES=cpu=100 with 40 in use
    a.assocs[0].grp_tres[cpu] = 100;
    a.assocs[0].used_tres[cpu] = 40;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text ==
          "AssocGrpCpuLimit (cpu: 64 asked, 40 in use, limit 100)");
    a.assocs[0].grp_tres[cpu] = -1;
    // the job's own association: MaxTRES=gres/gpu=32 per job
    a.assocs[2].max_tres_pj[gpu] = 32;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text ==
          "AssocMaxGRESPerJob (gres/gpu: 64 asked, 0 in use, limit 32)");
    a.assocs[2].max_tres_pj[gpu] = -1;
    // a QOS: its GrpTRES takes the place of the association's on that TRES
    AcctLimits::Qos q;
    q.name = "gpuq";
    q.grp_tres = none;
    q.max_tres_pj = none;
    q.max_tres_pu = none;
    q.used_tres = zero;
    a.qos.push_back(q);
    j.qos = "gpuq";
    a.assocs[1].used_tres[gpu] = 64; // the association's own limit would hold it
    a.qos[0].grp_tres[gpu] = 256;
    CHECK_FALSE(held_back_by_limits(j, a));
    a.qos[0].grp_tres[gpu] = -1;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text.rfind("AssocGrpGRES", 0) == 0);
    a.assocs[1].used_tres[gpu] = 0;
    // QOS MaxTRESPerUser=gres/gpu=96 while the user runs 64
    a.qos[0].max_tres_pu[gpu] = 96;
    a.qos[0].users.push_back({1000, 16, 1, {0, 0, 0, 16, 0, 64, 0}});
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text ==
          "QOSMaxGRESPerUser (gres/gpu: 64 asked, 64 in use, limit 96)");
    a.qos[0].users[0].tres[gpu] = 0;
    CHECK_FALSE(held_back_by_limits(j, a));
    // a license counted as TRES (license/matlab), and memory
    j.tres_req += ",license/matlab=2";
    a.qos[0].grp_tres[lic] = 1;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text.rfind("QOSGrpLicense (license/matlab: 2 asked", 0) == 0);
    a.qos[0].grp_tres[lic] = -1;
    a.qos[0].max_tres_pj[1] = 8000;
    CHECK(held_back_by_limits(j, a).value_or(HeldBack{}).text.rfind("QOSMaxMemoryPerJob (mem: 16000 asked", 0) == 0);
    a.qos[0].max_tres_pj[1] = -1;
    // a TRES accounting does not track is never limited; energy never is
    j.tres_req = "cpu=64,node=16,gres/fpga=4,energy=99";
    a.qos[0].grp_tres[2] = 1;
    CHECK_FALSE(held_back_by_limits(j, a));
}

TEST_CASE("a job an accounting limit holds back is not placed; another account's job is",
          "[safety][eligibility][quick]") {
    World w(2);
    AcctLimits limits;
    limits.assocs.push_back({2, 0, "acct_a", "", 16, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    limits.assocs.push_back({3, 2, "acct_a", "root", -1, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    limits.assocs.push_back({4, 0, "acct_b", "root", -1, -1, -1, -1, 0, 0, -1, {}, {}, {}});
    SlurmJob& runner = w.add(6, 16, 1);
    w.run_on(runner, "n[019-034]");
    runner.admin_comment = "nvlslice/1 placed slice=16 slices=n[019-034] repairs=0 moves=0 job=6";
    SlurmJob& x = w.add(7, 16, 1);
    x.licenses = "nvlslice_gate:1";
    x.reason = "Licenses"; // 22.05: the gate hides the limit
    x.assoc_id = 3;
    x.priority = 5000;
    SlurmJob& y = w.add(8, 16, 1);
    y.licenses = "nvlslice_gate:1";
    y.reason = "Licenses";
    y.assoc_id = 4;
    y.priority = 100;
    auto out = w.cycle(&limits);
    CAPTURE(out.log);
    CHECK_FALSE(find(out, ActionKind::Pin, 7));
    CHECK_FALSE(find(out, ActionKind::SetLicenses, 7));
    CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::EndsWith("held back by Slurm: AssocGrpNodeLimit"));
    CHECK_FALSE(find(out, ActionKind::Protect));
    REQUIRE(find(out, ActionKind::Pin, 8));
    CHECK(find<action::Pin>(out, 8)->nodes == "n[001-016]");
}

TEST_CASE("native mode: a slice job an accounting limit holds back is left untouched, no record resets Slurm's reason",
          "[safety][eligibility][native][quick]") {
    World w(2);
    w.cfg.hand_off = HandOff::Native;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    AcctLimits limits;
    limits.assocs.push_back({2, 0, "acct_a", "", 16, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    limits.assocs.push_back({3, 2, "acct_a", "root", -1, -1, -1, -1, 16, 1, -1, {}, {}, {}});
    SlurmJob& runner = w.add(6, 16, 1);
    w.run_on(runner, "n[019-034]");
    SlurmJob& x = w.add(7, 16, 1);
    RequestTag t = *RequestTag::parse(x.comment);
    t.hand_off = HandOff::Native;
    x.comment = t.str();
    x.assoc_id = 3;
    x.reason = "None"; // just submitted: Slurm has not tried it yet
    auto out = w.cycle(&limits);
    CAPTURE(out.log);
    // any update would reset the reason Slurm is about to give it
    CHECK_FALSE(find(out, ActionKind::SetRecord, 7));
    CHECK_FALSE(find(out, ActionKind::Exclude, 7));
    // without the limits it is a job Slurm places: recorded once
    auto open = w.cycle();
    CHECK(find(open, ActionKind::SetRecord, 7));
}

TEST_CASE("the helper reads Slurm's limits only while a slice job waits", "[safety][eligibility][quick]") {
    SlurmJob j;
    j.state = JobState::Pending;
    CHECK_FALSE(needs_limits(j, "nvlslice_gate"));
    j.licenses = "nvlslice_gate:1";
    CHECK(needs_limits(j, "nvlslice_gate")); // gate mode: behind the gate
    j.licenses.clear();
    j.comment = "nvlslice/1 nodes=16 slice=16 count=1 auto=0 placement=strict checkpointable=0 handoff=native | run 7";
    CHECK(needs_limits(j, "nvlslice_gate")); // native mode: a tagged job
    j.state = JobState::Running;
    CHECK_FALSE(needs_limits(j, "nvlslice_gate"));
    j.state = JobState::Pending;
    j.comment = "run 7 nvlslice/1";
    CHECK_FALSE(needs_limits(j, "nvlslice_gate"));
}

TEST_CASE("a job held back by Slurm stays so while an update has reset Slurm's reason to None",
          "[safety][eligibility][quick]") {
    World w(2);
    SlurmJob& dep = w.add(7, 16, 1);
    dep.licenses = "nvlslice_gate:1";
    dep.reason = "Dependency";
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::SetRecord, 7));
    w.apply(out);
    // the record's update reset Slurm's reason (_update_job) until its next pass
    dep.reason = "None";
    auto reset = w.cycle();
    CAPTURE(reset.log);
    CHECK_FALSE(find(reset, ActionKind::Pin, 7));
    CHECK_FALSE(find(reset, ActionKind::SetLicenses, 7));
    CHECK_FALSE(find(reset, ActionKind::SetRecord, 7));
    // Slurm's next pass: the dependency is satisfied, the gate is all that is left
    dep.reason = "Licenses";
    auto free = w.cycle();
    CHECK(find(free, ActionKind::Pin, 7));
    CHECK(find(free, ActionKind::SetLicenses, 7));
}
