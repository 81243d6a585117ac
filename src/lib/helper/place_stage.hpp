// nvlslice — the cycle's placement and protection stage: where a waiting
// slice job goes, and which racks are kept for the top-priority one.
// Functions of the working snapshot (the nodes this cycle's earlier repairs
// and placements took marked) and the job; they return typed decisions and
// change nothing but the shape memo they are handed. The cycle
// (place_apply.cpp) turns them into records, actions and log lines, and
// takes a placement's nodes before the next job.
//   decide_waiting()       which pending jobs the placement pass places;
//   stays_behind()         why one behind its gate stays there untouched;
//   slice_request(),       its request, and whether the racks kept for the
//   kept_from_protection() top job are closed to it;
//   decide_place()         a placement, or why the job waits (the lending
//                          rule, place_or_borrow(), is the simulator's too);
//   plan_protection()      the racks that free up soonest for the top job
//                          that waits, from the running jobs' end times, as
//                          Slurm's backfill keeps nodes for a blocked plain
//                          job;
//   protection_change()    whether Slurm's protection reservation must
//                          change.
#pragma once

#include "action.hpp"
#include "cluster_api.hpp"
#include "eligibility.hpp"
#include "model.hpp"
#include "node_set.hpp"
#include "placement.hpp"
#include "repair_stage.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

namespace nvl {

// The placement request of a waiting slice job: its shape and mode; a
// prefer-mode job may be split once it waited `prefer_wait_s`.
SliceRequest slice_request(const SliceJob& sj, int64_t now, int64_t prefer_wait_s);
// The same from a request tag and how long the job has waited: the
// helper's placement and the simulator's (sim.cpp) make requests by it.
SliceRequest slice_request(JobId id, const RequestTag& tag, int64_t waited_s, int64_t prefer_wait_s);

// Whether the racks kept for the top-priority job (`protection`, its nodes
// outside `unprotected`) are closed to job `j`: they are, unless it is the
// top job, or it has a time limit that ends it before their start (as
// Slurm's backfill lets shorter jobs in). `unprotected` unsized (no
// protection): never.
bool kept_from_protection(const SlurmJob& j, bool is_top, const NodeSet& unprotected,
                          const std::optional<Reservation>& protection, int64_t now);

// What becomes of a pending slice job in the placement pass.
enum class WaitingCase : uint8_t {
    Done,          // dealt with by an earlier stage of this cycle (settled, or pinned)
    OthersHold,    // a user's or an admin's hold: theirs to release
    HandBack,      // held by the helper without a placement: released, to wait with its priority
    WaitsForSlurm, // released and pinned: Slurm starts it
    Behind,        // gate mode, no placement: placed, unless Slurm holds it back or it waits to be placed again
    Native,        // native mode, no placement: kept off degraded racks, counted where it fits
    Place,         // has a placement but is not pinned and open (held, gated, its pin gone): placed again (gate
                   // mode: gated again when there is no room)
};
const char* to_string(WaitingCase c);
// `done`: an earlier stage dealt with it this cycle; `gated`: it carries the
// gate license; `held_by_us`: the helper's hold; `pinned`: Slurm holds it
// to nodes (gate mode: a ReqNodeList; native: its node pool or exclusion).
WaitingCase decide_waiting(const SliceJob& sj, bool done, bool gated, bool held_by_us, bool pinned);

// Why a job behind its gate stays there untouched (no pin, no StartTime, no
// protection), or nullopt: it is placed. `holds`: Slurm's reason to hold it
// back; `retry`: it waits out replace_after after a placement it did not
// start on (its record's reason is kept).
struct WaitReason {
    Why why = Why::None;
    std::string text;
};
std::optional<WaitReason> stays_behind(const SliceJob& sj, const std::optional<HeldBack>& holds, bool retry);
inline constexpr std::string_view kHeldBack = "held back by Slurm: ";
// The record's reason for a job Slurm holds back (`holds`: Slurm's reason):
// the one text the cycle reads back while Slurm's own reason is reset.
inline WaitReason held_back_reason(const HeldBack& holds) {
    return {Why::HeldBack, std::string(kHeldBack) + holds.text};
}

// What Slurm holds jobs back by, as read this cycle (the parts Slurm's
// reason hides: accounting limits, partitions, licenses, reservations and
// array throttles, each when loaded).
struct HoldInputs {
    int64_t now = 0;
    std::string_view gate_license;
    const AcctLimits* limits = nullptr;
    const SlurmGates* gates = nullptr;
    // per throttled array (%N), its tasks running now (count_array_tasks())
    const std::unordered_map<JobId, int>* array_running = nullptr;
};
// Per throttled array, its tasks running now (the arrays without a
// throttle left out).
std::unordered_map<JobId, int> count_array_tasks(const std::vector<SlurmJob>& jobs);
// What a job's record becomes when it is given a placement, and how it is
// handed to Slurm: a running job is requeued held onto it (a repair
// planned while it runs), a job that ran before is pinned to start in the
// next second (a repair, or a restart after it yielded or waited), a first
// start is pinned and let go. The slices are numbered in node order, as the
// plugin derives them on the nodes from the job's node list (a moved slice
// may change its index). `r`: its record so far.
struct PlacedRecord {
    enum class Route { RequeueHeld, Restart, FirstStart };
    Route route = Route::FirstStart;
    Placement placement; // renumbered
    PlacementRecord rec;
};
PlacedRecord placed_record(const SliceJob& sj, const Placement& placement, PlacementRecord r, bool requeue_first,
                           const RackMap& map);

// Native mode without a spare reservation: Slurm places a waiting job
// itself, so degraded racks are kept from it by its exclusion (every node
// of them, `degraded_nodes`, a hostlist; "" when no rack is degraded). The
// record's off_degraded says the helper set it, to lift it when the racks
// recover (a restart included). A user's own --exclude is left alone while
// no rack is degraded.
struct OffDegraded {
    std::optional<PlacementRecord> rec;   // the job's record as it will be (nullopt: unchanged, none)
    std::optional<std::string> exclusion; // its new exclusion (nullopt: as it is)
};
OffDegraded keep_off_degraded(const SliceJob& sj, const std::string& degraded_nodes);

// Slurm's own reason to hold a slice job back (its pending reason, its
// begin time, the accounting limits it tests only when it places, its
// partition, licenses, reservation and array throttle, which its reason
// hides behind the gate or before the scheduler's first look), or nullopt.
// Every update of a pending job (the record written, by the helper or an
// admin) resets Slurm's reason to None until its next scheduling pass
// (_update_job): a job recorded as held back stays so until Slurm gives a
// reason again.
std::optional<HeldBack> held_back(const SliceJob& sj, const HoldInputs& in);

// What the placement of one job may use beyond its request.
// The sets are borrowed (the observation's, the cycle's): nothing is copied
// for a job whose shape failed already.
struct PlaceLimits {
    bool may_lend = false; // may borrow spares (may_borrow_spares())
    const NodeSet* unprotected =
        nullptr;                  // kept from the protected racks (kept_from_protection()): the nodes it may use
    int64_t protection_start = 0; // with unprotected: when the protection starts (the reason given)
    const NodeSet* off_target =
        nullptr; // kept off the rack defragmentation freed for another job: the nodes it may use
};

// Thousands of waiting jobs share a few shapes: while the snapshot does not
// change, a shape that did not fit does not fit again. The cycle forgets
// them (clear()) whenever it takes nodes.
struct ShapeMemo {
    struct Shape {
        int slice, count;
        PlacementMode mode;
        bool split, lend, restricted, kept_off, spares;
        bool operator==(const Shape& o) const {
            return slice == o.slice && count == o.count && mode == o.mode && split == o.split && lend == o.lend &&
                   restricted == o.restricted && kept_off == o.kept_off && spares == o.spares;
        }
    };
    std::vector<std::pair<Shape, PlacementResult>> failed;
    void clear() { failed.clear(); }
};

struct PlaceDecision {
    PlacementResult result;  // ok: the placement; else why it waits (reason, detail)
    bool lent = false;       // ok: it runs as lent work (its nodes stand in for its racks' spares)
    bool on_spares = false;  // ok: on the racks' spares themselves (lent to it)
    bool remembered = false; // not ok: the answer of a shape that did not fit this cycle already
};
PlaceDecision decide_place(const Snapshot& snap, const SliceRequest& req, const PlaceLimits& limits, ShapeMemo& memo);

// Racks kept for the top-priority slice job that waits for room: the
// soonest-free `count` racks with room for one slice each, the slice's nodes
// there (earliest free first; the spares a rack keeps stay out), from when
// the last of them is free (at least now + 1) until its time limit ends
// (0: no limit). Running jobs end at their end time; one without a limit
// (or ending past 30 days) never, for this. A degraded rack is never kept.
struct Protection {
    std::vector<NodeId> nodes; // map order
    int64_t start = 0, end = 0;
};
// Each running job's end (start + time limit; INT64_MAX: no limit, or one
// past 30 days, which Slurm's own planning treats the same).
std::unordered_map<JobId, int64_t> end_times(const std::vector<SlurmJob>& jobs, int64_t now);

std::optional<Protection> plan_protection(const Snapshot& snap, const std::vector<SlurmJob>& jobs, int slice, int count,
                                          int64_t time_limit, int64_t now);

// What the protection reservation needs: nothing, dropped, or set to `want`.
// A start that moved less than a minute is not worth a new reservation.
enum class ProtectChange : uint8_t { Keep, Drop, Set };
ProtectChange protection_change(const std::string& want_nodes, int64_t want_start,
                                const std::optional<Reservation>& have, int64_t now);

// The hand-off's pin: how a job placed on `ids` is pinned in Slurm from
// `start_at` (0: StartTime left alone), as the actions that do it. Its
// ReqNodeList in gate mode, and in native mode where the controller takes
// it as a node pool (`node_pools`, Slurm 25.11+: the segments are chosen
// inside it, and it is exactly one placement); otherwise, in native mode,
// every other node Slurm reports (`nodes`) excluded, since Slurm 24.05-25.05
// refuse a ReqNodeList on a job of several segments while an exclusion
// works on any.
std::vector<Action> pin_actions(const SlurmJob& j, bool native, bool node_pools, const RackMap& map,
                                const std::vector<SlurmNode>& nodes, const std::vector<NodeId>& ids, int64_t start_at);
// Whether the job's exclusion names a node of `ids`; the exclusion without
// them, as a hostlist; every node Slurm reports but `ids`, as a hostlist.
bool excludes_any(const RackMap& map, const SlurmJob& j, const std::vector<NodeId>& ids);
std::string excluded_but(const RackMap& map, const SlurmJob& j, const std::vector<NodeId>& ids);
std::string all_but(const RackMap& map, const std::vector<SlurmNode>& nodes, const std::vector<NodeId>& ids);

} // namespace nvl
