// The lease that lets one nvlsliced act at a time (lease.hpp): two helpers
// against one lease reservation, as slurmctld keeps it (create refused
// when it exists, end moved by update, purged past its end).
#include "lease.hpp"

#include "catch.hpp"

#include <optional>
#include <string>

using namespace nvl;

namespace {

// slurmctld's side: one reservation of that name, or none.
struct Slurmctld {
    std::optional<LeaseView> resv;
    int64_t now = 1000000;
    bool create(const std::string& id, int64_t end) {
        if (resv) return false; // ESLURM_RESERVATION_NAME_DUP
        resv = LeaseView{id, end};
        return true;
    }
    bool update_end(int64_t end) {
        if (!resv || end < now - 60) return false;
        resv->end_time = end;
        return true;
    }
    void purge() { // job_resv_check: past its end (about 30 s later)
        if (resv && resv->end_time < now) resv.reset();
    }
};

// One helper's cycle against it: what it decides, the step, whether it acts.
bool cycle(Lease& l, Slurmctld& s, double mono) {
    const LeaseDecision d = l.decide(s.resv, s.now, mono);
    switch (d.step) {
    case LeaseStep::Take: l.taken(s.create(l.me(), l.end_for(s.now)), mono); break;
    case LeaseStep::Renew: {
        const bool ok = s.update_end(l.end_for(s.now)) && s.resv && s.resv->holder == l.me();
        if (ok)
            l.renewed(true, mono);
        else
            l.lost();
        break;
    }
    case LeaseStep::Keep: break;
    case LeaseStep::StandBy: l.lost(); break;
    }
    return l.may_act(mono);
}

} // namespace

TEST_CASE("the lease: one helper acts; the other takes over only once the first is gone and its lease purged",
          "[lease][quick]") {
    Slurmctld s;
    Lease a(lease_id("ctl1", "/run/a.lock"), 30), b(lease_id("ctl2", "/run/a.lock"), 30);
    double mono = 0;
    CHECK(cycle(a, s, mono));
    CHECK_FALSE(cycle(b, s, mono));
    REQUIRE(s.resv);
    CHECK(s.resv->holder == "ctl1:/run/a.lock");
    // a keeps it, cycle after cycle; b never acts meanwhile
    for (int i = 0; i < 120; ++i) {
        mono += 1;
        s.now += 1;
        CHECK(cycle(a, s, mono));
        CHECK_FALSE(cycle(b, s, mono));
        s.purge();
    }
    CHECK(s.resv->end_time > s.now + 15);
    // a stops (its host died): b waits out the lease and Slurm's purge
    int waited = 0;
    while (!cycle(b, s, mono)) {
        mono += 1;
        s.now += 1;
        if (s.now % 30 == 0) s.purge();
        REQUIRE(++waited < 120);
    }
    CHECK(waited >= 20); // never before a's lease ran out
    CHECK(s.resv->holder == "ctl2:/run/a.lock");
    // a comes back (a new process on ctl1, its lock free again): b holds
    // the lease, a stands by
    Lease a2(lease_id("ctl1", "/run/a.lock"), 30);
    CHECK_FALSE(cycle(a2, s, mono));
    // b restarted on its host (the same lock): its own lease, at once
    Lease b2(lease_id("ctl2", "/run/a.lock"), 30);
    CHECK(cycle(b2, s, mono));
}

TEST_CASE("the lease: a stalled holder stops acting before anyone else may take over", "[lease][quick]") {
    Slurmctld s;
    Lease a(lease_id("ctl1", "/run/a.lock"), 30), b(lease_id("ctl2", "/run/a.lock"), 30);
    double mono = 0;
    REQUIRE(cycle(a, s, mono));
    // a stalls 20 s (a paused VM): by its own clock it may no longer act,
    // whatever it was about to do
    mono += 20;
    s.now += 20;
    CHECK_FALSE(a.may_act(mono));
    // b could not have taken it yet: the lease has not even ended
    CHECK_FALSE(cycle(b, s, mono));
    // a's next cycle renews it (Slurm still has it: nobody could create one)
    CHECK(cycle(a, s, mono));
    CHECK(s.resv->holder == "ctl1:/run/a.lock");
}

TEST_CASE("the lease: of two helpers that take it at once, one wins; a renewal that reads back another's loses it",
          "[lease][quick]") {
    Slurmctld s;
    Lease a(lease_id("ctl1", "/run/a.lock"), 30), b(lease_id("ctl2", "/run/a.lock"), 30);
    // both saw none
    const auto da = a.decide(s.resv, s.now, 0), db = b.decide(s.resv, s.now, 0);
    REQUIRE(da.step == LeaseStep::Take);
    REQUIRE(db.step == LeaseStep::Take);
    a.taken(s.create(a.me(), a.end_for(s.now)), 0);
    b.taken(s.create(b.me(), b.end_for(s.now)), 0);
    CHECK(a.may_act(0));
    CHECK_FALSE(b.may_act(0));
    // a read its lease (ours, due), then stalled; meanwhile the lease was
    // purged and b took a new one. a's renewal moves b's end (slurmctld's
    // update is not conditional) but reads back b's id: a loses
    s.now += 25;
    const auto stale = s.resv;
    const auto d = a.decide(stale, s.now, 25);
    REQUIRE(d.step == LeaseStep::Renew);
    s.now += 100;
    s.purge();
    REQUIRE(cycle(b, s, 125));
    const bool moved = s.update_end(a.end_for(s.now));
    CHECK(moved);
    if (moved && s.resv->holder == a.me())
        a.renewed(true, 125);
    else
        a.lost();
    CHECK_FALSE(a.may_act(125));
    CHECK(s.resv->holder == "ctl2:/run/a.lock");
    CHECK(cycle(b, s, 126));
    CHECK_FALSE(cycle(a, s, 126));
}

TEST_CASE("the lease id: host and lock file; odd characters replaced", "[lease][quick]") {
    CHECK(lease_id("ctl1.example", "/run/nvlsliced/nvlsliced.lock") == "ctl1.example:/run/nvlsliced/nvlsliced.lock");
    CHECK(lease_id("a b,c=d", "/x y") == "a_b_c_d:/x_y");
    CHECK(lease_id("", "/l") == "unknown:/l");
}
