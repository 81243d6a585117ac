#include "rack_health.hpp"

#include "error.hpp"
#include "hostlist.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nvl {

std::optional<std::string> rack_degraded_why(const Snapshot& snap, DomainId d, const std::vector<std::string>& reasons,
                                             const std::optional<std::regex>& rack_scope) {
    const Domain& dom = snap.map().domain(d);
    std::vector<NodeId> failed;
    for (NodeId id : dom.nodes)
        if (!is_healthy(snap.node(id).state)) failed.push_back(id);
    if (rack_scope)
        for (NodeId id : failed)
            if (id < reasons.size() && !reasons[id].empty() && std::regex_search(reasons[id], *rack_scope))
                return fmt::format("{} is out with a rack-level failure: \"{}\"", snap.map().node_name(id),
                                   reasons[id]);
    if (int(failed.size()) > dom.spares)
        return fmt::format("{} failed node(s) ({}), more than its {} spare(s)", failed.size(),
                           hostlist_compress(snap.map().node_names(failed)), dom.spares);
    return {};
}

int mark_degraded_racks(Snapshot& snap, const std::vector<std::string>& reasons,
                        const std::optional<std::regex>& rack_scope) {
    int n = 0;
    for (DomainId d = 0; d < snap.map().domains().size(); ++d) {
        std::optional<std::string> why = rack_degraded_why(snap, d, reasons, rack_scope);
        n += why.has_value();
        snap.set_degraded(d, why.value_or(""));
    }
    return n;
}

RackVerdicts judge_racks(const Snapshot& snap, const std::vector<std::string>& before) {
    const RackMap& map = snap.map();
    const size_t nd = map.domains().size();
    RackVerdicts v{std::vector<RackStats>(nd), {}, NodeSet(map.node_count())};
    for (DomainId d = 0; d < nd; ++d) {
        const Domain& dom = map.domain(d);
        RackStats& r = v.stats[d];
        for (NodeId id : dom.nodes) {
            const NodeStatus& st = snap.node(id);
            r.free += st.state == NodeState::Idle;
            r.spare += st.state == NodeState::SpareReserved;
            r.failed += !is_healthy(st.state);
            r.lent += st.lent && is_healthy(st.state) && !is_free(st.state);
            r.slice_nodes += st.slice >= 0 && st.job_id != 0;
        }
        r.room = std::max(0, domain_room(dom, snap.counts(d), false));
        const std::string& why = snap.degraded_why(d);
        r.degraded = !why.empty();
        if (r.degraded)
            for (NodeId id : dom.nodes) v.out_of_service.insert(id);
        const std::string& was = d < before.size() ? before[d] : std::string();
        if (why != was) v.changes.push_back({d, why});
    }
    return v;
}

SilentNodes judge_silent(const RackMap& map, const std::vector<SlurmNode>& nodes, const Snapshot& snap,
                         const std::unordered_map<std::string, int64_t>& since, int64_t mono, int64_t after_s,
                         int64_t probe_after_s, const std::function<bool(JobId)>& runs_slice_job) {
    SilentNodes out;
    if (after_s <= 0 && probe_after_s <= 0) return out; // not asked for: nothing remembered
    for (const auto& n : nodes) {
        if (n.failed) continue; // Slurm has marked it DOWN already
        const bool flagged = after_s > 0 && n.not_responding;
        const bool unanswered = probe_after_s > 0 && n.unanswered_s >= probe_after_s;
        const bool suspect = probe_after_s > 0 && n.unanswered_s > 0 && !unanswered;
        if (!flagged && !unanswered && !suspect) continue;
        auto id = map.find_node(n.name);
        if (!id) continue;
        if (suspect && !flagged) {
            const NodeStatus& st = snap.node(*id);
            out.suspect = out.suspect || (st.job_id != 0 && runs_slice_job(st.job_id));
            continue;
        }
        int64_t first = mono;
        if (flagged) {
            auto it = since.find(n.name);
            first = it == since.end() ? mono : it->second;
            out.since.emplace(n.name, first);
        }
        const NodeStatus& st = snap.node(*id);
        if (st.job_id == 0 || !runs_slice_job(st.job_id)) continue; // only slice jobs are the helper's to repair
        if (unanswered) {
            out.down.push_back({n.name, st.job_id, n.unanswered_s, true, !n.unanswered_refused});
        } else if (mono - first >= after_s) {
            out.down.push_back({n.name, st.job_id, mono - first, false});
        }
    }
    return out;
}

std::optional<std::string> not_responding_warning(int64_t after_s, int tcp_timeout_s, int slurmd_timeout_s) {
    if (after_s <= 0 || tcp_timeout_s <= 0 || tcp_timeout_s >= 2 || slurmd_timeout_s <= 0) return std::nullopt;
    const int64_t ping_s = slurmd_timeout_s / 3;
    if (after_s > ping_s) return std::nullopt;
    return fmt::format("repair_not_responding_after: {} s with slurm.conf's TCPTimeout={}: one lost SYN fails a "
                       "ping, and slurmctld's NOT_RESPONDING flag on a healthy node lasts until its next ping, "
                       "SlurmdTimeout/3 = {} s later; this helper would repair such a node. Set it above {} s, or "
                       "0 (nvlsliced's probe, silent_after, finds silent nodes and dead slurmds without it)",
                       after_s, tcp_timeout_s, ping_s, ping_s);
}

std::vector<std::string> node_reasons(const RackMap& map, const std::vector<SlurmNode>& nodes) {
    std::vector<std::string> out(map.node_count());
    for (const auto& n : nodes)
        if (!n.reason.empty())
            if (auto id = map.find_node(n.name)) out[*id] = n.reason;
    return out;
}

std::optional<std::regex> reason_regex(const std::string& pattern, const std::string& origin) {
    if (pattern.empty()) return std::nullopt;
    try {
        return std::regex(pattern, std::regex::ECMAScript | std::regex::icase | std::regex::nosubs);
    } catch (const std::regex_error& e) {
        throw Error(fmt::format("{}: \"{}\" is not a valid regular expression ({})", origin, pattern, e.what()));
    }
}

} // namespace nvl
