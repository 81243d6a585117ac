// Running slice jobs (repairs, escaped gates) and pending ones that already
// have a placement.
#include "cycle.hpp"

#include <algorithm>
#include <ctime>

namespace nvl::detail {

void Cycle::handle_running(const SliceJob& started) {
    const SlurmJob& j = *started.job;
    mem_.placed_since.erase(j.id);
    // yielded to a repair earlier in this cycle: its record and requeue are asked for
    if (did(j.id, ActionKind::Requeue)) return;
    const RunningDecision d = decide_running(map_, obs_, st_.snap, started);
    if (d.kind == RunningCase::Healthy) return; // most running jobs, most cycles: nothing copied
    SliceJob sj = started;
    if (d.recorded) sj.rec = d.recorded;
    PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
    switch (d.kind) {
    case RunningCase::Yielding:
        act({j.id, action::Requeue{}});
        log(j.id, "its record says it yielded its nodes, but it still runs: requeued");
        return;
    case RunningCase::Healthy: return;
    case RunningCase::Followed: {
        // Slurm's requeue, not the helper's: nothing to undo, nothing pinned;
        // a repair Slurm made counts in the metrics as the helper's do
        const bool repaired = rec.repairs > started.rec->repairs;
        const int moved = rec.moves - started.rec->moves;
        st_.out.stats.repairs_in_rack += repaired && moved == 0;
        st_.out.stats.moves += moved;
        record(sj, rec);
        log(j.id, fmt::format("Slurm restarted it (requeued by Slurm{}) on {}: its record follows",
                              repaired ? " after a node of its placement failed" : "", hostlist_compress(j.nodes)));
        return;
    }
    case RunningCase::Recovered:
        rec.clear_reason();
        record(sj, rec);
        log(j.id, "its nodes are healthy again; nothing to repair");
        return;
    case RunningCase::Started: apply_started(sj); return;
    case RunningCase::Evacuee:
        st_.evacuees.push_back(sj); // moved out after this pass (evacuate())
        return;
    case RunningCase::NotRepairable:
        // Reported once, in its record and the log, and left to Slurm and
        // its owner. No repair is counted, nothing is pinned, no spare
        // leaves its rack.
        ++st_.out.stats.unrepairable;
        if (rec.why != Why::NotRepaired) {
            const std::string failed_hl = hl(d.failed);
            rec.set_reason(
                Why::NotRepaired,
                j.batch ? fmt::format("not repaired: {} failed but the job was submitted --no-requeue", failed_hl)
                        : fmt::format("not repaired: {} failed; an interactive allocation (salloc/srun) "
                                      "cannot be requeued: end it and submit again",
                                      failed_hl));
            record(sj, rec);
            warn(j.id, fmt::format("node(s) {} failed; {}, so it is left to Slurm and its owner", failed_hl,
                                   j.batch ? "submitted with --no-requeue" : "an interactive allocation"));
        }
        return;
    case RunningCase::RepairWaits: {
        // No room now. A target held in a reservation of its own comes
        // first (hold_repair()): a rack that frees at once from
        // checkpointable work is such a target too, held before that work
        // is requeued, so that nothing else starts there meanwhile.
        if (hold_repair(sj, j.nodes, d.failed, rec, true)) return;
        // Else a rack freed from checkpointable work: the move of a later
        // cycle; the job runs on until then.
        try_defrag(sj, true);
        if (mem_.defrag_target && mem_.defrag_target->job == j.id) {
            if (std::string why = "repair waits: " + d.plan.reason; rec.reason != why) {
                rec.set_reason(Why::RepairWaits, why);
                record(sj, rec);
                log(j.id, fmt::format("node(s) {} failed; {}", hl(d.failed), d.plan.reason));
            }
            return;
        }
        // No room anywhere, and none being freed. Running on, the job
        // would hold its healthy nodes on a failed one (its node's GPUs or
        // NVLink are why it drained) while every node that frees went to
        // lower-priority work, since it does not wait. Requeued, it waits
        // with its priority: Slurm's backfill and the racks protected for
        // the top slice job keep the nodes that free for it, and it is
        // placed as any waiting slice job is, in whole racks.
        ++st_.out.stats.repairs_requeued_to_wait;
        const std::string why = fmt::format("node(s) {} failed; {}: requeued to wait for room with its priority",
                                            hl(down_or_drained(d.failed)), d.plan.reason);
        yield_job(j.id, "repair waits: " + why, /*repair_wait=*/true);
        // native mode: Slurm places it (--segment) off the degraded racks,
        // not on the nodes an earlier pin named (gate mode: its gate, when
        // it is pending again, and the placement's pin replace them)
        if (native(sj)) unpin_native(j);
        warn(j.id, why);
        return;
    }
    case RunningCase::Repair:
        // a repair whose requeue failed part way is retried, not counted again
        begin_repair(sj, d.plan, rec, !d.retried, d.retried ? " (retried)" : "");
        pin_and_release(sj, d.plan.placement, rec, true);
        return;
    }
}

void Cycle::evacuate() {
    order_evacuees(st_.evacuees);
    for (const SliceJob& sj : st_.evacuees) {
        const SlurmJob& j = *sj.job;
        try {
            const MoveDecision d = decide_move(map_, st_.snap, sj, obs_.unprotected);
            PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
            switch (d.kind) {
            case MoveCase::NotMovable:
                if (std::string why = fmt::format("not moved: rack {} is degraded, but {}", d.racks,
                                                  j.batch ? "the job was submitted --no-requeue"
                                                          : "an interactive allocation cannot be requeued");
                    rec.reason != why) {
                    rec.set_reason(Why::NotMoved, why);
                    record(sj, rec);
                    log(j.id, why);
                }
                break;
            case MoveCase::MoveWaits:
                // keeps running where it is until a healthy rack has room
                if (std::string why = "move waits: " + d.plan.reason; rec.reason != why) {
                    rec.set_reason(Why::MoveWaits, why);
                    record(sj, rec);
                    log(j.id, fmt::format("rack {} degraded; {}", d.racks, d.plan.reason));
                }
                break;
            case MoveCase::Move:
                st_.out.stats.evacuations += !d.retried;
                begin_repair(sj, d.plan, rec, !d.retried,
                             sj.tag.checkpointable ? " (rack degraded, checkpointable)" : " (rack degraded)");
                pin_and_release(sj, d.plan.placement, rec, true);
                break;
            }
        } catch (const Error& e) {
            warn_once(j.id, fmt::format("skipped: {}", e.what()));
        }
    }
}

void Cycle::apply_started(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    const StartDecision d = decide_started(map_, sj, cfg_.lend);
    auto where = [&] { return hostlist_compress(j.nodes); }; // only for the lines that name it
    switch (d.kind) {
    case StartCase::Said: return;
    case StartCase::Ours: record(sj, d.rec); return;
    case StartCase::Native:
        // recorded, so that a repair knows its slices
        record(sj, d.rec);
        log(j.id, fmt::format("Slurm started it (native, --segment={}) on {}{}", sj.tag.slice, where(),
                              d.rec.why == Why::AcrossRacks ? ": " + d.rec.reason : ""));
        return;
    case StartCase::ArrayTask:
        log(j.id, fmt::format("a task of job array {} started on its placement {}: the record is its own now",
                              sj.copied_from, where()));
        record(sj, d.rec);
        return;
    case StartCase::GateOff:
        log(j.id, fmt::format("started without nvlsliced (its gate was taken off) on whole slices {}: kept", where()));
        record(sj, d.rec);
        return;
    case StartCase::Escaped:
        record(sj, d.rec);
        act({j.id, action::Requeue{}});
        log(j.id,
            fmt::format("escaped its gate and started rack-blind on {}: requeued, to be placed in slices", where()));
        return;
    case StartCase::RanRackBlind:
        record(sj, d.rec);
        log(j.id, fmt::format("escaped its gate and runs rack-blind on {}; it cannot be requeued", where()));
        return;
    }
}

void Cycle::finish_placed(const SliceJob& sj) {
    const SlurmJob& j = *sj.job;
    const PlacedDecision d = decide_placed(map_, obs_, st_.snap, sj, gated(j), held_by_us(sj));
    const std::vector<NodeId>& pinned = d.pinned;
    switch (d.kind) {
    case PlacedCase::OthersHold: st_.settled.insert(j.id); return; // theirs to release
    case PlacedCase::NoPlacement: return;                          // placed in pass 2
    case PlacedCase::Released: keep_released(sj, d); return;
    case PlacedCase::TargetBusy:
        // A repair's target still busy: the borrower of a lent spare being
        // requeued, or an allocation still completing (seconds on 24.11).
        // Kept for it up to replace_after, then placed afresh.
        if (sj.rec->state == RecordState::Repairing) {
            if (auto swapped = swap_held_target(sj)) {
                // the nodes that freed first in its held racks: its target
                // now, recorded first, then pinned and started as usual
                PlacementRecord rec = *sj.rec;
                rec.slices.clear();
                std::vector<NodeId> all;
                for (const auto& s : *swapped) {
                    rec.slices.push_back(hl(s));
                    all.insert(all.end(), s.begin(), s.end());
                }
                std::sort(all.begin(), all.end());
                record(sj, rec);
                log(j.id, fmt::format("its held racks have room first on {}: its target now", hl(all)));
                SliceJob now_sj = sj;
                now_sj.rec = rec;
                PlacedDecision go = d;
                go.kind = PlacedCase::Start;
                go.pinned = std::move(all);
                go.repin = true;
                start_pinned(now_sj, go);
                return;
            }
            for (JobId b : d.borrowers)
                yield_job(b, fmt::format("its lent spare was taken back to repair job {}", j.id));
            auto it = mem_.blocked_since.emplace(j.id, mono_).first;
            // a target held while the jobs on it run out their time limits
            // (a repair that found no room now) waits for them, and
            // replace_after past the last
            int64_t busy_until = 0;
            if (cfg_.repair_hold_max_s > 0) {
                const auto ends = end_times();
                for (NodeId id : pinned) {
                    const NodeStatus& st = st_.snap.node(id);
                    // (not running: completing, at most seconds)
                    if (is_free(st.state) || !st.job_id || st.job_id == j.id || st.preemptible ||
                        !ends.count(st.job_id))
                        continue;
                    const int64_t e = ends.at(st.job_id);
                    busy_until = e > now_ + cfg_.repair_hold_max_s ? INT64_MAX : std::max(busy_until, e);
                    if (busy_until == INT64_MAX) break;
                }
            }
            if (mono_ - it->second < cfg_.replace_after_s ||
                (busy_until != INT64_MAX && now_ < busy_until + cfg_.replace_after_s)) {
                // closely followed only while its nodes complete, not while
                // other jobs run there
                st_.out.follow_up = st_.out.follow_up || busy_until == 0;
                take(pinned, j.id);
                st_.settled.insert(j.id);
                say_once(j.id, fmt::format("repair waits for its nodes {} to be free", hl(pinned)));
            }
        }
        return; // else placed afresh in pass 2
    case PlacedCase::Start: start_pinned(sj, d); return;
    case PlacedCase::NotRequeueable:
    case PlacedCase::PinnedFailed: break;
    }
    // A pinned node failed since (or Slurm requeued it after a node went
    // down): the repair decides where it runs.
    if (d.gate_first) gate(sj);
    if (d.kind == PlacedCase::NotRequeueable) return;
    const RepairPlan plan = plan_pinned_repair(map_, st_.snap, sj, d, obs_.unprotected);
    if (!plan.feasible) {
        // No room now, the job pending again (Slurm requeued it when a node
        // went DOWN, its nodes free): its target where room frees soonest,
        // held as a running job's is (hold_repair()), else its healthy
        // nodes go to other work the moment they free
        if (PlacementRecord rec = *sj.rec; hold_repair(sj, map_.node_names(d.pinned), d.failed, rec, false)) return;
        say_once(j.id, fmt::format("pinned node(s) {} failed; {}", hl(d.failed), plan.reason));
        try_defrag(sj, true);
        return; // pass 2 places it afresh or records why it waits
    }
    PlacementRecord rec = *sj.rec;
    begin_repair(sj, plan, rec, !d.resumed, d.resumed ? " (resumed)" : " (requeued by Slurm)");
    pin_and_release(sj, plan.placement, rec, false);
}

void Cycle::keep_released(const SliceJob& sj, const PlacedDecision& d) {
    const SlurmJob& j = *sj.job;
    const std::vector<NodeId>& pinned = d.pinned;
    // released, but pinned elsewhere than its record says (the pin did not
    // follow the record): pinned where the record says
    if (d.repin) pin(sj, pinned, start_time(j));
    if (sj.rec->hold) {
        // released, and the helper died before its record said so: the
        // hold flag goes, so that a later hold by an admin is theirs
        PlacementRecord rec = *sj.rec;
        rec.hold = false;
        if (rec.state == RecordState::Repairing || rec.state == RecordState::Restarting)
            rec.state = RecordState::Placed;
        record(sj, rec);
    }
    // Not started within replace_after, whatever kept it (a limit Slurm
    // tests only once it places, a reservation, a slow scheduler), or held
    // back by Slurm for a reason of its own since it was placed: its racks
    // are freed, it waits behind the gate again.
    std::optional<HeldBack> holds;
    int64_t since = 0;
    bool overdue = false;
    if (!d.split_task) {
        holds = held_back(sj);
        since = mem_.placed_since.emplace(j.id, mono_).first->second;
        overdue = sj.rec->state == RecordState::Placed && j.restarts == 0 && mono_ - since > cfg_.replace_after_s;
    }
    const bool waited_past = now_ - std::max(j.submit_time, j.start_time) > cfg_.replace_after_s;
    if (holds && holds->updates_refused) {
        // Slurm refuses every update of a job in an INACTIVE partition: it
        // stays as it is, pinned, until the partition is active again
        say_once(j.id, fmt::format("pinned to {}, held back by Slurm: {} (left as it is: Slurm refuses updates of "
                                   "its jobs until the partition is active again)",
                                   hl(pinned), holds->text));
        st_.settled.insert(j.id);
        return;
    }
    const ReleasedCase what = decide_released(sj, d, holds.has_value(), overdue, waited_past);
    if (what == ReleasedCase::Waits) {
        // A native job Slurm requeued itself (a node went DOWN) may start
        // again from the StartTime its repair brought forward, the second
        // after its requeue; nothing of the helper's is released then, and
        // Slurm's next pass may be seconds away (its next event, or
        // sched_interval). At that second an update of its StartTime asks
        // for the pass, as a release does (mem_.schedule_at).
        if (auto at = mem_.schedule_at.find(j.id); at != mem_.schedule_at.end() && j.state == JobState::Pending) {
            if (at->second > now_) {
                st_.out.follow_up = true; // the next cycle 100 ms on, until the second has come
            } else {
                mem_.schedule_at.erase(at);
                if (!d.taken) pin(sj, pinned, now_);
            }
        }
        st_.settled.insert(j.id); // most released jobs, most cycles: nothing copied
        return;
    }
    PlacementRecord rec = *sj.rec;
    switch (what) {
    case ReleasedCase::Waits: break;
    case ReleasedCase::ArraySplit:
        // A job array: Slurm started one task on the placement and split it
        // off under a new job id (job_array_split, which copies the record,
        // the node list and the licenses); the job id placed is the rest of
        // the array, still pending. Its next task needs a placement of its
        // own, now: gated again and placed afresh, the copied node list
        // (the task's nodes) taken off after the gate (a throttled array's
        // next task may wait long: never pinned meanwhile).
        rec.state = RecordState::Waiting;
        rec.slices.clear();
        rec.set_reason(
            Why::ArraySplit,
            fmt::format("task job {} of its array started on its placement; placing the rest", d.split_task));
        if (native(sj)) {
            unpin_native(j);
        } else {
            gate(sj);
            act({j.id, action::PinOnly{""}});
        }
        record(sj, rec);
        log(j.id, fmt::format("its array's task job {} started on its placement {}; the rest of the array is "
                              "placed afresh",
                              d.split_task, hl(pinned)));
        st_.out.follow_up = true; // placed by the next cycle, 100 ms on
        break;
    case ReleasedCase::HeldBack:
    case ReleasedCase::NotStarted:
        rec.state = RecordState::Waiting;
        rec.slices.clear();
        if (holds) {
            const WaitReason why = held_back_reason(*holds);
            rec.set_reason(why.why, why.text);
        } else
            rec.set_reason(Why::NotStarted,
                           fmt::format("placed {} s ago and not started (Slurm: {}); placed again in {} s",
                                       mono_ - since, j.reason.name().empty() ? "no reason given" : j.reason.name(),
                                       cfg_.replace_after_s));
        gate(sj);
        record(sj, rec);
        mem_.placed_since.erase(j.id);
        if (!holds) mem_.retry_at[j.id] = mono_ + cfg_.replace_after_s;
        log(j.id, fmt::format("pinned to {} but {}: gated again, its racks freed", hl(pinned),
                              holds ? "held back by Slurm (" + holds->text + ")"
                                    : fmt::format("not started within replace_after ({} s)", cfg_.replace_after_s)));
        break;
    case ReleasedCase::NodesTaken:
        mem_.placed_since.erase(j.id);
        rec.state = RecordState::Waiting;
        if (native(sj)) {
            // back to Slurm's own placement
            unpin_native(j);
            rec.set_reason(Why::NodesTaken, "its nodes were taken by another job; left to Slurm's placement");
            record(sj, rec);
            log(j.id, fmt::format("nodes {} taken by other jobs; unpinned, Slurm places it", hl(pinned)));
        } else {
            gate(sj);
            rec.set_reason(Why::NodesTaken, "its nodes were taken by another job; placing again");
            record(sj, rec);
            log(j.id, fmt::format("nodes {} taken by other jobs; gated to be placed again", hl(pinned)));
        }
        break;
    }
    st_.settled.insert(j.id);
}

std::optional<std::vector<std::vector<NodeId>>> Cycle::swap_held_target(const SliceJob& sj) const {
    const SlurmJob& j = *sj.job;
    if (!lends_ || j.reservation != cfg_.lend_name(j.id)) return std::nullopt;
    auto r =
        std::find_if(lends_->begin(), lends_->end(), [&](const Reservation& x) { return x.name == j.reservation; });
    if (r == lends_->end()) return std::nullopt;
    // the nodes its reservation holds that are free for it (marked its own
    // by collect_slice_jobs())
    auto usable = [&](NodeId id) {
        const NodeStatus& st = st_.snap.node(id);
        return is_healthy(st.state) && (is_free(st.state) || st.job_id == j.id);
    };
    std::vector<NodeId> held;
    for (const auto& n : hostlist_expand(r->nodes))
        if (auto id = map_.find_node(n)) held.push_back(*id);
    std::sort(held.begin(), held.end());
    std::vector<std::vector<NodeId>> out;
    std::vector<NodeId> used;
    bool changed = false;
    for (const auto& hl_slice : sj.rec->slices) {
        std::vector<NodeId> slice;
        for (const auto& n : hostlist_expand(hl_slice))
            if (auto id = map_.find_node(n)) slice.push_back(*id);
        if (slice.empty()) return std::nullopt;
        const size_t k = slice.size();
        if (std::all_of(slice.begin(), slice.end(), usable)) {
            used.insert(used.end(), slice.begin(), slice.end());
            out.push_back(std::move(slice));
            continue;
        }
        const DomainId d = map_.domain_of(slice.front());
        if (d == kNoDomain || st_.snap.degraded(d)) return std::nullopt;
        // its planned nodes that are free first, then the others held there
        std::vector<NodeId> pick;
        for (NodeId id : slice)
            if (usable(id)) pick.push_back(id);
        for (NodeId id : held)
            if (pick.size() < k && map_.domain_of(id) == d && usable(id) &&
                std::find(slice.begin(), slice.end(), id) == slice.end() &&
                std::find(used.begin(), used.end(), id) == used.end())
                pick.push_back(id);
        if (pick.size() < k) return std::nullopt;
        // the rack keeps its spares (its failure budget, kept_spares()),
        // as the plan did: nodes beside the new target that are free (held
        // for the job or reserved as spares) or lent to work standing in
        // for spares
        auto taken = [&](NodeId id) {
            return std::find(pick.begin(), pick.end(), id) != pick.end() ||
                   std::find(used.begin(), used.end(), id) != used.end();
        };
        int left = 0;
        for (NodeId id : map_.domain(d).nodes) {
            const NodeStatus& st = st_.snap.node(id);
            left += !taken(id) && (usable(id) || (is_healthy(st.state) && st.lent));
        }
        if (left < kept_spares(map_.domain(d), st_.snap.counts(d))) return std::nullopt;
        std::sort(pick.begin(), pick.end());
        used.insert(used.end(), pick.begin(), pick.end());
        out.push_back(std::move(pick));
        changed = true;
    }
    if (!changed) return std::nullopt;
    return out;
}

void Cycle::start_pinned(const SliceJob& sj, const PlacedDecision& d) {
    const SlurmJob& j = *sj.job;
    const std::vector<NodeId>& pinned = d.pinned;
    mem_.blocked_since.erase(j.id);
    take(pinned, j.id);
    st_.settled.insert(j.id);
    // A requeued job may start only from the second after its requeue
    // (start_time()), where Slurm would wait cred_expire: its StartTime is
    // brought forward to that second (Slurm shows the job pending only once
    // its old allocation has completed, after it set the begin time this
    // overrides), and it is released once that second has come (a cycle
    // follows 100 ms later), so that the release's own scheduling pass
    // starts it: released earlier, the pass the release asks for comes
    // before the job may start (Slurm 22.05 runs it within 0.1 s), and the
    // job waits for a periodic one.
    const int64_t start = start_time(j);
    switch (decide_start_step(j, start, now_, d.repin)) {
    case StartStep::BringForward:
        pin(sj, pinned, start);
        st_.out.follow_up = true;
        return;
    case StartStep::WaitSecond:
        st_.out.follow_up = true; // released as soon as its second has come
        return;
    case StartStep::Release: break;
    }
    if (j.restarts == 0) pin(sj, pinned, now_);
    PlacementRecord rec = *sj.rec;
    rec.state = RecordState::Placed;
    rec.hold = false;
    // The release before the record: the record's hold=1 is what lets the
    // helper release the job, so it may say hold=0 only once the release is
    // done. Dead in between, the next cycle sees the job released (or
    // running) with hold=1 and only writes the record.
    start_now(sj);
    record(sj, rec);
    log(j.id, fmt::format("started on its pinned nodes {}{}", hl(pinned),
                          sj.rec->state == RecordState::Repairing    ? " (repair complete)"
                          : sj.rec->state == RecordState::Restarting ? " (restarted)"
                                                                     : ""));
}

// The nodes that free soonest, by the time limits of the jobs on them, are
// its target, held for it with its healthy slices in its own reservation
// from its requeue, as Slurm's expedited requeue keeps a job's nodes:
// nothing else starts there as they free, and it starts the moment the last
// does (finish_placed(), TargetBusy). Checkpointable work there is requeued
// at once (defrag.for_repairs), after the reservation is made.
bool Cycle::hold_repair(const SliceJob& sj, const std::vector<std::string>& nodes, const std::vector<NodeId>& failed,
                        PlacementRecord& rec, bool running) {
    const SlurmJob& j = *sj.job;
    // held only in a reservation of its own (none of the site's), and only
    // where repair_hold_max and repair_reservation allow it
    if (cfg_.repair_hold_max_s <= 0 || !cfg_.repair_reservation ||
        !(j.reservation.empty() || j.reservation == cfg_.lend_name(j.id)))
        return false;
    const auto ends = end_times();
    const LaterRoom later{&ends, now_, now_ + cfg_.repair_hold_max_s, cfg_.defrag_repairs};
    const RepairPlan plan = plan_repair(st_.snap, placement_of(map_, sj, nodes), failed, obs_.unprotected, &later);
    if (!plan.feasible) return false;
    const bool again = rec.state == RecordState::Repairing;
    st_.out.stats.repairs_held += !again;
    begin_repair(sj, plan, rec, !again, again ? " (retried)" : " (no room now: its target is held)");
    // the rest of each rack it waits for is held too: the nodes that free
    // first there are the job's, whichever they are (swap_held_target())
    std::vector<NodeId> also;
    if (plan.ready_at > now_)
        for (const auto& s : plan.slices)
            if (s.action != RepairAction::Keep && s.to != kNoDomain)
                for (NodeId id : map_.domain(s.to).nodes)
                    if (is_healthy(st_.snap.node(id).state)) also.push_back(id);
    pin_and_release(sj, plan.placement, rec, running, also);
    log(j.id, fmt::format("node(s) {} failed and no rack has room now: {}, its target held for it in {}; it "
                          "starts when the last of it frees, {}",
                          hl(down_or_drained(failed)), running ? "requeued" : "pending again (Slurm requeued it)",
                          cfg_.lend_name(j.id),
                          plan.ready_at > now_ ? fmt::format("in {} s by its jobs' time limits", plan.ready_at - now_)
                                               : std::string("now")));
    // the checkpointable work on the target goes now, once the target is
    // held; the slice waits only for the work that cannot be requeued
    std::string evicted;
    for (JobId victim : plan.evict) {
        yield_job(victim, fmt::format("requeued to free the target of the repair of job {}", j.id));
        evicted += (evicted.empty() ? "" : ", ") + std::to_string(victim);
    }
    st_.out.stats.defrag_preemptions += int(plan.evict.size());
    if (!evicted.empty()) log(j.id, fmt::format("repair frees its target: requeued checkpointable job(s) {}", evicted));
    return true;
}

void Cycle::begin_repair(const SliceJob& sj, const RepairPlan& plan, PlacementRecord& rec, bool count,
                         const char* label) {
    const JobId id = sj.job->id;
    if (mem_.defrag_target && mem_.defrag_target->job == id) mem_.defrag_target.reset(); // the rack it freed is used
    if (count) {
        rec.repairs += 1;
        rec.moves += plan.moved;
        st_.out.stats.repairs_in_rack += plan.replaced_in_domain;
        st_.out.stats.moves += plan.moved;
    }
    take_back_lent(id, plan.preempt);
    for (const auto& s : plan.slices)
        if (s.action != RepairAction::Keep)
            log(id, fmt::format("repair{}: {}: removed {} added {}", label, s.detail, hl(s.removed), hl(s.added)));
}

void Cycle::take_back_lent(JobId repaired, const std::vector<JobId>& borrowers) {
    for (JobId victim : borrowers) {
        yield_job(victim, fmt::format("its lent spare was taken back to repair job {}", repaired));
        log(repaired, fmt::format("repair takes back a lent spare: requeued checkpointable job {}", victim));
    }
}

} // namespace nvl::detail
