#include "report.hpp"

#include "text.hpp"
#include "hostlist.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

#include <ctime>

#include <algorithm>
#include <map>
#include <set>

namespace nvl {

Snapshot read_snapshot(const RackMap& map, std::string_view text, const std::string& file) {
    Snapshot snap(map);
    int line_no = 0;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string line(text.substr(start, end - start));
        start = end + 1;
        ++line_no;
        if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
        std::vector<std::string> w;
        size_t i = 0;
        while (i < line.size()) {
            while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
            size_t s = i;
            while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
            if (i > s) w.push_back(line.substr(s, i - s));
        }
        if (w.empty()) continue;
        SourcePos pos{file, line_no, 1};
        if (w.size() < 2 || w.size() > 5) throw ParseError(pos, "expected NODE STATE [JOB [SLICE [lent|preemptible]]]");
        auto id = map.find_node(w[0]);
        if (!id) throw ParseError(pos, fmt::format("node \"{}\" is not in the rack map", w[0]));
        auto st = parse_node_state(w[1]);
        if (!st)
            throw ParseError(pos, fmt::format("state \"{}\": expected idle, allocated, mixed, draining, drained, down, "
                                              "spare or unknown",
                                              w[1]));
        NodeStatus ns;
        ns.state = *st;
        auto num = [&](const std::string& v, long min, long max, const char* what) {
            char* e = nullptr;
            long x = std::strtol(v.c_str(), &e, 10);
            if (v.empty() || *e || x < min || x > max)
                throw ParseError(pos, fmt::format("{} \"{}\": expected an integer from {} to {}", what, v, min, max));
            return x;
        };
        if (w.size() > 2) ns.job_id = JobId(num(w[2], 0, 4294967295L, "job"));
        if (w.size() > 3) ns.slice = int16_t(num(w[3], -1, 32767, "slice"));
        if (w.size() > 4) {
            if (w[4] != "lent" && w[4] != "preemptible")
                throw ParseError(pos, fmt::format("\"{}\": the fifth word may only be \"lent\" (the job runs on a "
                                                  "lent spare, which a repair takes back) or \"preemptible\" (a "
                                                  "repair may requeue the job)",
                                                  w[4]));
            ns.preemptible = true;
            ns.lent = w[4] == "lent";
        }
        snap.set(*id, ns);
    }
    return snap;
}

std::string write_snapshot(const Snapshot& snap) {
    std::string out = "# nvlslice snapshot 1\n# NODE STATE [JOB [SLICE [lent|preemptible]]]\n";
    const RackMap& map = snap.map();
    for (NodeId id = 0; id < map.node_count(); ++id) {
        const NodeStatus& st = snap.node(id);
        out += fmt::format("{} {}", map.node_name(id), to_string(st.state));
        if (st.job_id || st.slice >= 0 || st.preemptible) out += fmt::format(" {}", st.job_id);
        if (st.slice >= 0 || st.preemptible) out += fmt::format(" {}", st.slice);
        if (st.lent)
            out += " lent";
        else if (st.preemptible)
            out += " preemptible";
        out += '\n';
    }
    return out;
}

std::vector<ParsedJob> parse_jobs(const std::vector<SlurmJob>& jobs) {
    std::vector<ParsedJob> out;
    out.reserve(jobs.size());
    for (const auto& j : jobs) {
        if (j.state == JobState::Finished) continue;
        ParsedJob p;
        p.job = &j;
        try {
            p.tag = RequestTag::parse(j.comment);
        } catch (const Error& e) {
            p.tag_error = e.what();
        }
        try {
            p.rec = PlacementRecord::parse(j.admin_comment);
            if (p.rec && !p.rec->belongs_to(j.id)) p.copied_from = p.rec->job;
        } catch (const Error& e) {
            p.rec_error = e.what();
        }
        out.push_back(std::move(p));
    }
    return out;
}

Snapshot snapshot_from_slurm(const RackMap& map, const std::vector<SlurmNode>& nodes, const std::vector<SlurmJob>& jobs,
                             const std::optional<Reservation>& spares, LendScope lend) {
    return snapshot_of(map, nodes, parse_jobs(jobs),
                       spares ? NodeSet::of(map, spares->nodes) : NodeSet(map.node_count()), lend);
}

Snapshot snapshot_of(const RackMap& map, const std::vector<SlurmNode>& nodes, const std::vector<ParsedJob>& jobs,
                     const NodeSet& reserved, LendScope lend) {
    Snapshot snap(map);
    for (const auto& n : nodes) {
        auto id = map.find_node(n.name);
        if (!id) continue;
        NodeStatus st;
        st.state = n.failed ? NodeState::Down : n.state;
        if (st.state == NodeState::Idle && n.completing) st.state = NodeState::Allocated;
        if (st.state == NodeState::Idle && reserved.contains(*id)) st.state = NodeState::SpareReserved;
        snap.set(*id, st);
    }
    for (const auto& p : jobs) {
        const SlurmJob& j = *p.job;
        if (j.state != JobState::Running && j.state != JobState::Completing && j.state != JobState::Suspended) continue;
        // a job array task's copy of another job's record is not its own
        const PlacementRecord* rec = p.rec && p.rec->belongs_to(j.id) ? &*p.rec : nullptr;
        const std::optional<RequestTag>& tag = p.tag;
        // Work a repair may take back. A job the helper placed as lent work
        // (its record, which users cannot write, says lent=1: on lent
        // spares, or checkpointable and smaller than a slice) stays lent
        // whatever its owner changes since (the comment, the requeue flag,
        // which the helper restores), and its nodes count as the rack's kept
        // spares; other checkpointable work is preemptible while Slurm may
        // requeue it, but does not stand in for spares (its own failure
        // needs one).
        const bool lent_by_record = rec && rec->lent && lend != LendScope::None;
        const bool preemptible =
            j.state == JobState::Running &&
            (lent_by_record ||
             (tag && may_borrow_spares({tag->checkpointable, j.requeue, j.batch, int(j.nodes.size())}, lend)));
        for (const auto& name : j.nodes) {
            auto id = map.find_node(name);
            if (!id) continue;
            NodeStatus st = snap.node(*id);
            if (is_free(st.state)) st.state = NodeState::Allocated;
            st.job_id = j.id;
            st.slice = -1;
            st.preemptible = preemptible;
            st.lent = j.state == JobState::Running && lent_by_record;
            snap.set(*id, st);
        }
        // slice indices from the record: each slice's hostlist expanded once
        if (rec)
            for (size_t s = 0; s < rec->slices.size(); ++s)
                for (const auto& n : hostlist_expand(rec->slices[s])) {
                    auto id = map.find_node(n);
                    if (!id || snap.node(*id).job_id != j.id) continue;
                    NodeStatus st = snap.node(*id);
                    st.slice = int16_t(s);
                    snap.set(*id, st);
                }
    }
    return snap;
}

namespace {

// A JSON string literal.
std::string json_str(const std::string& v) {
    std::string o = "\"";
    for (char c : v) {
        if (c == '"' || c == '\\')
            o += {'\\', c};
        else if (static_cast<unsigned char>(c) < 0x20)
            o += fmt::format("\\u{:04x}", int(c));
        else
            o += c;
    }
    return o + "\"";
}

struct RackSummary {
    int nodes = 0, free = 0, spares = 0, allocated = 0, draining = 0, drained = 0, down = 0, unknown = 0;
    std::map<std::pair<JobId, int>, std::vector<NodeId>> slices; // (job, slice) -> nodes
    std::map<JobId, int> other_jobs;                             // non-slice jobs -> nodes
};

RackSummary summarize(const Snapshot& snap, DomainId d) {
    RackSummary r;
    for (NodeId id : snap.map().domain(d).nodes) {
        const NodeStatus& st = snap.node(id);
        ++r.nodes;
        switch (st.state) {
        case NodeState::Idle: ++r.free; break;
        case NodeState::SpareReserved: ++r.spares; break;
        case NodeState::Allocated:
        case NodeState::Mixed: ++r.allocated; break;
        case NodeState::Draining: ++r.draining; break;
        case NodeState::Drained: ++r.drained; break;
        case NodeState::Down: ++r.down; break;
        case NodeState::Unknown: ++r.unknown; break;
        }
        if (st.job_id && st.slice >= 0)
            r.slices[{st.job_id, st.slice}].push_back(id);
        else if (st.job_id)
            ++r.other_jobs[st.job_id];
    }
    return r;
}

} // namespace

std::string render_show(const Snapshot& snap, const std::vector<std::string>& racks, bool json,
                        const std::optional<Reservation>& protection, const std::string& mode) {
    const RackMap& map = snap.map();
    NodeSet kept(map.node_count());
    std::string from;
    if (protection && !protection->nodes.empty()) {
        kept = NodeSet::of(map, protection->nodes);
        std::time_t t = std::time_t(protection->start_time);
        char buf[32] = {};
        std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&t));
        from = buf;
    }
    auto protected_in = [&](DomainId d) {
        std::vector<NodeId> ids;
        for (NodeId id : map.domain(d).nodes)
            if (kept.contains(id)) ids.push_back(id);
        return hostlist_compress(map.node_names(ids));
    };
    std::vector<DomainId> which;
    if (racks.empty())
        for (DomainId d = 0; d < map.domains().size(); ++d) which.push_back(d);
    for (const auto& r : racks) {
        auto d = map.find_domain(r);
        if (!d) throw Error(fmt::format("rack \"{}\" is not in the map", r));
        which.push_back(*d);
    }
    std::string out;
    RackSummary total;
    int whole = 0, slices = 0, degraded = 0;
    std::string items;
    for (DomainId d : which) {
        const Domain& dom = map.domain(d);
        RackSummary s = summarize(snap, d);
        total.nodes += s.nodes;
        total.free += s.free;
        total.spares += s.spares;
        total.allocated += s.allocated;
        total.draining += s.draining;
        total.drained += s.drained;
        total.down += s.down;
        slices += int(s.slices.size());
        whole += s.free + s.spares == s.nodes;
        degraded += snap.degraded(d);
        const int room = std::max(0, domain_room(dom, snap.counts(d), false));
        if (json) {
            std::string sl;
            for (const auto& [key, ids] : s.slices)
                sl += fmt::format("{}{{\"job\":{},\"slice\":{},\"nodes\":\"{}\"}}", sl.empty() ? "" : ",", key.first,
                                  key.second, hostlist_compress(map.node_names(ids)));
            const std::string prot = protected_in(d);
            items += fmt::format(
                "{}{{\"rack\":\"{}\",\"nodes\":\"{}\",\"count\":{},\"gpus_per_node\":{},"
                "\"spares_wanted\":{},\"free\":{},\"spare\":{},\"allocated\":{},\"draining\":{},"
                "\"drained\":{},\"down\":{},\"room\":{},\"degraded\":{},\"slices\":[{}]{}}}",
                items.empty() ? "" : ",", dom.name, map.domain_hostlist(d), s.nodes, dom.gpus_per_node, dom.spares,
                s.free, s.spares, s.allocated, s.draining, s.drained, s.down, room,
                snap.degraded(d) ? json_str(snap.degraded_why(d)) : "false", sl,
                prot.empty() ? "" : fmt::format(",\"protected\":{{\"nodes\":\"{}\",\"from\":\"{}\"}}", prot, from));
            continue;
        }
        out += fmt::format("RackName={} Nodes={} NodeCnt={} GPUsPerNode={} Spares={}\n", dom.name,
                           map.domain_hostlist(d), s.nodes, dom.gpus_per_node, dom.spares);
        out += fmt::format("   Free={} Spare={} Allocated={} Draining={} Drained={} Down={} SliceRoom={}\n", s.free,
                           s.spares, s.allocated, s.draining, s.drained, s.down, room);
        if (snap.degraded(d))
            out += fmt::format("   Degraded: {} (no new slices; its slice jobs move to healthy racks)\n",
                               escape_control(snap.degraded_why(d)));
        for (const auto& [key, ids] : s.slices)
            out += fmt::format("   Slice JobId={} Index={} Nodes={}\n", key.first, key.second,
                               hostlist_compress(map.node_names(ids)));
        for (const auto& [job, n] : s.other_jobs) out += fmt::format("   Job JobId={} NodeCnt={}\n", job, n);
        if (const std::string prot = protected_in(d); !prot.empty())
            out += fmt::format("   Protected Nodes={} From={} (kept for the top-priority slice job)\n", prot, from);
    }
    if (json)
        return fmt::format("{{\"racks\":[{}],\"summary\":{{\"racks\":{},\"nodes\":{},\"free\":{},\"spare\":{},"
                           "\"allocated\":{},\"draining\":{},\"drained\":{},\"down\":{},\"slices\":{},"
                           "\"whole_free_racks\":{},\"degraded_racks\":{}{}}}}}\n",
                           items, which.size(), total.nodes, total.free, total.spares, total.allocated, total.draining,
                           total.drained, total.down, slices, whole, degraded,
                           mode.empty() ? "" : fmt::format(",\"mode\":\"{}\"", mode));
    out += fmt::format("Cluster Racks={} Nodes={} Free={} Spare={} Allocated={} Draining={} Drained={} Down={} "
                       "Slices={} WholeFreeRacks={} DegradedRacks={}{}\n",
                       which.size(), total.nodes, total.free, total.spares, total.allocated, total.draining,
                       total.drained, total.down, slices, whole, degraded, mode.empty() ? "" : " Mode=" + mode);
    return out;
}

Cell cell_of(const NodeStatus& st) {
    switch (st.state) {
    case NodeState::Idle: return Cell::Free;
    case NodeState::SpareReserved: return Cell::Spare;
    case NodeState::Draining: return Cell::Draining;
    case NodeState::Drained: return Cell::Drained;
    case NodeState::Down:
    case NodeState::Unknown: return Cell::Down;
    default: return st.slice >= 0 ? Cell::Slice : Cell::OtherJob;
    }
}

namespace {

struct Style {
    char glyph;
    const char* ansi;
    const char* svg;
    const char* label;
};

const Style& style(Cell c) {
    static const Style s[] = {
        {'.', "\x1b[32m", "#9be29b", "free"},      {'S', "\x1b[1;34m", "#2f6fdf", "slice job"},
        {'o', "\x1b[36m", "#8fc6d9", "other job"}, {'s', "\x1b[33m", "#f2c14e", "spare"},
        {'d', "\x1b[35m", "#d98fd9", "draining"},  {'D', "\x1b[1;35m", "#a040a0", "drained"},
        {'X', "\x1b[1;31m", "#d93b3b", "down"},
    };
    return s[int(c)];
}

constexpr Cell kAllCells[] = {Cell::Free,     Cell::Slice,   Cell::OtherJob, Cell::Spare,
                              Cell::Draining, Cell::Drained, Cell::Down};

} // namespace

std::string render_map_text(const Snapshot& snap, bool color) {
    const RackMap& map = snap.map();
    size_t width = 4;
    for (const auto& d : map.domains()) width = std::max(width, d.name.size());
    std::string out = "legend:";
    for (Cell c : kAllCells)
        out += fmt::format("  {}{}{} {}", color ? style(c).ansi : "", style(c).glyph, color ? "\x1b[0m" : "",
                           style(c).label);
    out += "\n";
    for (DomainId d = 0; d < map.domains().size(); ++d) {
        const Domain& dom = map.domain(d);
        out += fmt::format("{:<{}} ", dom.name, width);
        Cell prev = Cell::Free;
        bool open = false;
        for (NodeId id : dom.nodes) {
            Cell c = cell_of(snap.node(id));
            if (color && (!open || c != prev)) {
                out += style(c).ansi;
                open = true;
                prev = c;
            }
            out += style(c).glyph;
        }
        if (color) out += "\x1b[0m";
        const DomainCounts& k = snap.counts(d);
        out += fmt::format("  {:>3} free{}\n", k.free,
                           k.degraded ? "  DEGRADED: " + escape_control(snap.degraded_why(d)) : "");
    }
    return out;
}

std::string render_map_svg(const Snapshot& snap) {
    const RackMap& map = snap.map();
    const int cell = 12, gap = 2, label = 70, top = 30;
    size_t max_nodes = 1;
    for (const auto& d : map.domains()) max_nodes = std::max(max_nodes, d.nodes.size());
    // Racks side by side in columns of up to 32, so 128 racks stay on one page.
    const int per_col = 32;
    const int cols = int((map.domains().size() + per_col - 1) / per_col);
    const int col_w = label + int(max_nodes) * (cell + gap) + 20;
    const int rows = int(std::min<size_t>(map.domains().size(), per_col));
    const int w = std::max(cols * col_w, 760), h = top + rows * (cell + gap) + 20;
    std::string out = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                  "font-family=\"monospace\" font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" "
                                  "fill=\"white\"/>\n",
                                  w, h);
    int x = 10;
    for (Cell c : kAllCells) {
        out += fmt::format("<rect x=\"{}\" y=\"8\" width=\"{}\" height=\"{}\" fill=\"{}\"/><text x=\"{}\" y=\"18\">{}"
                           "</text>\n",
                           x, cell, cell, style(c).svg, x + cell + 4, style(c).label);
        x += 100;
    }
    for (DomainId d = 0; d < map.domains().size(); ++d) {
        const int cx = int(d / per_col) * col_w, cy = top + int(d % per_col) * (cell + gap);
        out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", cx + 4, cy + cell - 2, map.domain(d).name);
        int i = 0;
        for (NodeId id : map.domain(d).nodes) {
            const NodeStatus& st = snap.node(id);
            out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} {}{}</title>"
                               "</rect>\n",
                               cx + label + i * (cell + gap), cy, cell, cell, style(cell_of(st)).svg, map.node_name(id),
                               to_string(st.state), st.job_id ? fmt::format(" job {}", st.job_id) : std::string());
            ++i;
        }
    }
    out += "</svg>\n";
    return out;
}

} // namespace nvl

namespace nvl {

std::vector<std::string> check_map_against_slurm(const RackMap& map, const std::vector<SlurmNode>& nodes) {
    std::vector<std::string> out;
    std::set<std::string> known;
    std::vector<std::string> extra;
    for (const auto& n : nodes) {
        known.insert(n.name);
        auto id = map.find_node(n.name);
        if (!id) {
            extra.push_back(n.name);
            continue;
        }
        const std::string& want = map.domain(map.domain_of(*id)).feature;
        if (!names_feature(n.features, want))
            out.push_back(fmt::format("feature: node {} is in rack {} but its Slurm features are \"{}\" (add "
                                      "Features={} in slurm.conf, or set feature: in the map)",
                                      n.name, map.domain(map.domain_of(*id)).name, n.features, want));
    }
    std::vector<std::string> missing;
    for (NodeId id = 0; id < map.node_count(); ++id)
        if (!known.count(map.node_name(id))) missing.push_back(map.node_name(id));
    if (!missing.empty())
        out.insert(out.begin(), fmt::format("missing: {} node(s) of the map are not Slurm nodes: {}", missing.size(),
                                            hostlist_compress(missing)));
    if (!extra.empty())
        out.insert(out.begin(), fmt::format("extra: {} Slurm node(s) are in no rack of the map: {}", extra.size(),
                                            hostlist_compress(extra)));
    return out;
}

} // namespace nvl
