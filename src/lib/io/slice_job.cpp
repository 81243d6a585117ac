#include "slice_job.hpp"

#include "text.hpp"

#include "hostlist.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace nvl {
namespace {

// Splits "nvlslice/1 word key=value ..." into words after the prefix.
std::optional<std::vector<std::string_view>> words_after_prefix(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    if (s.substr(0, 9) != "nvlslice/") return std::nullopt;
    size_t end = s.find(' ');
    std::string_view head = s.substr(0, end);
    if (head != kTagPrefix) throw Error(fmt::format("\"{}\": this nvlslice reads version 1 records only", head));
    std::vector<std::string_view> words;
    if (end == std::string_view::npos) return words;
    s.remove_prefix(end + 1);
    size_t bar = s.find(" | ");
    if (bar != std::string_view::npos) s = s.substr(0, bar);
    while (!s.empty()) {
        size_t sp = s.find(' ');
        std::string_view w = s.substr(0, sp);
        if (!w.empty()) words.push_back(w);
        if (sp == std::string_view::npos) break;
        s.remove_prefix(sp + 1);
    }
    return words;
}

int to_int(std::string_view key, std::string_view v) {
    std::string s(v);
    char* end = nullptr;
    long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || x < 0 || x > 1000000)
        throw Error(fmt::format("nvlslice record: {}={} is not a count", key, v));
    return int(x);
}

} // namespace

std::string RequestTag::str() const {
    return fmt::format("{} nodes={} slice={} count={} auto={} placement={} checkpointable={}{} handoff={}", kTagPrefix,
                       nodes, slice, count, auto_size ? 1 : 0, mode == PlacementMode::Prefer ? "prefer" : "strict",
                       checkpointable ? 1 : 0, checkpoint_s > 0 ? fmt::format(" ckpt_every={}", checkpoint_s) : "",
                       to_string(hand_off));
}

const char* to_string(HandOff h) {
    switch (h) {
    case HandOff::Auto: return "auto";
    case HandOff::Gate: return "gate";
    case HandOff::Native: return "native";
    }
    return "gate";
}

HandOff parse_hand_off(std::string_view v, std::string_view what) {
    if (v == "auto") return HandOff::Auto;
    if (v == "gate") return HandOff::Gate;
    if (v == "native") return HandOff::Native;
    throw Error(fmt::format("{}={}: expected auto, gate or native", what, v));
}

HandOff resolve_hand_off(HandOff wanted, bool have_segments, std::string_view topology_plugin) {
    if (wanted != HandOff::Auto) return wanted;
    return have_segments && topology_plugin == "topology/block" ? HandOff::Native : HandOff::Gate;
}

Requeue parse_requeue_value(std::string_view v) {
    if (v == "invalid-context") return Requeue::NotBatch;
    if (v == "requeue" || v == "expedite") return Requeue::Requeue;
    if (v == "no-requeue") return Requeue::NoRequeue;
    return Requeue::Unset;
}

bool has_node_pools(std::string_view v) {
    int major = 0, minor = 0;
    size_t i = 0;
    auto number = [&](int& out) {
        const size_t from = i;
        while (i < v.size() && i - from < 4 && v[i] >= '0' && v[i] <= '9') out = out * 10 + (v[i++] - '0');
        return i > from;
    };
    if (!number(major) || i >= v.size() || v[i++] != '.' || !number(minor)) return false;
    return major > 25 || (major == 25 && minor >= 11);
}

std::optional<std::string> network_for_slices(std::string_view user, std::string_view switch_type,
                                              std::string_view version) {
    if (switch_type != "switch/nvidia_imex" || !has_node_pools(version)) return std::nullopt; // both 25.11
    if (user.find("unique-channel-per-segment") != std::string_view::npos) return std::nullopt;
    return user.empty() ? std::string("unique-channel-per-segment") : std::string(user) + ",unique-channel-per-segment";
}

std::optional<RequestTag> RequestTag::parse(std::string_view comment) {
    auto words = words_after_prefix(comment);
    if (!words) return std::nullopt;
    RequestTag t;
    for (auto w : *words) {
        size_t eq = w.find('=');
        if (eq == std::string_view::npos) continue;
        auto k = w.substr(0, eq), v = w.substr(eq + 1);
        if (k == "nodes")
            t.nodes = to_int(k, v);
        else if (k == "slice")
            t.slice = to_int(k, v);
        else if (k == "count")
            t.count = to_int(k, v);
        else if (k == "auto")
            t.auto_size = to_int(k, v) != 0;
        else if (k == "checkpointable")
            t.checkpointable = to_int(k, v) != 0;
        else if (k == "ckpt_every")
            t.checkpoint_s = to_int(k, v);
        else if (k == "placement")
            t.mode = parse_placement_option(v);
        else if (k == "handoff") {
            t.hand_off = parse_hand_off(v, "nvlslice tag handoff");
            if (t.hand_off == HandOff::Auto) throw Error("nvlslice tag handoff=auto: expected gate or native");
        }
    }
    if (t.slice <= 0 || t.count <= 0 || int64_t(t.nodes) != int64_t(t.slice) * int64_t(t.count))
        throw Error(fmt::format("nvlslice tag \"{}\": nodes must equal slice x count", comment));
    return t;
}

std::string_view user_comment(std::string_view comment) {
    size_t bar = comment.find(" | ");
    if (comment.substr(0, 9) != "nvlslice/") return comment;
    return bar == std::string_view::npos ? std::string_view() : comment.substr(bar + 3);
}

std::string tagged_comment(const RequestTag& tag, std::string_view user) {
    std::string s = tag.str();
    if (!user.empty()) s += fmt::format(" | {}", user);
    return s;
}

const char* to_string(RecordState s) {
    switch (s) {
    case RecordState::Waiting: return "waiting";
    case RecordState::Placed: return "placed";
    case RecordState::Repairing: return "repairing";
    case RecordState::Yielded: return "yielded";
    case RecordState::Restarting: return "restarting";
    case RecordState::Ignored: return "ignored";
    }
    return "?";
}

std::optional<RecordState> parse_record_state(std::string_view s) {
    for (RecordState r : {RecordState::Waiting, RecordState::Placed, RecordState::Repairing, RecordState::Yielded,
                          RecordState::Restarting, RecordState::Ignored})
        if (s == to_string(r)) return r;
    return std::nullopt;
}

namespace {
constexpr std::pair<Why, const char*> kWhyWords[] = {
    {Why::None, "none"},
    {Why::Busy, "busy"},
    {Why::Fragmented, "fragmented"},
    {Why::WouldConsumeSpares, "would-consume-spares"},
    {Why::NoDomainLargeEnough, "too-few-racks"},
    {Why::SliceTooLarge, "slice-too-large"},
    {Why::InvalidRequest, "invalid-request"},
    {Why::HeldBack, "held-back"},
    {Why::Retry, "retry"},
    {Why::SlurmPlaces, "slurm-places"},
    {Why::NotRepaired, "not-repaired"},
    {Why::RepairWaits, "repair-waits"},
    {Why::MoveWaits, "move-waits"},
    {Why::NotMoved, "not-moved"},
    {Why::RanRackBlind, "ran-rack-blind"},
    {Why::Escaped, "escaped"},
    {Why::NodesTaken, "nodes-taken"},
    {Why::NotStarted, "not-started"},
    {Why::ArraySplit, "array-split"},
    {Why::AcrossRacks, "across-racks"},
    {Why::Backoff, "backoff"},
    {Why::Yielded, "yielded"},
    {Why::Ignored, "ignored"},
    {Why::Other, "other"},
};
} // namespace

const char* to_string(Why w) {
    for (const auto& [k, word] : kWhyWords)
        if (k == w) return word;
    return "other";
}

std::optional<Why> parse_why(std::string_view s) {
    for (const auto& [k, word] : kWhyWords)
        if (s == word) return k;
    return std::nullopt;
}

Why why_of(Reason r) {
    switch (r) {
    case Reason::None: return Why::None;
    case Reason::InvalidRequest: return Why::InvalidRequest;
    case Reason::SliceTooLarge: return Why::SliceTooLarge;
    case Reason::NoDomainLargeEnough: return Why::NoDomainLargeEnough;
    case Reason::WouldConsumeSpares: return Why::WouldConsumeSpares;
    case Reason::Fragmented: return Why::Fragmented;
    case Reason::Busy: return Why::Busy;
    }
    return Why::Other;
}

bool allowed_transition(RecordState from, RecordState to) {
    using S = RecordState;
    if (from == to || to == S::Waiting || to == S::Ignored) return true; // waiting again, or given up on
    switch (to) {
    case S::Placed: return from != S::Ignored;   // released, or adopted as it runs
    case S::Repairing: return from == S::Placed; // a node of its placement failed
    case S::Yielded: return from == S::Placed || from == S::Restarting || from == S::Repairing;
    case S::Restarting: return from != S::Ignored && from != S::Repairing;
    default: return false;
    }
}

LicenseItem license_item(std::string_view text) {
    LicenseItem it;
    it.text = text;
    const size_t sep = text.find_first_of(":=");
    it.name = text.substr(0, sep);
    if (sep != std::string_view::npos) {
        it.count = 0;
        for (char ch : text.substr(sep + 1)) {
            if (ch < '0' || ch > '9') break;
            it.count = std::min<int64_t>(it.count * 10 + (ch - '0'), 1000000000);
        }
    }
    return it;
}

bool next_license_item(std::string_view& list, LicenseItem& out, char sep) {
    while (!list.empty()) {
        const size_t c = list.find(sep);
        const std::string_view item = list.substr(0, c);
        list.remove_prefix(c == std::string_view::npos ? list.size() : c + 1);
        if (item.empty()) continue;
        out = license_item(item);
        return true;
    }
    return false;
}

bool has_license(std::string_view licenses, std::string_view name) {
    // asked of every waiting job each cycle: scanned in place, nothing allocated
    LicenseItem it;
    while (next_license_item(licenses, it))
        if (it.name == name) return true;
    return false;
}

std::string with_license(std::string_view licenses, std::string_view name) {
    if (has_license(licenses, name)) return std::string(licenses);
    std::string out(licenses);
    if (!out.empty()) out += ',';
    return out + std::string(name) + ":1";
}

std::string without_license(std::string_view licenses, std::string_view name) {
    std::string out;
    LicenseItem it;
    while (next_license_item(licenses, it)) {
        if (it.name == name) continue;
        if (!out.empty()) out += ',';
        out += it.text;
    }
    return out;
}

std::optional<std::string> gate_open_reason(std::string_view license, const GateLicense& g) {
    if (!g.configured)
        return fmt::format("slurm.conf defines no license {0}: the slice job cannot be put behind the gate (the "
                           "administrator adds \"Licenses={0}:1\" to slurm.conf and starts nvlsliced)",
                           license);
    if (g.total == 0 || g.reserved < g.total)
        return fmt::format("the gate is open: no reservation holds the license {} ({} of {} reserved), so Slurm could "
                           "start the slice job on rack-blind nodes; nvlsliced keeps that reservation: it has not "
                           "run on this cluster yet, or the reservation was removed (the administrator starts "
                           "nvlsliced, which makes it at once)",
                           license, g.reserved, g.total);
    return std::nullopt;
}

std::string PlacementRecord::str() const {
    std::string s = fmt::format("{} {} slice={}", kTagPrefix, to_string(state), slice);
    if (!slices.empty()) {
        s += " slices=";
        for (size_t i = 0; i < slices.size(); ++i) s += (i ? ";" : "") + slices[i];
    }
    s += fmt::format(" repairs={} moves={}", repairs, moves);
    if (split) s += " split=1";
    if (lent) s += " lent=1";
    if (hold) s += " hold=1";
    if (off_degraded) s += " offdegraded=1";
    if (repair_wait) s += " repairwait=1";
    if (job) s += fmt::format(" job={}", job);
    if (why != Why::None && why != Why::Other && !reason.empty()) s += fmt::format(" why={}", to_string(why));
    if (!reason.empty()) {
        // free text, one line, always last; no '|', so that the record
        // never holds the " | " that ends it (split_admin_comment)
        s += " reason=";
        const size_t at = s.size();
        s += escape_control(reason);
        std::replace(s.begin() + long(at), s.end(), '|', '/');
    }
    return s;
}

AdminCommentParts split_admin_comment(std::string_view ac) {
    constexpr std::string_view kBar = " | ";
    AdminCommentParts parts;
    size_t start = ac.find_first_not_of(' ');
    if (start == std::string_view::npos || ac.substr(start, 9) != "nvlslice/") {
        start = ac.find(" | nvlslice/");
        if (start == std::string_view::npos) {
            parts.before = ac;
            return parts;
        }
        parts.before = ac.substr(0, start);
        start += kBar.size();
    }
    const size_t end = ac.find(kBar, start);
    parts.record = ac.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (end != std::string_view::npos) parts.after = ac.substr(end + kBar.size());
    return parts;
}

std::string with_record(std::string_view ac, std::string_view record) {
    const AdminCommentParts p = split_admin_comment(ac);
    std::string out;
    out.reserve(ac.size() + record.size() + 6);
    auto add = [&](std::string_view part) {
        if (part.empty()) return;
        if (!out.empty()) out += " | ";
        out += part;
    };
    add(p.before);
    if (!p.record.empty()) add(record);
    add(p.after);
    if (p.record.empty()) add(record);
    return out;
}

std::optional<PlacementRecord> PlacementRecord::parse(std::string_view ac) {
    const std::string_view part = split_admin_comment(ac).record;
    if (part.empty()) return std::nullopt;
    std::string text(part);
    std::string reason;
    if (auto at = text.find(" reason="); at != std::string::npos) {
        reason = text.substr(at + 8);
        text.resize(at);
    }
    auto words = words_after_prefix(text);
    if (!words) return std::nullopt;
    PlacementRecord r;
    r.reason = reason;
    r.why = reason.empty() ? Why::None : Why::Other; // unless why= says
    bool have_state = false;
    for (auto w : *words) {
        size_t eq = w.find('=');
        if (eq == std::string_view::npos) {
            if (have_state) continue;
            auto st = parse_record_state(w);
            if (!st)
                throw Error(fmt::format("nvlslice record: \"{}\" is not a record state (waiting, placed, repairing, "
                                        "yielded, restarting, ignored)",
                                        w));
            r.state = *st;
            have_state = true;
            continue;
        }
        auto k = w.substr(0, eq), v = w.substr(eq + 1);
        if (k == "slice")
            r.slice = to_int(k, v);
        else if (k == "repairs")
            r.repairs = to_int(k, v);
        else if (k == "moves")
            r.moves = to_int(k, v);
        else if (k == "split")
            r.split = to_int(k, v) != 0;
        else if (k == "lent")
            r.lent = to_int(k, v) != 0;
        else if (k == "hold")
            r.hold = to_int(k, v) != 0;
        else if (k == "offdegraded")
            r.off_degraded = to_int(k, v) != 0;
        else if (k == "repairwait")
            r.repair_wait = to_int(k, v) != 0;
        else if (k == "why") {
            if (auto kind = parse_why(v); kind && !reason.empty()) r.why = *kind;
        } else if (k == "job") {
            std::string s(v);
            char* end = nullptr;
            const unsigned long long id = std::strtoull(s.c_str(), &end, 10);
            if (s.empty() || *end || s[0] == '-' || id > 0xffffffffull)
                throw Error(fmt::format("nvlslice record: job={} is not a job id", v));
            r.job = JobId(id);
        } else if (k == "slices") {
            // the inverse of str(): each ';' separates two slices, also an
            // empty last one ("slices=;" was read as one slice, printed back
            // as none)
            while (!v.empty()) {
                size_t sc = v.find(';');
                r.slices.emplace_back(v.substr(0, sc));
                if (sc == std::string_view::npos) break;
                v.remove_prefix(sc + 1);
                if (v.empty()) r.slices.emplace_back();
            }
        }
    }
    return r;
}

int parse_slice_option(std::string_view v) {
    if (v == "auto") return 0;
    // digits only (strtol would take blanks, a sign, and stop at a NUL)
    long x = 0;
    for (char c : v) {
        if (c < '0' || c > '9' || x > 4096) {
            x = -1;
            break;
        }
        x = x * 10 + (c - '0');
    }
    if (v.empty() || x < 1 || x > 4096)
        throw Error(fmt::format("--nvl-slice={}: expected a slice size in nodes (1..4096) or \"auto\"", v));
    return int(x);
}

PlacementMode parse_placement_option(std::string_view v) {
    if (v == "strict") return PlacementMode::Strict;
    if (v == "prefer") return PlacementMode::Prefer;
    throw Error(fmt::format("--nvl-placement={}: expected \"strict\" (wait for whole slices) or \"prefer\" "
                            "(fall back to the fewest racks after a wait)",
                            v));
}

int parse_checkpoint_every_option(std::string_view v) {
    // Slurm's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S
    auto bad = [&] {
        return Error(fmt::format("--nvl-checkpoint-every={}: expected how often the job checkpoints, as --time "
                                 "takes it: minutes, minutes:seconds, hours:minutes:seconds, days-hours, "
                                 "days-hours:minutes or days-hours:minutes:seconds (e.g. 60 or 1:00:00), from 1 "
                                 "minute to 7 days",
                                 v));
    };
    int64_t days = -1;
    std::string_view rest = v;
    if (auto dash = v.find('-'); dash != std::string_view::npos) {
        days = 0;
        for (char c : v.substr(0, dash)) {
            if (c < '0' || c > '9' || days > 7) throw bad();
            days = days * 10 + (c - '0');
        }
        if (dash == 0) throw bad();
        rest = v.substr(dash + 1);
    }
    std::vector<int64_t> parts{0};
    bool digit = false; // in the current field
    for (char c : rest) {
        if (c == ':') {
            if (!digit) throw bad(); // an empty field
            digit = false;
            parts.push_back(0);
        } else if (c >= '0' && c <= '9' && parts.back() < 100000) {
            parts.back() = parts.back() * 10 + (c - '0');
            digit = true;
        } else {
            throw bad();
        }
    }
    if (!digit || parts.size() > 3) throw bad();
    int64_t s = 0;
    if (days >= 0) { // D-H, D-H:M, D-H:M:S
        s = days * 86400 + parts[0] * 3600 + (parts.size() > 1 ? parts[1] * 60 : 0) + (parts.size() > 2 ? parts[2] : 0);
    } else if (parts.size() == 1) { // M
        s = parts[0] * 60;
    } else if (parts.size() == 2) { // M:S
        s = parts[0] * 60 + parts[1];
    } else { // H:M:S
        s = parts[0] * 3600 + parts[1] * 60 + parts[2];
    }
    if (s < 60 || s > 7 * 86400) throw bad();
    return int(s);
}

bool spares_first(const RequestTag& tag, const RackMap& map) {
    if (!tag.checkpointable || tag.mode != PlacementMode::Strict || tag.nodes < 1 ||
        tag.nodes >= map.defaults().default_slice)
        return false;
    for (const Domain& d : map.domains())
        if (d.spares >= tag.nodes && d.size() >= tag.nodes) return true;
    return false;
}

RequestTag make_request(const RackMap& map, const SliceOptions& o, int nodes_min, int nodes_max, Requeue requeue) {
    if (!o.slice_set)
        throw Error(fmt::format("--nvl-placement, --nvl-checkpointable and --nvl-checkpoint-every need "
                                "--nvl-slice=SIZE|auto (e.g. --nvl-slice={})",
                                map.defaults().default_slice));
    if (o.checkpoint_s && !o.checkpointable)
        throw Error("--nvl-checkpoint-every says how often a checkpointable job checkpoints: add "
                    "--nvl-checkpointable (and --requeue)");
    if (nodes_max <= 0)
        throw Error(fmt::format("--nvl-slice needs a node count: add -N/--nodes (e.g. -N {} for {} slices of {})",
                                4 * (o.slice ? o.slice : map.defaults().default_slice), 4,
                                o.slice ? o.slice : map.defaults().default_slice));
    if (nodes_min != nodes_max)
        throw Error(fmt::format("--nvl-slice needs a fixed node count, not the range -N {}-{}", nodes_min, nodes_max));
    const int n = nodes_min;
    const int limit = map.max_slice();
    RequestTag t;
    t.nodes = n;
    t.mode = o.mode;
    t.checkpointable = o.checkpointable;
    t.checkpoint_s = o.checkpoint_s;
    if (o.slice == 0) {
        t.auto_size = true;
        t.slice = auto_slice_size(n, limit, map.defaults().slice_sizes);
        if (t.slice == 0)
            throw Error(fmt::format("--nvl-slice=auto: {} nodes cannot be cut into equal slices of at most {} nodes{}",
                                    n, limit,
                                    map.defaults().slice_sizes.empty() ? "" : " among the map's slice_sizes"));
    } else {
        t.slice = o.slice;
        if (t.slice > limit)
            throw Error(fmt::format("--nvl-slice={}: larger than any rack can hold ({} = nodes per rack - spares); use "
                                    "--nvl-slice={} or less, or --nvl-slice=auto",
                                    t.slice, limit, limit));
        const auto& allowed = map.defaults().slice_sizes;
        if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), t.slice) == allowed.end()) {
            std::string list;
            for (int s : allowed) list += (list.empty() ? "" : ", ") + std::to_string(s);
            throw Error(fmt::format("--nvl-slice={}: this cluster allows slice sizes {} only", t.slice, list));
        }
        if (n % t.slice) {
            const std::string hint =
                n < t.slice ? fmt::format("-N {}", t.slice)
                            : fmt::format("-N {} or -N {}", n / t.slice * t.slice, (n / t.slice + 1) * t.slice);
            throw Error(fmt::format("--nvl-slice={}: -N {} is not a multiple of the slice size (use {}, or "
                                    "--nvl-slice=auto)",
                                    t.slice, n, hint));
        }
    }
    t.count = n / t.slice;
    if (o.checkpointable) {
        if (requeue == Requeue::NotBatch)
            throw Error("--nvl-checkpointable is for batch jobs: submit with sbatch --requeue");
        if (requeue != Requeue::Requeue)
            throw Error("--nvl-checkpointable needs --requeue (the defragmenter requeues the job): add --requeue");
    }
    return t;
}

std::optional<std::vector<std::vector<NodeId>>>
try_derive_slices(const RackMap& map, const std::vector<std::string>& job_nodes, int slice_size, std::string* why) {
    auto fail = [&](std::string text) -> std::optional<std::vector<std::vector<NodeId>>> {
        if (why) *why = std::move(text);
        return std::nullopt;
    };
    if (slice_size <= 0) return fail("slice size must be positive");
    std::vector<NodeId> ids;
    ids.reserve(job_nodes.size());
    for (const auto& n : job_nodes) {
        auto id = map.find_node(n);
        if (!id) return fail(fmt::format("node {} of the job is not in the rack map", n));
        ids.push_back(*id);
    }
    std::sort(ids.begin(), ids.end()); // map order: domain by domain
    std::vector<std::vector<NodeId>> slices;
    size_t i = 0;
    while (i < ids.size()) {
        DomainId d = map.domain_of(ids[i]);
        size_t j = i;
        while (j < ids.size() && map.domain_of(ids[j]) == d) ++j;
        if ((j - i) % size_t(slice_size))
            return fail(fmt::format("the job has {} nodes in {}, not a multiple of its slice size {}", j - i,
                                    map.domain(d).name, slice_size));
        for (size_t k = i; k < j; k += size_t(slice_size))
            slices.emplace_back(ids.begin() + long(k), ids.begin() + long(k) + slice_size);
        i = j;
    }
    return slices;
}

std::vector<std::vector<NodeId>> derive_slices(const RackMap& map, const std::vector<std::string>& job_nodes,
                                               int slice_size) {
    std::string why;
    auto slices = try_derive_slices(map, job_nodes, slice_size, &why);
    if (!slices) throw Error(why);
    return std::move(*slices);
}

SliceEnv slice_env_for(const RackMap& map, const std::vector<std::vector<std::string>>& slices, std::string_view host) {
    for (size_t s = 0; s < slices.size(); ++s) {
        const auto& nodes = slices[s];
        auto it = std::find(nodes.begin(), nodes.end(), host);
        if (it == nodes.end()) continue;
        SliceEnv e;
        e.index = int(s);
        e.count = int(slices.size());
        e.size = int(nodes.size());
        e.rank = int(it - nodes.begin());
        e.nodelist = hostlist_compress(nodes);
        e.leader = nodes.front();
        // the rack: that of the slice's nodes, or a list when a slice is split
        std::vector<std::string> doms;
        for (const auto& n : nodes) {
            auto id = map.find_node(n);
            std::string d = id ? map.domain(map.domain_of(*id)).name : std::string("?");
            if (std::find(doms.begin(), doms.end(), d) == doms.end()) doms.push_back(d);
        }
        for (size_t k = 0; k < doms.size(); ++k) e.domain += (k ? "," : "") + doms[k];
        return e;
    }
    throw Error(fmt::format("host {} is not in any slice of the job", host));
}

} // namespace nvl
