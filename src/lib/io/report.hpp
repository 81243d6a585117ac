// nvlslice — topology reports on a snapshot: snapshot files, `nvl-topo
// show` (like `scontrol show topology`), and the rack map picture.
//
// Snapshot file format (written by `nvl-topo snapshot`, read with
// `--snapshot FILE`), one node per line, '#' starts a comment:
//   # nvlslice snapshot 1
//   NODE STATE [JOB [SLICE [lent|preemptible]]]
// STATE is idle, allocated, mixed, draining, drained, down, spare or
// unknown; JOB the job id on the node (0 = none); SLICE its slice index in
// that job (-1 = not a slice job); "lent": the job runs on a spare lent to
// it and is requeued to give the node back to a repair, so the node counts
// as one of its rack's spares; "preemptible": a repair may requeue the job,
// but its nodes do not stand in for spares. Nodes not listed are idle.
#pragma once

#include "cluster_api.hpp"
#include "defrag.hpp"
#include "model.hpp"
#include "slice_job.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

Snapshot read_snapshot(const RackMap& map, std::string_view text, const std::string& file);
std::string write_snapshot(const Snapshot& snap);

// The live state as the helper sees it: node states (spares from the
// reservation), owners, slice indices from the helper's records, and which
// nodes run work a repair may take back (`lend`, defrag.hpp). Linear in
// nodes plus jobs: every hostlist is expanded once.
Snapshot snapshot_from_slurm(const RackMap& map, const std::vector<SlurmNode>& nodes, const std::vector<SlurmJob>& jobs,
                             const std::optional<Reservation>& spares, LendScope lend = LendScope::Checkpointable);

// A job with its nvlslice tag (comment) and record (admin_comment), each
// parsed once per cycle: the snapshot and the helper's cycle read them.
struct ParsedJob {
    const SlurmJob* job = nullptr;
    std::optional<RequestTag> tag;      // nullopt: untagged, or unreadable (tag_error)
    std::optional<PlacementRecord> rec; // as written: another job's copy too (rec->belongs_to)
    std::string tag_error, rec_error;   // why it is unreadable (Error::what())
    JobId copied_from = 0;              // the job whose record it carries (a job array's split copies it)
};
// Every job Slurm has not finished, in Slurm's order.
std::vector<ParsedJob> parse_jobs(const std::vector<SlurmJob>& jobs);
// snapshot_from_slurm() of jobs already parsed, the spare reservation's
// nodes already read.
Snapshot snapshot_of(const RackMap& map, const std::vector<SlurmNode>& nodes, const std::vector<ParsedJob>& jobs,
                     const NodeSet& reserved, LendScope lend);

// `nvl-topo show [RACK...]`: empty `racks` = all. Throws nvl::Error on an
// unknown rack name.
// `protection`: nvlsliced's reservation of racks kept for the top-priority
// slice job, shown per rack with its start.
// `mode`: the hand-off the running Slurm makes nvlslice use ("native",
// "gate"; "" = unknown, e.g. from a recorded snapshot).
std::string render_show(const Snapshot& snap, const std::vector<std::string>& racks, bool json,
                        const std::optional<Reservation>& protection = std::nullopt, const std::string& mode = "");

enum class Cell { Free, Slice, OtherJob, Spare, Draining, Drained, Down };
Cell cell_of(const NodeStatus& st);
// One row per rack, one cell per node; ANSI colours when `color`.
std::string render_map_text(const Snapshot& snap, bool color);
std::string render_map_svg(const Snapshot& snap);

} // namespace nvl

namespace nvl {

// `nvl-topo check`: the map against Slurm's node list. Missing: in the map,
// unknown to Slurm. Extra: in Slurm, in no domain. Feature: a node whose
// Slurm features do not name its domain's feature. One line per finding.
std::vector<std::string> check_map_against_slurm(const RackMap& map, const std::vector<SlurmNode>& nodes);

} // namespace nvl
