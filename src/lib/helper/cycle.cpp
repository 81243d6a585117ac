// The cycle's driver: snapshot, slice jobs and their order, backoff, records.
#include "cycle.hpp"

#include "text.hpp"

#include <algorithm>
#include <ctime>

namespace nvl::detail {

void Cycle::keep_defrag_target() {
    // the rack defragmentation freed is its job's while that job waits
    if (auto& t = mem_.defrag_target) {
        auto waits = std::find_if(jobs_.begin(), jobs_.end(), [&](const SlurmJob& j) {
            return j.id == t->job && (j.state == JobState::Pending || (t->repair && j.state == JobState::Running));
        });
        if (waits == jobs_.end() || mono_ - t->since > cfg_.replace_after_s || t->domain >= map_.domains().size()) {
            t.reset();
        } else {
            st_.off_defrag_target = NodeSet(map_.node_count(), true);
            for (NodeId id : map_.domain(t->domain).nodes) st_.off_defrag_target.erase(id);
        }
    }
}

void Cycle::apply_rack_verdicts(const RackVerdicts& v) {
    const size_t nd = map_.domains().size();
    if (mem_.degraded.size() != nd) mem_.degraded.assign(nd, std::string());
    st_.out.stats.racks = v.stats;
    for (const auto& c : v.changes) {
        const std::string& name = map_.domain(c.domain).name;
        if (!c.why.empty())
            warn(fmt::format("rack {} degraded: {}: no new slice is placed there, its slice jobs move to healthy "
                             "racks (checkpointable first)",
                             name, c.why));
        else
            log(fmt::format("rack {} recovered: slices are placed there again", name));
        mem_.degraded[c.domain] = c.why;
    }
    // With the spare reservation, which holds every node of a degraded rack
    // (keep_spares), Slurm offers them to no job: no exclusion is needed,
    // and one would only turn a waiting job's reason to BadConstraints when
    // the healthy racks are too few for it. Without one, the exclusion is
    // the fallback, from the helper's first look at the job.
    st_.degraded_nodes =
        v.out_of_service.none() || !cfg_.reservation.empty() ? std::string() : v.out_of_service.hostlist(map_);
}

void Cycle::not_responding() {
    SilentNodes silent =
        judge_silent(map_, nodes_, st_.snap, mem_.not_responding_since, mono_, cfg_.repair_not_responding_after_s,
                     cfg_.silent_after_s, [&](JobId job) {
                         return std::any_of(st_.slice_jobs.begin(), st_.slice_jobs.end(), [&](const SliceJob& sj) {
                             return sj.job->id == job && sj.job->state == JobState::Running;
                         });
                     });
    // drained and marked DOWN, said once, wherever it is decided
    auto mark_down = [&](const std::string& node, const std::string& reason, JobId job) {
        act({0, action::NodeDown{node, reason, job}});
        warn(fmt::format("node {}: drained and marked DOWN: {}", node, reason));
    };
    // the DOWNs sent last cycle are done with (Slurm requeued the jobs)
    for (auto it = mem_.down_after_abort.begin(); it != mem_.down_after_abort.end();)
        it = it->second.sent ? mem_.down_after_abort.erase(it) : std::next(it);
    for (const auto& d : silent.down) {
        if (mem_.down_after_abort.count(d.node)) continue; // aborted: its DOWN is due (below)
        bool delay = false, stopped = false;
        // its repair's target kept for the job first, so that the moment
        // Slurm lets go of its nodes (the DOWN requeues it) no other job
        // takes them, nor the spare (the repair of a later cycle pins it
        // there: hold_target() again, the same nodes)
        for (const SliceJob& sj : st_.slice_jobs) {
            const SlurmJob& j = *sj.job;
            if (j.id != d.job || j.state != JobState::Running || !j.requeue || !j.batch) continue;
            auto node = map_.find_node(d.node);
            if (!node || !(has_placement(sj) || native(sj))) break;
            std::vector<NodeId> failed{*node};
            for (const auto& n : j.nodes)
                if (auto id = map_.find_node(n); id && *id != *node && needs_repair(obs_, st_.snap, *id))
                    failed.push_back(*id);
            if (!cfg_.abort_steps) {
                // Slurm's own wait: the DOWN at once
            } else if (did(j.id, ActionKind::AbortSteps)) {
                // a second silent node of it this cycle: DOWN with the first
                delay = mem_.down_due_for(j.id);
            } else {
                // Its steps end now, on every node that answers: killed by
                // the DOWN's requeue instead, each slurmstepd above the
                // silent node in a step's reverse tree would wait 60 s for
                // it, and so would the job's restart. The DOWN follows
                // kDownAfterAbortS later, the batch script stopped till
                // then. A script on the node itself (Slurm's batch host: the
                // allocation's first node), which nothing reaches: at once
                // where its slurmd is gone (the script runs on and could end
                // the job); where the whole host is silent it can tell
                // slurmctld nothing, and the DOWN waits as for any node.
                const bool batch_here = j.nodes.front() == d.node;
                delay = !batch_here || d.host_silent;
                stopped = !batch_here;
                if (stopped) act({j.id, action::StopBatch{}});
                act({j.id, action::AbortSteps{}});
                log(j.id, fmt::format("its steps aborted, so that its nodes need not wait for {}'s", d.node));
            }
            try {
                const RepairPlan plan =
                    plan_repair(st_.snap, placement_of(map_, sj, j.nodes), failed, obs_.unprotected);
                if (plan.feasible) {
                    // a lent spare it needs comes back now, its borrower
                    // requeued: held only from the repair after the DOWN,
                    // the target left the job's healthy nodes to other
                    // work as they completed (the busy bench's slow trials)
                    take_back_lent(j.id, plan.preempt);
                    hold_target(sj, plan.placement.nodes());
                    take(plan.placement.nodes(), j.id);
                }
            } catch (const Error& e) {
                warn_once(j.id, fmt::format("skipped: {}", e.what()));
            }
            break;
        }
        const std::string reason =
            d.probe ? fmt::format("nvlsliced: slurmd did not answer nvlsliced's probe for {} s (silent_after={}); "
                                  "slice job {} repaired on a spare",
                                  d.silent_s, cfg_.silent_after_s, d.job)
                    : fmt::format("nvlsliced: not responding to slurmctld for {} s (repair_not_responding_after={}); "
                                  "slice job {} repaired on a spare",
                                  d.silent_s, cfg_.repair_not_responding_after_s, d.job);
        if (delay) {
            mem_.down_after_abort[d.node] = {mono_ + kDownAfterAbortS, reason, d.job};
            log(d.job, fmt::format("{}{} is marked DOWN in {} s, once its steps have ended on its other nodes",
                                   stopped ? "its batch script stopped; " : "", d.node, kDownAfterAbortS));
            continue;
        }
        mark_down(d.node, reason, d.job);
    }
    // The DOWNs due, whatever the node does now: its job's steps are
    // aborted and its batch script stopped, and only the DOWN's requeue
    // (whose terminate continues the script to end it) takes the job on.
    for (auto& [node, due] : mem_.down_after_abort) {
        if (due.sent || due.at > mono_) continue;
        mark_down(node, due.reason, due.job);
        due.sent = true;
    }
    // A slice job running stopped in its own reservation, no DOWN due for
    // it: a helper (this one before a restart, or the other of a pair)
    // aborted its steps and stopped its batch script, and stopped itself,
    // or its DOWN was refused. Nothing else would take it on: requeued, as
    // the DOWN would have. Not while a node of it is silent: that node's
    // DOWN, seconds away, requeues it (a requeue now would leave the job
    // completing on the silent node until Slurm's SlurmdTimeout).
    for (const SliceJob& sj : st_.slice_jobs) {
        const SlurmJob& j = *sj.job;
        if (j.state != JobState::Running || !j.stopped || !j.requeue || !j.batch ||
            j.reservation != cfg_.lend_name(j.id) || mem_.down_due_for(j.id) || did(j.id, ActionKind::Requeue))
            continue;
        if (std::any_of(j.nodes.begin(), j.nodes.end(), [&](const std::string& n) { return silent.since.count(n); }))
            continue;
        act({j.id, action::Requeue{}});
        warn(j.id, "runs with its batch script stopped in its own reservation, and no node of it is due to be marked "
                   "DOWN (the helper that aborted its steps stopped before): requeued, as that DOWN would have");
    }
    // a verdict due within seconds: given the moment it is due
    if (silent.suspect) st_.out.follow_up = true;
    mem_.not_responding_since.swap(silent.since);
}

void Cycle::collect_slice_jobs() {
    for (JobId id : obs_.restored) {
        const SlurmJob* j = nullptr;
        for (const auto& p : obs_.jobs)
            if (p.job->id == id) j = p.job;
        const std::string& rec = mem_.records[id];
        act({id, action::SetRecord{rec}});
        warn(id, fmt::format("its AdminComment was written over (now \"{}\"): the helper's record is written back "
                             "after it; a site's text goes before or after the record, separated by \" | \" "
                             "(nvlsliced(8), AdminComment)",
                             escape_control(j ? j->admin_comment : std::string())));
    }
    for (const auto& p : obs_.jobs) {
        JobVerdict v = judge_job(p);
        const JobId id = p.job->id;
        if (p.rec && p.rec_error.empty() && p.rec->belongs_to(id)) {
            // the record as Slurm holds it now (a restored one as it was)
            const std::string_view now = split_admin_comment(p.job->admin_comment).record;
            if (!now.empty()) {
                std::string& seen = mem_.records[id];
                if (seen != now) seen.assign(now);
            }
        }
        if (!v.bad_record.empty())
            log(id, fmt::format("admin_comment is not an nvlslice record ({}); placing afresh", v.bad_record));
        if (v.copied_record_of)
            log(id, fmt::format("its record is job {}'s (copied by a job array split); placed on its own",
                                v.copied_record_of));
        if (v.restore_requeue) {
            // unless Slurm refused that lately: the job's backoff
            auto b = mem_.backoff.find(id);
            if (b == mem_.backoff.end() || b->second.until <= mono_) {
                act({id, action::AllowRequeue{}});
                warn_once(id, "runs as lent work (on a lent spare, or standing in for its rack's spares), and its "
                              "Requeue was turned off: set back to 1 (a repair takes lent work back by requeue)");
            }
        }
        switch (v.kind) {
        case JobVerdict::Kind::Other: break;
        case JobVerdict::Kind::Ignored:
            // left to Slurm this cycle whatever its record says; the record
            // and the line follow within kTagChangeS
            if (v.ignored && tag_change_due(id)) {
                act({id, action::SetRecord{v.ignored->str()}});
                log(id, fmt::format("not a slice job nvlslice can place, left to Slurm: {}", v.wrong));
            }
            break;
        case JobVerdict::Kind::Slice:
            if (v.taken_back && tag_change_due(id))
                log(id, "its nvlslice tag describes the job again: nvlslice takes it back");
            st_.slice_jobs.push_back(std::move(*v.slice));
            break;
        }
    }
    sort_by_priority(st_.slice_jobs);
    // the free nodes of `ids` spoken for by `job` in this cycle's snapshot
    const auto speak_for = [this](const std::vector<NodeId>& ids, JobId job) {
        for (NodeId id : ids)
            if (is_free(st_.snap.node(id).state)) st_.snap.set(id, {NodeState::Allocated, job, -1, false});
    };
    // A job requeued for a repair or a move is still completing for a
    // moment (it is no slice job of this cycle then), or waits held: the
    // nodes it was pinned to are spoken for, whatever job comes first in
    // this cycle (a faster cycle than Slurm's requeue saw another job's
    // move take them).
    for (const auto& p : obs_.jobs) {
        const SlurmJob& j = *p.job;
        if (j.state != JobState::Completing && !(j.state == JobState::Pending && j.held)) continue;
        const std::optional<PlacementRecord>& rec = p.rec;
        // A slice job a silent node's DOWN requeued (its record still says
        // placed) completes as its aborted steps end, seconds after the
        // DOWN: followed closely, so that it is pinned and released the
        // moment it is pending, in time for Slurm's next scheduling pass
        // (once a second), not a cycle later.
        // Its healthy nodes that have ended already are its own until its
        // repair pins it there (the next cycle, once it is pending), as for
        // the helper's requeue below: else other work waiting (lent work
        // first) takes them this cycle and the repair waits for that work
        // to end (the busy bench on 24.11, run 38: 60 s).
        if (j.state == JobState::Completing && rec && rec->belongs_to(j.id) && rec->state == RecordState::Placed) {
            const auto it = mem_.requeued_at.find(j.id);
            const bool by_down = it != mem_.requeued_at.end() && now_ - it->second <= kFollowDownS;
            if (by_down) st_.out.follow_up = true;
            const std::vector<NodeId> recorded = recorded_nodes(*rec);
            const bool failed = j.requeue && std::any_of(recorded.begin(), recorded.end(), [&](NodeId id) {
                                    return !is_healthy(st_.snap.node(id).state);
                                });
            if (by_down || failed) speak_for(recorded, j.id);
            continue;
        }
        if (!rec || !rec->belongs_to(j.id) ||
            (rec->state != RecordState::Repairing && rec->state != RecordState::Restarting))
            continue;
        // its next step (the pin, then the release) waits on the end of the
        // helper's requeue: followed closely for the seconds a kill takes,
        // not a whole cycle_ms later (a node that does not answer keeps it
        // completing much longer: the regular cycle then)
        if (j.state == JobState::Completing)
            if (auto it = mem_.requeued_at.find(j.id);
                it != mem_.requeued_at.end() && now_ - it->second <= kFollowCompletingS)
                st_.out.follow_up = true;
        // the record, written before the pin, names the target
        speak_for(recorded_nodes(*rec), j.id);
    }
    // A job whose repair is under way or due, waiting (or completing) in
    // its own reservation: the nodes it holds are its (a repair's target
    // kept before Slurm let go of the job: hold_target()), and its repair
    // takes them first. (A borrower's lend is kept by its pin, above.)
    if (lends_ && !lends_->empty())
        for (const auto& p : obs_.jobs) {
            // (or still running there, its silent node's DOWN due)
            if (!waits_in_own_reservation(p) &&
                !(mem_.down_due_for(p.job->id) && p.job->reservation == cfg_.lend_name(p.job->id)))
                continue;
            const SlurmJob& j = *p.job;
            auto r = std::find_if(lends_->begin(), lends_->end(),
                                  [&](const Reservation& x) { return x.name == j.reservation; });
            if (r == lends_->end()) continue;
            for (const auto& n : hostlist_expand(r->nodes))
                if (auto node = map_.find_node(n); node && is_free(st_.snap.node(*node).state))
                    st_.snap.set(*node, {NodeState::Allocated, j.id, -1, false});
        }
    // Nodes pinned to released jobs that Slurm has not started yet are
    // spoken for: no other slice may be placed there meanwhile.
    for (const auto& sj : st_.slice_jobs) {
        const SlurmJob& j = *sj.job;
        if (j.state != JobState::Pending || j.held || !has_placement(sj)) continue; // released, record caught up or not
        // gate mode: its ReqNodeList; native: the nodes it was pinned to
        // (an exclusion of all others), which its record lists
        if (native(sj) ? !native_pinned(j) : j.req_nodes.empty()) continue;
        // a repair's or restart's target is its record, written before the
        // pin (which may not have followed)
        const bool target_in_record = sj.rec->state != RecordState::Placed && !sj.rec->slices.empty();
        speak_for(target_in_record ? recorded_nodes(*sj.rec) : pinned_nodes(map_, sj), j.id);
    }
}

void Cycle::take(const std::vector<NodeId>& ids, JobId job) {
    st_.shapes.clear(); // the snapshot changes: what did not fit may fit now
    for (NodeId id : ids) {
        NodeStatus st = st_.snap.node(id);
        if (is_free(st.state)) st.state = NodeState::Allocated;
        st.job_id = job;
        // the taker's now, not lent work any more: a later repair or
        // placement of this cycle must not requeue the taker for them, as
        // it would the lent work that held them (its flags were copied)
        st.preemptible = false;
        st.lent = false;
        st.slice = -1;
        st_.snap.set(id, st);
    }
}

void Cycle::record(const SliceJob& sj, const PlacementRecord& r, bool always) {
    if (sj.rec && !allowed_transition(sj.rec->state, r.state))
        throw Error(fmt::format("its record may not go from {} to {}", to_string(sj.rec->state), to_string(r.state)));
    PlacementRecord mine = r;
    mine.job = sj.job->id;
    std::string text = mine.str();
    if (always || text != split_admin_comment(sj.job->admin_comment).record) act({sj.job->id, action::SetRecord{text}});
}

bool Cycle::backing_off(const SliceJob& sj) {
    auto it = mem_.backoff.find(sj.job->id);
    if (it == mem_.backoff.end() || it->second.until <= mono_) return false;
    auto& b = it->second;
    if (!b.recorded) {
        // said once, in the job's record and the log
        b.recorded = true;
        PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
        if (!sj.rec) rec.state = RecordState::Waiting;
        rec.set_reason(Why::Backoff,
                       fmt::format("nvlsliced could not act on this job ({} time(s)): {}; next try in {} s", b.failures,
                                   b.error, b.until - mono_));
        record(sj, rec);
        warn(sj.job->id, fmt::format("left alone for {} s after a refused action: {}", b.until - mono_, b.error));
    }
    return true;
}

CycleOutput Cycle::run() {
    keep_defrag_target();
    apply_rack_verdicts(judge_racks(obs_.snap, mem_.degraded));
    collect_slice_jobs();
    not_responding();
    // forget the failures and log lines of jobs that are gone
    if (!mem_.backoff.empty() || !mem_.said.empty() || !mem_.said_defrag.empty() || !mem_.blocked_since.empty() ||
        !mem_.placed_since.empty() || !mem_.retry_at.empty() || !mem_.requeued_at.empty() ||
        !mem_.schedule_at.empty() || !mem_.records.empty()) {
        // (a job running again is past its requeue: a later one, Slurm's or
        // a user's, has a second of its own)
        std::unordered_set<JobId> present;
        for (const auto& j : jobs_) {
            present.insert(j.id);
            if (j.state == JobState::Running) {
                mem_.requeued_at.erase(j.id);
                mem_.schedule_at.erase(j.id);
            }
        }
        auto prune = [&](auto& by_job) {
            for (auto it = by_job.begin(); it != by_job.end();)
                it = present.count(it->first) ? std::next(it) : by_job.erase(it);
        };
        prune(mem_.backoff);
        prune(mem_.said);
        prune(mem_.said_defrag);
        prune(mem_.blocked_since);
        prune(mem_.placed_since);
        prune(mem_.retry_at);
        prune(mem_.requeued_at);
        prune(mem_.schedule_at);
        prune(mem_.tag_changed);
        prune(mem_.records);
    }
    // a reason a later Slurm gives: held back (eligibility.hpp), said once
    for (const auto& sj : st_.slice_jobs)
        if (sj.job->state == JobState::Pending && sj.job->reason.is(ReasonKind::Unknown) &&
            mem_.unknown_reasons.insert(sj.job->reason.name()).second)
            warn(sj.job->id, fmt::format("Slurm's pending reason \"{}\" is one this nvlslice does not know: a job "
                                         "that has it is held back (nothing pinned, ungated or lent for it) until "
                                         "Slurm gives another",
                                         sj.job->reason.name()));
    // before any job's own actions: a lend ends before its job is pinned
    // elsewhere (Slurm 22.05 holds a job whose nodes lie outside its
    // reservation)
    keep_lends();
    for (const auto& sj : st_.slice_jobs) {
        if (backing_off(sj)) {
            st_.settled.insert(sj.job->id);
            continue;
        }
        try {
            if (sj.job->state == JobState::Running)
                handle_running(sj);
            else if (sj.job->state == JobState::Pending)
                finish_placed(sj);
        } catch (const Error& e) {
            warn_once(sj.job->id, fmt::format("skipped: {}", e.what()));
        }
    }
    evacuate();
    // Jobs that yielded their nodes to defragmentation come last, so the
    // job they yielded to gets the freed rack first.
    for (int yielded = 0; yielded < 2; ++yielded)
        for (const auto& sj : st_.slice_jobs) {
            if ((sj.rec && sj.rec->state == RecordState::Yielded) != (yielded == 1)) continue;
            try {
                if (sj.job->state == JobState::Pending) place_waiting(sj);
            } catch (const Error& e) {
                warn_once(sj.job->id, fmt::format("skipped: {}", e.what()));
            }
        }
    // Native mode: Slurm's backfill protects its top job and the block
    // plugin packs small jobs; the helper does neither.
    if (cfg_.hand_off != HandOff::Native) protect_top();
    keep_spares();
    if (cfg_.hand_off != HandOff::Native) keep_weights();
    keep_gate();
    plan();
    return std::move(st_.out);
}

void Cycle::plan() {
    std::vector<size_t> order(st_.out.actions.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return st_.phases[a] < st_.phases[b]; });
    std::vector<Action> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) sorted.push_back(std::move(st_.out.actions[i]));
    st_.out.actions = std::move(sorted);
}

} // namespace nvl::detail
