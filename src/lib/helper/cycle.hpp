// nvlslice — the helper's reconcile cycle, inside: one Cycle per call of
// reconcile() (reconcile.hpp has the contract). Its stages read one
// immutable Observation (observe.hpp: what Slurm reports, read once, and
// which jobs are slice jobs, judge_job()): node and rack health
// (rack_health.hpp: judge_racks(), judge_silent()), the repair stage
// (running jobs and placed pending ones: repair_stage.hpp), placement and
// protection (place_stage.hpp), defragmentation (defrag.hpp, the
// simulator's too; the cycle hands it a lookup of the running jobs as
// victims) and upkeep (upkeep_stage.hpp) are functions of it and of the working
// snapshot that return typed decisions (placement also fills the shape memo
// it is handed). The cycle applies them (records, actions, log lines, the
// helper's memory). Split by what it applies:
//   cycle.cpp          the driver: the slice jobs' verdicts, silent nodes,
//                      backoff, records, the planner
//   repair_apply.cpp   running jobs and pending jobs that already have a
//                      placement (the repair stage's decisions)
//   place_apply.cpp    placing waiting jobs, defragmentation, protection
//   upkeep_apply.cpp   the spare reservation, node weights, the gate (the
//                      upkeep stage's decisions)
// Not installed: only reconcile.hpp is the core's interface.
#pragma once

#include "eligibility.hpp"
#include "reconcile.hpp"

#include "defrag.hpp"
#include "hostlist.hpp"
#include "observe.hpp"
#include "place_stage.hpp"
#include "placement.hpp"
#include "rack_health.hpp"
#include "repair.hpp"
#include "repair_stage.hpp"
#include "report.hpp"
#include "slice_job.hpp"
#include "text.hpp"
#include "upkeep_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nvl::detail {

// What one cycle's passes learn and hand on to the passes after them, as
// one value (the Kubernetes scheduler's CycleState): made from the
// observation at the cycle's start, read by the stages it is passed to,
// changed only by the cycle's applying. Nothing in it outlives the cycle
// (what does is HelperMemory's).
struct CycleState {
    explicit CycleState(const Snapshot& s) : snap(s) {}
    // The snapshot as this cycle's decisions leave it: the nodes each
    // repair and placement takes (take()), for the stages after it.
    Snapshot snap;
    std::vector<SliceJob> slice_jobs; // this cycle's slice jobs, in Slurm's priority order
    std::vector<SliceJob> evacuees;   // running jobs to move off degraded racks
    std::string degraded_nodes;       // every node of the degraded racks, a hostlist, when no reservation holds them
    std::unordered_map<JobId, std::string> exclusion; // native jobs: the exclusion set this cycle
    std::unordered_set<JobId> settled;                // jobs pass 1 has dealt with: not placed again in pass 2
    std::unordered_map<JobId, uint32_t> acted;        // per job: a bit per ActionKind asked for
    std::vector<Phase> phases;                        // per action of out: when it is sent (plan())
    std::unordered_map<JobId, Phase> last_phase;      // per job: the phase of its latest action
    ShapeMemo shapes;                                 // the shapes that did not fit: valid until the next take()
    bool defrag_done = false;                         // defragmentation acted this cycle
    std::unordered_map<JobId, Reason> waits;          // why each job placed this cycle could not be
    NodeSet off_defrag_target;                        // outside the rack defragmentation freed (unsized: none)
    JobId top = 0;                                    // the first job placement was tried for: the top priority
    CycleOutput out;                                  // the actions, records, log lines and stats so far
};

class Cycle {
  public:
    Cycle(const RackMap& map, const ClusterView& view, const HelperConfig& cfg, int64_t now, int64_t mono,
          HelperMemory& mem)
        : map_(map), nodes_(view.nodes), jobs_(view.jobs), spares_(view.spares), gate_(view.gate),
          protection_(view.protection), limits_(view.limits), lends_(view.lends), gates_(view.gates),
          array_running_(view.gates ? nvl::count_array_tasks(view.jobs) : std::unordered_map<JobId, int>{}), cfg_(cfg),
          now_(now), mono_(mono), mem_(mem),
          obs_(observe(map, view, cfg.lend, compiled(mem, cfg).drain, mem.patterns.rack, &mem.records)),
          st_(obs_.snap) {}

    CycleOutput run();

  private:
    // The reason patterns, compiled once per configuration.
    static const HelperMemory::Patterns& compiled(HelperMemory& mem, const HelperConfig& cfg) {
        HelperMemory::Patterns& p = mem.patterns;
        if (p.compiled == 0 || p.drain_src != cfg.repair_drain_reasons || p.rack_src != cfg.rack_failure_reasons) {
            p.drain = reason_regex(cfg.repair_drain_reasons, "repair_drain_reasons");
            p.rack = reason_regex(cfg.rack_failure_reasons, "rack_failure_reasons");
            p.drain_src = cfg.repair_drain_reasons;
            p.rack_src = cfg.rack_failure_reasons;
            ++p.compiled;
        }
        return p;
    }
    // The defragmentation target the helper remembers, while its job waits.
    void keep_defrag_target();
    // The rack-health stage's verdicts (rack_health.hpp, judge_racks()):
    // each change logged once and remembered, the per-rack stats out.
    void apply_rack_verdicts(const RackVerdicts& v);
    // Nodes of running slice jobs that Slurm has flagged NOT_RESPONDING for
    // repair_not_responding_after: drained and marked DOWN, so that Slurm
    // lets go of their jobs now and the repair of a DOWN node follows.
    void not_responding();
    // Running slice jobs in degraded racks with none of their own nodes
    // failed: moved to healthy racks, checkpointable jobs first (the repair
    // stage's decide_move(), applied).
    void evacuate();
    void collect_slice_jobs();
    // A running job: the repair stage's decide_running(), applied.
    void handle_running(const SliceJob& sj);
    // Running without a placement of ours: decide_started(), applied.
    void apply_started(const SliceJob& sj);
    // Pass 1: pending jobs that have a placement: keep, finish, or repair it
    // (the repair stage's decide_placed(), applied).
    void finish_placed(const SliceJob& sj);
    // Released and pinned, not started yet: decide_released(), applied.
    void keep_released(const SliceJob& sj, const PlacedDecision& d);
    // Its target free: decide_start_step(), applied.
    void start_pinned(const SliceJob& sj, const PlacedDecision& d);
    // Pass 2: pending jobs without a usable placement: place them.
    void place_waiting(const SliceJob& sj);
    void say_escape(const SliceJob& sj);
    void hand_back(const SliceJob& sj);
    // Native mode without a spare reservation: the placement stage's
    // keep_off_degraded(), applied. Returns the job with its record as it
    // will be.
    SliceJob keep_off_degraded(const SliceJob& sj);
    bool place_job(const SliceJob& sj);
    // The top-priority waiting job gets racks kept for it.
    void protect_top();
    void keep_gate();
    bool gated(const SlurmJob& j) const { return has_license(j.licenses, cfg_.gate_license); }
    // A job in its own reservation whose repair is under way or due
    // (nvl::waits_in_own_reservation(), upkeep_stage.hpp).
    bool waits_in_own_reservation(const ParsedJob& p) const {
        return nvl::waits_in_own_reservation(p, cfg_, map_, obs_.failed);
    }
    // Every node of a record's slices, in map order.
    std::vector<NodeId> recorded_nodes(const PlacementRecord& r) const { return nvl::recorded_nodes(map_, r); }
    // Each running job's end (nvl::end_times(), place_stage.hpp).
    std::unordered_map<JobId, int64_t> end_times() const { return nvl::end_times(jobs_, now_); }
    bool held_by_us(const SliceJob& sj) const { return sj.job->held && sj.rec && sj.rec->hold; }
    void gate(const SliceJob& sj) {
        act({sj.job->id, action::SetLicenses{with_license(sj.job->licenses, cfg_.gate_license)}});
    }
    // Lets Slurm start a pinned job: takes its gate off, or releases the
    // helper's own hold (never another).
    void start_now(const SliceJob& sj) {
        if (gated(*sj.job))
            act({sj.job->id, action::SetLicenses{without_license(sj.job->licenses, cfg_.gate_license)}});
        if (held_by_us(sj)) act({sj.job->id, action::Release{}});
    }
    // Pins a job to `ids` from `start_at` (0: leave StartTime): the hand-off's
    // pin_actions() (place_stage.hpp), applied.
    void pin(const SliceJob& sj, const std::vector<NodeId>& ids, int64_t start_at) {
        for (Action& a : pin_actions(*sj.job, native(sj), cfg_.node_pools, map_, nodes_, ids, start_at))
            act(std::move(a));
    }
    // Whether a placed native job is pinned in Slurm: by its node pool, or
    // by its exclusion of every other node (pin()).
    bool native_pinned(const SlurmJob& j) const {
        return cfg_.node_pools ? !j.req_nodes.empty() : !j.exc_nodes.empty();
    }
    // Back to Slurm's own placement: the pin (either kind) lifted; still
    // kept off degraded racks.
    void unpin_native(const SlurmJob& j) {
        if (j.exc_nodes != st_.degraded_nodes) act({j.id, action::Exclude{st_.degraded_nodes}});
        if (cfg_.node_pools && !j.req_nodes.empty()) act({j.id, action::PinOnly{}});
    }
    bool pinned_now(JobId id) const {
        return did(id, ActionKind::Pin) || did(id, ActionKind::PinOnly) || did(id, ActionKind::Exclude);
    }
    // for_repair: a failed slice with no room anywhere (defrag_repairs),
    // unpaced; else a strict job blocked by fragmentation (defrag)
    void try_defrag(const SliceJob& sj, bool for_repair = false);
    // Requeues a running job that gives up its nodes; a slice job is placed
    // again later, after the job it yielded to.
    void yield_job(JobId victim, const std::string& why, bool repair_wait = false);
    // Native mode: a requeued job made eligible from the next second, not
    // after Slurm's requeue delay.
    void start_requeued_now(const SlurmJob& j);
    // The common part of every repair: count it (once: `count`) in the
    // record and the stats, give lent spares back, log each changed slice.
    void begin_repair(const SliceJob& sj, const RepairPlan& plan, PlacementRecord& rec, bool count, const char* label);
    // the lent spares a repair's plan needs, taken back: their borrowers requeued
    void take_back_lent(JobId repaired, const std::vector<JobId>& borrowers);
    // A repair with no room now: the nodes that free soonest (checkpointable
    // work there requeued at once), held for the job with its healthy
    // slices in its own reservation from its requeue (`running`), or at
    // once for a job Slurm requeued itself. `nodes`: its placement's, with
    // `failed` among them. False: none within repair_hold_max, or no hold
    // allowed (repair_hold_max 0, repair_reservation off, or the job in a
    // reservation other than its own).
    bool hold_repair(const SliceJob& sj, const std::vector<std::string>& nodes, const std::vector<NodeId>& failed,
                     PlacementRecord& rec, bool running);
    // Of `ids`, the nodes down or drained (a degraded rack's others are not).
    std::vector<NodeId> down_or_drained(const std::vector<NodeId>& ids) const {
        std::vector<NodeId> out;
        for (NodeId id : ids)
            if (!is_healthy(st_.snap.node(id).state)) out.push_back(id);
        return out;
    }
    void keep_spares();
    // The lend reservations: the upkeep stage's decide_lends(), applied.
    void keep_lends();
    void keep_weights();
    // A job whose last action Slurm refused waits out its backoff: true
    // while it does (its record says why, once).
    bool backing_off(const SliceJob& sj);
    void take(const std::vector<NodeId>& ids, JobId job);
    // When a job may start: now, or for a job that ran before (a repair),
    // a little later. A requeue revokes the job's credential on its nodes,
    // and slurmd rejects a new credential of the same second or earlier
    // ("Job credential revoked"): the second after the requeue is enough,
    // where Slurm itself waits cred_expire. After the helper's own requeue
    // that second is known (requeued_at) and usually past by the time Slurm
    // shows the job pending; after anyone else's, the next second.
    // How long a job completing after the helper's requeue is followed at
    // the follow-up pace (seconds; a kill takes one or two).
    static constexpr int64_t kFollowCompletingS = 5;
    // How long a job completing after a silent node's DOWN is followed so:
    // its aborted steps end within 16 s of the abort (5 tries a second
    // apart per message to a parent stepd that ended first, up to 4
    // messages), the DOWN kDownAfterAbortS (6 s) after it: 10 s after the
    // DOWN, and slurmd's next look a second later.
    static constexpr int64_t kFollowDownS = 15;
    // a tag flipped back and forth: so many records and lines per window
    static constexpr int64_t kTagChangeS = 60;
    static constexpr int kTagChanges = 3;
    int64_t start_time(const SlurmJob& j) const {
        if (j.restarts == 0) return now_;
        auto it = mem_.requeued_at.find(j.id);
        return it != mem_.requeued_at.end() ? std::max(it->second + 1, now_) : now_ + 1;
    }
    // Writes the record when it changed (always: in any case), refusing a
    // move allowed_transition() forbids.
    void record(const SliceJob& sj, const PlacementRecord& r, bool always = false);
    // `hold_also`: nodes its reservation holds beside the target (a held
    // repair's whole target racks: swap_held_target()).
    void pin_and_release(const SliceJob& sj, const Placement& p, PlacementRecord r, bool requeue_first,
                         const std::vector<NodeId>& hold_also = {});
    // A repair's or restart's target kept for its job until it runs there:
    // the job's own reservation (cfg_.lend_name()), made before its requeue.
    void hold_target(const SliceJob& sj, const std::vector<NodeId>& nodes, const std::vector<NodeId>& hold_also = {});
    // A held repair's target still busy: each slice whose nodes are not all
    // free takes the free ones its reservation holds in the same rack, if
    // they are enough and the rack keeps its spares beside them; the new
    // nodes when every slice can, else nothing.
    std::optional<std::vector<std::vector<NodeId>>> swap_held_target(const SliceJob& sj) const;
    std::string hl(const std::vector<NodeId>& ids) const { return hostlist_compress(map_.node_names(ids)); }
    // A decision about one job (0: about the cluster), in words.
    void log(JobId job, std::string s) { st_.out.log.push_back({Severity::Info, job, std::move(s)}); }
    // The end a reservation of the helper's is made with or moved to (its
    // lease), and whether one that ends at `end` is due for it: half of the
    // lease gone, or an end further on than the lease (made without end by
    // an earlier version). 0: Slurm reported none (nothing to move).
    int64_t lease_end() const { return now_ + cfg_.reservation_lease_s; }
    bool lease_due(int64_t end) const { return nvl::lease_due(end, now_, cfg_.reservation_lease_s); }
    // Whether a change of `job`'s tag may be written and said now: the
    // first kTagChanges changes in kTagChangeS, then none until it ends.
    bool tag_change_due(JobId job) {
        auto [it, first] = mem_.tag_changed.try_emplace(job, HelperMemory::TagChanges{mono_, 0});
        if (mono_ - it->second.since >= kTagChangeS) it->second = {mono_, 0};
        return ++it->second.count <= kTagChanges;
    }
    void log(std::string s) { log(0, std::move(s)); }
    // A line an operator should look at (nvlsliced logs it as a warning).
    void warn(JobId job, std::string s) { st_.out.log.push_back({Severity::Warning, job, std::move(s)}); }
    void warn(std::string s) { warn(0, std::move(s)); }
    void say_once(JobId job, const std::string& s) { say_once(mem_.said, job, s); }
    // The same in a slot of its own: two lines about one job that share a
    // slot take turns, and both repeat every cycle.
    void say_once(std::unordered_map<JobId, std::string>& slot, JobId job, const std::string& s) {
        std::string& last = slot[job];
        if (last != s) log(job, last = s);
    }
    // A warning about one job, repeated only when it changes (a job that
    // cannot be handled is skipped every cycle, but said once).
    void warn_once(JobId job, const std::string& s) {
        std::string& last = mem_.said[job];
        if (last != s) warn(job, last = s);
    }
    // The cycle's actions in phase order (each action's kind says its phase,
    // whatever pass decided it; a job's action never goes before an earlier
    // one of it, but for kinds of their own order) (stable: decision order within a phase).
    void plan();
    // Every action goes through act(), which remembers per job which kinds
    // were asked for, so that a later pass asks in O(1).
    void act(Action a) {
        if (!a.job && !mem_.cluster_backoff.empty()) {
            // a cluster-wide action Slurm refused lately waits out its backoff
            auto it = mem_.cluster_backoff.find(backoff_key(a));
            if (it != mem_.cluster_backoff.end() && it->second.until > mono_) return;
        }
        if (a.job) st_.acted[a.job] |= 1u << unsigned(a.kind());
        // the steps of a repair or a restart follow each other closely
        st_.out.follow_up = st_.out.follow_up || a.follow_up(now_);
        Phase p = a.phase(now_);
        if (a.job && !a.own_order()) {
            auto [it, fresh] = st_.last_phase.try_emplace(a.job, p);
            if (!fresh) it->second = p = std::max(p, it->second);
        }
        st_.phases.push_back(p);
        st_.out.actions.push_back(std::move(a));
    }
    bool did(JobId job, ActionKind k) const {
        auto it = st_.acted.find(job);
        return it != st_.acted.end() && (it->second & (1u << unsigned(k)));
    }

    const RackMap& map_;
    const std::vector<SlurmNode>& nodes_;
    const std::vector<SlurmJob>& jobs_;
    const std::optional<Reservation>& spares_;
    const std::optional<Reservation>& gate_;
    const std::optional<Reservation>& protection_;
    const AcctLimits* limits_;              // Slurm's accounting limits, when loaded
    const std::vector<Reservation>* lends_; // the lend reservations, when loaded
    const SlurmGates* gates_;               // partitions, licenses, reservations, when loaded
    // per throttled array (%N), its tasks running now
    const std::unordered_map<JobId, int> array_running_;
    // Slurm's own reason to hold the job back: the placement stage's
    // held_back() (place_stage.hpp), on this cycle's reads.
    std::optional<HeldBack> held_back(const SliceJob& sj) const {
        return nvl::held_back(sj, HoldInputs{now_, cfg_.gate_license, limits_, gates_, &array_running_});
    }
    const HelperConfig& cfg_;
    const int64_t now_;  // wall clock: compared with Slurm's times
    const int64_t mono_; // monotonic: the durations kept in mem_
    HelperMemory& mem_;
    // What Slurm reports, read once (observe.hpp): never changed by a stage.
    const Observation obs_;
    // Everything this cycle's passes learn and hand on: one value
    // (CycleState, above), made from the observation and passed to each
    // stage that reads it.
    CycleState st_;
};

} // namespace nvl::detail
