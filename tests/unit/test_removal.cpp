// nvlsliced --remove: what is undone, from what Slurm reports (removal.hpp).
#include "removal.hpp"

#include "slice_job.hpp"

#include "catch.hpp"

using namespace nvl;

namespace {

std::string record(JobId id, RecordState state, bool hold) {
    PlacementRecord r;
    r.job = id;
    r.state = state;
    r.slice = 16;
    r.hold = hold;
    if (state != RecordState::Waiting) r.slices = {"n[001-016]"};
    return r.str();
}

int count(const Removal& r, JobId job, ActionKind k) {
    int n = 0;
    for (const auto& a : r.actions) n += a.job == job && a.kind() == k;
    return n;
}

SlurmJob& add(std::vector<SlurmJob>& jobs, JobId id, JobState state = JobState::Pending) {
    jobs.emplace_back();
    jobs.back().id = id;
    jobs.back().state = state;
    return jobs.back();
}

} // namespace

TEST_CASE("removal undoes the gate, the helper's pin, hold and record, and only the helper's", "[removal][quick]") {
    HelperConfig cfg;
    std::vector<SlurmJob> jobs;
    // 1: gated, waiting, recorded
    SlurmJob& gated = add(jobs, 1);
    gated.licenses = "nvlslice_gate:1,matlab:2";
    gated.admin_comment = record(1, RecordState::Waiting, false);
    // 2: pinned by the helper (gate mode) and held mid-repair
    SlurmJob& held = add(jobs, 2);
    held.req_nodes = "n[001-016]";
    held.held = true;
    held.admin_comment = record(2, RecordState::Repairing, true);
    // 3: native mode, pinned by exclusion
    SlurmJob& native = add(jobs, 3);
    native.exc_nodes = "n[017-036]";
    RequestTag tag;
    tag.nodes = 16;
    tag.slice = 16;
    tag.count = 1;
    tag.hand_off = HandOff::Native;
    native.comment = tag.str();
    native.admin_comment = record(3, RecordState::Placed, false);
    // 4: running, recorded
    add(jobs, 4, JobState::Running).admin_comment = record(4, RecordState::Placed, false);
    // 5: a plain job of a user's with -w and an admin's hold: not nvlslice's
    SlurmJob& plain = add(jobs, 5);
    plain.req_nodes = "n001";
    plain.held = true;
    plain.admin_comment = "site health note";
    // 6: a record copied from job 2 (a task its array split off): the record
    // goes, its hold and node list are not the helper's
    SlurmJob& copy = add(jobs, 6);
    copy.held = true;
    copy.req_nodes = "n[001-016]";
    copy.admin_comment = record(2, RecordState::Repairing, true);
    // 9: waits in its lend reservation; 10: another job of the owner's runs there
    SlurmJob& borrower = add(jobs, 9);
    borrower.reservation = "nvlslice_lend_9";
    borrower.admin_comment = record(9, RecordState::Placed, false);
    add(jobs, 10, JobState::Running).reservation = "nvlslice_lend_9";
    // 11: gate mode, waiting, never placed: the user's own -w and -x stay
    SlurmJob& own = add(jobs, 11);
    own.req_nodes = "n[001-016]";
    own.exc_nodes = "n040";
    own.licenses = "nvlslice_gate:1";
    own.admin_comment = record(11, RecordState::Waiting, false);
    // 12: a repair's requeue still completing: undone once it is pending
    add(jobs, 12, JobState::Completing).admin_comment = record(12, RecordState::Repairing, true);

    const std::vector<Reservation> resv = {
        {"nvlslice_spares", "n[017-018]"}, {"nvlslice_gate", ""},          {"nvlslice_protect", "n[001-018]"},
        {"nvlslice_lend_9", "n018"},       {"nvlslice_lease", ""},         {"site_maint", "n[001-036]"},
        {"nvlslice_lendx", "n001"},        {"nvlslice_lend_maint", "n002"}};
    const Removal r = plan_removal(jobs, resv, cfg, "nvlslice_lease");
    CHECK(r.jobs == 7); // 1, 2, 3, 4, 6, 9, 11
    CHECK(r.completing == std::vector<JobId>{12});
    CHECK(count(r, 1, ActionKind::SetLicenses) == 1);
    for (const auto& a : r.actions) {
        if (a.job == 1)
            if (const auto* l = a.get<action::SetLicenses>()) CHECK(l->licenses == "matlab:2");
        CHECK(a.job != 5);  // not nvlslice's at all
        CHECK(a.job != 12); // not yet
    }
    CHECK(count(r, 2, ActionKind::PinOnly) == 1);
    CHECK(count(r, 2, ActionKind::Release) == 1);
    CHECK(count(r, 3, ActionKind::Exclude) == 1);
    CHECK(count(r, 4, ActionKind::PinOnly) == 0); // running: its record only
    CHECK(count(r, 6, ActionKind::SetRecord) == 1);
    CHECK(count(r, 6, ActionKind::PinOnly) + count(r, 6, ActionKind::Release) == 0);
    CHECK(count(r, 11, ActionKind::SetLicenses) == 1);
    CHECK(count(r, 11, ActionKind::PinOnly) + count(r, 11, ActionKind::Exclude) == 0);
    for (JobId id : {JobId(1), JobId(2), JobId(3), JobId(4), JobId(9), JobId(11)})
        CHECK(count(r, id, ActionKind::SetRecord) == 1);
    // every reservation of nvlslice's, and no other
    CHECK(r.reservations == std::vector<std::string>{"nvlslice_spares", "nvlslice_gate", "nvlslice_protect",
                                                     "nvlslice_lend_9", "nvlslice_lease"});
    // the jobs' actions come first; a lend reservation's jobs leave it
    bool reservations_began = false;
    for (const auto& a : r.actions) {
        if (a.job == 0) reservations_began = true;
        CHECK((a.job == 0 || !reservations_began));
        if (const auto* e = a.get<action::EndLend>(); e && e->reservation == "nvlslice_lend_9")
            CHECK(e->others == std::vector<JobId>{9, 10});
    }
}

TEST_CASE("a reload's renamed reservations are gathered until the helper acts, then each is retired once",
          "[removal][quick]") {
    HelperConfig a, b;
    b.reservation = "spares_b";
    b.gate_reservation = "gate_b";
    b.lend_reservation = "lend_b";
    Renamed r;
    CHECK(r.empty());
    r.add(a, a); // a reload that renames nothing
    CHECK(r.empty());
    r.add(a, b);
    CHECK(r.names == std::vector<std::string>{"nvlslice_spares", "nvlslice_gate"});
    CHECK(r.lend_prefixes == std::vector<std::string>{"nvlslice_lend"});
    // a second reload (standing by meanwhile) to a third name: both old
    // names retired, each once
    HelperConfig c = b;
    c.reservation = "spares_c";
    r.add(b, c);
    CHECK(r.names == std::vector<std::string>{"nvlslice_spares", "nvlslice_gate", "spares_b"});

    std::vector<Reservation> resvs(4);
    resvs[0].name = "nvlslice_lend_42";
    resvs[1].name = "nvlslice_lend_x"; // not a lend reservation's name
    resvs[2].name = "lend_b_7";        // the new prefix's: kept
    resvs[3].name = "nvlslice_spares";
    // the old names that exist (nvlslice_gate and spares_b do not), then
    // the lend reservations of the old prefix with their jobs
    const auto plan = plan_retirement(r, resvs);
    REQUIRE(plan.size() == 2);
    CHECK((plan[0].name == "nvlslice_spares" && plan[0].job == 0));
    CHECK((plan[1].name == "nvlslice_lend_42" && plan[1].job == 42));

    // renamed back before the helper acted: the names in use are not retired
    r.add(c, a);
    CHECK(r.names == std::vector<std::string>{"spares_b", "spares_c", "gate_b"});
    CHECK(r.lend_prefixes == std::vector<std::string>{"lend_b"});
}
