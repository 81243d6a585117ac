// The placement and protection stage (place_stage.hpp).
#include "place_stage.hpp"

#include "defrag.hpp"
#include "hostlist.hpp"
#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace nvl {

const char* to_string(WaitingCase c) {
    switch (c) {
    case WaitingCase::Done: return "done";
    case WaitingCase::OthersHold: return "others' hold";
    case WaitingCase::HandBack: return "hand back";
    case WaitingCase::WaitsForSlurm: return "waits for Slurm";
    case WaitingCase::Behind: return "behind the gate";
    case WaitingCase::Native: return "native";
    case WaitingCase::Place: return "place";
    }
    return "?";
}

WaitingCase decide_waiting(const SliceJob& sj, bool done, bool gated, bool held_by_us, bool pinned) {
    const SlurmJob& j = *sj.job;
    if (done) return WaitingCase::Done;
    if (j.held && !held_by_us) return WaitingCase::OthersHold;
    const bool placed = has_placement(sj);
    if (held_by_us && !placed) return WaitingCase::HandBack;
    if (!j.held && !gated && placed && pinned) return WaitingCase::WaitsForSlurm;
    if (placed) return WaitingCase::Place;
    return native(sj) ? WaitingCase::Native : WaitingCase::Behind;
}

std::optional<WaitReason> stays_behind(const SliceJob& sj, const std::optional<HeldBack>& holds, bool retry) {
    if (holds) return held_back_reason(*holds);
    if (!retry) return std::nullopt;
    if (sj.rec && !sj.rec->reason.empty()) return WaitReason{sj.rec->why, sj.rec->reason};
    return WaitReason{Why::Retry, "placed again shortly"};
}

SliceRequest slice_request(JobId id, const RequestTag& tag, int64_t waited_s, int64_t prefer_wait_s) {
    SliceRequest req;
    req.job_id = id;
    req.slice_size = tag.slice;
    req.slice_count = tag.count;
    req.mode = tag.mode;
    req.allow_split = tag.mode == PlacementMode::Prefer && waited_s >= prefer_wait_s;
    return req;
}

SliceRequest slice_request(const SliceJob& sj, int64_t now, int64_t prefer_wait_s) {
    return slice_request(sj.job->id, sj.tag, now - sj.job->submit_time, prefer_wait_s);
}

bool kept_from_protection(const SlurmJob& j, bool is_top, const NodeSet& unprotected,
                          const std::optional<Reservation>& protection, int64_t now) {
    if (unprotected.unsized() || is_top) return false;
    return !(j.time_limit > 0 && protection && now + j.time_limit <= protection->start_time);
}

PlaceDecision decide_place(const Snapshot& snap, const SliceRequest& request, const PlaceLimits& limits,
                           ShapeMemo& memo) {
    PlaceDecision d;
    const bool restricted = limits.unprotected, kept_off = limits.off_target;
    const ShapeMemo::Shape key{request.slice_size, request.slice_count, request.mode, request.allow_split,
                               limits.may_lend,    restricted,          kept_off,     request.use_spares};
    auto seen = std::find_if(memo.failed.begin(), memo.failed.end(), [&](const auto& f) { return f.first == key; });
    if (seen != memo.failed.end()) {
        d.result = seen->second;
        d.remembered = true;
        return d;
    }
    SliceRequest req = request;
    if (restricted) req.allowed = *limits.unprotected;
    if (kept_off) {
        if (req.allowed.unsized())
            req.allowed = *limits.off_target;
        else
            req.allowed &= *limits.off_target;
    }
    // Spares are not left idle: preemptible work may borrow them until a
    // repair needs them back (defrag.hpp, the simulator's policy too).
    d.result = place_or_borrow(snap, req, limits.may_lend, d.lent, &d.on_spares);
    if (!d.result.ok && restricted) {
        // Say why as if nothing were kept: the kept racks are not failed
        // nodes, and the job is busy only because a higher-priority one
        // comes first.
        SliceRequest open = req;
        open.allowed = NodeSet();
        PlacementResult free_view = place(snap, open);
        if (free_view.ok) {
            d.result.reason = Reason::Busy;
            d.result.detail = fmt::format("busy: the racks with room are kept for a higher-priority slice job from "
                                          "{}; this job would run past that",
                                          iso_time(limits.protection_start));
        } else {
            d.result = std::move(free_view);
        }
    }
    if (!d.result.ok) memo.failed.emplace_back(key, d.result);
    return d;
}

std::unordered_map<JobId, int64_t> end_times(const std::vector<SlurmJob>& jobs, int64_t now) {
    std::unordered_map<JobId, int64_t> ends;
    for (const auto& j : jobs)
        // a job without a time limit ends "in a year" for Slurm: unknown
        if (j.state == JobState::Running)
            ends[j.id] = j.end_time > 0 && j.end_time - now < 30 * 86400 ? j.end_time : INT64_MAX;
    return ends;
}

std::optional<Protection> plan_protection(const Snapshot& snap, const std::vector<SlurmJob>& jobs, int slice, int count,
                                          int64_t time_limit, int64_t now) {
    const RackMap& map = snap.map();
    const int k = slice;
    const std::unordered_map<JobId, int64_t> ends = end_times(jobs, now);
    // per rack: when it has room for one slice, and the nodes it would take
    struct RackTime {
        int64_t when;
        DomainId d;
        std::vector<NodeId> nodes;
    };
    std::vector<RackTime> racks;
    std::vector<std::pair<int64_t, NodeId>> avail;
    for (DomainId d = 0; d < map.domains().size(); ++d) {
        const Domain& dom = map.domain(d);
        const DomainCounts& dc = snap.counts(d);
        const int kept = kept_spares(dom, dc);
        // a degraded rack takes no new slice: never kept for one
        if (snap.degraded(d) || !dom.allows_slice(k) || dc.healthy - kept < k) continue;
        avail.clear();
        for (NodeId id : dom.nodes) {
            const NodeStatus& st = snap.node(id);
            if (st.state == NodeState::Idle) {
                avail.emplace_back(now, id);
            } else if (is_healthy(st.state) && !is_free(st.state) && st.job_id) {
                auto e = ends.find(st.job_id);
                avail.emplace_back(e == ends.end() ? INT64_MAX : e->second, id);
            }
        }
        // the slice's nodes, earliest free first; the reserved spares stay out
        if (int(avail.size()) < k) continue;
        std::sort(avail.begin(), avail.end());
        const int64_t when = avail[size_t(k - 1)].first;
        if (when == INT64_MAX) continue;
        RackTime rt{when, d, {}};
        for (int i = 0; i < k; ++i) rt.nodes.push_back(avail[size_t(i)].second);
        racks.push_back(std::move(rt));
    }
    if (int(racks.size()) < count) return std::nullopt;
    std::sort(racks.begin(), racks.end(),
              [](const RackTime& a, const RackTime& b) { return a.when != b.when ? a.when < b.when : a.d < b.d; });
    Protection p;
    for (int i = 0; i < count; ++i) {
        p.start = std::max(p.start, racks[size_t(i)].when);
        p.nodes.insert(p.nodes.end(), racks[size_t(i)].nodes.begin(), racks[size_t(i)].nodes.end());
    }
    std::sort(p.nodes.begin(), p.nodes.end());
    p.start = std::max(p.start, now + 1);
    p.end = time_limit > 0 ? p.start + time_limit : 0;
    return p;
}

ProtectChange protection_change(const std::string& want_nodes, int64_t want_start,
                                const std::optional<Reservation>& have, int64_t now) {
    const bool exists = have && !have->nodes.empty();
    if (want_nodes.empty()) return exists ? ProtectChange::Drop : ProtectChange::Keep;
    if (exists && have->nodes == want_nodes &&
        (have->start_time <= now || std::llabs(have->start_time - want_start) < 60))
        return ProtectChange::Keep;
    return ProtectChange::Set;
}

std::vector<Action> pin_actions(const SlurmJob& j, bool native, bool node_pools, const RackMap& map,
                                const std::vector<SlurmNode>& nodes, const std::vector<NodeId>& ids, int64_t start_at) {
    std::vector<Action> out;
    const std::string list = hostlist_compress(map.node_names(ids));
    if (!native || node_pools) {
        // an exclusion of this job's new nodes (one of an earlier pin by
        // exclusion) would contradict the pool: those nodes leave it
        // first, the rest stays until the pool is set (a rack exclusion,
        // keep_off_degraded, never meets a placement)
        if (native && excludes_any(map, j, ids)) out.push_back({j.id, action::Exclude{excluded_but(map, j, ids)}});
        if (start_at)
            out.push_back({j.id, action::Pin{list, start_at}});
        else
            out.push_back({j.id, action::PinOnly{list}});
        return out;
    }
    // a node list the user gave (-w) would fight the placement, as the
    // helper's own ReqNodeList replaces it in gate mode
    if (!j.req_nodes.empty()) out.push_back({j.id, action::PinOnly{}});
    out.push_back({j.id, action::Exclude{all_but(map, nodes, ids), start_at}});
    return out;
}

bool excludes_any(const RackMap& map, const SlurmJob& j, const std::vector<NodeId>& ids) {
    if (j.exc_nodes.empty()) return false;
    for (const auto& n : hostlist_expand(j.exc_nodes))
        if (auto id = map.find_node(n); id && std::find(ids.begin(), ids.end(), *id) != ids.end()) return true;
    return false;
}

std::string excluded_but(const RackMap& map, const SlurmJob& j, const std::vector<NodeId>& ids) {
    std::vector<std::string> keep;
    for (const auto& n : hostlist_expand(j.exc_nodes)) {
        auto id = map.find_node(n);
        if (!id || std::find(ids.begin(), ids.end(), *id) == ids.end()) keep.push_back(n);
    }
    return hostlist_compress(keep);
}

std::string all_but(const RackMap& map, const std::vector<SlurmNode>& nodes, const std::vector<NodeId>& ids) {
    std::unordered_set<std::string> keep;
    for (NodeId id : ids) keep.insert(map.node_name(id));
    std::vector<std::string> names;
    names.reserve(nodes.size());
    for (const auto& n : nodes)
        if (!keep.count(n.name)) names.push_back(n.name);
    std::sort(names.begin(), names.end());
    return hostlist_compress(names);
}

std::unordered_map<JobId, int> count_array_tasks(const std::vector<SlurmJob>& jobs) {
    std::unordered_map<JobId, int> out;
    for (const auto& j : jobs)
        if (j.array_id && j.array_throttle > 0) out.emplace(j.array_id, 0);
    if (!out.empty())
        for (const auto& j : jobs)
            if (j.array_id && j.state != JobState::Pending)
                if (auto it = out.find(j.array_id); it != out.end()) ++it->second;
    return out;
}

std::optional<HeldBack> held_back(const SliceJob& sj, const HoldInputs& in) {
    const SlurmJob& j = *sj.job;
    if (auto h = held_back_by_slurm(j, in.now, in.gate_license)) return h;
    if (j.reason.is(ReasonKind::None) && sj.rec && sj.rec->state == RecordState::Waiting &&
        sj.rec->why == Why::HeldBack && sj.rec->reason.size() >= kHeldBack.size())
        return HeldBack::from_text(sj.rec->reason.substr(kHeldBack.size()));
    if (in.limits)
        if (auto h = held_back_by_limits(j, *in.limits)) return h;
    if (in.gates) {
        int running = 0;
        if (j.array_id && in.array_running)
            if (auto a = in.array_running->find(j.array_id); a != in.array_running->end()) running = a->second;
        return held_back_by_gates(j, *in.gates, running, in.gate_license, in.now, in.limits);
    }
    return std::nullopt;
}

OffDegraded keep_off_degraded(const SliceJob& sj, const std::string& degraded_nodes) {
    OffDegraded out;
    const bool was = sj.rec && sj.rec->off_degraded;
    if (degraded_nodes.empty() && !was) return out;
    PlacementRecord rec = sj.rec.value_or(PlacementRecord{});
    if (!sj.rec) {
        rec.state = RecordState::Waiting;
        rec.slice = sj.tag.slice;
    }
    rec.off_degraded = !degraded_nodes.empty();
    out.rec = std::move(rec);
    auto same = [](const std::string& a, const std::string& b) {
        if (a == b) return true;
        auto x = hostlist_expand(a), y = hostlist_expand(b);
        std::sort(x.begin(), x.end());
        std::sort(y.begin(), y.end());
        return x == y;
    };
    if (!same(sj.job->exc_nodes, degraded_nodes)) out.exclusion = degraded_nodes;
    return out;
}

PlacedRecord placed_record(const SliceJob& sj, const Placement& placement, PlacementRecord r, bool requeue_first,
                           const RackMap& map) {
    PlacedRecord out;
    Placement& p = out.placement = placement;
    std::sort(p.slices.begin(), p.slices.end(),
              [](const PlacedSlice& a, const PlacedSlice& b) { return a.nodes.front() < b.nodes.front(); });
    for (size_t i = 0; i < p.slices.size(); ++i) p.slices[i].index = int(i);
    r.slice = p.slice_size;
    r.slices.clear();
    for (const auto& sl : p.slices) r.slices.push_back(hostlist_compress(map.node_names(sl.nodes)));
    r.split = p.split;
    r.clear_reason();
    if (requeue_first) {
        out.route = PlacedRecord::Route::RequeueHeld;
        r.state = RecordState::Repairing;
        r.hold = true; // the one hold the helper may release
    } else if (sj.job->restarts > 0) {
        // a placement that ran before is a repair; anything else (it
        // yielded, waited after a requeue) is a restart
        out.route = PlacedRecord::Route::Restart;
        const bool repair = sj.rec && (sj.rec->state == RecordState::Placed || sj.rec->state == RecordState::Repairing);
        r.state = repair ? RecordState::Repairing : RecordState::Restarting;
    } else {
        out.route = PlacedRecord::Route::FirstStart;
        r.state = RecordState::Placed;
        r.hold = false;
    }
    out.rec = std::move(r);
    return out;
}

} // namespace nvl
