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
    return r.str();
}

int count(const Removal& r, JobId job, ActionKind k) {
    int n = 0;
    for (const auto& a : r.actions) n += a.job == job && a.kind() == k;
    return n;
}

} // namespace

TEST_CASE("removal undoes the gate, the helper's pin, hold and record, and only the helper's", "[removal][quick]") {
    HelperConfig cfg;
    std::vector<SlurmJob> jobs(6);
    // 1: gated, waiting, recorded
    jobs[0].id = 1;
    jobs[0].licenses = "nvlslice_gate:1,matlab:2";
    jobs[0].admin_comment = record(1, RecordState::Waiting, false);
    // 2: pinned by the helper (gate mode) and held mid-repair
    jobs[1].id = 2;
    jobs[1].req_nodes = "n[001-016]";
    jobs[1].held = true;
    jobs[1].admin_comment = record(2, RecordState::Repairing, true);
    // 3: native pin by exclusion
    jobs[2].id = 3;
    jobs[2].exc_nodes = "n[017-036]";
    jobs[2].admin_comment = record(3, RecordState::Placed, false);
    // 4: running, recorded
    jobs[3].id = 4;
    jobs[3].state = JobState::Running;
    jobs[3].admin_comment = record(4, RecordState::Placed, false);
    // 5: a plain job of a user's with -w and an admin's hold: not nvlslice's
    jobs[4].id = 5;
    jobs[4].req_nodes = "n001";
    jobs[4].held = true;
    jobs[4].admin_comment = "site health note";
    // 6: a record copied from job 2 (an array task's): not its own
    jobs[5].id = 6;
    jobs[5].held = true;
    jobs[5].admin_comment = record(2, RecordState::Repairing, true);
    const std::vector<Reservation> resv = {
        {"nvlslice_spares", "n[017-018]"}, {"nvlslice_gate", ""},  {"nvlslice_protect", "n[001-018]"},
        {"nvlslice_lend_9", "n018"},       {"nvlslice_lease", ""}, {"site_maint", "n[001-036]"},
        {"nvlslice_lendx", "n001"}};
    jobs.emplace_back();
    jobs.back().id = 9; // waits in its lend reservation
    jobs.back().reservation = "nvlslice_lend_9";
    jobs.back().admin_comment = record(9, RecordState::Placed, false);
    const Removal r = plan_removal(jobs, resv, cfg, "nvlslice_lease");
    CHECK(r.jobs == 5);
    CHECK(count(r, 1, ActionKind::SetLicenses) == 1);
    for (const auto& a : r.actions)
        if (const auto* l = a.get<action::SetLicenses>()) CHECK(l->licenses == "matlab:2");
    CHECK(count(r, 2, ActionKind::PinOnly) == 1);
    CHECK(count(r, 2, ActionKind::Release) == 1);
    CHECK(count(r, 3, ActionKind::Exclude) == 1);
    CHECK(count(r, 4, ActionKind::SetRecord) == 1);
    CHECK(count(r, 4, ActionKind::PinOnly) == 0); // running: its record only
    for (JobId other : {JobId(5), JobId(6)}) {
        CAPTURE(other);
        for (const auto& a : r.actions) CHECK(a.job != other);
    }
    for (JobId id : {JobId(1), JobId(2), JobId(3), JobId(4), JobId(9)}) CHECK(count(r, id, ActionKind::SetRecord) == 1);
    // every reservation of nvlslice's, and no other
    CHECK(r.reservations == std::vector<std::string>{"nvlslice_spares", "nvlslice_gate", "nvlslice_protect",
                                                     "nvlslice_lend_9", "nvlslice_lease"});
    // the jobs' actions come first; a lend reservation's waiting job leaves it
    bool reservations_began = false;
    for (const auto& a : r.actions) {
        if (a.job == 0) reservations_began = true;
        CHECK((a.job == 0 || !reservations_began));
        if (const auto* e = a.get<action::EndLend>(); e && e->reservation == "nvlslice_lend_9")
            CHECK(e->others == std::vector<JobId>{9});
    }
}
