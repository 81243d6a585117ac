// nvlslice — what travels between the plugin, the helper and the tasks, as
// text inside Slurm's own job records (no side channel, nothing to lose):
//
//  * the request tag, put first in the job's comment by the plugin at
//    submission (the user's own --comment follows after " | "):
//      nvlslice/1 nodes=32 slice=16 count=2 auto=0 placement=strict checkpointable=0 handoff=gate
//  * the placement record, kept by the helper in the job's admin_comment
//    (users cannot write it):
//      nvlslice/1 placed slice=16 slices=nvl[0001-0016];nvl[0019-0034] repairs=0 moves=0
//    where `slices` lists each slice's nodes in slice order.
// Both start with "nvlslice/<version>" followed by a state word (record only)
// and key=value words; readers ignore keys they do not know, so a newer
// helper can add keys without breaking older plugins.
#pragma once

#include "model.hpp"
#include "placement.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

inline constexpr std::string_view kTagPrefix = "nvlslice/1";

// How a slice job reaches its nodes.
//  * Gate: behind the gate license; nvlsliced picks the nodes in Slurm's
//    priority order and takes the gate off (any Slurm).
//  * Native: Slurm's own --segment=SLICE on topology/block (24.05+): Slurm
//    orders, backfills and places each segment in one block (rack);
//    nvlsliced keeps the spares and repairs.
// Auto (configuration only): native when the running Slurm offers both.
enum class HandOff { Auto, Gate, Native };
const char* to_string(HandOff h);
// "auto", "gate" or "native"; throws naming `what` and the accepted values.
HandOff parse_hand_off(std::string_view v, std::string_view what);
// Auto resolved: native needs segments (a build feature) and the running
// topology plugin to be topology/block.
HandOff resolve_hand_off(HandOff wanted, bool have_segments, std::string_view topology_plugin);
// Whether slurmctld of this version ("26.05.5") takes a node list (-w,
// ReqNodeList) on a job of several segments as a pool to choose the
// segments from: 25.11 and later do (eval_nodes_block.c); 24.05-25.05 refuse
// to place such a job. A behaviour of the controller, so the running
// controller's version decides, not the build. Unparsable: false.
bool has_node_pools(std::string_view controller_version);
// A native slice job's --network where Slurm gives each segment an IMEX
// channel of its own (SwitchType=switch/nvidia_imex, Slurm 25.11+: the
// option unique-channel-per-segment): each slice is one NVLink domain, and
// memory is shared only inside one. The user's own --network options are
// kept. nullopt: leave --network as it is (another switch plugin, an
// older Slurm, or the user asked for it already).
std::optional<std::string> network_for_slices(std::string_view user_network, std::string_view switch_type,
                                              std::string_view version);

struct RequestTag {
    int nodes = 0;
    int slice = 0; // resolved slice size (auto already applied)
    int count = 0;
    bool auto_size = false;
    PlacementMode mode = PlacementMode::Strict;
    bool checkpointable = false;
    int checkpoint_s = 0;             // --nvl-checkpoint-every (ckpt_every=, absent when not said)
    HandOff hand_off = HandOff::Gate; // Gate or Native; absent in old tags: Gate

    std::string str() const;
    // Parses a comment that starts with a tag; nullopt when it does not.
    // Throws nvl::Error when it starts with the prefix but is malformed.
    static std::optional<RequestTag> parse(std::string_view comment);
};

// The gate license on a license request (Slurm's "name:count,..."):
// added / taken off, the user's own licenses kept ("a:2" + gate ->
// "a:2,nvlslice_gate:1").
bool has_license(std::string_view licenses, std::string_view name);
// One item of a license request: "name", "name:count" or "name=count"
// (count 1 when not given; the digits after the separator, up to the first
// other character, capped at 10^9 as no cluster has more).
struct LicenseItem {
    std::string_view text; // as written
    std::string_view name;
    int64_t count = 1;
};
LicenseItem license_item(std::string_view text);
// The next non-empty item of `list` split on `sep`, taken off the front of
// `list`; false when none is left. Allocates nothing.
bool next_license_item(std::string_view& list, LicenseItem& out, char sep = ',');
std::string with_license(std::string_view licenses, std::string_view name);
std::string without_license(std::string_view licenses, std::string_view name);

// The gate license as slurmctld counts it. The gate is closed when a
// reservation (nvlsliced's gate reservation) holds every one of them: only
// then can Slurm not start a gated job by itself.
struct GateLicense {
    bool configured = false; // slurm.conf's Licenses= names it
    uint32_t total = 0;
    uint32_t reserved = 0; // held by active reservations
};
// Why a job put behind `license` now could still be started by Slurm
// (nullopt: the gate is closed), with the fix, for the user's error.
std::optional<std::string> gate_open_reason(std::string_view license, const GateLicense& g);

// Slurm refuses a job comment longer than this (slurmctld's
// _test_job_desc_fields, 22.05 to 26.05) with an unrelated message.
inline constexpr size_t kMaxSlurmComment = 1024;

// The user's part of a comment that carries a tag ("" if none).
std::string_view user_comment(std::string_view comment);
// tag + " | " + user comment (or only the tag).
std::string tagged_comment(const RequestTag& tag, std::string_view user);

// Where a slice job is in the helper's hands, as its record says. The
// helper moves a record only along allowed_transition(); any other move is
// a bug and refused (the job is skipped for the cycle, with a log line).
enum class RecordState : uint8_t {
    Waiting,    // no placement yet: the record says why
    Placed,     // pinned and released (or running on its slices)
    Repairing,  // a node failed: requeued held and pinned to the repaired nodes
    Yielded,    // requeued to give nodes back (defragmentation, a lent spare)
    Restarting, // placed again after a requeue that was not a repair
    Ignored,    // its tag does not describe the job: left to Slurm
};
const char* to_string(RecordState s);
std::optional<RecordState> parse_record_state(std::string_view s);
bool allowed_transition(RecordState from, RecordState to);

// What kind of reason a record gives (why it waits, or why it is left as
// it is): the helper branches on this, never on the reason's words. Written
// in the record as why=<word> before the reason.
enum class Why : uint8_t {
    None,                // no reason
    Busy,                // placement: not enough free nodes
    Fragmented,          // placement: enough free nodes, no rack with room
    WouldConsumeSpares,  // placement: only with racks' spares
    NoDomainLargeEnough, // placement: too few healthy racks big enough
    SliceTooLarge,       // placement: no rack could ever hold a slice
    InvalidRequest,      // placement: the request itself is wrong
    HeldBack,            // Slurm holds it back for a reason of its own
    Retry,               // placed again shortly (its placement was dropped)
    SlurmPlaces,         // native mode: Slurm places it (--segment)
    NotRepaired,         // a node failed, and the job cannot be repaired
    RepairWaits,         // a node failed: no room for the repair yet
    MoveWaits,           // its rack degraded: no room for the move yet
    NotMoved,            // its rack degraded, and the job cannot be moved
    RanRackBlind,        // its gate was taken off and Slurm ran it rack-blind
    Escaped,             // the same, requeued to be placed
    NodesTaken,          // its placement's nodes were taken by other jobs
    NotStarted,          // placed, not started within replace_after
    ArraySplit,          // a task of its array took its placement
    AcrossRacks,         // native mode: Slurm placed segments across racks
    Backoff,             // the helper's actions on it were refused
    Yielded,             // requeued to give its nodes back
    Ignored,             // not a slice job the helper can place
    Other,               // a record without why= (an older helper's)
};
const char* to_string(Why w);
std::optional<Why> parse_why(std::string_view s);
Why why_of(Reason placement_failure);

struct PlacementRecord {
    RecordState state = RecordState::Placed;
    int slice = 0;
    std::vector<std::string> slices; // one hostlist per slice, slice order
    int repairs = 0;
    int moves = 0;
    bool split = false;
    bool lent = false; // runs on a rack's spare, lent until a repair needs it
    bool hold = false; // the helper holds the job (a repair): the one hold it may release
    // Native mode: the helper set the job's ExcNodeList to keep Slurm from
    // placing it on degraded racks, and lifts it when they recover.
    bool off_degraded = false;
    // Its repair found no room anywhere and it was requeued to wait: when
    // it is placed, it may take the kept spares of the racks it goes to,
    // as a repair inside its own rack takes its rack's.
    bool repair_wait = false;
    // The job it was written for (0 in records of older helpers): Slurm
    // copies admin_comment to each task it splits off a job array, and a
    // copy is not the task's own placement.
    JobId job = 0;
    Why why = Why::None; // the kind of `reason`
    std::string reason;  // why it waits, in words: free text, written last in the record

    // Sets the reason and its kind together.
    void set_reason(Why w, std::string text) {
        why = w;
        reason = std::move(text);
    }
    void clear_reason() { set_reason(Why::None, {}); }

    // Written for `id` (or by a helper that did not say).
    bool belongs_to(JobId id) const { return job == 0 || job == id; }

    std::string str() const;
    // The record part of `admin_comment` (split_admin_comment), the site's
    // text around it skipped.
    static std::optional<PlacementRecord> parse(std::string_view admin_comment);
};

// AdminComment is shared with the site (health checks, accounting tags):
// the helper's record is one part of it, the site's text the rest, parts
// separated by " | ". The record starts with "nvlslice/" at the start of
// the text or after a " | ", and ends at the next " | " (a record holds
// none: str() writes a reason's "|" as "/") or at the end.
struct AdminCommentParts {
    std::string_view before; // the site's text before the record
    std::string_view record; // "" when there is none
    std::string_view after;  // the site's text after it
};
AdminCommentParts split_admin_comment(std::string_view admin_comment);
// `admin_comment` with its record replaced by `record` ("" takes it out),
// the site's text kept as it stands: a record where there was none goes
// after the site's text.
std::string with_record(std::string_view admin_comment, std::string_view record);

// The option values as the user typed them.
struct SliceOptions {
    bool slice_set = false;
    int slice = 0; // 0 = auto
    bool placement_set = false;
    PlacementMode mode = PlacementMode::Strict;
    bool checkpointable = false;
    int checkpoint_s = 0; // --nvl-checkpoint-every, seconds; 0 = not given
    bool any() const { return slice_set || placement_set || checkpointable || checkpoint_s; }
};

// Option value parsers: throw nvl::Error "--nvl-slice=X: ..." naming what
// would be accepted.
int parse_slice_option(std::string_view v);
PlacementMode parse_placement_option(std::string_view v);
// --nvl-checkpoint-every: minutes, or [days-]hours:minutes[:seconds] as
// Slurm's --time takes them; 1 minute to 7 days. Seconds.
int parse_checkpoint_every_option(std::string_view v);

enum class Requeue { Unset, Requeue, NoRequeue, NotBatch };
// The client's --requeue as slurm_option_get reports it: "requeue",
// "expedite" (--requeue=expedite, Slurm 25.11+: requeued at once after a
// node failure, which still requeues it), "no-requeue", "unset", or
// "invalid-context" (salloc, srun).
Requeue parse_requeue_value(std::string_view v);

// Checks a submission before it reaches Slurm and turns it into a tag.
// `nodes_min/max` as given by -N (max 0 = not given). Throws nvl::Error with
// the option, the value and the fix.
RequestTag make_request(const RackMap& map, const SliceOptions& opts, int nodes_min, int nodes_max, Requeue requeue);

// Does native mode hand this job to nvlsliced through the gate, so that it
// goes to a rack's idle kept spares first (place_or_borrow)? Checkpointable
// work (strict, so --requeue and a batch job) that the kept spares of some
// rack can take whole, smaller than the map's default slice. Handed to
// Slurm with --segment it would start at submission on a rack's slice room,
// while the spares of the racks that slice jobs fill idle until a repair.
bool spares_first(const RequestTag& tag, const RackMap& map);

// What each task of a slice job sees.
struct SliceEnv {
    int index = 0;
    int count = 0;
    int size = 0;
    int rank = 0;         // the node's rank inside its slice
    std::string domain;   // rack name
    std::string nodelist; // the slice's nodes (hostlist)
    std::string leader;   // first node of the slice
};

// The slices of a job from its node list alone (SPEC §3): the job's nodes
// inside each domain, in map order, cut into `slice_size` pieces; slices
// numbered domain by domain in map order. Throws nvl::Error when the nodes
// do not form whole slices (e.g. a prefer-mode split placement).
std::vector<std::vector<NodeId>> derive_slices(const RackMap& map, const std::vector<std::string>& job_nodes,
                                               int slice_size);
// The same without an exception: nullopt when the nodes are not whole
// slices of one domain each (or not all in the map), `why` saying which.
std::optional<std::vector<std::vector<NodeId>>> try_derive_slices(const RackMap& map,
                                                                  const std::vector<std::string>& job_nodes,
                                                                  int slice_size, std::string* why = nullptr);
// The env of `host` given the slices (from derive_slices or a record).
SliceEnv slice_env_for(const RackMap& map, const std::vector<std::vector<std::string>>& slices, std::string_view host);

} // namespace nvl
