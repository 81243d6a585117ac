// Placing waiting slice jobs, defragmentation, protection of racks.
#include "cycle.hpp"

#include <algorithm>
#include <ctime>

namespace nvl::detail {

void Cycle::pin_and_release(const SliceJob& sj, const Placement& placement, PlacementRecord r, bool requeue_first,
                            const std::vector<NodeId>& hold_also) {
    const JobId id = sj.job->id;
    const PlacedRecord d = placed_record(sj, placement, std::move(r), requeue_first, map_);
    const std::vector<NodeId> nodes = d.placement.nodes();
    record(sj, d.rec, true);
    switch (d.route) {
    case PlacedRecord::Route::RequeueHeld:
        // A running job: the target recorded, requeued held and pinned to
        // the new nodes. Slurm sets BeginTime when the old allocation has
        // finished completing, so StartTime=now and the release come in a
        // later cycle, once the job is pending again (see finish_placed).
        hold_target(sj, nodes, hold_also);
        act({id, action::RequeueHold{}});
        pin(sj, nodes, 0);
        break;
    case PlacedRecord::Route::Restart: {
        // It ran before: pinned to start in the next second; a later cycle
        // releases it when that second has come (finish_placed).
        hold_target(sj, nodes, hold_also);
        const int64_t start = start_time(*sj.job);
        pin(sj, nodes, start);
        if (native(sj) && !held_by_us(sj) && !gated(*sj.job)) mem_.schedule_at[id] = start;
        st_.settled.insert(id);
        break;
    }
    case PlacedRecord::Route::FirstStart:
        mem_.placed_since[id] = mono_; // replace_after counts from here
        // A first start: its begin time has come (held_back_by_slurm), and a
        // StartTime would only reset Slurm's accrue time (the age factor of
        // its priority) in gate mode; native mode's exclusion carries it so
        // that the spare reservation is updated before it.
        if (native(sj))
            pin(sj, nodes, now_);
        else
            act({id, action::Pin{hl(nodes), 0}}); // its node list, no StartTime
        start_now(sj);
        break;
    }
    take(nodes, id);
}

void Cycle::start_requeued_now(const SlurmJob& j) {
    // Slurm holds a requeued job back for its credential lifetime (2 min by
    // default): native mode's exclusion carries the earlier StartTime; the
    // exclusion itself stays.
    if (j.restarts == 0 || j.begin_time <= start_time(j)) return;
    auto set = st_.exclusion.find(j.id);
    act({j.id, action::Exclude{set != st_.exclusion.end() ? set->second : j.exc_nodes, start_time(j)}});
}

void Cycle::hold_target(const SliceJob& sj, const std::vector<NodeId>& target, const std::vector<NodeId>& hold_also) {
    const SlurmJob& j = *sj.job;
    if (!cfg_.repair_reservation) return;
    const std::string name = cfg_.lend_name(j.id);
    // a reservation the job asked for is its owner's: the pin alone
    if (!j.reservation.empty() && j.reservation != name) return;
    // Made before the requeue, over nodes the job still runs on (the
    // reservation ignores running jobs): the moment its healthy nodes
    // complete, no other job may start there, nor on the spare, which
    // leaves the spare reservation only after this (OVERLAP). The job is
    // moved into it, so that Slurm starts it there alone; keep_lends() ends
    // it once the job runs again.
    std::vector<NodeId> nodes = target;
    nodes.insert(nodes.end(), hold_also.begin(), hold_also.end());
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    act({j.id, action::Lend{hl(nodes), j.user_id, name, lease_end()}});
    log(j.id, fmt::format("its target {} waits for it in the reservation {}{}", hl(target), name,
                          hold_also.empty() ? "" : fmt::format(" (which holds {})", hl(nodes))));
}

SliceJob Cycle::keep_off_degraded(const SliceJob& sj) {
    OffDegraded d = nvl::keep_off_degraded(sj, st_.degraded_nodes);
    if (!d.rec) return sj;
    SliceJob out = sj;
    out.rec = std::move(d.rec);
    if (d.exclusion) {
        const SlurmJob& j = *sj.job;
        act({j.id, action::Exclude{*d.exclusion}});
        st_.exclusion[j.id] = *d.exclusion;
        log(j.id, d.exclusion->empty()
                      ? std::string("the racks recovered: its exclusion is lifted, Slurm may place it anywhere")
                      : fmt::format("kept off degraded racks: ExcNodeList={}", *d.exclusion));
    }
    return out;
}

void Cycle::place_waiting(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    const bool is_gated = gated(j); // parsed once: thousands of waiting jobs, every cycle
    const bool open = !j.held && !is_gated;
    switch (decide_waiting(sj, st_.settled.count(j.id) || pinned_now(j.id), is_gated, held_by_us(sj),
                           native(sj) ? native_pinned(j) : !j.req_nodes.empty())) {
    case WaitingCase::Done:
    case WaitingCase::OthersHold: // theirs to release
    case WaitingCase::WaitsForSlurm: return;
    case WaitingCase::HandBack: hand_back(sj); return;
    case WaitingCase::Native: {
        const SliceJob kept = keep_off_degraded(sj);
        // a spare is lent only to a job Slurm would start now: the pin's
        // StartTime must never bring a begin time forward
        if (!held_back(sj)) place_job(kept);
        const bool flag_changed = (sj.rec && sj.rec->off_degraded) != (kept.rec && kept.rec->off_degraded);
        if (flag_changed && !did(j.id, ActionKind::SetRecord)) record(kept, *kept.rec);
        return;
    }
    case WaitingCase::Behind: {
        // Slurm would not start it for a reason of its own: it stays behind
        // the gate, untouched, and its record says why; Slurm's own reason
        // stays the job's.
        const auto r = mem_.retry_at.find(j.id);
        const bool retry = r != mem_.retry_at.end() && r->second > mono_;
        const auto holds = held_back(sj);
        if (holds && holds->updates_refused) {
            // Slurm refuses every update of a job in an INACTIVE
            // partition, its record's too: it waits as it is
            say_once(j.id, fmt::format("not placed: held back by Slurm: {} (its record is written once the "
                                       "partition is active again: Slurm refuses updates of its jobs until then)",
                                       holds->text));
            return;
        }
        const auto why = stays_behind(sj, holds, retry);
        if (!why) break; // placed
        if (!holds && retry) st_.out.follow_up = st_.out.follow_up || r->second - mono_ <= 1;
        if (open) {
            gate(sj);
            say_escape(sj);
        }
        PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
        if (!sj.rec || rec.state != RecordState::Waiting || rec.reason != why->text) {
            rec.state = RecordState::Waiting;
            rec.slice = sj.tag.slice;
            rec.slices.clear();
            rec.set_reason(why->why, why->text);
            record(sj, rec);
            say_once(j.id, fmt::format("not placed: {}", why->text));
        }
        return;
    }
    case WaitingCase::Place: break;
    }
    if (place_job(sj) || !open || native(sj)) return;
    // Requeued (it yielded its nodes) or its owner took the gate off, and no
    // room now: Slurm would start it rack-blind. Gate it again.
    gate(sj);
    say_escape(sj);
}

// The helper holds a job only while it moves it (a repair, a requeue to
// other nodes). Held, a job has no priority in Slurm's eyes (0): it would
// sort after every other slice job here, and Slurm's backfill would keep no
// nodes for it, so jobs behind it would take each node it waits for. One
// that has no room now waits as every slice job waits, with its priority:
// behind its gate (gate mode) or for Slurm's own placement off degraded
// racks (native mode). The gate or the exclusion first, then the release,
// then the record's hold=0 (what lets the helper release it).
void Cycle::hand_back(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    if (native(sj)) {
        unpin_native(j);
    } else {
        gate(sj);
    }
    act({j.id, action::Release{}});
    PlacementRecord rec = *sj.rec;
    rec.hold = false;
    record(sj, rec);
    log(j.id, fmt::format("no room for it now ({}): released from the helper's hold, it waits with its priority",
                          rec.reason.empty() ? "no placement" : rec.reason));
    st_.settled.insert(j.id);
    st_.out.follow_up = true; // placed by the next cycle
}

void Cycle::say_escape(const SliceJob& sj) {
    // requeued jobs come back open by Slurm's doing; a first start without
    // its gate is its owner's (or an admin's)
    const SlurmJob& j = *sj.job;
    if (!(sj.rec && sj.rec->state == RecordState::Yielded) && j.restarts == 0)
        say_once(j.id, "pending without its gate and without a placement (its owner took the "
                       "gate off?): gated again");
}

bool Cycle::place_job(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    if (!st_.top) st_.top = j.id; // the first job placement is tried for: the top priority
    PlaceLimits limits;
    // (a job in a reservation of its own runs on that reservation's nodes)
    limits.may_lend = may_borrow_spares({sj.tag.checkpointable, j.requeue, j.batch, sj.tag.nodes}, cfg_.lend) &&
                      (j.reservation.empty() || cfg_.lend_job(j.reservation) == j.id);
    // Racks protected for the top-priority job: others may use them only
    // if they end before its expected start (as Slurm's backfill allows).
    if (kept_from_protection(j, st_.top == j.id, obs_.unprotected, protection_, now_)) {
        limits.unprotected = &obs_.unprotected;
        limits.protection_start = protection_ ? protection_->start_time : 0;
    }
    // the rack defragmentation freed for another job stays its own
    if (!st_.off_defrag_target.unsized() && mem_.defrag_target && mem_.defrag_target->job != j.id)
        limits.off_target = &st_.off_defrag_target;
    // A job whose repair found no room anywhere waits as any other, but it
    // may take the kept spares of the racks it goes to, as its repair would
    // have inside its own rack: they are kept for repairs.
    const bool repair_wait = sj.rec && sj.rec->repair_wait;
    SliceRequest req = slice_request(sj, now_, cfg_.prefer_wait_s);
    req.use_spares = repair_wait;
    if (repair_wait) limits.may_lend = false; // its spares are given, not lent
    PlaceDecision d = decide_place(st_.snap, req, limits, st_.shapes);
    const PlacementResult& r = d.result;
    if (repair_wait && r.ok)
        for (NodeId id : r.placement.nodes())
            d.on_spares = d.on_spares || st_.snap.node(id).state == NodeState::SpareReserved;
    PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
    rec.lent = d.lent;
    if (!r.ok) {
        ++st_.out.stats.pending_by_reason[to_string(r.reason)];
        st_.waits[j.id] = r.reason;
        // Its backfill keeps no node for a job that may not start yet: the
        // nodes its requeue freed went to the backlog. Eligible from the
        // next second, it waits with its priority at once (Slurm's
        // expedited requeue does not delay either).
        if (repair_wait && native(sj) && !did(j.id, ActionKind::Exclude)) start_requeued_now(j);
        // The record (one RPC) and the log line change only when the kind of
        // reason does: the figures in it move with every job that starts or
        // ends, and rewriting thousands of waiting jobs' records each cycle
        // would swamp slurmctld.
        const bool was_waiting = sj.rec && sj.rec->state == RecordState::Waiting;
        rec.state = RecordState::Waiting;
        rec.slice = sj.tag.slice;
        rec.slices.clear();
        if (!was_waiting || rec.why != why_of(r.reason)) {
            rec.set_reason(why_of(r.reason), r.detail);
            record(sj, rec);
            log(j.id, fmt::format("waits: {}", r.detail));
        }
        // Enough room in total but in no single rack (with or without their
        // spares): what defragmentation is for.
        if ((r.reason == Reason::Fragmented || r.reason == Reason::WouldConsumeSpares) &&
            sj.tag.mode == PlacementMode::Strict)
            try_defrag(sj);
        return false;
    }
    if (native(sj) && !d.on_spares) {
        // Slurm places it (--segment), in its own order and with its
        // backfill: only counted where it fits, so that lower-priority jobs
        // are not lent the same room. Recorded once; lent work (smaller than
        // a slice, checkpointable) is recorded lent=1, which stays in the
        // record Slurm's start writes, so its nodes stand in for spares.
        take(r.placement.nodes(), j.id);
        // requeued (defragmentation, a user): the next second is enough,
        // as in gate mode
        start_requeued_now(j);
        const bool was = sj.rec && sj.rec->state == RecordState::Waiting && sj.rec->why == Why::SlurmPlaces &&
                         sj.rec->lent == rec.lent;
        if (!was) {
            rec.state = RecordState::Waiting;
            rec.slice = sj.tag.slice;
            rec.slices.clear();
            rec.set_reason(Why::SlurmPlaces, fmt::format("Slurm places it: --segment={}, room now in {} rack(s)",
                                                         sj.tag.slice, r.placement.slices.size()));
            record(sj, rec);
        }
        return true;
    }
    ++st_.out.stats.placements;
    std::string where;
    for (const auto& s : r.placement.slices)
        where += fmt::format("{}{} {}", where.empty() ? "" : ", ",
                             s.domain == kNoDomain ? "(split)" : map_.domain(s.domain).name, hl(s.nodes));
    log(j.id, fmt::format("placed {} slice(s) of {}: {}{}{}", r.placement.slices.size(), sj.tag.slice, where,
                          r.placement.split ? " [" + r.detail + "]" : "",
                          repair_wait && d.on_spares ? " (its repair: the racks' spares taken)"
                          : d.on_spares              ? " (a lent spare)"
                          : rec.lent                 ? " (lent work: it stands in for the rack's spares)"
                                                     : ""));
    rec.repair_wait = false; // placed
    // (a job that ran before has its whole target held for it by
    // pin_and_release(), the spares included)
    if (d.on_spares && !(j.restarts > 0 && cfg_.repair_reservation)) {
        // Slurm may not start it at once (jobs ahead of it, its scheduler's
        // pace): the spare waits for it in a reservation of its own, which
        // no job ahead may take (one Slurm places itself: any job in native
        // mode, a plain job in gate mode), and Slurm's scheduler sorts a
        // job in a reservation first and tests it apart from its
        // partition's queue (job_scheduler.c). Made before the spare
        // leaves the spare reservation (OVERLAP): it is never free.
        act({j.id, action::Lend{hl(r.placement.nodes()), j.user_id, cfg_.lend_name(j.id), lease_end()}});
        log(j.id, fmt::format("its spare(s) wait for it in the reservation {}", cfg_.lend_name(j.id)));
    }
    pin_and_release(sj, r.placement, rec, false);
    return true;
}

// Requeue the cheapest set of checkpointable jobs that frees one rack for
// the blocked job's slice. Cost of a victim (victim_info()): its nodes x
// (the work it loses + defrag.restart_cost), the work lost being that since
// its last checkpoint when it said how often it checkpoints, else all it
// has run; a rack where a non-checkpointable job would have to go is not a
// candidate. For a repair,
// the same at once, once per failure: the freed rack is then the job's
// until its repair moves the slice there.
void Cycle::try_defrag(const SliceJob& sj, bool for_repair) {
    if (st_.defrag_done || !(for_repair ? cfg_.defrag_repairs : cfg_.defrag)) return;
    const SlurmJob& blocked = *sj.job;
    if (for_repair && mem_.defrag_target && mem_.defrag_target->job == blocked.id) return; // freed already
    std::unordered_map<JobId, const SlurmJob*> by_id;
    std::unordered_map<JobId, const RequestTag*> tags;
    const DefragPace pace{for_repair, double(now_ - blocked.submit_time),
                          mem_.last_defrag ? double(mono_ - mem_.last_defrag) : -1.0, double(cfg_.defrag_after_s),
                          double(cfg_.defrag_interval_s)};
    const int k = sj.tag.slice;
    const auto due = decide_defrag(st_.snap, k, pace, [&](JobId id) {
        if (by_id.empty()) {
            for (const auto& j : jobs_) by_id[j.id] = &j;
            for (const auto& s : st_.slice_jobs) tags[s.job->id] = &s.tag;
        }
        VictimInfo v;
        auto it = by_id.find(id);
        if (id == blocked.id || it == by_id.end() || it->second->state != JobState::Running) return v;
        const SlurmJob& j = *it->second;
        auto tag = tags.find(id);
        JobTraits t{tag != tags.end() && tag->second->checkpointable, j.requeue, j.batch || cfg_.defrag_interactive,
                    j.num_nodes};
        if (tag != tags.end()) t.checkpoint_s = tag->second->checkpoint_s;
        const double restart = cfg_.defrag_restart_cost_s; // every start's startup, and the next one
        v = victim_info(t, double(now_ - j.start_time), restart, restart);
        return v;
    });
    if (!due) return;
    const DefragPlan& plan = *due;
    const DomainId best = plan.domain;
    const double best_cost = plan.cost;
    const std::vector<JobId>& best_victims = plan.victims;
    if (best == kNoDomain) {
        say_once(mem_.said_defrag, blocked.id,
                 fmt::format("{}; no rack can be freed from checkpointable jobs alone",
                             for_repair ? "its repair finds no room" : "blocked by fragmentation"));
        st_.defrag_done = true;
        return;
    }
    std::string list;
    for (JobId v : best_victims) {
        yield_job(v, fmt::format("requeued by defragmentation to free {} for {} {}", map_.domain(best).name,
                                 for_repair ? "the repair of job" : "job", blocked.id));
        list += (list.empty() ? "" : ", ") + std::to_string(v);
    }
    st_.out.stats.defrag_preemptions += int(best_victims.size());
    if (!for_repair) mem_.last_defrag = mono_; // a repair's does not delay the paced ones
    mem_.defrag_target = HelperMemory::DefragTarget{blocked.id, best, mono_, for_repair};
    st_.defrag_done = true;
    log(blocked.id, fmt::format("defragmentation{}: requeued checkpointable job(s) {} to free {} for a {}-node slice "
                                "(cost {:.0f} node-seconds)",
                                for_repair ? " for its repair" : "", list, map_.domain(best).name, k, best_cost));
}

void Cycle::yield_job(JobId v, const std::string& why, bool repair_wait) {
    if (did(v, ActionKind::Requeue)) return; // already on its way out this cycle
    for (const auto& s : st_.slice_jobs)
        if (s.job->id == v) {
            PlacementRecord rec = s.rec.value_or(PlacementRecord{});
            rec.state = RecordState::Yielded;
            rec.slices.clear();
            rec.lent = false;
            rec.repair_wait = repair_wait;
            rec.set_reason(Why::Yielded, why);
            rec.job = v;
            act({v, action::SetRecord{rec.str()}});
        }
    act({v, action::Requeue{}});
}

// The top-priority slice job that cannot start yet gets the racks that free
// up soonest kept for it, as Slurm's backfill keeps nodes for a blocked
// plain job: a reservation on those racks' nodes from its expected start
// (the end times of the jobs there). Slurm keeps off them every job that
// would still run then, and lets shorter ones in; the helper places other
// slice jobs there on the same terms. Dropped once the job starts or
// leaves; `sinfo -T` shows it.
void Cycle::protect_top() {
    if (!cfg_.protect || cfg_.protect_reservation.empty()) return;
    const SliceJob* top = nullptr;
    for (const auto& sj : st_.slice_jobs) {
        if (sj.job->id != st_.top) continue;
        top = &sj;
        break;
    }
    // only while it waits for room: not for a reason of Slurm's
    std::optional<Protection> want;
    if (auto w = top ? st_.waits.find(top->job->id) : st_.waits.end();
        w != st_.waits.end() &&
        (w->second == Reason::Busy || w->second == Reason::Fragmented || w->second == Reason::WouldConsumeSpares)) {
        want = plan_protection(st_.snap, jobs_, top->tag.slice, top->tag.count, top->job->time_limit, now_);
        if (!want)
            say_once(top->job->id,
                     fmt::format("top priority, waits: no racks kept for it, since too few healthy racks free {} "
                                 "nodes at a known time (a job without a time limit ends \"in a year\" for Slurm: "
                                 "give every job one, DefaultTime or MaxTime)",
                                 top->tag.slice));
    }
    const std::string nodes = want ? hl(want->nodes) : std::string();
    switch (protection_change(nodes, want ? want->start : 0, protection_, now_)) {
    case ProtectChange::Keep: return;
    case ProtectChange::Drop:
        act({0, action::Protect{}}); // first (Phase::Unprotect)
        log("protect: dropped (no slice job waits for racks)");
        return;
    case ProtectChange::Set:
        act({0, action::Protect{nodes, want->start, want->end}});
        log(top->job->id,
            fmt::format("top priority, waits: racks kept for it, {} from {} (in {} s); shorter jobs may still "
                        "run there",
                        nodes, iso_time(want->start), want->start - now_));
        return;
    }
}

} // namespace nvl::detail
