// nvlslice — the cycle's first stage: observe. What Slurm reports, read
// once per cycle into one immutable value that every later stage reads:
// the nodes as a snapshot (the jobs on them, degraded racks marked), the
// node sets the stages test against (failed, reserved, unprotected) and
// every unfinished job with its tag and record parsed. Nothing in it
// depends on the helper's memory (but for a record a site overwrote, read
// from the record the helper last saw) or on what this cycle decides; the stages
// that follow (rack health here, then repairs and moves, placement and
// protection, defragmentation and lending, upkeep) take it by const
// reference, and their decisions are kept apart from it.
#pragma once

#include "node_set.hpp"
#include "reconcile.hpp"
#include "report.hpp"
#include "slice_job.hpp"

#include <optional>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace nvl {

struct Observation {
    Snapshot snap;                    // as Slurm reports it; degraded racks marked (rack_health.hpp)
    NodeSet failed;                   // a slice on such a node needs a repair (down, or drained for a repair reason)
    NodeSet reserved;                 // in the spare reservation
    NodeSet unprotected;              // outside the protection (unsized: no protection)
    std::vector<ParsedJob> jobs;      // every unfinished job, in Slurm's order, its tag and record parsed once
    std::vector<std::string> reasons; // each map node's Slurm reason, by NodeId
    // Slice jobs whose AdminComment lost the helper's record (a site wrote
    // the whole field): their record is the one last seen (`records`).
    std::vector<JobId> restored;
};

// One slice job of this cycle, its tag and record read once (a ParsedJob,
// report.hpp, checked by judge_job(): its tag describes it and the record
// is its own).
struct SliceJob {
    const SlurmJob* job;
    RequestTag tag;
    std::optional<PlacementRecord> rec; // its own record
    JobId copied_from = 0;              // the job whose record it carries (a job array's split copies it), or 0
};

// Handed to Slurm with --segment: Slurm places it; the helper repairs.
inline bool native(const SliceJob& sj) {
    return sj.tag.hand_off == HandOff::Native;
}
// The record says the helper placed it (pinned, started or repairing).
inline bool has_placement(const SliceJob& sj) {
    return sj.rec && (sj.rec->state == RecordState::Placed || sj.rec->state == RecordState::Repairing ||
                      sj.rec->state == RecordState::Restarting);
}

// Why a tag does not describe its job (nullopt when it does). The comment
// is user-writable: a tag typed by hand must not make the helper pin a job
// to more nodes than it asked for, or count nodes it never takes.
std::optional<std::string> tag_mismatch(const RequestTag& t, const SlurmJob& j);

// What the cycle makes of one unfinished job: a slice job of this cycle,
// one left to Slurm because its tag does not describe it, or none of its
// business (not pending or running, or untagged).
struct JobVerdict {
    enum class Kind : uint8_t { Other, Ignored, Slice };
    Kind kind = Kind::Other;
    std::string wrong;                      // Ignored: why its tag does not describe it
    std::optional<PlacementRecord> ignored; // Ignored: the record to write (nullopt: it says so already)
    std::optional<SliceJob> slice;          // Slice: its record its own (another job's copy dropped)
    std::string bad_record;                 // a slice job's admin_comment that is no record: why
    JobId copied_record_of = 0;             // a slice job carried this job's record (a job array split): dropped
    bool restore_requeue = false;           // runs on a lent spare with Requeue turned off: set back
    bool taken_back = false;                // its record said ignored, and its tag describes it again
};
JobVerdict judge_job(const ParsedJob& p);

// Slurm's own order: the priority it computed (multifactor: QOS, partition
// tier, fair-share, age, job size, nice, or an admin's priority=), then
// submission, then job id.
void sort_by_priority(std::vector<SliceJob>& jobs);

// `drain`: repair_drain_reasons compiled (none: every drain is a failure);
// `rack`: rack_failure_reasons compiled (none: only failures beyond the
// spares degrade a rack).
// `records`: each job's record as the helper last saw it in Slurm
// (HelperMemory::records), read for a pending or running slice job whose
// AdminComment has none now.
Observation observe(const RackMap& map, const ClusterView& view, LendScope lend, const std::optional<std::regex>& drain,
                    const std::optional<std::regex>& rack,
                    const std::unordered_map<JobId, std::string>* records = nullptr);

} // namespace nvl
