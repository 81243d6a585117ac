#include "fake_world.hpp"
#include "fixtures.hpp"
#include "helper_config.hpp"
#include "rack_health.hpp"
#include "reconcile.hpp"
#include "sim.hpp"
#include "slice_job.hpp"

#include "catch.hpp"

#include <algorithm>

using namespace nvl;
using namespace nvl::test;

namespace {

using World = FakeWorld;

std::string kinds(const CycleOutput& o) {
    std::string s;
    for (const auto& a : o.actions) s += std::string(s.empty() ? "" : " ") + a.name();
    return s;
}

// The first action of kind `k` (of job `job`, when it is not 0).
const Action* find(const CycleOutput& o, ActionKind k, JobId job = 0) {
    for (const auto& a : o.actions)
        if (a.kind() == k && (!job || a.job == job)) return &a;
    return nullptr;
}

// The first action of payload T (for `job`, when given).
// The payload of an action that must be a T (the test stops if it is not).
template <class T> const T& as(const Action& a) {
    REQUIRE(a.get<T>());
    return *a.get<T>();
}

template <class T> const T* find(const CycleOutput& o, JobId job = 0) {
    for (const auto& a : o.actions)
        if (auto p = a.get<T>(); p && (!job || a.job == job)) return p;
    return nullptr;
}

// r1's spares (n017, n018) lent to two checkpointable one-node jobs, 8 and
// 9, running there; the spare reservation keeps r2's. Returns job 8.
SlurmJob& lend_r1_spares(World& w) {
    w.resv = Reservation{"nvlslice_spares", "n[035-036]"};
    SlurmJob& a = w.add_slice_job(8, 1, 1, true, true);
    w.run_on(a, "n017");
    a.admin_comment = "nvlslice/1 placed slice=1 slices=n017 repairs=0 moves=0 lent=1";
    SlurmJob& b = w.add_slice_job(9, 1, 1, true, true);
    w.run_on(b, "n018");
    b.admin_comment = "nvlslice/1 placed slice=1 slices=n018 repairs=0 moves=0 lent=1";
    return a;
}

} // namespace

TEST_CASE("a gated slice job is placed, recorded, pinned, its gate taken off; spares reserved first",
          "[reconcile][quick]") {
    World w(2);
    w.add_slice_job(7, 16, 2);
    auto out = w.cycle();
    // the spares are reserved before the gate comes off
    CHECK(kinds(out) == "record reservation pin licenses");
    CHECK(find<action::SetLicenses>(out)->licenses == ""); // the gate license off, nothing else
    CHECK(find<action::SetReservation>(out)->nodes == "n[017-018,035-036]");
    CHECK(find<action::Pin>(out)->nodes == "n[001-016,019-034]");
    // no StartTime: it would reset the job's accrue time (and a begin time)
    CHECK(find<action::Pin>(out)->start_at == 0);
    CHECK(find<action::SetRecord>(out)->text ==
          "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0 job=7");
    CHECK(out.stats.placements == 1);

    // Next cycle, as Slurm then reports it: nothing more to do.
    w.apply(out);
    SlurmJob& j = w.jobs[0];
    CHECK(j.licenses.empty());
    CHECK(j.req_nodes == "n[001-016,019-034]");
    CHECK(w.cycle().actions.empty());
    w.start(j);
    CHECK(w.cycle().actions.empty());
}

TEST_CASE("slurmctld just started: its nodes unregistered (UNKNOWN) degrade no rack and move no job",
          "[reconcile][quick]") {
    World w(3);
    w.add_slice_job(7, 16, 1);
    w.apply(w.cycle());
    w.start(w.jobs[0]);
    auto settled = w.cycle();
    w.apply(settled);
    REQUIRE(w.cycle().actions.empty());
    const std::string placed = w.jobs[0].admin_comment;
    // a restart: every node reads unknown until its slurmd registers again
    for (auto& n : w.nodes) {
        n.state = NodeState::Unknown;
        n.unregistered = true;
    }
    w.mono = 5000;
    auto first = w.cycle();
    CHECK(first.actions.empty());
    REQUIRE(first.log.size() == 1);
    CHECK(first.log[0].severity == Severity::Warning);
    CHECK(first.log[0].text.find("54 node(s) not registered with slurmctld yet") != std::string::npos);
    w.mono = 5002;
    auto second = w.cycle();
    CHECK(second.actions.empty());
    CHECK(second.log.empty()); // said once
    // registered again: nothing to do, and said so
    for (auto& n : w.nodes) {
        n.unregistered = false;
        n.state = NodeState::Idle;
    }
    for (auto& n : w.nodes)
        if (n.name <= "n016") n.state = NodeState::Allocated;
    w.mono = 5004;
    auto back = w.cycle();
    CAPTURE(back.log);
    CHECK(back.actions.empty());
    REQUIRE_FALSE(back.log.empty());
    CHECK(back.log[0].text == "every node registered with slurmctld again (4 s)");
    CHECK(w.jobs[0].admin_comment == placed);
    CHECK_FALSE(w.mem.unregistered_since);
    // one node that never registers (a node never booted): a failed node
    // like any, nothing waits for it
    w.node("n030").state = NodeState::Unknown;
    w.node("n030").unregistered = true;
    w.mono = 6000;
    auto one = w.cycle();
    CAPTURE(one.log);
    for (const auto& l : one.log) CHECK(l.text.find("not registered") == std::string::npos);
    CHECK_FALSE(w.mem.unregistered_since);
    // a start with that node among the rest: the wait ends after
    // kUnregisteredWaitS however few are left
    for (auto& n : w.nodes) n.unregistered = true;
    w.mono = 7000;
    CHECK(w.cycle().log.size() == 1);
    for (auto& n : w.nodes) n.unregistered = n.name == "n030";
    w.mono = 7002;
    CHECK(w.cycle().actions.empty()); // still waiting: the others are registering
    CHECK(w.mem.unregistered_since == 7000);
    w.mono = 7000 + kUnregisteredWaitS;
    w.cycle(); // decides (nothing to do here: one node short of a rack's spares)
    CHECK(w.mem.unregistered_since == 7000);
}

TEST_CASE("a placed job whose pinned node failed, with no room and nothing to free, says so once",
          "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1, /*gated=*/false);
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0 job=7";
    j.req_nodes = "n[001-016]";
    w.add_plain_job(50, 100, "n[017-018]"); // r1's spares taken
    w.add_plain_job(51, 100, "n[019-036]"); // r2 busy with work defragmentation may not requeue
    w.node("n005").state = NodeState::Down;
    w.node("n005").failed = true;
    auto said = [](const CycleOutput& o, const char* text) {
        int n = 0;
        for (const auto& l : o.log) n += l.line().find(text) != std::string::npos;
        return n;
    };
    auto first = w.step();
    CAPTURE(first.log);
    CHECK(said(first, "pinned node(s) n005 failed") == 1);
    CHECK(said(first, "its repair finds no room") == 1);
    // the same situation: nothing said again (the two lines took turns in
    // one slot and both came back every cycle)
    w.now += 1;
    auto again = w.step();
    CAPTURE(again.log);
    CHECK(said(again, "pinned node(s)") == 0);
    CHECK(said(again, "its repair finds no room") == 0);
}

TEST_CASE("actions are sent by phase: what prepares, then the spares, then what lets jobs start",
          "[reconcile][quick]") {
    World w(3);
    w.add_slice_job(7, 16, 1);
    w.add_slice_job(8, 16, 1);
    w.add_slice_job(9, 16, 1);
    auto out = w.cycle();
    // decided job by job; sent with every record before the reservation,
    // and the reservation before any pin or gate taken off
    CHECK(kinds(out) == "record record record reservation pin licenses pin licenses pin licenses");
    // each job's own actions in the order they were decided
    for (JobId id : {7u, 8u, 9u}) {
        std::string mine;
        for (const auto& a : out.actions)
            if (a.job == id) mine += std::string(mine.empty() ? "" : " ") + a.name();
        CHECK(mine == "record pin licenses");
    }
    // a job's later action never goes before an earlier one of its own:
    // the record that drops hold=1 stays after the release
    World h(2);
    h.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = h.add_slice_job(7, 16, 1);
    j.licenses.clear();
    h.hold(7);
    j.req_nodes = "n[001-016]";
    j.restarts = 1;
    j.begin_time = h.now;
    j.admin_comment = "nvlslice/1 repairing slice=16 slices=n[001-016] repairs=1 moves=0 hold=1";
    h.add_slice_job(8, 16, 1);
    CHECK(kinds(h.cycle()) == "record release record pin licenses");
}

TEST_CASE("a slice job whose owner took its gate off is placed at once, or gated again", "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1, /*gated=*/false);
    auto out = w.cycle();
    CHECK(kinds(out) == "record pin"); // pinned: Slurm can start it only there
    // no room: gated again, said once
    for (int i : {1, 2, 3, 19, 20, 21}) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    auto full = w.cycle();
    CHECK(kinds(full) == "record licenses");
    CHECK(find<action::SetLicenses>(full)->licenses == "nvlslice_gate:1");
    j.licenses = "matlab:2";
    CHECK(find<action::SetLicenses>(w.cycle())->licenses == "matlab:2,nvlslice_gate:1"); // the user's licenses kept
}

TEST_CASE("a gate taken off is logged even when Slurm seems to hold the job back", "[reconcile][quick]") {
    // After any update Slurm's reason is None until its next pass, and a
    // pending job's StartTime may be the scheduler's expected start: read
    // as a begin time, the job is gated again untouched; the escape is
    // still said.
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1, /*gated=*/false);
    j.reason = "None";
    j.begin_time = w.now + 8;
    auto out = w.cycle();
    CHECK(find(out, ActionKind::SetLicenses));
    CHECK_FALSE(find(out, ActionKind::Pin));
    bool said = false;
    for (const auto& l : out.log) said = said || l.line().find("job 7: pending without its gate") != std::string::npos;
    CHECK(said);
    // typed: the job it is about, its severity, the text without the job
    const auto e = std::find_if(out.log.begin(), out.log.end(), [](const LogEntry& l) { return l.job == 7; });
    REQUIRE(e != out.log.end());
    CHECK(e->severity == Severity::Info);
    CHECK(e->text.rfind("job ", 0) != 0);
}

TEST_CASE("license lists: the gate added and taken off, others kept", "[reconcile][quick]") {
    CHECK(with_license("", "g") == "g:1");
    CHECK(with_license("a:2", "g") == "a:2,g:1");
    CHECK(with_license("a:2,g:1", "g") == "a:2,g:1");
    CHECK(without_license("a:2,g:1,b:3", "g") == "a:2,b:3");
    CHECK(without_license("g:1", "g") == "");
    CHECK(has_license("a:2,g:1", "g"));
    CHECK_FALSE(has_license("gx:1", "g"));
}

TEST_CASE("holds are Slurm's: the helper releases only its own", "[reconcile][holds][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    j.held = true; // sbatch --hold, or scontrol hold: priority 0
    j.priority = 0;
    CHECK(w.cycle().actions.empty());
    j.admin_held = true;
    j.admin_comment = "nvlslice/1 waiting slice=16 repairs=0 moves=0 reason=busy: x";
    CHECK(w.cycle().actions.empty());
    // an admin's requeuehold of a running, placed slice job: stays held
    j.licenses.clear();
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    j.req_nodes = "n[001-016]";
    j.restarts = 1;
    CHECK(w.cycle().actions.empty());
    // the helper's own hold (a repair) is the one it releases
    j.admin_comment = "nvlslice/1 repairing slice=16 slices=n[001-016] repairs=1 moves=0 hold=1";
    j.begin_time = w.now;
    auto out = w.cycle();
    CHECK(kinds(out) == "release record"); // released before the record drops hold=1
    CHECK_THAT(find<action::SetRecord>(out)->text, !Catch::Contains("hold=1"));
}

TEST_CASE("a repair's release comes before the record drops hold=1: a crash between them loses no job",
          "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    j.licenses.clear();
    j.held = j.admin_held = true;
    j.priority = 0;
    j.req_nodes = "n[001-016]";
    j.restarts = 1;
    j.begin_time = w.now;
    j.admin_comment = "nvlslice/1 repairing slice=16 slices=n[001-016] repairs=1 moves=0 hold=1";
    const std::string record = j.admin_comment;
    auto out = w.cycle();
    // the release fails: the record keeps hold=1, and the next cycle releases it
    w.faults["release 7"] = "Unable to contact slurm controller";
    CHECK(apply(w, w.cfg, out.actions).size() == 1);
    CHECK(j.admin_comment == record);
    w.faults.clear();
    auto again = w.cycle();
    CHECK(kinds(again) == "release record");
    // the helper dies right after the release: released, record still hold=1
    REQUIRE(apply(w, w.cfg, {again.actions.front()}).empty());
    CHECK_FALSE(j.held);
    auto after = w.cycle();
    CHECK(kinds(after) == "record"); // only the record catches up
    CHECK_THAT(find<action::SetRecord>(after)->text,
               Catch::StartsWith("nvlslice/1 placed") && !Catch::Contains("hold=1"));
    // an admin's hold after that is theirs: never released by the helper
    w.apply(after);
    w.hold(7);
    CHECK(w.cycle().actions.empty());
}

TEST_CASE("slice jobs are placed in Slurm's priority order", "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    for (int i = 19; i <= 34; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    SlurmJob& a = w.add_slice_job(7, 16, 1); // older
    SlurmJob& b = w.add_slice_job(8, 16, 1);
    a.submit_time = w.now - 100;
    b.submit_time = w.now - 50;
    b.priority = 5000; // an admin's priority=, a QOS, a partition tier...
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::Pin));
    CHECK(find(out, ActionKind::Pin)->job == 8);
    b.priority = 10;
    CHECK(find(w.cycle(), ActionKind::Pin)->job == 7);
}

TEST_CASE("a fragmented cluster: the job waits with the reason, once", "[reconcile][quick]") {
    World w(2);
    for (const char* n : {"n001", "n002", "n003", "n019", "n020", "n021"}) w.node(n).state = NodeState::Allocated;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    w.add_slice_job(7, 16, 1);
    auto out = w.cycle();
    REQUIRE(kinds(out) == "record"); // behind its gate: no hold to set
    CHECK_THAT(as<action::SetRecord>(out.actions[0]).text, Catch::StartsWith("nvlslice/1 waiting slice=16") &&
                                                               Catch::Contains("reason=fragmented:") &&
                                                               Catch::Contains("2 racks with 13 free"));
    CHECK(out.stats.pending_by_reason["fragmented"] == 1);
    w.apply(out);
    CHECK(w.cycle().actions.empty()); // idempotent: no update storm
}

namespace {
// A 32-node slice job placed 16 + 16 (n001-016, n019-034) and running,
// the spares reserved, and n005 under it draining for a GPU error.
SlurmJob& running_with_n005_draining(World& w) {
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 2);
    w.run_on(j, "n[001-016,019-034]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0";
    j.req_nodes = "n[001-016,019-034]";
    w.node("n005").state = NodeState::Draining;
    w.node("n005").reason = "gpu xid 79";
    return j;
}
} // namespace

TEST_CASE("a drained node of a running job: requeue-hold onto the rack's spare, then release", "[reconcile][quick]") {
    World w(2);
    SlurmJob& j = running_with_n005_draining(w);
    auto out = w.cycle();
    // its target kept for it first (its healthy nodes and the spare, in a
    // reservation of its own made before the requeue, so that no other job
    // takes them while it completes and waits); then the requeue; the spare
    // leaves the spare reservation before any release
    CHECK(kinds(out) == "record lend requeue-hold pin-nodes reservation");
    CHECK(find<action::Lend>(out)->nodes == "n[001-004,006-017,019-034]");
    CHECK(find<action::Lend>(out)->reservation == "nvlslice_lend_7");
    CHECK(find<action::SetReservation>(out)->nodes == "n[018,035-036]");
    CHECK(find<action::PinOnly>(out)->nodes == "n[001-004,006-017,019-034]");
    CHECK_THAT(find<action::SetRecord>(out)->text,
               Catch::StartsWith("nvlslice/1 repairing") && Catch::Contains("repairs=1"));
    CHECK(out.stats.repairs_in_rack == 1);
    CHECK_THAT(out.log.front().line(), Catch::Contains("job 7: repair: slice 0: 1 failed node(s) replaced inside r1"));

    // Slurm then shows it pending (held) again, with its own later BeginTime:
    // its start brought forward to the next second...
    w.apply(out);
    REQUIRE(j.state == JobState::Pending);
    CHECK(j.held);
    CHECK(j.begin_time == w.now + 121);
    CHECK(w.node("n005").state == NodeState::Drained);
    auto pin = w.cycle();
    CHECK(kinds(pin) == "pin");
    CHECK(find<action::Pin>(pin)->start_at == w.now + 1);
    CHECK(pin.follow_up);
    // ...and release it once that second has come, so the release starts it
    w.apply(pin);
    // the job waits in its reservation, held, completing or not
    REQUIRE(j.reservation == "nvlslice_lend_7");
    CHECK(w.cycle().actions.empty());
    w.now += 1;
    auto fin = w.cycle();
    CHECK(kinds(fin) == "release record");
    CHECK_THAT(find<action::SetRecord>(fin)->text,
               Catch::StartsWith("nvlslice/1 placed") && Catch::Contains("repairs=1") && !Catch::Contains("hold=1"));
    // running there: the reservation ends, the job keeps its nodes
    w.apply(fin);
    w.start(j);
    auto end = w.step();
    CHECK(kinds(end) == "end-lend");
    CHECK(j.reservation.empty());
    CHECK_FALSE(w.reservations.count("nvlslice_lend_7"));
    CHECK(w.cycle().actions.empty());
}

TEST_CASE("after the helper's own requeue the repaired job may start from the second after it", "[reconcile][quick]") {
    World w(2);
    SlurmJob& j = running_with_n005_draining(w);
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::RequeueHold));
    // applied, and back from slurmctld within the cycle's second
    w.requeue_completes = false;
    w.requeue_delay = 31;
    w.apply(out);
    CHECK(w.mem.requeued_at.at(7) == w.now);

    // still completing (the kill takes a second or two): followed closely
    REQUIRE(j.state == JobState::Completing);
    w.now += 1;
    CHECK(w.cycle().follow_up);

    // pending 2 s after the requeue: its credential was revoked in the
    // requeue's second, so it may start now (not a second later)
    w.now += 1;
    w.complete(7);
    auto pin = w.step();
    CHECK(kinds(pin) == "pin");
    CHECK(find<action::Pin>(pin)->start_at == w.now);
    // Slurm takes the second as it is: released in the same second
    auto fin = w.step();
    CHECK(kinds(fin) == "release record");

    // running again: the requeue's second is forgotten, and a later requeue
    // by anyone else waits for the next second as before
    w.start(j);
    w.cycle();
    CHECK(w.mem.requeued_at.count(7) == 0);
}

TEST_CASE("a repair's target waits for its job in a reservation of its own from before the requeue to its restart",
          "[reconcile][quick]") {
    World w(2);
    SlurmJob& j = running_with_n005_draining(w);
    auto out = w.cycle();
    // made before the requeue (the order Slurm sees), over the nodes the job
    // still runs on and the spare, which leaves the spare reservation after
    const auto pos = [&](ActionKind k) {
        for (size_t i = 0; i < out.actions.size(); ++i)
            if (out.actions[i].kind() == k) return i;
        return out.actions.size();
    };
    REQUIRE(pos(ActionKind::Lend) < out.actions.size());
    CHECK(pos(ActionKind::Lend) < pos(ActionKind::RequeueHold));
    CHECK(pos(ActionKind::Lend) < pos(ActionKind::SetReservation));
    CHECK(find<action::Lend>(out)->user_id == j.user_id);
    w.requeue_completes = false;
    w.requeue_delay = 31;
    w.apply(out);
    REQUIRE(w.reservations.count("nvlslice_lend_7"));
    CHECK(j.reservation == "nvlslice_lend_7");
    // completing, then pending held, then pinned from its second: the
    // reservation stays through all of it
    REQUIRE(j.state == JobState::Completing);
    w.now += 1;
    CHECK_FALSE(find(w.step(), ActionKind::EndLend));
    w.complete(7);
    for (int c = 0; c < 3; ++c) {
        auto o = w.step();
        CHECK_FALSE(find(o, ActionKind::EndLend));
        if (find(o, ActionKind::Release)) break;
        w.now += 1;
    }
    CHECK_FALSE(j.held);
    CHECK(w.reservations.count("nvlslice_lend_7"));
    // running there: ended, the job keeps its nodes
    w.start(j);
    CHECK(kinds(w.step()) == "end-lend");
    CHECK_FALSE(w.reservations.count("nvlslice_lend_7"));

    // a job in a reservation its owner asked for: the pin alone
    World o(2);
    SlurmJob& k = running_with_n005_draining(o);
    k.reservation = "maint_window";
    auto ko = o.cycle();
    CHECK(kinds(ko) == "record requeue-hold pin-nodes reservation");

    // repair_reservation: false: the pin alone, as before
    World f(2);
    f.cfg.repair_reservation = false;
    running_with_n005_draining(f);
    CHECK(kinds(f.cycle()) == "record requeue-hold pin-nodes reservation");
    CHECK(read_helper_config("map: m.yaml\nrepair_reservation: false\n", "h.yaml").reconcile.repair_reservation ==
          false);
    CHECK(read_helper_config("map: m.yaml\n", "h.yaml").reconcile.repair_reservation);
}

TEST_CASE("a repaired job completing long after the helper's requeue is left to the regular cycle",
          "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 2);
    w.run_on(j, "n[001-016,019-034]");
    j.state = JobState::Completing;
    j.admin_comment =
        "nvlslice/1 repairing slice=16 slices=n[001-004,006-017];n[019-034] repairs=1 moves=0 hold=1 job=7";
    w.mem.requeued_at[7] = w.now - 30; // a node that does not answer keeps it completing
    CHECK_FALSE(w.cycle().follow_up);
    w.mem.requeued_at[7] = w.now - 2;
    CHECK(w.cycle().follow_up);
}

TEST_CASE("drain reasons outside the pattern do not trigger a repair; DOWN always does", "[reconcile][quick]") {
    World w(2);
    w.cfg.repair_drain_reasons = "xid|ecc";
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n005").state = NodeState::Draining;
    w.node("n005").reason = "planned maintenance";
    // no repair; the failed node used up one of the rack's 2 spares: the first
    // leaves the reservation (the one a repair takes first)
    auto first = w.step();
    CHECK(kinds(first) == "reservation");
    CHECK(as<action::SetReservation>(first.actions[0]).nodes == "n[018,035-036]");
    CHECK(w.cycle().actions.empty());
    w.node("n005").reason = "GPU XID 79";
    // the repair takes the node the reservation gave up: the reservation stays
    CHECK(kinds(w.cycle()) == "record lend requeue-hold pin-nodes");
    w.node("n005").reason = "planned maintenance";
    w.node("n006").state = NodeState::Down;
    w.node("n006").failed = true;
    auto out = w.cycle();
    // the DOWN node triggers the repair; as the job restarts anyway, it also
    // leaves the draining node, which the admin wants empty
    CHECK(find<action::PinOnly>(out)->nodes == "n[001-004,007-018]");
}

TEST_CASE("--no-requeue jobs are reported, never requeued", "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.requeue = false;
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n003").state = NodeState::Draining;
    w.resv = Reservation{"nvlslice_spares", "n[017,035-036]"}; // n003 used up one spare
    auto out = w.cycle();
    CHECK(kinds(out) == "record");
    CHECK_THAT(as<action::SetRecord>(out.actions[0]).text,
               Catch::Contains("reason=not repaired: n003 failed but the job was submitted --no-requeue"));
    CHECK(out.stats.unrepairable == 1);
    w.apply(out);
    CHECK(w.cycle().actions.empty());
}

TEST_CASE("spares gone: the slice moves to the other rack; no room: requeued to wait with its priority",
          "[reconcile][quick]") {
    World w(3);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    SlurmJob& j = w.add_slice_job(7, 16, 2);
    w.run_on(j, "n[001-016,019-034]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0";
    for (const char* n : {"n001", "n002", "n003"}) w.node(n).state = NodeState::Draining;
    auto out = w.cycle();
    CHECK(find<action::PinOnly>(out)->nodes == "n[019-034,037-052]");
    CHECK(out.stats.moves == 1);
    // now r3 is busy too: nothing can host the slice
    for (int i = 37; i <= 40; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    // r1's three failed nodes used up its two spares
    w.resv = Reservation{"nvlslice_spares", "n[035-036,053-054]"};
    auto wait = w.cycle();
    CAPTURE(wait.log);
    // Running on beside its failed nodes, it would hold 29 healthy nodes
    // while every node that frees goes to lower-priority work: requeued,
    // not held, it waits with its priority.
    CHECK(kinds(wait) == "record requeue reservation");
    CHECK_FALSE(find(wait, ActionKind::RequeueHold));
    CHECK(wait.stats.repairs_requeued_to_wait == 1);
    // a degraded rack is kept from Slurm whole in the reservation, the job's own nodes too
    CHECK(find<action::SetReservation>(wait)->nodes == "n[001-018,035-036,053-054]");
    // r1 lost more nodes than its spares: degraded, no repair inside it
    CHECK_THAT(find<action::SetRecord>(wait, 7)->text,
               Catch::Contains("reason=repair waits: node(s) n[001-003] failed; slice 0: r1 is degraded (3 failed "
                               "node(s) (n[001-003]), more than its 2 spare(s)) and no other domain has room for 16 "
                               "nodes: requeued to wait for room with its priority"));
    CHECK_THAT(find<action::SetRecord>(wait, 7)->text, Catch::StartsWith("nvlslice/1 yielded"));
    // pending again, with room nowhere yet: it waits for room as a first
    // submission does, and the racks that free soonest are kept for it
    w.apply(wait);
    REQUIRE(j.state == JobState::Pending);
    CHECK_FALSE(j.held);
    w.now = j.begin_time;
    auto pending = w.cycle();
    CAPTURE(pending.log);
    CHECK_FALSE(find(pending, ActionKind::Requeue));
    CHECK_FALSE(find(pending, ActionKind::PinOnly));
    CHECK_THAT(find<action::SetRecord>(pending, 7)->text, Catch::StartsWith("nvlslice/1 waiting"));
}

TEST_CASE("a job Slurm requeued after a node went down is repaired before it runs again", "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1, /*held=*/false);
    j.restarts = 1;
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    j.req_nodes = "n[001-016]";
    w.node("n009").state = NodeState::Down;
    w.node("n009").failed = true;
    auto out = w.cycle();
    // its target kept for it from now (Slurm let go of its nodes), gated,
    // started when its second has come
    CHECK(kinds(out) == "lend reservation licenses record pin");
    CHECK(find<action::Lend>(out)->nodes == "n[001-008,010-017]");
    CHECK(find<action::Pin>(out)->nodes == "n[001-008,010-017]");
    CHECK(find<action::Pin>(out)->start_at == w.now + 1);
    CHECK_THAT(find<action::SetRecord>(out)->text, Catch::StartsWith("nvlslice/1 repairing"));
}

TEST_CASE("defragmentation requeues only checkpointable jobs, the cheapest rack, rate-limited", "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    w.cfg.defrag_after_s = 120;
    w.cfg.defrag_interval_s = 300;
    SlurmJob& blocked = w.add_slice_job(9, 16, 1);
    blocked.submit_time = w.now - 1000;
    // r1: a non-checkpointable 1-node job; r2: a checkpointable 3-node job
    // (2 of its nodes count as r2's spares: a repair may take them back)
    SlurmJob& plain = w.add_slice_job(3, 1, 1, false, false);
    w.run_on(plain, "n001");
    plain.admin_comment = "nvlslice/1 placed slice=1 slices=n001 repairs=0 moves=0";
    SlurmJob& ckpt = w.add_slice_job(4, 3, 1, false, true);
    w.run_on(ckpt, "n[019-021]");
    ckpt.admin_comment = "nvlslice/1 placed slice=3 slices=n[019-021] repairs=0 moves=0";
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find(out, ActionKind::Requeue));
    CHECK(find(out, ActionKind::Requeue)->job == 4);
    CHECK(out.stats.defrag_preemptions == 1);
    bool logged = false;
    for (auto& l : out.log)
        logged = logged ||
                 l.line().find("defragmentation: requeued checkpointable job(s) 4 to free r2") != std::string::npos;
    CHECK(logged);
    // rate limit: not again within the interval
    w.now += 10;
    CHECK_FALSE(find(w.cycle(), ActionKind::Requeue));
    // never a non-checkpointable job
    w.now += 1000;
    ckpt.comment = RequestTag{3, 3, 1, false, PlacementMode::Strict, false}.str();
    auto none = w.cycle();
    CHECK_FALSE(find(none, ActionKind::Requeue));
}

TEST_CASE("a repair with no room anywhere frees a rack from checkpointable work at once and moves the slice there",
          "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[035-036]"};
    w.cfg.defrag = false; // the paced kind off: repairs have their own switch
    // r1: the failing 16-node job, and a non-checkpointable job on the two
    // other nodes (no spare left there); r2: a checkpointable 16-node job
    SlurmJob& job = w.add_slice_job(7, 16, 1, false);
    w.run_on(job, "n[001-016]");
    job.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    SlurmJob& plain = w.add_slice_job(3, 2, 1, false);
    w.run_on(plain, "n[017-018]");
    plain.admin_comment = "nvlslice/1 placed slice=2 slices=n[017-018] repairs=0 moves=0";
    SlurmJob& ckpt = w.add_slice_job(4, 16, 1, false, true);
    w.run_on(ckpt, "n[019-034]");
    ckpt.admin_comment = "nvlslice/1 placed slice=16 slices=n[019-034] repairs=0 moves=0";
    w.node("n005").state = NodeState::Draining;
    SECTION("defrag.for_repairs off: no rack is freed, the job is requeued to wait with its priority") {
        w.cfg.defrag_repairs = false;
        auto out = w.cycle();
        CHECK_FALSE(find(out, ActionKind::Requeue, 4)); // checkpointable work left alone
        CHECK(find(out, ActionKind::Requeue, 7));
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("reason=repair waits: "));
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("requeued to wait for room"));
    }
    SECTION("on (the default): r2 is held for it at once, then the checkpointable job yields it") {
        auto out = w.cycle();
        CAPTURE(out.log);
        REQUIRE(find(out, ActionKind::RequeueHold, 7));
        REQUIRE(find<action::Lend>(out, 7));
        CHECK(find<action::Lend>(out, 7)->nodes == "n[019-034]");
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("slices=n[019-034]"));
        REQUIRE(find(out, ActionKind::Requeue, 4));
        CHECK_FALSE(find(out, ActionKind::Requeue, 3)); // never a job without --nvl-checkpointable
        CHECK_THAT(find<action::SetRecord>(out, 4)->text,
                   Catch::Contains("requeued to free the target of the repair of job 7"));
        CHECK(out.stats.defrag_preemptions == 1);
        // the target held before its work is requeued: nothing else can
        // start there as it frees (Slurm places jobs itself in native mode)
        auto at = [&](auto pred) {
            return std::find_if(out.actions.begin(), out.actions.end(), pred) - out.actions.begin();
        };
        CHECK(at([](const Action& a) { return a.kind() == ActionKind::Lend; }) <
              at([](const Action& a) { return a.kind() == ActionKind::Requeue && a.job == 4; }));
        bool logged = false;
        for (auto& l : out.log)
            logged = logged || l.line().find("job 7: repair frees its target: requeued checkpointable job(s) 4") !=
                                   std::string::npos;
        CHECK(logged);
        w.apply(out);
        CHECK(ckpt.state == JobState::Pending);
        CHECK(job.held);
        // job 4's nodes complete, then free: job 7 starts there
        w.complete(7);
        for (int i = 19; i <= 34; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Idle;
        bool released = false;
        for (int c = 0; c < 3 && !released; ++c, ++w.now) released = find(w.step(), ActionKind::Release, 7);
        CHECK(released);
    }
    SECTION("without a held target (repair_hold_max 0): the checkpointable job yields r2 at once, the slice moves "
            "there in a later cycle") {
        w.cfg.repair_hold_max_s = 0;
        auto out = w.cycle();
        CAPTURE(out.log);
        REQUIRE(find(out, ActionKind::Requeue, 4));
        CHECK_FALSE(find(out, ActionKind::Requeue, 7)); // never the failed job itself
        CHECK_FALSE(find(out, ActionKind::Requeue, 3)); // never a job without --nvl-checkpointable
        REQUIRE(find(out, ActionKind::SetRecord, 4));
        CHECK_THAT(find<action::SetRecord>(out, 4)->text,
                   Catch::Contains("requeued by defragmentation to free r2 for the repair of job 7"));
        CHECK(out.stats.defrag_preemptions == 1);
        bool logged = false;
        for (auto& l : out.log)
            logged = logged || l.line().find("job 7: defragmentation for its repair") != std::string::npos;
        CHECK(logged);
        // Slurm requeued job 4; its nodes are still completing: no second
        // defragmentation while job 7 waits for r2
        w.apply(out);
        CHECK(ckpt.state == JobState::Pending);
        for (int i = 19; i <= 34; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated; // completing
        w.now += 1;
        auto wait = w.cycle();
        CHECK_FALSE(find(wait, ActionKind::Requeue));
        // r2 is free: the failed slice moves there; job 4 is not placed on it
        for (int i = 19; i <= 34; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Idle;
        w.now += 1;
        auto rep = w.cycle();
        CAPTURE(rep.log);
        REQUIRE(find(rep, ActionKind::PinOnly, 7));
        CHECK(find<action::PinOnly>(rep, 7)->nodes == "n[019-034]");
        CHECK(find(rep, ActionKind::RequeueHold, 7)); // the repair's requeue
        CHECK_FALSE(find(rep, ActionKind::Pin, 4));
    }
}

TEST_CASE("the rack defragmentation freed stays its job's while the requeued job's nodes complete",
          "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    w.cfg.defrag_after_s = 120;
    w.cfg.defrag_interval_s = 300;
    SlurmJob& blocked = w.add_slice_job(9, 16, 1);
    blocked.submit_time = w.now - 1000;
    // r1: a non-checkpointable 14-node job (room for 2 more); r2: a
    // checkpointable 3-node job lent spares (2 of its nodes stand in for
    // r2's kept spares), the one defragmentation may requeue
    SlurmJob& plain = w.add_slice_job(3, 14, 1, false, false);
    w.run_on(plain, "n[001-014]");
    plain.admin_comment = "nvlslice/1 placed slice=14 slices=n[001-014] repairs=0 moves=0";
    SlurmJob& ckpt = w.add_slice_job(4, 3, 1, false, true);
    w.run_on(ckpt, "n[019-021]");
    ckpt.admin_comment = "nvlslice/1 placed slice=3 slices=n[019-021] repairs=0 moves=0 lent=1";
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find(out, ActionKind::Requeue, 4));
    // Slurm requeued it (pending, its record says it yielded); n019 is
    // still completing, so r2 is not whole yet
    REQUIRE(find(out, ActionKind::SetRecord, 4));
    w.apply(out);
    CHECK(ckpt.state == JobState::Pending);
    w.node("n019").state = NodeState::Allocated; // completing
    w.now += 2;
    auto next = w.cycle();
    CAPTURE(next.log);
    CHECK_FALSE(find(next, ActionKind::Pin, 9));
    // before: the requeued job went straight back onto the rack it had just
    // freed (n[020-022]); now it goes elsewhere (r1, on a lent spare)
    REQUIRE(find(next, ActionKind::Pin, 4));
    CHECK(find<action::Pin>(next, 4)->nodes == "n[015-017]");
    w.apply(next);
    w.start(ckpt);
    // the node completes: the blocked job gets the rack
    w.node("n019").state = NodeState::Idle;
    w.now += 1;
    auto last = w.cycle();
    CAPTURE(last.log);
    REQUIRE(find(last, ActionKind::Pin, 9));
    CHECK(find<action::Pin>(last, 9)->nodes == "n[019-034]");
}

TEST_CASE("prefer mode splits only after its wait", "[reconcile][quick]") {
    World w(2);
    for (const char* n : {"n001", "n002", "n003", "n019", "n020", "n021"}) w.node(n).state = NodeState::Allocated;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    RequestTag t = *RequestTag::parse(j.comment);
    t.mode = PlacementMode::Prefer;
    j.comment = t.str();
    CHECK_FALSE(find(w.cycle(), ActionKind::Pin));
    j.submit_time = w.now - w.cfg.prefer_wait_s;
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::Pin));
    CHECK_THAT(find<action::SetRecord>(out)->text, Catch::Contains("split=1"));
}

TEST_CASE("a checkpointable slice job not lent spares keeps its rack's spares for its own repair",
          "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& job = w.add_slice_job(7, 16, 1, false, /*checkpointable=*/true);
    w.run_on(job, "n[001-016]");
    job.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    // before: its own 16 nodes stood in for r1's spares, the reservation
    // let n[017-018] go to other work, and its own failure found no spare
    auto out = w.cycle();
    CAPTURE(out.log);
    CHECK_FALSE(find(out, ActionKind::SetReservation));
    w.node("n005").state = NodeState::Draining;
    auto rep = w.cycle();
    REQUIRE(find(rep, ActionKind::PinOnly, 7));
    CHECK(find<action::PinOnly>(rep, 7)->nodes == "n[001-004,006-017]");
}

TEST_CASE("nodes a repair takes from lent work are the repaired job's: another repair of the cycle never requeues it",
          "[reconcile][quick]") {
    World w(2);
    SlurmJob& big = w.add_slice_job(7, 16, 2);
    w.run_on(big, "n[001-016,019-034]");
    big.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0";
    // two checkpointable borrowers on r1's spares
    lend_r1_spares(w);
    // a node of the big job and the second borrower's node fail together:
    // the big job's repair takes back n017 (requeues job 8); the borrower's
    // repair must not take n017 from the big job, whose node it now is
    w.node("n005").state = NodeState::Draining;
    w.node("n018").state = NodeState::Draining;
    auto rep = w.cycle();
    CAPTURE(rep.log);
    int holds = 0;
    for (const auto& act : rep.actions) {
        CHECK_FALSE((act.kind() == ActionKind::Requeue && act.job == 7)); // as lent work
        holds += act.kind() == ActionKind::RequeueHold && act.job == 7;   // its own repair's
    }
    CHECK(holds == 1);
    for (const auto& l : rep.log) CHECK(l.line().find("requeued checkpointable job 7") == std::string::npos);
    const Action* rq = find(rep, ActionKind::Requeue, 8);
    CHECK(rq);
    CHECK(find<action::PinOnly>(rep)->nodes == "n[001-004,006-017,019-034]");
}

TEST_CASE("spares are lent to checkpointable single-node jobs and taken back by a repair", "[reconcile][quick]") {
    World w(2);
    // a 2 x 16 job fills both racks but their spares
    SlurmJob& big = w.add_slice_job(7, 16, 2);
    w.run_on(big, "n[001-016,019-034]");
    big.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0";
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    // a checkpointable single-node job borrows a spare
    SlurmJob& small = w.add_slice_job(8, 1, 1, true, true);
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::Pin));
    CHECK(find<action::Pin>(out)->nodes == "n017");
    // it leaves the reservation before the gate comes off
    const auto resv_at = std::find_if(out.actions.begin(), out.actions.end(),
                                      [](const Action& a) { return a.kind() == ActionKind::SetReservation; });
    const auto gate_off = std::find_if(out.actions.begin(), out.actions.end(),
                                       [](const Action& a) { return a.kind() == ActionKind::SetLicenses; });
    REQUIRE(resv_at != out.actions.end());
    CHECK(resv_at < gate_off);
    CHECK(resv_at->nodes() == "n[018,035-036]");
    CHECK_THAT(find<action::SetRecord>(out)->text, Catch::Contains("lent=1"));
    // it waited for the spare in a reservation of its own (lend), and runs:
    // it leaves that reservation, which goes; the lent node still counts
    // as one of r1's spares
    CHECK(find(out, ActionKind::Lend, 8));
    w.apply(out);
    w.start(small);
    CHECK(kinds(w.step()) == "end-lend");
    CHECK(w.cycle().actions.empty());
    // a second one takes the other spare of r1
    SlurmJob& small2 = w.add_slice_job(9, 1, 1, true, true);
    auto out2 = w.step();
    CHECK(find<action::Pin>(out2)->nodes == "n018");
    CHECK(w.resv->nodes == "n[035-036]");
    w.start(small2);
    // a node of the big job fails: r1 has no free spare; the lent one comes back
    w.node("n005").state = NodeState::Draining;
    auto rep = w.cycle();
    CHECK(find<action::PinOnly>(rep)->nodes == "n[001-004,006-017,019-034]");
    const Action* rq = find(rep, ActionKind::Requeue);
    REQUIRE(rq);
    CHECK(rq->job == 8);
    bool yielded = false;
    for (const auto& a : rep.actions)
        if (a.kind() == ActionKind::SetRecord && a.job == 8)
            yielded = as<action::SetRecord>(a).text.find("nvlslice/1 yielded") == 0 &&
                      as<action::SetRecord>(a).text.find("its lent spare was taken back to repair job 7") !=
                          std::string::npos;
    CHECK(yielded);
    // job 7 is pending again (held by the helper) while the borrower still
    // completes on the spare: the repair waits for it, and nothing else is
    // placed there meanwhile
    w.apply(rep);
    CHECK(big.held);
    CHECK(w.node("n005").state == NodeState::Drained);
    small.state = JobState::Completing; // still on n017
    small.nodes = {"n017"};
    w.node("n017").state = NodeState::Allocated;
    auto wait = w.cycle();
    CHECK_FALSE(find(wait, ActionKind::Pin));
    CHECK_FALSE(find(wait, ActionKind::Release));
    for (const auto& a : wait.actions) CHECK_FALSE((a.kind() == ActionKind::SetRecord && a.job == 7));
    bool said = false;
    for (const auto& l : wait.log)
        said = said || l.line().find("job 7: repair waits for its nodes") != std::string::npos;
    CHECK(said);
    // the borrower is gone: the repair completes
    small.state = JobState::Pending;
    small.nodes.clear();
    w.node("n017").state = NodeState::Idle;
    big.begin_time = w.now;
    auto done = w.cycle();
    CHECK(find(done, ActionKind::Release));
}

TEST_CASE("weights steer Slurm's own placement into racks already in use", "[reconcile][weights][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    for (auto& n : w.nodes) n.weight = 1; // as slurm.conf leaves them
    SlurmJob plain;
    plain.id = 50;
    plain.state = JobState::Running;
    plain.nodes = {"n019", "n020"};
    plain.num_nodes = 2;
    w.jobs.push_back(plain);
    w.node("n019").state = NodeState::Allocated;
    w.node("n020").state = NodeState::Allocated;
    auto out = w.cycle();
    // r1 whole: 18 free -> 19; r2: 16 free -> 17, filled first
    REQUIRE(kinds(out) == "weight weight");
    CHECK(as<action::SetWeight>(out.actions[0]).weight == 17);
    CHECK(as<action::SetWeight>(out.actions[0]).nodes == "n[019-036]");
    CHECK(as<action::SetWeight>(out.actions[1]).weight == 19);
    CHECK(as<action::SetWeight>(out.actions[1]).nodes == "n[001-018]");
    CHECK(rack_weight(16, 18) < rack_weight(18, 18));
    // once Slurm reports them, nothing more is asked
    for (auto& n : w.nodes) n.weight = n.name <= "n018" ? 19 : 17;
    CHECK(w.cycle().actions.empty());
    // turned off: never touched
    for (auto& n : w.nodes) n.weight = 1;
    w.cfg.steer_weights = false;
    CHECK(w.cycle().actions.empty());
}

TEST_CASE("apply: a refused action stops only its own job, which then backs off", "[reconcile][apply][quick]") {
    nvl::test::FakeCluster fake;
    for (JobId id : {7u, 8u}) {
        SlurmJob j;
        j.id = id;
        fake.jobs.push_back(j);
    }
    std::vector<Action> actions = {
        {7, action::SetRecord{"nvlslice/1 repairing"}},
        {7, action::RequeueHold{}},
        {7, action::PinOnly{"n[001-016]"}},
        {8, action::SetRecord{"nvlslice/1 placed"}},
        {8, action::Pin{"n[019-034]", 100}},
        {8, action::Release{}},
        {0, action::SetReservation{"n[017-018]"}},
    };
    fake.faults["requeue-hold 7"] = "Only batch jobs are accepted or processed";
    auto failures = apply(fake, HelperConfig{}, actions);
    REQUIRE(failures.size() == 1);
    CHECK(failures[0].job == 7);
    CHECK(failures[0].kind == ActionKind::RequeueHold);
    CHECK_THAT(failures[0].error, Catch::Contains("requeue-hold: Only batch jobs"));
    // job 7's pin built on the requeue: skipped; job 8 and the reservation went ahead
    CHECK(fake.calls == std::vector<std::string>{"record 7", "requeue-hold 7", "record 8", "pin 8 n[019-034] 100",
                                                 "release 8", "reservation nvlslice_spares n[017-018] 0 0"});
    HelperMemory mem;
    note_applied(mem, actions, failures, 1000);
    REQUIRE(mem.backoff.count(7));
    CHECK(mem.backoff[7].until == 1002);
    CHECK_FALSE(mem.backoff.count(8));
    note_applied(mem, actions, failures, 1002);
    CHECK(mem.backoff[7].until == 1006); // doubles
    // succeeding clears it
    note_applied(mem, actions, {}, 1010);
    CHECK_FALSE(mem.backoff.count(7));
    // a cluster-wide action that fails is reported, never a job's backoff
    fake.faults.clear();
    fake.faults["reservation"] = "Requested reservation is invalid";
    auto f2 = apply(fake, HelperConfig{}, {{0, action::SetReservation{"n001"}}, {7, action::Hold{}}});
    REQUIRE(f2.size() == 1);
    CHECK(f2[0].job == 0);
    CHECK(fake.calls.back() == "hold 7");
}

TEST_CASE("a job backing off is left alone, and says so once", "[reconcile][apply][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    w.add_slice_job(7, 16, 1);
    w.mem.backoff[7] = {1, w.now + 60, "hold: Access/permission denied", false};
    auto out = w.cycle();
    REQUIRE(kinds(out) == "record");
    CHECK_THAT(as<action::SetRecord>(out.actions[0]).text,
               Catch::Contains("reason=nvlsliced could not act on this job (1 time(s)): hold: "
                               "Access/permission denied; next try in 60 s"));
    w.apply(out);
    CHECK(w.cycle().actions.empty()); // nothing more while it waits
    w.now += 61;
    auto after = w.cycle();
    CHECK(find(after, ActionKind::Pin)); // placed once the wait is over
}

TEST_CASE("a refused action waits longer each time; the record that says so does not end the wait",
          "[reconcile][apply][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    w.add_slice_job(7, 16, 1);
    w.faults["pin 7"] = "Access/permission denied";
    // as nvlsliced runs it: apply, then note what Slurm refused
    auto run = [&] {
        auto out = w.cycle();
        note_applied(w.mem, out.actions, apply(w, w.cfg, out.actions), w.now, w.now);
        return out;
    };
    CHECK(find(run(), ActionKind::Pin));
    REQUIRE(w.mem.backoff.count(7));
    CHECK(w.mem.backoff.at(7).failures == 1);
    const int64_t first_wait = w.mem.backoff.at(7).until - w.now;
    w.now += 1;
    CHECK(kinds(run()) == "record"); // said in its record: applied, the wait goes on
    REQUIRE(w.mem.backoff.count(7));
    w.now += first_wait;
    CHECK(find(run(), ActionKind::Pin)); // tried again once the wait is over, refused again
    REQUIRE(w.mem.backoff.count(7));
    CHECK(w.mem.backoff.at(7).failures == 2);
    CHECK(w.mem.backoff.at(7).until - w.now == 2 * first_wait);
    // Slurm takes it: the wait ends
    w.faults.clear();
    w.now = w.mem.backoff.at(7).until;
    CHECK(find(run(), ActionKind::Pin));
    CHECK(w.mem.backoff.count(7) == 0);
}

TEST_CASE("an interactive slice job that loses a node is reported once, never requeued", "[reconcile][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.batch = false;
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n003").state = NodeState::Draining;
    auto out = w.cycle();
    CHECK(kinds(out) == "record");
    CHECK_THAT(as<action::SetRecord>(out.actions[0]).text,
               Catch::Contains("an interactive allocation (salloc/srun) cannot be requeued"));
    CHECK_THAT(as<action::SetRecord>(out.actions[0]).text, Catch::Contains("repairs=0"));
    w.apply(out);
    CHECK(w.cycle().actions.empty()); // no loop
    // its node comes back: the stale reason goes
    w.node("n003").state = NodeState::Allocated;
    auto back = w.cycle();
    CHECK(kinds(back) == "record reservation");
    CHECK_THAT(find<action::SetRecord>(back)->text, !Catch::Contains("reason="));
}

TEST_CASE("a tag that does not describe its job is left to Slurm, named once", "[reconcile][tags][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    // written by hand: 16 nodes in the tag, 2 asked from Slurm, not held
    SlurmJob& fake = w.add_slice_job(5, 16, 1, /*held=*/false);
    fake.num_nodes = 2;
    SlurmJob& bad = w.add_slice_job(6, 16, 1, false);
    bad.comment = "nvlslice/1 nodes=abc";
    SlurmJob& real = w.add_slice_job(7, 16, 2);
    auto out = w.cycle();
    CAPTURE(out.log);
    for (const auto& a : out.actions) CHECK((a.job == 7 || a.kind() == ActionKind::SetRecord));
    CHECK_FALSE(std::any_of(out.actions.begin(), out.actions.end(),
                            [](const Action& a) { return a.job != 7 && a.kind() != ActionKind::SetRecord; }));
    const Action* r5 = nullptr;
    const Action* r6 = nullptr;
    for (const auto& a : out.actions) {
        if (a.job == 5) r5 = &a;
        if (a.job == 6) r6 = &a;
    }
    REQUIRE(r5);
    REQUIRE(r6);
    CHECK_THAT(as<action::SetRecord>(*r5).text,
               Catch::StartsWith("nvlslice/1 ignored") &&
                   Catch::Contains("left to Slurm: its tag asks for 16 nodes, the job for 2"));
    CHECK_THAT(as<action::SetRecord>(*r6).text, Catch::Contains("left to Slurm: its nvlslice tag is unreadable"));
    // the real job got both racks: the hand-written one took nothing
    CHECK(find<action::Pin>(out)->nodes == "n[001-016,019-034]");
    w.apply(out);
    CHECK(real.req_nodes == "n[001-016,019-034]");
    auto again = w.cycle();
    CAPTURE(again.log);
    CHECK(std::none_of(again.actions.begin(), again.actions.end(),
                       [](const Action& a) { return a.job == 5 || a.job == 6; }));
    CHECK(std::none_of(again.log.begin(), again.log.end(),
                       [](const LogEntry& l) { return l.line().find("job 5") != std::string::npos; }));
    // checkpointable without requeue is refused the same way
    SlurmJob& nr = w.add_slice_job(8, 1, 1, true, true);
    nr.requeue = false;
    auto third = w.cycle();
    REQUIRE(find(third, ActionKind::SetRecord));
    CHECK_THAT(find<action::SetRecord>(third)->text, Catch::Contains("submitted --no-requeue"));
}

TEST_CASE("racks kept for the top job: others wait as busy, and may use them only if they end in time",
          "[reconcile][protect][quick]") {
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    // rack r2 busy until now+600; the 32-node top job waits for both racks
    SlurmJob busy;
    busy.id = 60;
    busy.state = JobState::Running;
    busy.nodes = hostlist_expand("n[019-034]");
    busy.end_time = w.now + 600;
    w.jobs.push_back(busy);
    for (int i = 19; i <= 34; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    SlurmJob& top = w.add_slice_job(7, 16, 2);
    top.priority = 9000;
    top.time_limit = 3600;
    auto out = w.cycle();
    const auto* p = find<action::Protect>(out);
    REQUIRE(p);
    CHECK(p->nodes == "n[001-016,019-034]");
    CHECK(p->start_at == w.now + 600);
    CHECK(p->end_at == w.now + 600 + 3600);
    // as Slurm then reports it: a long lower-priority job may not use rack r1...
    w.apply(out);
    REQUIRE(w.protection);
    CHECK(w.protection->start_time == w.now + 600);
    SlurmJob& lower = w.add_slice_job(8, 16, 1);
    lower.priority = 10;
    lower.time_limit = 7200;
    auto second = w.cycle();
    CHECK_FALSE(find(second, ActionKind::Pin));
    const Action* rec = nullptr;
    for (const auto& a : second.actions)
        if (a.job == 8 && a.kind() == ActionKind::SetRecord) rec = &a;
    REQUIRE(rec);
    CHECK_THAT(as<action::SetRecord>(*rec).text,
               Catch::Contains("reason=busy: the racks with room are kept for a higher-priority slice job"));
    // ...a short one may: it ends before the top job's start
    lower.time_limit = 300;
    w.apply(second);
    auto third = w.cycle();
    REQUIRE(find(third, ActionKind::Pin));
    CHECK(find(third, ActionKind::Pin)->job == 8);
    // the top job leaves: the protection goes
    top.state = JobState::Finished;
    lower.state = JobState::Finished;
    CHECK(find<action::Protect>(w.cycle())->nodes.empty());
}

TEST_CASE("racks kept for the top job are never degraded ones; the spares never overlap the protection as it moves",
          "[reconcile][protect][rack][quick]") {
    World w(3);
    w.cfg.rack_failure_reasons = "contained";
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    // r2 and r3 busy until now+600; the 32-node top job waits for two racks
    SlurmJob& busy = w.add_plain_job(60, 1, "n[019-034,037-052]");
    busy.end_time = w.now + 600;
    SlurmJob& top = w.add_slice_job(7, 16, 2);
    top.priority = 9000;
    top.time_limit = 3600;
    auto out = w.cycle();
    REQUIRE(find<action::Protect>(out));
    CHECK(find<action::Protect>(out)->nodes == "n[001-016,019-034]"); // r1 (free now) and r2
    w.apply(out);
    // r1 degrades: the protection leaves it for r2 and r3; the spare
    // reservation takes r1's nodes but those the protection holds still
    w.node("n005").state = NodeState::Drained;
    w.node("n005").reason = "NVLink contained error";
    auto deg = w.cycle();
    CAPTURE(deg.log);
    REQUIRE(find<action::Protect>(deg));
    CHECK(find<action::Protect>(deg)->nodes == "n[019-034,037-052]");
    CHECK_FALSE(find(deg, ActionKind::SetReservation)); // r1's nodes outside the protection are its spares already
    w.apply(deg);
    // the protection has left r1: now it is held whole
    auto next = w.cycle();
    REQUIRE(find<action::SetReservation>(next));
    CHECK(find<action::SetReservation>(next)->nodes == "n[001-018,035-036,053-054]");
}

namespace {
// As the plugin submits a strict slice job on Slurm with topology/block:
// --segment, no gate.
SlurmJob& add_native_job(World& w, JobId id, int slice, int count, bool ckpt = false) {
    SlurmJob& j = w.add_slice_job(id, slice, count, /*gated=*/false, ckpt);
    RequestTag t = *RequestTag::parse(j.comment);
    t.hand_off = HandOff::Native;
    j.comment = t.str();
    return j;
}
// A native-mode world of 2 racks with its spares reserved (node pools:
// a controller of 25.11 or later).
void make_native(World& w, bool node_pools = false) {
    w.cfg.hand_off = HandOff::Native;
    w.cfg.node_pools = node_pools;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
}
// Both racks full but for their spares: a native 2 x 16 slice job 7 runs
// on n[001-016,019-034], as its record says.
SlurmJob& fill_racks_native(World& w) {
    SlurmJob& big = add_native_job(w, 7, 16, 2);
    w.run_on(big, "n[001-016,019-034]");
    big.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0";
    return big;
}
// The helper's repair (`out`) applied: pending, held, its nodes free
// again but the failed one (drained), Slurm's begin time the next second
// (the cluster's credential lifetime cut short), pinned, recorded.
void requeued_held(World& w, SlurmJob& j, const CycleOutput& out, const char* failed) {
    w.requeue_delay = 1;
    w.apply(out);
    REQUIRE(j.state == JobState::Pending);
    REQUIRE(j.held);
    REQUIRE(w.node(failed).state == NodeState::Drained);
}
} // namespace

TEST_CASE("native mode: a repair with no room requeues the job to wait, its pin dropped for Slurm's own placement",
          "[reconcile][quick]") {
    World w(2);
    make_native(w, /*node_pools=*/true);
    SlurmJob& j = fill_racks_native(w);
    // an earlier repair pinned it to its nodes (a node pool)
    j.req_nodes = "n[001-016,019-034]";
    j.restarts = 1;
    // both racks lose more nodes than their spares: no room anywhere
    for (const char* n : {"n001", "n002", "n003", "n019", "n020", "n021"}) w.node(n).state = NodeState::Draining;
    auto out = w.cycle();
    CAPTURE(out.log);
    CHECK(out.stats.repairs_requeued_to_wait == 1);
    REQUIRE(find(out, ActionKind::Requeue, 7));
    CHECK_FALSE(find(out, ActionKind::RequeueHold, 7));
    // Slurm places it again (--segment), not on the nodes of the old pin
    CHECK(find(out, ActionKind::PinOnly, 7));
    CHECK(find<action::PinOnly>(out, 7)->nodes.empty());
    CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("requeued to wait for room with its priority"));
    // the requeue comes before the pin is dropped (Slurm takes a node
    // list change only from a pending job)
    size_t requeue_at = 0, unpin_at = 0;
    for (size_t i = 0; i < out.actions.size(); ++i) {
        if (out.actions[i].job != 7) continue;
        if (out.actions[i].kind() == ActionKind::Requeue) requeue_at = i;
        if (out.actions[i].kind() == ActionKind::PinOnly) unpin_at = i;
    }
    CHECK(requeue_at < unpin_at);
    w.apply(out);
    CHECK(j.state == JobState::Pending);
    CHECK_FALSE(j.held);
    CHECK(j.req_nodes.empty());
}

TEST_CASE("a job requeued to wait for its repair may take the spares of the rack it goes to; others may not",
          "[reconcile][native][quick]") {
    World w(3);
    w.cfg.hand_off = HandOff::Native;
    w.cfg.repair_hold_max_s = 0; // the target held from the requeue: the next test
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    SlurmJob& j = add_native_job(w, 7, 16, 2);
    w.run_on(j, "n[001-016,019-034]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0 job=7";
    // r3 busy but for 14 nodes; r1 fails whole
    SlurmJob& other = w.add_slice_job(9, 2, 1, /*gated=*/false);
    w.run_on(other, "n[037-038]");
    other.admin_comment = "nvlslice/1 placed slice=2 slices=n[037-038] repairs=0 moves=0 job=9";
    for (int i = 1; i <= 18; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Drained;
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find(out, ActionKind::Requeue, 7));
    CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("repairwait=1"));
    w.apply(out);
    REQUIRE(j.state == JobState::Pending);
    // No room yet (r3 still full): Slurm's requeue delay would keep it from
    // its backfill for 2 minutes; it is made eligible from the next second
    for (int i = 39; i <= 52; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    w.now += 1;
    auto early = w.cycle();
    CAPTURE(early.log);
    REQUIRE(find<action::Exclude>(early, 7));
    CHECK(find<action::Exclude>(early, 7)->start_at > 0);
    CHECK(find<action::Exclude>(early, 7)->start_at < j.begin_time);
    CHECK_FALSE(find(early, ActionKind::Lend));
    w.apply(early);
    for (int i = 39; i <= 52; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Idle;
    w.now += 1;
    // a first submission of the same shape waits: 14 free nodes in r3 and
    // its 2 spares kept
    add_native_job(w, 8, 16, 2);
    auto next = w.cycle();
    CAPTURE(next.log);
    // job 7 goes to r2 and r3, r3's spares included: pinned there by the
    // helper (Slurm would not use reserved spares), its target in its own
    // reservation
    REQUIRE(find<action::Lend>(next, 7));
    CHECK(find<action::Lend>(next, 7)->nodes == "n[019-034,039-054]");
    CHECK(std::count_if(next.actions.begin(), next.actions.end(),
                        [](const Action& a) { return a.kind() == ActionKind::Lend; }) == 1);
    CHECK_THAT(find<action::SetRecord>(next, 7)->text, !Catch::Contains("repairwait=1"));
    CHECK_THAT(find<action::SetRecord>(next, 7)->text, !Catch::Contains("lent=1"));
    CHECK_FALSE(find(next, ActionKind::Lend, 8));
    bool said = false;
    for (const auto& l : next.log)
        said = said || l.line().find("its repair: the racks' spares taken") != std::string::npos;
    CHECK(said);
}

// A native world of 3 racks with its spares reserved, and job 7 (2 x 16)
// running on r1 and r2.
SlurmJob& two_slices_in_three_racks(World& w) {
    w.cfg.hand_off = HandOff::Native;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    SlurmJob& j = add_native_job(w, 7, 16, 2);
    w.run_on(j, "n[001-016,019-034]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016];n[019-034] repairs=0 moves=0 job=7";
    return j;
}

TEST_CASE("a repair with no room now holds the job's healthy slice and the rack that frees soonest from its requeue",
          "[reconcile][native][quick]") {
    World w(3);
    SlurmJob& j = two_slices_in_three_racks(w);
    // r3 busy but for its spares: 8 nodes free in 50 s, 7 in 90 s, 1 in 500 s
    // (by the jobs' time limits); beside its spares the slice would wait
    // 500 s, with one of them 90 s: it takes that one, and r3's spare comes
    // back as the 500-s job's node (kept in the reservation while it runs)
    w.add_plain_job(20, 1, "n[037-044]").end_time = w.now + 50;
    w.add_plain_job(21, 1, "n[045-051]").end_time = w.now + 90;
    w.add_plain_job(22, 1, "n052").end_time = w.now + 500;
    for (int i = 1; i <= 18; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Drained;
    SECTION("held: the healthy slice and r3's 15 nodes that free first with one of its spares") {
        auto out = w.cycle();
        CAPTURE(out.log);
        REQUIRE(find(out, ActionKind::RequeueHold, 7));
        REQUIRE(find<action::Lend>(out, 7));
        // the target, and the rest of r3 held with it
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("slices=n[019-034];n[037-051,053]"));
        CHECK(find<action::Lend>(out, 7)->nodes == "n[019-034,037-054]");
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::StartsWith("nvlslice/1 repairing"));
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, !Catch::Contains("repairwait=1"));
        CHECK_FALSE(find(out, ActionKind::Requeue, 20)); // nobody's work is taken
        bool said = false, taken = false;
        for (const auto& l : out.log) {
            said = said || l.line().find("it starts when the last of it frees, in 90 s") != std::string::npos;
            taken = taken ||
                    l.line().find("1 of its 2 spares taken: beside them it would wait longer") != std::string::npos;
        }
        CHECK(said);
        CHECK(taken);
        w.apply(out);
        CHECK(j.reservation == "nvlslice_lend_7");
        // r3 keeps its budget: its other spare, and the node of the job that
        // ends last, a spare the moment that job ends (r1, degraded, whole)
        CHECK(w.resv->nodes == "n[001-018,035-036,052,054]");
        // past replace_after, r3's jobs still run: it waits, held, its target kept
        w.complete(7);
        w.now += 61;
        auto wait = w.cycle();
        CAPTURE(wait.log);
        CHECK_FALSE(find(wait, ActionKind::Release, 7));
        CHECK_FALSE(find(wait, ActionKind::EndLend));
        CHECK_FALSE(find(wait, ActionKind::SetLicenses, 7));
        CHECK_FALSE(wait.follow_up); // no close following while other jobs run there
        w.apply(wait);
        CHECK(j.held);
        // one of them ends: its target still runs job 21
        w.complete(20);
        w.job(20).state = JobState::Finished;
        w.now += 1;
        bool released = false;
        for (int c = 0; c < 3 && !released; ++c, ++w.now) released = find(w.step(), ActionKind::Release, 7);
        CHECK_FALSE(released);
        CHECK(j.held);
        CHECK_THAT(j.admin_comment, Catch::Contains("slices=n[019-034];n[037-051,053]"));
        // the last ends: it starts there, pinned from its next second, then released
        w.complete(21);
        w.job(21).state = JobState::Finished;
        w.now += 30;
        for (int c = 0; c < 3 && !released; ++c, ++w.now) released = find(w.step(), ActionKind::Release, 7);
        CAPTURE(w.calls);
        CHECK(released);
        CHECK_FALSE(j.held);
        CHECK(w.reservations.count("nvlslice_lend_7"));
        // released but not started yet (its nodes may still be completing
        // the jobs it waited for): the reservation keeps its target from a
        // higher-priority job until it runs there
        ++w.now;
        auto pending = w.cycle();
        CAPTURE(pending.log);
        CHECK_FALSE(find(pending, ActionKind::EndLend));
        w.apply(pending);
        REQUIRE(w.reservations.count("nvlslice_lend_7"));
        w.run_on(j, "n[019-034,037-051,053]");
        ++w.now;
        auto runs = w.cycle();
        CAPTURE(runs.log);
        CHECK(find(runs, ActionKind::EndLend, 7));
        w.apply(runs);
        // its other spare back from the held target's reservation, beside
        // the node of the 500-s job, r3's spare the moment that job ends
        ++w.now;
        w.apply(w.cycle());
        CHECK(w.resv->nodes == "n[001-018,035-036,052,054]");
        w.complete(22);
        w.job(22).state = JobState::Finished;
        ++w.now;
        w.apply(w.cycle());
        CHECK(w.resv->nodes == "n[001-018,035-036,052,054]");
        CHECK(w.node("n052").state == NodeState::Idle);
    }
    SECTION("past repair_hold_max: requeued to wait with its priority instead") {
        w.cfg.repair_hold_max_s = 60;
        auto out = w.cycle();
        CAPTURE(out.log);
        CHECK_FALSE(find(out, ActionKind::RequeueHold, 7));
        REQUIRE(find(out, ActionKind::Requeue, 7));
        CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("repairwait=1"));
    }
    SECTION("a job there without a time limit is never waited for") {
        w.job(21).end_time = 0;
        auto out = w.cycle();
        CAPTURE(out.log);
        CHECK_FALSE(find(out, ActionKind::RequeueHold, 7));
        CHECK(find(out, ActionKind::Requeue, 7));
    }
}

TEST_CASE("a repair with no room now requeues the checkpointable work on its target at once and waits only for "
          "the rest",
          "[reconcile][native][quick]") {
    World w(3);
    SlurmJob& j = two_slices_in_three_racks(w);
    // r3 busy but for its spares: a checkpointable 8-node job that would run
    // 500 s more, 8 nodes free in 40 s (by time limits): 16 in 40 s beside
    // its spares only if the checkpointable job goes now
    SlurmJob& ckpt = w.add_slice_job(24, 8, 1, false, true);
    w.run_on(ckpt, "n[037-044]");
    ckpt.admin_comment = "nvlslice/1 placed slice=8 slices=n[037-044] repairs=0 moves=0";
    ckpt.end_time = w.now + 500;
    w.add_plain_job(21, 1, "n[045-052]").end_time = w.now + 40;
    for (int i = 1; i <= 18; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Drained;
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find(out, ActionKind::RequeueHold, 7));
    CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("slices=n[019-034];n[037-052]"));
    // the checkpointable job goes now; the others run out their time
    REQUIRE(find(out, ActionKind::Requeue, 24));
    CHECK_THAT(find<action::SetRecord>(out, 24)->text,
               Catch::Contains("requeued to free the target of the repair of job 7"));
    CHECK_FALSE(find(out, ActionKind::Requeue, 21));
    CHECK(out.stats.defrag_preemptions == 1);
    bool said = false, waits = false;
    for (const auto& l : out.log) {
        said = said || l.line().find("repair frees its target: requeued checkpointable job(s) 24") != std::string::npos;
        waits = waits || l.line().find("in 40 s") != std::string::npos;
    }
    CHECK(said);
    CHECK(waits);
    w.apply(out);
    CHECK(ckpt.state == JobState::Pending);
    CHECK(j.reservation == "nvlslice_lend_7");
}

TEST_CASE("a held repair takes the nodes of its held rack that free first, whichever they are",
          "[reconcile][native][quick]") {
    // a 2 x 14 job: r3 has 16 nodes beside its spares, 2 more than the
    // slice needs
    World w(3);
    w.cfg.hand_off = HandOff::Native;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    SlurmJob& j = add_native_job(w, 7, 14, 2);
    w.run_on(j, "n[001-014,019-032]");
    j.admin_comment = "nvlslice/1 placed slice=14 slices=n[001-014];n[019-032] repairs=0 moves=0 job=7";
    w.add_plain_job(19, 1, "n[033-034]").end_time = w.now + 1000;
    w.add_plain_job(20, 1, "n[037-044]").end_time = w.now + 50;
    w.add_plain_job(21, 1, "n[045-048]").end_time = w.now + 90;
    w.add_plain_job(23, 1, "n[049-050]").end_time = w.now + 90;
    w.add_plain_job(22, 1, "n[051-052]").end_time = w.now + 100;
    for (int i = 1; i <= 18; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Drained;
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find<action::Lend>(out, 7));
    // the target by time limits, its spares kept, and the whole of r3 held with it
    CHECK_THAT(find<action::SetRecord>(out, 7)->text, Catch::Contains("slices=n[019-032];n[037-050]"));
    CHECK(find<action::Lend>(out, 7)->nodes == "n[019-032,037-054]");
    w.apply(out);
    w.complete(7);
    w.now += 1;
    w.step();
    CHECK(j.held);
    // jobs end in another order than their limits said: n[049-050] of the
    // target still busy, n[051-052] free
    for (JobId id : {JobId(20), JobId(21), JobId(22)}) {
        w.complete(id);
        w.job(id).state = JobState::Finished;
    }
    w.now += 20;
    auto swap = w.cycle();
    CAPTURE(swap.log);
    REQUIRE(find<action::SetRecord>(swap, 7));
    // (the spares are still not among them)
    CHECK_THAT(find<action::SetRecord>(swap, 7)->text, Catch::Contains("slices=n[019-032];n[037-048,051-052]"));
    w.apply(swap);
    bool released = false;
    for (int c = 0; c < 3 && !released; ++c, ++w.now) released = find(w.step(), ActionKind::Release, 7);
    CHECK(released);
    // pinned there: the busy ones excluded, the ones that freed first not
    const auto excluded = hostlist_expand(j.exc_nodes);
    CHECK(std::count(excluded.begin(), excluded.end(), "n049"));
    CHECK_FALSE(std::count(excluded.begin(), excluded.end(), "n051"));
}

TEST_CASE("native mode: Slurm places a segment job; the helper neither pins nor gates it, and records it once",
          "[reconcile][native][quick]") {
    World w(2);
    w.cfg.hand_off = HandOff::Native;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    for (auto& n : w.nodes) n.weight = 1;
    SlurmJob& j = add_native_job(w, 7, 16, 1);
    auto out = w.cycle();
    CHECK(kinds(out) == "record"); // no pin, no gate, no weights
    CHECK_THAT(find<action::SetRecord>(out)->text,
               Catch::StartsWith("nvlslice/1 waiting") && Catch::Contains("Slurm places it: --segment=16"));
    w.apply(out);
    CHECK(w.cycle().actions.empty());
    // Slurm starts it on one block: recorded as placed, with its slice
    w.run_on(j, "n[003-018]");
    auto run = w.cycle();
    REQUIRE(find(run, ActionKind::SetRecord));
    CHECK_THAT(find<action::SetRecord>(run)->text,
               Catch::StartsWith("nvlslice/1 placed") && Catch::Contains("slices=n[003-018]"));
    CHECK_THAT(run.log.front().line(), Catch::Contains("Slurm started it (native, --segment=16) on n[003-018]"));
    // a gate-mode escape check never requeues it
    CHECK_FALSE(find(run, ActionKind::Requeue));
}

// A native world of 2 racks: job 8 (16 nodes) placed on n[001-016] is
// pending again, Slurm having requeued it itself when n009 went DOWN.
SlurmJob& requeued_by_slurm(World& w) {
    make_native(w);
    SlurmJob& k = add_native_job(w, 8, 16, 1);
    k.restarts = 1;
    k.begin_time = w.now + 120;
    k.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n009").state = NodeState::Down;
    w.node("n009").failed = true;
    return k;
}

TEST_CASE("a job Slurm requeued after a DOWN whose repair has no room now is held where room frees first",
          "[reconcile][native][quick]") {
    // Slurm requeued job 8 itself (n009 DOWN): its 15 healthy nodes are free
    // now, r1's spares run a plain job for 50 s more, r2 is full for 500 s.
    World w(2);
    requeued_by_slurm(w);
    w.add_plain_job(20, 1, "n[017-018]").end_time = w.now + 50;
    w.add_plain_job(21, 1, "n[019-036]").end_time = w.now + 500;
    auto out = w.cycle();
    CAPTURE(out.log);
    // its healthy nodes and r1's spare that frees first held for it at
    // once, in its own reservation, before Slurm gives them to other work
    REQUIRE(find<action::Lend>(out, 8));
    CHECK(find<action::Lend>(out, 8)->nodes == "n[001-008,010-018]");
    CHECK_THAT(find<action::SetRecord>(out, 8)->text,
               Catch::StartsWith("nvlslice/1 repairing") && Catch::Contains("slices=n[001-008,010-017]"));
    REQUIRE(find<action::Exclude>(out, 8));
    CHECK(find<action::Exclude>(out, 8)->start_at == w.now + 1);
    bool said = false;
    for (const auto& l : out.log)
        said = said ||
               l.line().find("no rack has room now: pending again (Slurm requeued it), its target held for it "
                             "in nvlslice_lend_8; it starts when the last of it frees, in 50 s") != std::string::npos;
    CHECK(said);
    // with repair_hold_max 0 nothing is held: placed afresh as before
    World z(2);
    requeued_by_slurm(z);
    z.cfg.repair_hold_max_s = 0;
    z.add_plain_job(20, 1, "n[017-018]").end_time = z.now + 50;
    z.add_plain_job(21, 1, "n[019-036]").end_time = z.now + 500;
    CHECK_FALSE(find<action::Lend>(z.cycle(), 8));
}

TEST_CASE("native mode: a drained node is repaired from the rack's spare; a DOWN-requeued job from its record",
          "[reconcile][native][quick]") {
    World w(2);
    make_native(w);
    SlurmJob& j = add_native_job(w, 7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n005").state = NodeState::Draining;
    auto out = w.cycle();
    // pinned by excluding every other node: Slurm refuses a ReqNodeList
    // on a job of several segments
    CHECK(kinds(out) == "record lend requeue-hold exclude reservation");
    CHECK(find<action::Exclude>(out)->nodes == "n[005,018-036]");
    CHECK(find<action::Exclude>(out)->start_at == 0);
    // pending again, held by the helper: excluded from its start second, released
    requeued_held(w, j, out, "n005");
    CHECK(j.exc_nodes == "n[005,018-036]");
    w.now += 1;
    auto fin = w.step();
    CHECK(kinds(fin) == "release record");
    // running there: Slurm allows no change of a running job's exclusion;
    // it stays (a requeue by Slurm restarts it there, or a repair re-pins it)
    w.apply(fin);
    w.run_on(j, "n[001-004,006-017]");
    CHECK(kinds(w.step()) == "end-lend"); // its reservation ends once it runs
    CHECK(w.cycle().actions.empty());

    // Slurm started it and a node drained before a cycle recorded where
    World q(2);
    make_native(q);
    SlurmJob& m = add_native_job(q, 9, 16, 1);
    m.admin_comment = "nvlslice/1 waiting slice=16 repairs=0 moves=0 reason=Slurm places it: --segment=16";
    q.run_on(m, "n[001-016]");
    for (const char* n : {"n002", "n003", "n004"}) q.node(n).state = NodeState::Draining;
    auto mv = q.cycle();
    CHECK(kinds(mv) == "record lend requeue-hold exclude reservation");
    CHECK(find<action::Exclude>(mv)->nodes == "n[001-018,035-036]");        // moved to r2: n[019-034]
    CHECK(find<action::SetReservation>(mv)->nodes == "n[001-018,035-036]"); // r1 degraded: held whole
    CHECK_THAT(find<action::SetRecord>(mv)->text, Catch::Contains("repairs=1 moves=1"));

    // the other path: slurmd died, Slurm requeued the job itself (no pin, not held)
    World d(2);
    SlurmJob& k = requeued_by_slurm(d);
    auto rep = d.cycle();
    CHECK(kinds(rep) == "record lend reservation exclude"); // never gated
    CHECK(find<action::Exclude>(rep)->nodes == "n[009,018-036]");
    CHECK(find<action::Exclude>(rep)->start_at == d.now + 1);
    // its second comes: not held, so nothing to release; the update of its
    // StartTime to now is what asks Slurm for the scheduling pass
    d.apply(rep);
    d.now += 1;
    k.begin_time = d.now + 30; // a pending job's StartTime as Slurm shows it: its backfill's expected start
    auto go = d.cycle();
    CAPTURE(go.log);
    REQUIRE(find<action::Exclude>(go));
    CHECK(find<action::Exclude>(go)->start_at == d.now);
    CHECK(!find<action::Release>(go));
    // once: a second later it waits for Slurm as any pending job does
    d.apply(go);
    d.now += 1;
    CHECK(!find<action::Exclude>(d.cycle()));
}

// Native job `id` (1 x 16) running on r1 where the helper placed it.
SlurmJob& placed_on_r1(World& w, JobId id) {
    SlurmJob& j = add_native_job(w, id, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = fmt::format("nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0 job={}", id);
    return j;
}

TEST_CASE("a slice job completing after the helper's DOWN keeps its healthy nodes from other work until its repair",
          "[reconcile][native][quick]") {
    // job 7 on n[001-016]; every other node busy. Its silent node n009 is
    // marked DOWN by the helper: Slurm requeues it, and while it completes
    // (no slice job of this cycle), the nodes that ended first are idle. A
    // checkpointable 2-node job waits: it must not take them, since the
    // repair of job 7 (the next cycle, once it is pending) pins them
    World w(2);
    make_native(w);
    SlurmJob& j = placed_on_r1(w, 7);
    w.add_plain_job(20, 1, "n[017-018,035-036]").end_time = w.now + 500;
    w.add_plain_job(21, 1, "n[019-034]").end_time = w.now + 500;
    w.apply(w.cycle());
    SlurmJob& small = w.add_slice_job(30, 2, 1, false, true);
    small.requeue = true;
    w.node("n009").state = NodeState::Down;
    w.node("n009").failed = true;
    j.state = JobState::Completing;
    j.restarts = 1;
    // (Slurm lists only the nodes still completing)
    for (const char* n : {"n001", "n002", "n003", "n004"}) w.node(n).state = NodeState::Idle;
    j.nodes = hostlist_expand("n[005-016]");
    w.mem.requeued_at[7] = w.now; // the helper's DOWN requeued it
    SECTION("requeued by the helper's DOWN") {}
    SECTION("requeued by Slurm's own DOWN") {
        w.mem.requeued_at.erase(7);
    }
    auto out = w.cycle();
    CAPTURE(out.log);
    CHECK_FALSE(find(out, ActionKind::Exclude, 30));
    CHECK_FALSE(find(out, ActionKind::Lend, 30));
    CHECK_FALSE(find(out, ActionKind::Pin, 30));
}

TEST_CASE("native mode, Slurm's expedited requeue: the spare both pick, one requeue, the record follows once",
          "[reconcile][native][quick]") {
    World w(2);
    make_native(w, /*node_pools=*/true);
    SlurmJob& j = placed_on_r1(w, 7);
    w.apply(w.cycle()); // as the helper left it: the spares reserved
    REQUIRE(w.resv->nodes == "n[017-018,035-036]");
    // n009's slurmd is gone: Slurm marks it DOWN and requeues the job itself
    // (expedited): completing, no slice job of this cycle
    w.node("n009").state = NodeState::Down;
    w.node("n009").failed = true;
    j.state = JobState::Completing;
    j.restarts = 1;
    auto completing = w.step();
    CHECK(kinds(completing) == "reservation"); // no requeue of the helper's
    // the rack's budget is one spare: the first leaves, the one a repair takes
    CHECK(w.resv->nodes == "n[018,035-036]");
    // Slurm starts it at once on its old nodes and the free node
    w.run_on(j, "n[001-008,010-017]");
    w.node("n009").state = NodeState::Down;
    auto started = w.step();
    CAPTURE(started.log);
    CHECK(kinds(started) == "record"); // no requeue, no pin, no reservation change
    CHECK(find<action::SetRecord>(started)->text ==
          "nvlslice/1 placed slice=16 slices=n[001-008,010-017] repairs=1 moves=0 job=7");
    REQUIRE(started.log.size() == 1);
    CHECK_THAT(started.log.front().line(),
               Catch::Contains("Slurm restarted it (requeued by Slurm after a node of its placement failed) on "
                               "n[001-008,010-017]: its record follows"));
    CHECK(started.stats.repairs_in_rack == 1);
    // and then nothing, cycle after cycle
    w.now += 1;
    CHECK(w.cycle().actions.empty());
    CHECK(w.cycle().log.empty());

    // the other order: the helper sees it pending first and pins the same node
    World h(2);
    make_native(h, true);
    SlurmJob& k = placed_on_r1(h, 8);
    h.apply(h.cycle());
    h.node("n009").state = NodeState::Down;
    h.node("n009").failed = true;
    k.state = JobState::Completing;
    k.restarts = 1;
    h.step();
    k.state = JobState::Pending;
    k.nodes.clear();
    for (const char* n : {"n001", "n002", "n003", "n004", "n005", "n006", "n007", "n008", "n010", "n011", "n012",
                          "n013", "n014", "n015", "n016"})
        h.node(n).state = NodeState::Idle;
    k.begin_time = h.now + 120; // Slurm's own delay, which the pin brings forward
    auto pinned = h.cycle();
    CAPTURE(pinned.log);
    REQUIRE(find<action::Pin>(pinned));
    CHECK(find<action::Pin>(pinned)->nodes == "n[001-008,010-017]"); // a node pool of its placement
    CHECK_FALSE(find(pinned, ActionKind::SetReservation));           // n017 is out of it already
    CHECK_FALSE(find(pinned, ActionKind::Requeue));
}

TEST_CASE("a job held for its repair whose nodes were taken is released to wait with its priority, in both modes",
          "[reconcile][holds][quick]") {
    for (const bool nat : {false, true}) {
        INFO((nat ? "native" : "gate") << " mode");
        World w(2);
        w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
        if (nat) make_native(w);
        SlurmJob& j = nat ? add_native_job(w, 7, 16, 1) : w.add_slice_job(7, 16, 1);
        w.run_on(j, "n[001-016]");
        j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
        w.add_plain_job(50, 500, "n[019-036]");
        SlurmJob& j7 = w.jobs.front();
        w.node("n005").state = NodeState::Draining;
        auto out = w.cycle();
        REQUIRE(find(out, ActionKind::RequeueHold));
        // requeued held; before its release a job behind it takes n017 (an
        // admin's -w, a reservation ending): its target is busy
        requeued_held(w, j7, out, "n005");
        w.add_plain_job(51, 400, "n017");
        SlurmJob& held = w.jobs.front();
        w.now += 1;
        CHECK_FALSE(find(w.cycle(), ActionKind::Release)); // waits for its nodes up to replace_after
        w.now += w.cfg.replace_after_s + 1;
        auto fall = w.cycle();
        const auto* rec = find<action::SetRecord>(fall);
        REQUIRE(rec);
        CHECK_THAT(rec->text, Catch::StartsWith("nvlslice/1 waiting"));
        w.apply(fall);
        // no room anywhere: released from the helper's hold, behind its gate
        // (gate mode) or off the failed node only (native), never held
        w.now += 1;
        auto back = w.cycle();
        const std::string k = kinds(back);
        CHECK_THAT(k, Catch::Contains("release"));
        CHECK(k.find(nat ? "exclude" : "licenses") < k.find("release"));
        CHECK(k.find("release") < k.find("record"));
        if (nat) CHECK(find<action::Exclude>(back)->nodes.find("n017") == std::string::npos);
        if (!nat) CHECK(find<action::SetLicenses>(back)->licenses == "nvlslice_gate:1");
        CHECK_THAT(find<action::SetRecord>(back)->text, !Catch::Contains("hold=1"));
        // as Slurm shows it then: not held, its priority back; the helper
        // neither holds nor releases it again
        w.apply(back);
        CHECK_FALSE(held.held);
        CHECK(held.priority > 0);
        w.now += 1;
        auto after = w.cycle();
        CHECK_FALSE(find(after, ActionKind::Release));
        CHECK_FALSE(find(after, ActionKind::RequeueHold));
        CHECK_FALSE(find(after, ActionKind::Hold));
    }
}

TEST_CASE("native mode on Slurm 25.11+: a repair pins the job with a node pool, exactly its placement",
          "[reconcile][native][quick]") {
    World w(2);
    make_native(w, /*node_pools=*/true);
    SlurmJob& j = add_native_job(w, 7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    w.node("n005").state = NodeState::Draining;
    auto out = w.cycle();
    // a ReqNodeList of the 16 nodes, the rack's spare in place of n005; no exclusion
    CHECK(kinds(out) == "record lend requeue-hold pin-nodes reservation");
    CHECK(find<action::PinOnly>(out)->nodes == "n[001-004,006-017]");
    CHECK(find(out, ActionKind::Exclude) == nullptr);
    // pending again, held by the helper: pinned from its start second, released
    requeued_held(w, j, out, "n005");
    CHECK(j.req_nodes == "n[001-004,006-017]");
    w.now += 1;
    auto fin = w.step();
    CHECK(kinds(fin) == "release record");
    w.apply(fin);
    w.start(j);
    CHECK(kinds(w.step()) == "end-lend");
    CHECK(w.cycle().actions.empty());

    // slurmd died and Slurm requeued it itself: pinned by its pool from the next second
    World d(2);
    make_native(d, /*node_pools=*/true);
    SlurmJob& k = add_native_job(d, 8, 16, 1);
    k.restarts = 1;
    k.begin_time = d.now + 120;
    // pinned by exclusion before the controller was upgraded
    k.exc_nodes = "n[017-036]";
    k.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    d.node("n009").state = NodeState::Down;
    d.node("n009").failed = true;
    auto rep = d.cycle();
    CHECK(kinds(rep) == "record lend exclude reservation pin");
    // its new nodes leave the exclusion first; the rest stays until the pool is set
    CHECK(find<action::Exclude>(rep)->nodes == "n[018-036]");
    CHECK(find<action::Pin>(rep)->nodes == "n[001-008,010-017]");
    CHECK(find<action::Pin>(rep)->start_at == d.now + 1);
}

TEST_CASE("native mode: a checkpointable segment job is pinned onto lent spares; prefer jobs keep the gate",
          "[reconcile][native][quick]") {
    World w(2);
    w.cfg.hand_off = HandOff::Native;
    fill_racks_native(w);
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    add_native_job(w, 8, 1, 1, /*ckpt=*/true);
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::Exclude));
    CHECK(find<action::Exclude>(out)->nodes == "n[001-016,018-036]");
    CHECK_FALSE(find(out, ActionKind::SetLicenses));
    CHECK_THAT(find<action::SetRecord>(out)->text, Catch::Contains("lent=1"));
    // one Slurm holds back (its owner's --begin, an hour on) is lent nothing:
    // the pin's StartTime would bring its begin time forward
    World b(2);
    b.cfg.hand_off = HandOff::Native;
    fill_racks_native(b);
    b.resv = w.resv;
    SlurmJob& later = add_native_job(b, 8, 1, 1, /*ckpt=*/true);
    later.reason = "BeginTime";
    later.begin_time = b.now + 3600;
    auto bo = b.cycle();
    CHECK_FALSE(find(bo, ActionKind::Exclude));
    CHECK_FALSE(find(bo, ActionKind::Pin));
    // requeued (it yielded to defragmentation): Slurm would wait out its
    // credential lifetime; the helper lets it start in the next second
    auto yielded = [](World& in, int slice) -> SlurmJob& {
        in.cfg.hand_off = HandOff::Native;
        in.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
        SlurmJob& j = add_native_job(in, 9, slice, 1, true);
        j.restarts = 1;
        j.begin_time = in.now + 121;
        j.admin_comment =
            fmt::format("nvlslice/1 yielded slice={} repairs=0 moves=0 reason=requeued by defragmentation", slice);
        return j;
    };
    auto starts_next_second = [](const World& in, const CycleOutput& o) {
        REQUIRE(find(o, ActionKind::Exclude));
        CHECK(find<action::Exclude>(o)->nodes.empty());
        CHECK(find<action::Exclude>(o)->start_at == in.now + 1);
    };
    World y(2);
    yielded(y, 16); // a slice: Slurm places it (smaller work is lent)
    starts_next_second(y, y.cycle());
    // smaller than a slice, the same job is lent work: Slurm still places it
    // (from the next second too), and its record says lent=1, so that its
    // nodes stand in for their rack's spares once it runs
    World ys(2);
    SlurmJob& ysj = yielded(ys, 4);
    auto yso = ys.cycle();
    starts_next_second(ys, yso);
    CHECK_THAT(find<action::SetRecord>(yso)->text, Catch::Contains("lent=1") && Catch::Contains("Slurm places it"));
    // Slurm starts it: the record of where it runs keeps lent=1
    ys.apply(yso);
    ysj.state = JobState::Running;
    ysj.nodes = hostlist_expand("n[001-004]");
    ysj.start_time = ys.now;
    ys.now += 1;
    auto started = ys.cycle();
    REQUIRE(find<action::SetRecord>(started, 9));
    CHECK_THAT(find<action::SetRecord>(started, 9)->text, Catch::Contains("placed") && Catch::Contains("lent=1"));
    // no racks kept by the helper in native mode: Slurm's backfill does it
    World p(2);
    p.cfg.hand_off = HandOff::Native;
    SlurmJob& blocker = add_native_job(p, 5, 16, 2);
    p.run_on(blocker, "n[001-016,019-034]");
    blocker.end_time = p.now + 600;
    add_native_job(p, 6, 16, 2);
    CHECK_FALSE(find(p.cycle(), ActionKind::Protect));
}

TEST_CASE("a lend reservation ends within its lease, moved on while its job waits there",
          "[reconcile][native][quick]") {
    World w(2);
    make_native(w);
    w.cfg.reservation_lease_s = 600;
    fill_racks_native(w);
    SlurmJob& b = add_native_job(w, 8, 1, 1, /*ckpt=*/true);
    b.user_id = 1000;
    auto out = w.cycle();
    REQUIRE(find<action::Lend>(out, 8));
    CHECK(find<action::Lend>(out, 8)->end_at == w.now + 600);
    w.apply(out);
    REQUIRE(w.reservations["nvlslice_lend_8"]);
    CHECK(w.reservations["nvlslice_lend_8"]->end_time == w.now + 600);
    w.now += 200; // more than half left: as it is
    CHECK_FALSE(find(w.step(), ActionKind::Lend));
    w.now += 101; // less than half left: moved on, the same node
    auto later = w.cycle();
    CAPTURE(later.log);
    REQUIRE(find<action::Lend>(later, 8));
    CHECK(find<action::Lend>(later, 8)->end_at == w.now + 600);
    CHECK(find<action::Lend>(later, 8)->nodes == w.reservations["nvlslice_lend_8"]->nodes);
    CHECK_FALSE(find(later, ActionKind::EndLend));
}

TEST_CASE("a spare lent to a job Slurm has not started waits for it in a reservation of its own",
          "[reconcile][native][quick]") {
    World w(2);
    make_native(w);
    SlurmJob& big = fill_racks_native(w);
    SlurmJob& b = add_native_job(w, 8, 1, 1, /*ckpt=*/true);
    b.user_id = 1000;
    auto out = w.cycle();
    // the lend reservation first (it overlaps the spare reservation), then
    // the spare leaves that one, then the pin that lets Slurm start it
    CHECK(kinds(out) == "lend record reservation exclude");
    const auto& lend = as<action::Lend>(*find(out, ActionKind::Lend, 8));
    CHECK(lend.reservation == "nvlslice_lend_8");
    CHECK(lend.user_id == 1000);
    CHECK(lend.nodes == "n017");
    CHECK(find<action::SetReservation>(out)->nodes == "n[018,035-036]");
    w.apply(out);
    REQUIRE(b.reservation == "nvlslice_lend_8");
    REQUIRE(w.reservations.count("nvlslice_lend_8"));
    // Slurm has not started it yet (jobs ahead of it): the reservation
    // stays, nothing is lent again and the spare stays out of the spares
    w.now += 5;
    auto waiting = w.step();
    CHECK_FALSE(find(waiting, ActionKind::EndLend));
    CHECK_FALSE(find(waiting, ActionKind::Lend));
    CHECK(w.reservations.count("nvlslice_lend_8"));
    CHECK(w.resv->nodes == "n[018,035-036]");
    // started there: the job leaves the reservation, which goes; the job
    // keeps the node (lent work), and the spares are as they were
    w.run_on(b, "n017");
    b.start_time = w.now;
    w.now += 1;
    auto started = w.cycle();
    REQUIRE(find(started, ActionKind::EndLend, 8));
    CHECK(as<action::EndLend>(*find(started, ActionKind::EndLend, 8)).reservation == "nvlslice_lend_8");
    INFO(kinds(started));
    CHECK_FALSE(find(started, ActionKind::SetReservation));
    w.apply(started);
    CHECK(b.reservation.empty());
    CHECK_FALSE(w.reservations.count("nvlslice_lend_8"));
    w.now += 1;
    CHECK(w.step().actions.empty());
    // a lend reservation whose job is gone (the helper stopped before it
    // ended it): deleted, with no job to take out of it
    w.reservations["nvlslice_lend_99"] = Reservation{"nvlslice_lend_99", "n018"};
    auto orphan = w.cycle();
    REQUIRE(find(orphan, ActionKind::EndLend));
    CHECK(find(orphan, ActionKind::EndLend)->job == 0);
    w.apply(orphan);
    CHECK_FALSE(w.reservations.count("nvlslice_lend_99"));
    // a lend reservation a stopped helper left behind, with another job its
    // owner put there (--reservation): both jobs leave it, and it goes
    w.reservations["nvlslice_lend_8"] = Reservation{"nvlslice_lend_8", "n018"};
    b.reservation = "nvlslice_lend_8";
    SlurmJob& other = add_native_job(w, 9, 1, 1);
    other.reservation = "nvlslice_lend_8";
    auto two = w.cycle();
    REQUIRE(find<action::EndLend>(two));
    CHECK(find(two, ActionKind::EndLend)->job == 8);
    CHECK(find<action::EndLend>(two)->others == std::vector<JobId>{9});
    CHECK_FALSE(find(two, ActionKind::Requeue, 9)); // waiting: taken out is enough
    w.apply(two);
    CHECK(other.reservation.empty());
    CHECK_FALSE(w.reservations.count("nvlslice_lend_8"));
    // another job of the owner's that started in the lend reservation: taken
    // out and requeued, not left on the spare for its whole time limit
    w.reservations["nvlslice_lend_8"] = Reservation{"nvlslice_lend_8", "n018"};
    b.reservation = "nvlslice_lend_8";
    other.reservation = "nvlslice_lend_8";
    w.run_on(other, "n018");
    other.requeue = false; // its owner's --no-requeue: set back first
    auto ran = w.cycle();
    CAPTURE(ran.log);
    REQUIRE(find(ran, ActionKind::Requeue, 9));
    CHECK(find(ran, ActionKind::AllowRequeue, 9));
    CHECK(std::count_if(ran.log.begin(), ran.log.end(), [](const LogEntry& l) {
              return l.line().find("job 9: ran on n018 in the lend reservation nvlslice_lend_8 that job 8 was lent: "
                                   "requeued") != std::string::npos;
          }) == 1);
    w.apply(ran);
    CHECK_FALSE(w.reservations.count("nvlslice_lend_8"));
    // a refused lend leaves its spare in the spare reservation: the update
    // that would free it waits (the next cycle decides afresh)
    World f(2);
    make_native(f);
    fill_racks_native(f);
    add_native_job(f, 8, 1, 1, /*ckpt=*/true);
    f.faults["lend 8"] = "Requested nodes are busy";
    auto fo = f.cycle();
    const auto failures = nvl::apply(f, f.cfg, fo.actions);
    REQUIRE(failures.size() == 1);
    CHECK(failures.front().kind == ActionKind::Lend);
    CHECK(f.resv->nodes == "n[017-018,035-036]");
    CHECK(f.job(8).exc_nodes.empty()); // not pinned either
    // a job in a reservation of its own (its owner's --reservation) runs on
    // that reservation's nodes: it is lent no spare
    World r(2);
    make_native(r);
    fill_racks_native(r);
    add_native_job(r, 8, 1, 1, /*ckpt=*/true).reservation = "maint";
    auto ro = r.cycle();
    CHECK_FALSE(find(ro, ActionKind::Lend));
    CHECK_FALSE(find(ro, ActionKind::Exclude));
    // gate mode too: a plain job ahead (Slurm places it itself) would take
    // the spare
    World g(2);
    SlurmJob& gbig = g.add_slice_job(7, 16, 2);
    g.run_on(gbig, "n[001-016,019-034]");
    gbig.admin_comment = big.admin_comment;
    g.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    g.add_slice_job(8, 1, 1, true, true);
    auto go = g.cycle();
    CHECK(find(go, ActionKind::Pin, 8));
    CHECK(find(go, ActionKind::Lend, 8));
    CHECK(kinds(go) == "lend record reservation pin licenses");
    CHECK(find<action::Lend>(go, 8)->nodes == find<action::Pin>(go, 8)->nodes);
}

TEST_CASE("a lend on a rack that degrades ends: its job is not started there", "[reconcile][native][quick]") {
    World w(2);
    make_native(w);
    w.cfg.rack_failure_reasons = "contained";
    fill_racks_native(w);
    SlurmJob& b = add_native_job(w, 8, 1, 1, /*ckpt=*/true);
    w.step();
    REQUIRE(b.reservation == "nvlslice_lend_8");
    const std::string spare = w.reservations["nvlslice_lend_8"]->nodes;
    // its rack degrades: the spare reservation holds the whole rack, but a
    // job in an OVERLAP reservation is not kept off it
    w.node(spare == "n017" ? "n005" : "n023").reason = "Xid 145: NVLink contained error";
    w.node(spare == "n017" ? "n005" : "n023").state = NodeState::Draining;
    w.now += 1;
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::EndLend, 8));
    CHECK(std::any_of(out.log.begin(), out.log.end(), [](const auto& l) {
        return l.line().find("no longer waits for it there") != std::string::npos;
    }));
    w.apply(out);
    CHECK(b.reservation.empty());
    CHECK_FALSE(w.reservations.count("nvlslice_lend_8"));
}

TEST_CASE("lend reservations are named after their job, one name per job", "[reconcile][quick]") {
    HelperConfig cfg;
    CHECK(cfg.lend_name(8) == "nvlslice_lend_8");
    CHECK(cfg.lend_job("nvlslice_lend_8") == 8);
    CHECK(cfg.lend_job("nvlslice_lend_4294967295") == 4294967295u);
    CHECK(cfg.lend_job("nvlslice_lend_4294967296") == 0);
    CHECK(cfg.lend_job("nvlslice_lend_08") == 0);
    CHECK(cfg.lend_job("nvlslice_lend_") == 0);
    CHECK(cfg.lend_job("nvlslice_lend") == 0);
    CHECK(cfg.lend_job("nvlslice_lendx_8") == 0);
    CHECK(cfg.lend_job("nvlslice_lend_8x") == 0);
    CHECK(cfg.lend_job("nvlslice_spares") == 0);
    // the view's read (adapter and fake) by the same rule
    const ViewRequest q = ViewRequest::of(cfg, false);
    CHECK(is_lend_name("nvlslice_lend_8", q));
    for (const char* other : {"nvlslice_lend_08", "nvlslice_lend_x", "nvlslice_lend_", "nvlslice_spares"})
        CHECK_FALSE(is_lend_name(other, q));
    CHECK_FALSE(is_lend_name("_8", ViewRequest{})); // no prefix: no lend reservation
}

TEST_CASE("rack health: failed nodes beyond the spares, or a rack-scope reason, degrade a rack", "[rack][quick]") {
    RackMap map = make_map(2, 18);
    Snapshot snap(map);
    std::vector<std::string> reasons(map.node_count());
    auto id = [&](const char* n) { return *map.find_node(n); };
    for (const char* n : {"n001", "n002"}) snap.set_state(id(n), NodeState::Drained);
    CHECK_FALSE(rack_degraded_why(snap, 0, reasons, std::nullopt)); // 2 failed: within its 2 spares
    snap.set_state(id("n003"), NodeState::Down);
    CHECK(rack_degraded_why(snap, 0, reasons, std::nullopt) ==
          "3 failed node(s) (n[001-003]), more than its 2 spare(s)");
    // one node whose reason names a rack-level failure
    snap.set_state(id("n020"), NodeState::Drained);
    reasons[id("n020")] = "Xid 145: NVLink contained error";
    auto scope = reason_regex("contained|nvswitch", "rack_failure_reasons");
    CHECK_FALSE(rack_degraded_why(snap, 1, reasons, std::nullopt));
    CHECK(rack_degraded_why(snap, 1, reasons, scope) ==
          "n020 is out with a rack-level failure: \"Xid 145: NVLink contained error\"");
    // a healthy node's old reason does not count
    snap.set_state(id("n020"), NodeState::Idle);
    CHECK_FALSE(rack_degraded_why(snap, 1, reasons, scope));
    CHECK(mark_degraded_racks(snap, reasons, scope) == 1);
    CHECK(snap.degraded(0));
    CHECK_FALSE(snap.degraded(1));
    CHECK(domain_room(map.domain(0), snap.counts(0), true) == 0); // nothing new, even on spares
    CHECK_THROWS_WITH(reason_regex("(", "rack_failure_reasons"),
                      Catch::Contains("rack_failure_reasons: \"(\" is not a valid regular expression"));
}

TEST_CASE("a degraded rack: its slice jobs move out, checkpointable first; no new slice goes there until it "
          "recovers",
          "[reconcile][rack][quick]") {
    World w(3);
    w.cfg.rack_failure_reasons = "contained";
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036,053-054]"};
    // r1 runs two 8-node slice jobs: A (plain) first in priority, B checkpointable
    SlurmJob& a = w.add_slice_job(7, 8, 1);
    w.run_on(a, "n[001-008]");
    a.admin_comment = "nvlslice/1 placed slice=8 slices=n[001-008] repairs=0 moves=0";
    a.requeue = a.batch = true;
    a.priority = 2000;
    SlurmJob& b = w.add_slice_job(8, 8, 1, true, /*ckpt=*/true);
    w.run_on(b, "n[009-016]");
    b.admin_comment = "nvlslice/1 placed slice=8 slices=n[009-016] repairs=0 moves=0";
    b.requeue = b.batch = true;
    // r2 is full; r3 has room for one 8-node slice (16 free, 2 kept as spares, 6 busy)
    for (int i = 19; i <= 34; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    for (int i = 37; i <= 44; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Allocated;
    // one node of r1, not one of theirs, drains with a contained error
    w.node("n018").state = NodeState::Drained;
    w.node("n018").reason = "Xid 145: NVLink contained error";
    auto out = w.cycle();
    REQUIRE(out.stats.racks.size() == 3);
    CHECK(out.stats.racks[0].degraded);
    CHECK_FALSE(out.stats.racks[2].degraded);
    // what the per-rack gauges show: r1 as the cycle found it
    CHECK(out.stats.racks[0].slice_nodes == 16);
    CHECK(out.stats.racks[0].failed == 1);
    CHECK(out.stats.racks[0].spare == 1); // n017 (n018 drained)
    CHECK(out.stats.racks[0].room == 0);  // degraded: no room for a new slice
    CHECK(out.stats.racks[2].free == 8);  // n[045-052]; n[053-054] are spares
    CHECK(out.stats.racks[2].spare == 2);
    CHECK(out.stats.racks[2].room == 8);
    CHECK(out.stats.evacuations == 1);
    // B (checkpointable) gets the room, though A comes first in priority
    const Action* pin = find(out, ActionKind::PinOnly);
    REQUIRE(pin);
    CHECK(pin->job == 8);
    CHECK(pin->nodes() == "n[045-052]");
    bool requeued_a = false;
    for (const auto& x : out.actions) requeued_a = requeued_a || (x.job == 7 && x.kind() == ActionKind::RequeueHold);
    CHECK_FALSE(requeued_a); // A keeps running until a healthy rack has room
    bool said = false, waits = false;
    for (const auto& l : out.log) {
        if (l.text.rfind("rack r1 degraded:", 0) == 0) {
            CHECK(l.severity == Severity::Warning); // an operator's eye
            CHECK(l.job == 0);                      // about the cluster
        }
        said = said || l.line().find("rack r1 degraded: n018 is out with a rack-level failure") != std::string::npos;
        waits = waits || l.line().find("job 7: rack r1 degraded; slice 0: r1 is degraded") != std::string::npos;
    }
    CHECK(said);
    CHECK(waits);

    // a new slice job is not placed in r1, though 16 of its nodes would be free
    w.jobs.erase(w.jobs.begin(), w.jobs.begin() + 2);
    for (int i = 1; i <= 16; ++i) w.node(fmt::format("n{:03d}", i)).state = NodeState::Idle;
    w.add_slice_job(9, 16, 1);
    auto next = w.cycle();
    CHECK_FALSE(find(next, ActionKind::Pin));
    CHECK(next.stats.pending_by_reason.count("busy") == 1); // r2 and r3 are busy; r1 does not count

    // resumed: r1 recovers, the job is placed there
    w.node("n018").state = NodeState::Idle;
    auto back = w.cycle();
    REQUIRE(find(back, ActionKind::Pin));
    CHECK(find<action::Pin>(back)->nodes == "n[001-016]");
    CHECK_FALSE(back.stats.racks[0].degraded);
    bool recovered = false;
    for (const auto& l : back.log)
        recovered = recovered || l.line() == "rack r1 recovered: slices are placed there again";
    CHECK(recovered);
}

namespace {
// The helper on repair_not_responding_after = `after` (its probe off), the
// spares reserved, a 16-node slice job running on n001-016 that Slurm may
// requeue, and n005 under it not responding.
SlurmJob& running_with_n005_silent(World& w, int after) {
    w.cfg.repair_not_responding_after_s = after;
    w.cfg.silent_after_s = 0;
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    SlurmJob& j = w.add_slice_job(7, 16, 1);
    w.run_on(j, "n[001-016]");
    j.req_nodes = "n[001-016]";
    j.admin_comment = "nvlslice/1 placed slice=16 slices=n[001-016] repairs=0 moves=0";
    j.requeue = j.batch = true;
    w.node("n005").not_responding = true;
    return j;
}
// Slurm marks n005 DOWN and requeues job `j` itself: completing (its
// reservation kept meanwhile), then pending with its credential's begin
// time, not held, its healthy nodes idle; the helper's cycle then.
CycleOutput slurm_requeues_on_n005_down(World& w, SlurmJob& j) {
    w.node("n005").state = NodeState::Down;
    w.node("n005").failed = true;
    j.state = JobState::Completing;
    j.restarts = 1;
    j.begin_time = w.now + 121;
    w.now += 1;
    auto completing = w.step();
    CHECK_FALSE(find(completing, ActionKind::EndLend)); // kept while it completes
    // followed closely while its aborted steps end: released the moment it
    // is pending
    CHECK(completing.follow_up);
    j.state = JobState::Pending;
    j.nodes.clear();
    for (const char* n : {"n001", "n002", "n003", "n004", "n006", "n007", "n008", "n009", "n010", "n011", "n012",
                          "n013", "n014", "n015", "n016"})
        w.node(n).state = NodeState::Idle;
    return w.step();
}
} // namespace

TEST_CASE("repair_not_responding_after: a silent node of a running slice job is marked DOWN; a blip is left "
          "alone",
          "[reconcile][rack][quick]") {
    World w(2);
    running_with_n005_silent(w, 20);
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown)); // first seen
    w.now += 10;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown));
    // it answers again: forgotten
    w.node("n005").not_responding = false;
    w.now += 5;
    w.cycle();
    CHECK(w.mem.not_responding_since.empty());
    w.node("n005").not_responding = true;
    w.now += 15;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown)); // the count starts again
    w.now += 20;
    // its job's batch script stopped and steps aborted now, the DOWN
    // kDownAfterAbortS later, whatever the node does meanwhile
    auto aborted = w.cycle();
    CHECK(kinds(aborted).rfind("stop-batch abort-steps", 0) == 0);
    CHECK_FALSE(find(aborted, ActionKind::NodeDown));
    w.apply(aborted);
    w.node("n005").not_responding = false; // it answers again: too late
    w.now += kDownAfterAbortS - 1;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown));
    w.now += 1;
    auto out = w.cycle();
    const auto* down = find<action::NodeDown>(out);
    REQUIRE(down);
    CHECK(down->nodes == "n005");
    CHECK(down->reason == "nvlsliced: not responding to slurmctld for 20 s (repair_not_responding_after=20); slice "
                          "job 7 repaired on a spare");
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown)); // once
    // a node without a slice job is Slurm's business
    w.node("n020").not_responding = true;
    w.now += 60;
    for (const auto& a : w.cycle().actions) CHECK_FALSE((a.kind() == ActionKind::NodeDown && a.nodes() == "n020"));
    // off: nothing
    w.cfg.repair_not_responding_after_s = 0;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown));
}

TEST_CASE("repair_not_responding_after: the repair's target is kept for the job before the DOWN, through Slurm's "
          "own requeue, until the job runs there",
          "[reconcile][rack][quick]") {
    World w(2);
    SlurmJob& j = running_with_n005_silent(w, 5);
    CHECK(w.step().actions.empty()); // first seen
    w.now += 5;
    auto out = w.cycle();
    // the target (the 15 healthy nodes and the rack's spare) in the job's
    // own reservation, then the DOWN that makes Slurm let go of the job
    REQUIRE(find<action::Lend>(out));
    CHECK(find<action::Lend>(out)->nodes == "n[001-004,006-017]");
    // and, first of all, its steps aborted: their stepds then end at once
    // on every node that answers, not 60 s later
    REQUIRE(find(out, ActionKind::AbortSteps, 7));
    size_t lend = 0, down = 0, abort = 99;
    for (size_t i = 0; i < out.actions.size(); ++i) {
        if (out.actions[i].kind() == ActionKind::Lend) lend = i;
        if (out.actions[i].kind() == ActionKind::NodeDown) down = i;
        if (out.actions[i].kind() == ActionKind::AbortSteps) abort = i;
    }
    CHECK(abort < lend);
    CHECK(down == 0); // not yet: kDownAfterAbortS later
    // its batch script stopped first: the script must not end the job
    // before the DOWN requeues it
    CHECK(kinds(out).rfind("stop-batch abort-steps", 0) == 0);
    CHECK_FALSE(find(out, ActionKind::RequeueHold)); // Slurm requeues it on the DOWN
    w.apply(out);
    CHECK(std::count(w.calls.begin(), w.calls.end(), "stop-batch 7") == 1);
    CHECK(std::count(w.calls.begin(), w.calls.end(), "abort-steps 7") == 1);
    for (int s = 1; s < kDownAfterAbortS; ++s) {
        w.now += 1;
        auto wait = w.step();
        CHECK_FALSE(find(wait, ActionKind::NodeDown));
        CHECK_FALSE(find(wait, ActionKind::AbortSteps));
        CHECK_FALSE(find(wait, ActionKind::Lend));
    }
    w.now += 1;
    auto downed = w.step();
    REQUIRE(find<action::NodeDown>(downed));
    CHECK(find<action::NodeDown>(downed)->nodes == "n005");
    CHECK(j.reservation == "nvlslice_lend_7");
    CHECK(w.reservations.at("nvlslice_lend_7")->nodes == "n[001-004,006-017]");
    // Slurm's requeue is the DOWN's: its second is the job's requeue's
    CHECK(find<action::NodeDown>(downed)->job_requeued == 7);
    CHECK(w.mem.requeued_at.at(7) == w.now);
    auto rep = slurm_requeues_on_n005_down(w, j);
    CHECK_FALSE(find(rep, ActionKind::EndLend));
    // the node held for it is its own: nobody is requeued to take it back
    CHECK_FALSE(find(rep, ActionKind::Requeue));
    // repaired onto the very nodes held for it, from the second after the
    // DOWN (its credential was revoked in the DOWN's second), which is now:
    // not the second after the helper saw it pending
    REQUIRE(find<action::Pin>(rep));
    CHECK(find<action::Pin>(rep)->nodes == "n[001-004,006-017]");
    CHECK(find<action::Pin>(rep)->start_at == w.now);
    CHECK(w.reservations.at("nvlslice_lend_7")->nodes == "n[001-004,006-017]");
    w.now += 1;
    for (int c = 0; c < 3 && j.licenses.find("nvlslice_gate") != std::string::npos; ++c) w.step();
    w.start(j);
    CHECK(kinds(w.step()) == "end-lend");
    CHECK_FALSE(w.reservations.count("nvlslice_lend_7"));
    CHECK(std::count(w.calls.begin(), w.calls.end(), "abort-steps 7") == 1); // once
}

TEST_CASE("repair_not_responding_after: a lent spare the repair needs is taken back before the DOWN, and the "
          "target is kept for the job",
          "[reconcile][rack][quick]") {
    // The busy bench's trial: the rack's spares were lent, so the repair's
    // plan takes one back. Its target must still be held before the DOWN,
    // or the job's 15 healthy nodes go to other work as they complete.
    World w(2);
    SlurmJob& j = running_with_n005_silent(w, 5);
    SlurmJob& a = lend_r1_spares(w);
    CHECK(w.step().actions.empty()); // first seen
    w.now += 5;
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find<action::Lend>(out, 7));
    CHECK(find<action::Lend>(out, 7)->nodes == "n[001-004,006-017]");
    // the borrower of n017 is requeued (one borrower: the target needs one
    // node), before the DOWN lets go of the job
    const Action* rq = find(out, ActionKind::Requeue, 8);
    REQUIRE(rq);
    CHECK_FALSE(find(out, ActionKind::Requeue, 9));
    // both this cycle; the DOWN kDownAfterAbortS later
    CHECK_FALSE(find(out, ActionKind::NodeDown));
    bool said = false;
    for (const auto& l : out.log)
        said = said || l.line() == "job 7: repair takes back a lent spare: requeued checkpointable job 8";
    CHECK(said);
    w.apply(out);
    CHECK(j.reservation == "nvlslice_lend_7");
    // the borrower's requeue ends on n017 within the seconds before the
    // DOWN: the held n017 is job 7's though the job still runs, and the
    // borrower goes elsewhere
    a.state = JobState::Pending;
    a.nodes.clear();
    w.node("n017").state = NodeState::Idle;
    for (int s = 1; s < kDownAfterAbortS; ++s) {
        w.now += 1;
        auto wait = w.step();
        CAPTURE(wait.log);
        CHECK_FALSE(find(wait, ActionKind::EndLend));
        CHECK_FALSE(find(wait, ActionKind::NodeDown));
        if (const auto* pin = find<action::Pin>(wait, 8)) CHECK(pin->nodes != "n017");
    }
    w.now += 1;
    auto downed = w.step();
    REQUIRE(find(downed, ActionKind::NodeDown));
    CHECK_FALSE(find(downed, ActionKind::EndLend)); // the job still runs in this cycle's view
    CHECK(w.reservations.at("nvlslice_lend_7")->nodes == "n[001-004,006-017]");
    auto rep = slurm_requeues_on_n005_down(w, j);
    CAPTURE(rep.log);
    // nothing more is taken back: the target is the job's already
    CHECK_FALSE(find(rep, ActionKind::Requeue));
    REQUIRE(find<action::Pin>(rep, 7));
    CHECK(find<action::Pin>(rep, 7)->nodes == "n[001-004,006-017]");
}

TEST_CASE("repair_not_responding_after: two silent nodes of one job are marked DOWN together, after its one abort",
          "[reconcile][rack][quick]") {
    World w(2);
    running_with_n005_silent(w, 5);
    w.node("n009").not_responding = true;
    CHECK_FALSE(find(w.cycle(), ActionKind::NodeDown)); // first seen
    w.now += 5;
    auto out = w.cycle();
    CAPTURE(out.log);
    CHECK(std::count_if(out.actions.begin(), out.actions.end(),
                        [](const Action& a) { return a.kind() == ActionKind::AbortSteps; }) == 1);
    CHECK(std::count_if(out.actions.begin(), out.actions.end(),
                        [](const Action& a) { return a.kind() == ActionKind::StopBatch; }) == 1);
    CHECK_FALSE(find(out, ActionKind::NodeDown));
    w.apply(out);
    w.now += kDownAfterAbortS;
    auto downs = w.cycle();
    std::vector<std::string> nodes;
    for (const auto& a : downs.actions)
        if (a.kind() == ActionKind::NodeDown) nodes.push_back(a.nodes());
    CHECK(nodes == std::vector<std::string>{"n005", "n009"});
}

TEST_CASE("silent_after: the DOWN follows the abort; a batch host whose slurmd is gone gets it at once, a silent "
          "batch host after the abort as any node",
          "[reconcile][rack][quick]") {
    // node `n` of job 7 on n[001-016] unanswered for silent_after (5 s):
    // refused (its slurmd gone) or timed out (the whole host silent)
    auto downs_after = [](const char* n, bool refused, bool* stopped) {
        World w(2);
        SlurmJob& j = running_with_n005_silent(w, 0);
        w.node("n005").not_responding = false;
        w.cfg.silent_after_s = 5;
        w.node(n).unanswered_s = 5;
        w.node(n).unanswered_refused = refused;
        auto out = w.cycle();
        REQUIRE(find(out, ActionKind::AbortSteps, 7));
        *stopped = find(out, ActionKind::StopBatch, 7) != nullptr;
        for (int s = 0; s <= 10; ++s) {
            if (s) w.now += 1;
            if (s)
                out = w.step();
            else
                w.apply(out);
            if (const auto* d = find<action::NodeDown>(out)) {
                CHECK(d->nodes == n);
                CHECK(d->job_requeued == 7);
                CHECK(j.id == 7);
                return s;
            }
        }
        return -1;
    };
    bool stopped = false;
    // slurmd gone, or the whole host silent: the DOWN once the aborted
    // steps have ended, the batch script stopped meanwhile
    CHECK(downs_after("n005", true, &stopped) == kDownAfterAbortS);
    CHECK(stopped);
    CHECK(downs_after("n005", false, &stopped) == kDownAfterAbortS);
    CHECK(stopped);
    // the batch host (the allocation's first node), its slurmd gone: the
    // script runs on, out of reach, and could end the job: DOWN at once
    CHECK(downs_after("n001", true, &stopped) == 0);
    CHECK_FALSE(stopped);
    // the batch host silent: its script can tell slurmctld nothing; the
    // DOWN waits as for any silent host (no stop sent: it would not arrive)
    CHECK(downs_after("n001", false, &stopped) == kDownAfterAbortS);
    CHECK_FALSE(stopped);
}

TEST_CASE("a slice job left stopped in its own reservation by a helper that stopped before the DOWN is requeued",
          "[reconcile][rack][quick]") {
    World w(2);
    SlurmJob& j = running_with_n005_silent(w, 5);
    w.now += 5;
    w.cycle(); // first seen
    w.now += 5;
    auto out = w.cycle();
    REQUIRE(find(out, ActionKind::StopBatch, 7));
    w.apply(out);
    j.stopped = true; // Slurm flags it so (JOB_STOPPED)
    // while its DOWN is due, this helper requeues nothing
    w.now += 1;
    CHECK_FALSE(find(w.step(), ActionKind::Requeue));
    // a new helper, without the first one's memory, n005 still silent:
    // its DOWN, seconds away, requeues the job (a requeue now would leave
    // it completing on n005 until Slurm's SlurmdTimeout)
    w.mem = HelperMemory{};
    w.now += 1;
    CHECK_FALSE(find(w.cycle(), ActionKind::Requeue));
    // n005 answering again: the job would stay stopped for good
    w.mem = HelperMemory{};
    w.node("n005").not_responding = false;
    w.now += 1;
    auto next = w.cycle();
    CAPTURE(next.log);
    REQUIRE(find(next, ActionKind::Requeue, 7));
    CHECK_FALSE(find(next, ActionKind::NodeDown));
    // a job stopped by its owner, outside its own reservation, is theirs
    World u(2);
    SlurmJob& k = running_with_n005_silent(u, 0);
    u.node("n005").not_responding = false;
    k.stopped = true;
    CHECK_FALSE(find(u.cycle(), ActionKind::Requeue));
}

TEST_CASE("abort_steps: false leaves a silent node's job to Slurm's own wait; the key is read",
          "[reconcile][rack][quick]") {
    CHECK(read_helper_config("map: m.yaml\n", "h.yaml").reconcile.abort_steps);
    CHECK_FALSE(read_helper_config("map: m.yaml\nabort_steps: false\n", "h.yaml").reconcile.abort_steps);
    World w(2);
    w.cfg.abort_steps = false;
    running_with_n005_silent(w, 5);
    w.step();
    w.now += 5;
    auto out = w.cycle();
    CHECK(find(out, ActionKind::NodeDown));
    CHECK_FALSE(find(out, ActionKind::AbortSteps));
}

TEST_CASE("native mode: a job Slurm holds back is kept off a degraded rack by the reservation alone: its begin time "
          "and exclusion untouched, and it is lent nothing",
          "[reconcile][rack][native][eligibility][quick]") {
    World w(2);
    w.cfg.hand_off = HandOff::Native;
    w.cfg.rack_failure_reasons = "contained";
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    // the user's --begin an hour ahead, and a job waiting on a dependency
    SlurmJob& later = add_native_job(w, 7, 16, 1, /*ckpt=*/true);
    later.begin_time = w.now + 3600;
    later.reason = "BeginTime";
    SlurmJob& dep = add_native_job(w, 8, 16, 1, /*ckpt=*/true);
    dep.reason = "Dependency";
    w.node("n005").state = NodeState::Drained;
    w.node("n005").reason = "NVLink contained error";
    auto out = w.cycle();
    CAPTURE(out.log);
    REQUIRE(find<action::SetReservation>(out));
    CHECK(find<action::SetReservation>(out)->nodes == "n[001-018,035-036]"); // r1 held whole
    for (JobId id : {JobId(7), JobId(8)}) {
        CAPTURE(id);
        // no exclusion, no StartTime: Slurm's begin time and dependency stay as they are
        CHECK_FALSE(find(out, ActionKind::Exclude, id));
        CHECK_FALSE(find(out, ActionKind::Pin, id));
        CHECK_FALSE(find(out, ActionKind::Release, id));
    }
    // nothing lent to them either: the spares stay reserved
    for (const auto& a : out.actions)
        if (a.kind() == ActionKind::SetReservation) {
            const auto held = hostlist_expand(a.nodes());
            CHECK(std::count(held.begin(), held.end(), "n035") == 1);
            CHECK(std::count(held.begin(), held.end(), "n036") == 1);
        }
}

TEST_CASE("native mode without a spare reservation: a waiting segment job is kept off degraded racks by its "
          "exclusion, lifted on recovery",
          "[reconcile][rack][native][quick]") {
    World w(2);
    w.cfg.hand_off = HandOff::Native;
    w.cfg.rack_failure_reasons = "contained";
    w.cfg.reservation.clear();
    SlurmJob& j = add_native_job(w, 7, 16, 1);
    w.node("n005").state = NodeState::Drained;
    w.node("n005").reason = "NVLink contained error";
    auto out = w.cycle();
    const Action* exc = find(out, ActionKind::Exclude);
    REQUIRE(exc);
    CHECK(exc->job == 7);
    CHECK(exc->nodes() == "n[001-018]");
    const auto* rec = find<action::SetRecord>(out);
    REQUIRE(rec);
    CHECK_THAT(rec->text, Catch::Contains("waiting") && Catch::Contains("offdegraded=1"));
    CHECK(PlacementRecord::parse(rec->text)->off_degraded); // survives a restart: it lives in Slurm
    // as Slurm shows it now: nothing more to do while the rack stays degraded
    j.exc_nodes = "n[001-018]";
    j.admin_comment = rec->text;
    auto again = w.cycle();
    CHECK_FALSE(find(again, ActionKind::Exclude));
    // a user's own --exclude on another job is not touched while no rack is degraded
    SlurmJob& u = add_native_job(w, 8, 16, 1);
    u.exc_nodes = "n020";
    // recovered: the exclusion the helper set is lifted, the user's stays
    w.node("n005").state = NodeState::Idle;
    auto back = w.cycle();
    const auto* lifted = find<action::Exclude>(back, 7);
    REQUIRE(lifted);
    CHECK(lifted->nodes.empty());
    CHECK_FALSE(find(back, ActionKind::Exclude, 8)); // the user's
    bool flag_cleared = false;
    for (const auto& a : back.actions)
        flag_cleared = flag_cleared || (a.kind() == ActionKind::SetRecord && a.job == 7 &&
                                        as<action::SetRecord>(a).text.find("offdegraded") == std::string::npos);
    CHECK(flag_cleared);
}

TEST_CASE("native mode: a degraded rack is held whole by the spare reservation, its busy and failed nodes too; "
          "no exclusion, and an older one is lifted",
          "[reconcile][rack][native][quick]") {
    World w(2);
    w.cfg.hand_off = HandOff::Native;
    w.cfg.rack_failure_reasons = "contained";
    w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
    CHECK(w.cycle().actions.empty()); // healthy: nothing to change
    // a plain job runs on r1; a contained failure degrades r1 while a
    // segment job waits, and another waits with the exclusion an older
    // nvlsliced set (its record says so)
    w.add_plain_job(5, 100, "n[001-002]");
    add_native_job(w, 7, 16, 1);
    SlurmJob& old = add_native_job(w, 8, 16, 1);
    old.exc_nodes = "n[001-018]";
    PlacementRecord was;
    was.state = RecordState::Waiting;
    was.slice = 16;
    was.off_degraded = true;
    old.admin_comment = was.str();
    w.node("n005").state = NodeState::Drained;
    w.node("n005").reason = "NVLink contained error";
    auto out = w.cycle();
    CAPTURE(out.log);
    const auto* r = find<action::SetReservation>(out);
    REQUIRE(r);
    CHECK(r->nodes == "n[001-018,035-036]"); // the running job's nodes and the failed one included
    const auto* lifted = find<action::Exclude>(out, 8);
    REQUIRE(lifted);
    CHECK(lifted->nodes.empty());
    CHECK_FALSE(find(out, ActionKind::Exclude, 7));
    w.apply(out);
    CHECK(w.job(8).exc_nodes.empty());
    CHECK_FALSE(PlacementRecord::parse(w.job(8).admin_comment)->off_degraded);
    // applied: nothing more while the rack stays degraded; the job that
    // ends leaves its nodes in the reservation
    w.node("n001").state = w.node("n002").state = NodeState::Idle;
    w.job(5).state = JobState::Finished;
    CHECK_FALSE(find(w.cycle(), ActionKind::SetReservation));
    // recovered: the rack's spares are its last nodes again
    w.node("n005").state = NodeState::Idle;
    w.node("n005").reason.clear();
    const auto rec = w.cycle();
    const auto* back = find<action::SetReservation>(rec);
    REQUIRE(back);
    CHECK(back->nodes == "n[017-018,035-036]");
}

TEST_CASE("the reason patterns are compiled once per configuration, not every cycle", "[reconcile][quick]") {
    World w(1);
    w.cfg.repair_drain_reasons = "xid|nvlink";
    w.cfg.rack_failure_reasons = "contained";
    w.cycle();
    REQUIRE(w.mem.patterns.compiled == 1);
    w.cycle();
    w.cycle();
    CHECK(w.mem.patterns.compiled == 1);
    CHECK(w.mem.patterns.drain_src == "xid|nvlink");
    w.cfg.repair_drain_reasons = "xid"; // a reload
    w.node("n003").state = NodeState::Draining;
    w.node("n003").reason = "nvlink down";
    w.cycle();
    CHECK(w.mem.patterns.compiled == 2);
    CHECK(w.mem.patterns.drain_src == "xid");
    CHECK_FALSE(std::regex_search(std::string("nvlink down"), *w.mem.patterns.drain));
}

TEST_CASE("defragmentation requeues the job that loses least: one that says it has just checkpointed",
          "[reconcile][defrag][quick]") {
    // Two racks, each with one 8-node checkpointable job: A ran 4,510 s
    // (900 s startup, a checkpoint an hour later, 10 s ago), B 2,100 s (no
    // checkpoint yet: 1,200 s of work). A 16-node slice job is blocked.
    for (bool say : {true, false}) {
        World w(2);
        w.resv = Reservation{"nvlslice_spares", "n[017-018,035-036]"};
        w.cfg.defrag_after_s = 0;
        auto add = [&](JobId id, const char* nodes, int64_t ran) {
            SlurmJob& j = w.add_slice_job(id, 8, 1, true, true);
            if (say) {
                RequestTag tag = *RequestTag::parse(j.comment);
                tag.checkpoint_s = 3600;
                j.comment = tag.str();
            }
            w.run_on(j, nodes);
            j.start_time = w.now - ran;
            j.admin_comment = fmt::format("nvlslice/1 placed slice=8 slices={} repairs=0 moves=0", nodes);
        };
        add(1, "n[001-008]", 900 + 3600 + 10);
        add(2, "n[019-026]", 900 + 1200);
        w.add_slice_job(3, 16, 1).submit_time = w.now - 1;
        auto out = w.cycle();
        std::vector<JobId> victims;
        for (const auto& a : out.actions)
            if (a.kind() == ActionKind::Requeue) victims.push_back(a.job);
        // said: A loses 10 s, B 1,200 s; not said: all they ran, so B
        CHECK(victims == std::vector<JobId>{say ? JobId(1) : JobId(2)});
    }
}

TEST_CASE("one policy: the simulator and the helper decide the same on one scenario",
          "[reconcile][sim][defrag][quick]") {
    // 3 racks x 18 (16 + 2 spares). Early on: job 1 (10 nodes, not
    // checkpointing) on rack 1, job 2 (7, not) on rack 2, then job 3 (9) and
    // job 4 (8), both checkpointing and smaller than a slice: they run as
    // lent work, standing in for the spares of their racks (2 and 3). At
    // 1 h job 5 (16, not) finds 20 free nodes but no rack with 16:
    // defragmentation at once, of rack 3.
    SimParams p;
    p.racks = 3;
    p.days = 1;
    p.mtbf_days = 1e9;
    p.defrag_after_s = 0;
    Trace t;
    t.jobs = {
        {0.0, 10, 100, false}, {0.01, 7, 100, false}, {0.02, 9, 100, true}, {0.03, 8, 100, true}, {1.0, 16, 10, false}};
    std::vector<SimDecision> sim;
    p.on_decision = [&](const SimDecision& d) { sim.push_back(d); };
    run_trace(p, t);
    // the simulator: four starts, the defragmentation, then job 5 on the
    // freed rack and the requeued job 4 on lent spares
    REQUIRE(sim.size() >= 7);
    CHECK(sim[2].lent);
    CHECK(sim[3].lent);
    CHECK(sim[4].kind == SimDecision::Defrag);
    CHECK(sim[4].job == 5);
    CHECK(sim[5].job == 5);
    CHECK(sim[6].job == 4);
    CHECK(sim[6].lent);

    // The helper's cycle on the state the simulator had at 1 h: the lent
    // jobs' racks keep no spare in the reservation.
    World w(3);
    w.resv = Reservation{"nvlslice_spares", "n[017-018]"};
    w.cfg.defrag_after_s = 0;
    const RackMap& m = w.map;
    auto names = [&](const std::vector<NodeId>& ids) { return hostlist_compress(m.node_names(ids)); };
    for (int i = 0; i < 4; ++i) {
        const SimDecision& d = sim[size_t(i)];
        REQUIRE(d.kind == SimDecision::Start);
        const TraceJob& tj = t.jobs[d.job - 1];
        SlurmJob& j = w.add_slice_job(d.job, tj.nodes, 1, true, tj.ckpt);
        if (tj.ckpt && p.checkpoint_known) { // the simulated jobs say how often they checkpoint
            RequestTag tag = *RequestTag::parse(j.comment);
            tag.checkpoint_s = int(p.checkpoint_hours * 3600);
            j.comment = tag.str();
        }
        w.run_on(j, names(d.nodes));
        j.start_time = w.now - 3600;
        j.admin_comment = fmt::format("nvlslice/1 placed slice={} slices={} repairs=0 moves=0{} job={}", tj.nodes,
                                      names(d.nodes), d.lent ? " lent=1" : "", d.job);
    }
    SlurmJob& blocked = w.add_slice_job(5, 16, 1);
    blocked.submit_time = w.now - 1;
    auto out = w.cycle();
    // the same victims
    std::vector<JobId> victims;
    for (const auto& a : out.actions)
        if (a.kind() == ActionKind::Requeue) victims.push_back(a.job);
    CHECK(victims == sim[4].victims);
    // Slurm requeues it: pending, its nodes free; the next cycle places job
    // 5 where the simulator started it, and the requeued job 4 on rack 1's
    // free nodes and spares, lent, as the simulator did
    w.apply(out);
    for (JobId v : victims) CHECK(w.job(v).state == JobState::Pending);
    w.now += 1;
    auto next = w.cycle();
    const auto* pin5 = find<action::Pin>(next, 5);
    REQUIRE(pin5);
    CHECK(pin5->nodes == names(sim[5].nodes));
    const auto* pin4 = find<action::Pin>(next, 4);
    REQUIRE(pin4);
    CHECK(pin4->nodes == names(sim[6].nodes));
    CHECK_THAT(find<action::SetRecord>(next, 4)->text, Catch::Contains("lent=1"));
}

TEST_CASE("one policy: spares go to a borrower behind any number of jobs that cannot use them",
          "[reconcile][sim][quick]") {
    // 2 racks, a 16-node job on each: only the kept spares are free. Ten
    // single-node jobs that may not borrow come first in priority, a
    // checkpointable single-node job last: the helper lends it a spare at
    // once, as the simulator's spare pass does beyond its look-ahead.
    World w(2);
    w.resv = Reservation{"nvlslice_spares", "n[017-018],n[035-036]"};
    w.add_plain_job(1, 1000, "n[001-016]");
    w.add_plain_job(2, 1000, "n[019-034]");
    for (JobId id = 3; id <= 12; ++id) w.add_slice_job(id, 1, 1).priority = 2000 - id;
    SlurmJob& borrower = w.add_slice_job(13, 1, 1, true, true);
    borrower.priority = 10;
    auto out = w.cycle();
    for (JobId id = 3; id <= 12; ++id) CHECK_FALSE(find<action::Pin>(out, id));
    const auto* pin = find<action::Pin>(out, 13);
    REQUIRE(pin);
    const auto spares = hostlist_expand("n[017-018],n[035-036]");
    CHECK(std::find(spares.begin(), spares.end(), pin->nodes) != spares.end());
    CHECK_THAT(find<action::SetRecord>(out, 13)->text, Catch::Contains("lent=1"));

    // the simulator on the same state: 2 racks, the two slices, ten jobs
    // that may not borrow, then the borrower: started at once, lent
    SimParams p;
    p.racks = 2;
    p.days = 1;
    p.mtbf_days = 1e9;
    p.defrag = false;
    Trace t;
    t.jobs = {{0.0, 16, 10, false}, {0.01, 16, 10, false}};
    for (int i = 0; i < 10; ++i) t.jobs.push_back({0.1 + i * 0.01, 1, 1, false});
    t.jobs.push_back({0.3, 1, 1, true});
    const auto started = first_starts(p, t);
    REQUIRE(started.count(13));
    CHECK(started.at(13).lent);
    CHECK(started.at(13).hours == Approx(0.3));
}

TEST_CASE("each action kind describes itself: its phase, follow-up, order, refusal and bookkeeping",
          "[reconcile][quick]") {
    const int64_t now = 1000;
    auto a = [](JobId job, ActionPayload p) { return Action{job, std::move(p)}; };
    // phases: what lets a job start goes after what prepares it
    CHECK(a(1, action::Hold{}).phase(now) == Phase::Prepare);
    CHECK(a(1, action::Pin{"n1", now + 5}).phase(now) == Phase::Start);
    CHECK(a(1, action::Exclude{"n1", 0}).phase(now) == Phase::Prepare);
    CHECK(a(1, action::Exclude{"n1", now}).phase(now) == Phase::Start);
    CHECK(a(1, action::SetLicenses{"x"}).phase(now) == Phase::Start);
    CHECK(a(0, action::SetLicenses{"x"}).phase(now) == Phase::Prepare);
    CHECK(a(0, action::SetReservation{"n1", 0}).phase(now) == Phase::Spares);
    CHECK(a(0, action::Protect{}).phase(now) == Phase::Unprotect);
    CHECK(a(0, action::Protect{"n1", now, now + 60}).phase(now) == Phase::Start);
    CHECK(a(0, action::Gate{now}).phase(now) == Phase::Upkeep);
    CHECK(a(0, action::SetWeight{"n1", 5}).phase(now) == Phase::Upkeep);
    // the steps of a repair follow each other closely
    CHECK(a(1, action::Requeue{}).follow_up(now));
    CHECK(a(1, action::RequeueHold{}).follow_up(now));
    CHECK(a(1, action::Release{}).follow_up(now));
    CHECK(a(0, action::NodeDown{"n1", "x"}).follow_up(now));
    CHECK(a(1, action::Pin{"n1", now + 1}).follow_up(now));
    CHECK_FALSE(a(1, action::Pin{"n1", now}).follow_up(now));
    CHECK_FALSE(a(1, action::SetRecord{"r"}).follow_up(now));
    // lends keep their own order; a refused one holds back the spare reservation's update
    CHECK(a(1, action::Lend{}).own_order());
    CHECK(a(1, action::EndLend{}).own_order());
    CHECK_FALSE(a(1, action::Pin{}).own_order());
    CHECK(a(1, action::Lend{}).refused_lend());
    CHECK(a(0, action::SetReservation{}).after_refused_lend());
    CHECK_FALSE(a(0, action::Protect{}).after_refused_lend());
    // requeues are remembered
    CHECK(a(1, action::Requeue{}).requeues());
    CHECK(a(1, action::RequeueHold{}).requeues());
    CHECK_FALSE(a(1, action::Release{}).requeues());
}
