// The observe stage (observe.hpp).
#include "observe.hpp"

#include "rack_health.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace nvl {

Observation observe(const RackMap& map, const ClusterView& view, LendScope lend, const std::optional<std::regex>& drain,
                    const std::optional<std::regex>& rack, const std::unordered_map<JobId, std::string>* records) {
    Observation o{Snapshot(map), NodeSet(map.node_count()), NodeSet(map.node_count()), NodeSet(), {}, {}, {}};
    o.jobs = parse_jobs(view.jobs);
    if (records && !records->empty())
        for (ParsedJob& p : o.jobs) {
            const JobState st = p.job->state;
            if (p.rec || !p.rec_error.empty() || !p.tag || (st != JobState::Pending && st != JobState::Running))
                continue;
            const auto it = records->find(p.job->id);
            if (it == records->end()) continue;
            try {
                p.rec = PlacementRecord::parse(it->second);
            } catch (const Error&) {
                continue; // (it was read once: not expected)
            }
            if (p.rec) o.restored.push_back(p.job->id);
        }
    if (view.spares) o.reserved = NodeSet::of(map, view.spares->nodes);
    o.snap = snapshot_of(map, view.nodes, o.jobs, o.reserved, lend);
    if (view.protection && !view.protection->nodes.empty()) {
        o.unprotected = NodeSet(map.node_count(), true);
        for (NodeId id : NodeSet::of(map, view.protection->nodes).ids()) o.unprotected.erase(id);
    }
    o.reasons.resize(map.node_count());
    for (const auto& n : view.nodes) {
        auto id = map.find_node(n.name);
        if (!id) continue; // a node outside the map is none of our business
        const NodeState st = o.snap.node(*id).state;
        o.failed.set(*id, n.failed || ((st == NodeState::Draining || st == NodeState::Drained) &&
                                       (!drain || std::regex_search(n.reason, *drain))));
        o.reasons[*id] = n.reason; // node_reasons(), in the same pass
    }
    mark_degraded_racks(o.snap, o.reasons, rack);
    return o;
}

std::optional<std::string> tag_mismatch(const RequestTag& t, const SlurmJob& j) {
    if (t.slice <= 0 || t.count <= 0 || int64_t(t.nodes) != int64_t(t.slice) * int64_t(t.count))
        return fmt::format("its tag asks for {} nodes as {} slice(s) of {}", t.nodes, t.count, t.slice);
    if (j.num_nodes != t.nodes) return fmt::format("its tag asks for {} nodes, the job for {}", t.nodes, j.num_nodes);
    if (t.checkpointable && !j.requeue) return "its tag says checkpointable, but the job was submitted --no-requeue";
    return {};
}

JobVerdict judge_job(const ParsedJob& p) {
    const SlurmJob& j = *p.job;
    JobVerdict v;
    if (j.state != JobState::Pending && j.state != JobState::Running) return v;
    const std::optional<RequestTag>& tag = p.tag;
    if (!p.tag_error.empty())
        v.wrong = fmt::format("its nvlslice tag is unreadable: {}", p.tag_error);
    else if (tag)
        v.wrong = tag_mismatch(*tag, j).value_or("");
    const bool describes = tag && v.wrong.empty();
    std::optional<PlacementRecord> rec = p.rec;
    if (!p.rec_error.empty() && describes) v.bad_record = p.rec_error;
    if (rec && !rec->belongs_to(j.id)) {
        // Slurm copied another job's record here (a job array's task split
        // off): this job has no placement of its own yet.
        if (describes) v.copied_record_of = rec->job;
        rec.reset();
    }
    // The loan of a spare holds only while a repair can requeue the
    // borrower: its owner's requeue=0 is undone.
    v.restore_requeue = rec && rec->lent && j.state == JobState::Running && !j.requeue && j.batch;
    if (!v.wrong.empty()) {
        // Left to Slurm as it is (no hold, no pin, no nodes counted); named
        // once, in its record.
        v.kind = JobVerdict::Kind::Ignored;
        PlacementRecord ignored;
        ignored.job = j.id;
        ignored.state = RecordState::Ignored;
        ignored.set_reason(Why::Ignored, "left to Slurm: " + v.wrong);
        // a running job on a lent spare stays lent: editing its comment does
        // not make the spare unreclaimable
        if (rec && rec->lent && j.state == JobState::Running) {
            ignored.lent = true;
            ignored.slice = rec->slice;
            ignored.slices = rec->slices;
        }
        if (!rec || rec->state != RecordState::Ignored || rec->reason != ignored.reason) v.ignored = std::move(ignored);
        return v;
    }
    if (!tag) return v;
    if (rec && rec->state == RecordState::Ignored) {
        // Its tag describes it again (its owner restored the comment): taken
        // back as a job without a placement, its loan kept.
        rec->state = RecordState::Waiting;
        rec->clear_reason();
        v.taken_back = true;
    }
    v.kind = JobVerdict::Kind::Slice;
    v.slice = SliceJob{&j, *tag, std::move(rec), p.copied_from};
    return v;
}

void sort_by_priority(std::vector<SliceJob>& jobs) {
    std::sort(jobs.begin(), jobs.end(), [](const SliceJob& a, const SliceJob& b) {
        if (a.job->priority != b.job->priority) return a.job->priority > b.job->priority;
        if (a.job->submit_time != b.job->submit_time) return a.job->submit_time < b.job->submit_time;
        return a.job->id < b.job->id;
    });
}

} // namespace nvl
