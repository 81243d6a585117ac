// One fuzz input through every reader of untrusted text: rack maps and
// Slurm topology files, hostlists, the request tag and the placement record
// (job comments are user-writable), the helper's configuration and its
// metrics_listen value, the plugin's plugstack.conf arguments, the metrics
// endpoint's HTTP request (network input), the NVLink fabric report and
// nvidia-smi's CSV line, and snapshot files. The contract under test: a
// reader either returns a valid model or throws nvl::Error with a message;
// any other exception, a crash, a hang or a sanitizer report is a bug, and
// so is a broken round trip (what a reader accepted, printed and read again,
// must read the same) -- those trap.
// Used by the libFuzzer target (tests/fuzz/fuzz_readers.cpp, `make fuzz`)
// and by the mutation test of the unit suite.
#pragma once

#include "eligibility.hpp"
#include "error.hpp"
#include "fabric.hpp"
#include "helper_config.hpp"
#include "hostlist.hpp"
#include "http_request.hpp"
#include "map_io.hpp"
#include "plugin_config.hpp"
#include "report.hpp"
#include "sim.hpp"
#include "slice_job.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nvl::fuzz {

// The first byte of an input picks the reader (reader_of): byte % 13 for
// the first 13, and the bytes 247 to 253 (which no corpus input began with
// when they were taken) for the readers added since; the numbering of the
// existing cases never changes, so corpus files keep their meaning.
enum Reader : uint8_t {
    kHostlist = 0,
    kRackMapYaml = 1,
    kTopologyConf = 2,
    kTopologyYaml = 3,
    kRequestTag = 4,
    kPlacementRecord = 5,
    kHelperConfig = 6,
    kPluginArgs = 7,    // plugstack.conf arguments, split on whitespace
    kHttpRequest = 8,   // the metrics endpoint's request, open and closed
    kListen = 9,        // metrics_listen
    kFabricReport = 10, // nvl-topo discover input (+ discover_map)
    kGpuFabric = 11,    // one nvidia-smi CSV line (+ the node-side check)
    kSnapshot = 12,     // nvl-topo --snapshot FILE (on a fixed 2 x 8 map)
    kFirstReaders = 13,
    kTrace = 13,       // nvl-sim --trace FILE (first byte 247)
    kUserOptions = 14, // sbatch --nvl-* values, -N, the comment (first byte 248)
    kLicenses = 15,    // a job's license request, and slurmctld's counts (first byte 249)
    kTresLimits = 16,  // a job's TRES request, and accounting's TRES limits (first byte 250)
    kBeside = 17,      // nvl-topo export --beside FILE: a site's topology.conf or .yaml (first byte 251)
    kReaders = 18
};

// The reader an input's first byte picks: 247 + k picks the added reader
// kFirstReaders + k, every other byte picks byte % kFirstReaders.
constexpr uint8_t kAddedBase = 247;
inline unsigned reader_of(uint8_t first) {
    if (first >= kAddedBase && first < kAddedBase + (kReaders - kFirstReaders))
        return kFirstReaders + unsigned(first - kAddedBase);
    return first % kFirstReaders;
}

inline const char* reader_name(unsigned r) {
    static const char* const names[kReaders] = {
        "hostlist",      "rack map yaml", "topology.conf", "topology.yaml",  "request tag",   "placement record",
        "helper config", "plugin args",   "http request",  "metrics_listen", "fabric report", "gpu fabric csv",
        "snapshot",      "sim trace",     "user options",  "licenses",       "tres limits",   "topology beside"};
    return r < kReaders ? names[r] : "?";
}

[[noreturn]] inline void broken_invariant() {
    __builtin_trap();
}

namespace detail {

inline std::vector<std::string> split_ws(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        const size_t b = i;
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        if (i > b) out.emplace_back(s.substr(b, i - b));
    }
    return out;
}

inline std::string write_gpu(const GpuFabric& g) {
    std::string s = g.cluster_uuid + ", " + g.clique + ", " + g.state + ", " + g.status;
    if (!g.health.empty()) s += ", " + g.health;
    return s;
}

inline bool same_gpu(const GpuFabric& a, const GpuFabric& b) {
    return a.cluster_uuid == b.cluster_uuid && a.clique == b.clique && a.state == b.state && a.status == b.status &&
           a.health == b.health;
}

inline bool same_report(const std::vector<NodeFabric>& a, const std::vector<NodeFabric>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].node != b[i].node || a[i].gpus.size() != b[i].gpus.size()) return false;
        for (size_t j = 0; j < a[i].gpus.size(); ++j)
            if (!same_gpu(a[i].gpus[j], b[i].gpus[j])) return false;
    }
    return true;
}

// The map snapshots are read against: 2 racks of 8 nodes with short names.
inline const RackMap& snapshot_map() {
    static const RackMap map = read_rack_map_yaml("version: 1\n"
                                                  "defaults: {gpus_per_node: 4, spares: 1, default_slice: 4}\n"
                                                  "domains:\n"
                                                  "  - {name: r1, nodes: \"n[1-8]\"}\n"
                                                  "  - {name: r2, nodes: \"m[1-8]\"}\n",
                                                  "fuzz-snapshot-map.yaml");
    return map;
}

// Whether the closed request is one the endpoint serves (200).
inline bool http_request(std::string_view text) {
    using http::Verdict;
    const Verdict open = http::judge_request(text, false);
    const Verdict closed = http::judge_request(text, true);
    // a client that has finished sending always gets an answer
    if (closed == Verdict::Incomplete || http::status_code(closed) == 0) broken_invariant();
    // the head is never read on past kMaxRequest
    if (text.size() >= http::kMaxRequest && open == Verdict::Incomplete) broken_invariant();
    // a complete head is judged the same whether or not the client closed
    if (open != Verdict::Incomplete && open != Verdict::TooLarge && open != closed) broken_invariant();
    if (open != Verdict::Incomplete && http::status_code(open) == 0) broken_invariant();
    // the same bytes grown past the limit (the fuzzer's inputs are shorter)
    if (open == Verdict::Incomplete) {
        std::string big(text);
        big.resize(http::kMaxRequest, 'x');
        if (http::judge_request(big, false) == Verdict::Incomplete) broken_invariant();
    }
    return closed == Verdict::Metrics || closed == Verdict::MetricsHead;
}

inline void fabric_report(std::string_view text) {
    auto nodes = parse_fabric_report(text, "fuzz-fabric.txt");
    // printed one line per node, the report reads back the same
    std::string again;
    for (const auto& n : nodes) {
        again += n.node;
        for (size_t i = 0; i < n.gpus.size(); ++i) again += (i ? "; " : " ") + write_gpu(n.gpus[i]);
        again += '\n';
    }
    if (!same_report(parse_fabric_report(again, "again.txt"), nodes)) broken_invariant();
    for (const auto& n : nodes) (void)node_fabric_problem(n);
    // nvl-topo discover: with the default names, and (a first comment line
    // "#rename PATTERN") with the admin's --rename pattern
    DiscoverOptions o;
    if (text.substr(0, 8) == "#rename ") o.rename = std::string(text.substr(8, text.find('\n') - 8));
    try {
        Discovery d = discover_map(nodes, o);
        (void)compare_with_fabric(d.map, nodes);
    } catch (const Error&) {}
}

inline void gpu_fabric(std::string_view text) {
    (void)looks_like_fabric_key(text);
    GpuFabric g = parse_gpu_fabric(text);
    if (!same_gpu(parse_gpu_fabric(write_gpu(g)), g)) broken_invariant();
    (void)gpu_fabric_problem(g);
    const std::string key = fabric_domain_key(g);
    (void)check_node_fabric("n1", {g}, "r1", looks_like_fabric_key(key) ? key : "");
}

inline void snapshot(std::string_view text) {
    const RackMap& map = snapshot_map();
    Snapshot snap = read_snapshot(map, text, "fuzz-snapshot.txt");
    const std::string out = write_snapshot(snap);
    if (write_snapshot(read_snapshot(map, out, "again.txt")) != out) broken_invariant();
    (void)render_map_text(snap, false);
}

inline void sim_trace(std::string_view text) {
    const Trace t = read_trace(std::string(text), "fuzz-trace.txt");
    // written and read again, a trace writes the same text
    const std::string out = write_trace(t);
    if (write_trace(read_trace(out, "again.txt")) != out) broken_invariant();
    if (t.jobs.size() != read_trace(out, "again.txt").jobs.size()) broken_invariant();
}

// The lines of a text, each without its '\n'.
inline std::vector<std::string_view> lines(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    }
    return out;
}

// A count as -N gives it to the plugin (digits, at most 6).
inline int small_number(std::string_view v) {
    int n = 0;
    for (char c : v.substr(0, 6)) {
        if (c < '0' || c > '9') break;
        n = n * 10 + (c - '0');
    }
    return n;
}

// One submission's options, one "name=value" per line, as the plugin gets
// them from sbatch (slice, placement, checkpointable, checkpoint-every,
// requeue, nodes=N[-M], comment, hand-off, network, switch, version): each
// value through its parser, then the request the plugin makes of them on
// a fixed 2 x 8 map, and the comment it writes.
inline void user_options(std::string_view text) {
    SliceOptions o;
    int nodes_min = 0, nodes_max = 0;
    Requeue requeue = Requeue::Unset;
    std::string_view comment, network, switch_type, version;
    for (std::string_view line : lines(text)) {
        const size_t eq = line.find('=');
        const std::string_view key = line.substr(0, eq);
        const std::string_view v = eq == std::string_view::npos ? std::string_view() : line.substr(eq + 1);
        if (key == "slice") {
            o.slice = parse_slice_option(v);
            o.slice_set = true;
            if (o.slice < 0 || o.slice > 4096) broken_invariant();
            if (o.slice > 0 && parse_slice_option(std::to_string(o.slice)) != o.slice) broken_invariant();
        } else if (key == "placement") {
            o.mode = parse_placement_option(v);
            o.placement_set = true;
        } else if (key == "checkpointable") {
            o.checkpointable = true;
        } else if (key == "checkpoint-every") {
            o.checkpoint_s = parse_checkpoint_every_option(v);
            const int s = o.checkpoint_s;
            if (s < 60 || s > 7 * 86400) broken_invariant();
            // the same time written as --time would take it reads the same
            const std::string hms =
                std::to_string(s / 3600) + ":" + std::to_string(s / 60 % 60) + ":" + std::to_string(s % 60);
            if (parse_checkpoint_every_option(hms) != s) broken_invariant();
        } else if (key == "requeue") {
            requeue = parse_requeue_value(v);
        } else if (key == "nodes") {
            const size_t dash = v.find('-');
            nodes_min = small_number(v);
            nodes_max = dash == std::string_view::npos ? nodes_min : small_number(v.substr(dash + 1));
        } else if (key == "comment") {
            comment = v;
        } else if (key == "hand-off") {
            (void)parse_hand_off(v, "hand_off");
        } else if (key == "network") {
            network = v;
        } else if (key == "switch") {
            switch_type = v;
        } else if (key == "version") {
            version = v;
        }
    }
    (void)has_node_pools(version);
    if (auto n = network_for_slices(network, switch_type, version)) {
        // asked for once: a second time adds nothing
        if (n->find("unique-channel-per-segment") == std::string::npos) broken_invariant();
        if (network_for_slices(*n, switch_type, version)) broken_invariant();
    }
    const RackMap& map = snapshot_map();
    const RequestTag t = make_request(map, o, nodes_min, nodes_max, requeue);
    if (t.slice < 1 || t.slice > map.max_slice() || t.count < 1 || t.count * t.slice != t.nodes) broken_invariant();
    // the comment the plugin writes: the tag reads back the same, and the
    // user's own text is kept
    const std::string c = tagged_comment(t, comment);
    const auto again = RequestTag::parse(c);
    if (!again || again->str() != t.str()) broken_invariant();
    if (user_comment(c) != comment) broken_invariant();
}

// A job's license request (the first line, as Slurm keeps it: "a:2,b" or
// "a|b") and slurmctld's licenses ("name total in_use reserved" lines):
// the gate license put on and taken off, and held_back_by_gates() on it.
inline bool licenses(std::string_view text) {
    const auto ls = lines(text);
    const std::string_view request = ls.empty() ? std::string_view() : ls[0];
    const std::string_view gate = "nvlslice_gate";
    const std::string on = with_license(request, gate), off = without_license(request, gate);
    if (!has_license(on, gate) || has_license(off, gate)) broken_invariant();
    if (with_license(on, gate) != on || without_license(off, gate) != off) broken_invariant();
    LicenseItem it;
    for (std::string_view rest = request; next_license_item(rest, it);)
        if (it.name.size() > it.text.size() || it.count < 0 || it.count > 1000000000) broken_invariant();
    SlurmGates g;
    for (size_t i = 1; i < ls.size(); ++i) {
        const auto w = split_ws(ls[i]);
        if (w.empty()) continue;
        SlurmLicense l;
        l.name = w[0];
        l.total = w.size() > 1 ? small_number(w[1]) : 0;
        l.in_use = w.size() > 2 ? small_number(w[2]) : 0;
        l.reserved = w.size() > 3 ? small_number(w[3]) : 0;
        g.licenses.push_back(std::move(l));
    }
    SlurmJob j;
    j.licenses = std::string(request);
    j.reason = PendingReason("Licenses");
    const auto held = held_back_by_gates(j, g, 0, gate, 0);
    j.licenses = on;
    // the gate's own license never holds a job back: the helper opens it
    const auto held_gated = held_back_by_gates(j, g, 0, gate, 0);
    if (held.has_value() != held_gated.has_value() && request.find('|') == std::string_view::npos) broken_invariant();
    return held.has_value();
}

// A job's TRES request (the first line, as Slurm prints tres_req_str:
// "cpu=16,mem=64G,gres/gpu=64"), the TRES names accounting tracks (the
// second, comma-separated, in slurmctld's order) and limits over them, one
// per line: "WHO FIELD n,n,..." (WHO: qos, assoc or parent; FIELD: grp,
// job, user or used; -1 no limit): next_tres_item over the request, and
// held_back_by_limits() on it.
inline bool tres_limits(std::string_view text) {
    const auto ls = lines(text);
    const std::string_view request = ls.empty() ? std::string_view() : ls[0];
    size_t items = 0;
    TresCount t;
    for (std::string_view rest = request; next_tres_item(rest, t); ++items)
        if (t.name.empty() || t.name.find(',') != std::string_view::npos || t.count < 0 || t.count > (int64_t(1) << 62))
            broken_invariant();
    if (items > size_t(std::count(request.begin(), request.end(), ',')) + 1) broken_invariant();
    AcctLimits a;
    if (ls.size() > 1)
        for (std::string_view names = ls[1]; !names.empty();) {
            const size_t c = names.find(',');
            a.tres_names.emplace_back(names.substr(0, c));
            names.remove_prefix(c == std::string_view::npos ? names.size() : c + 1);
            if (a.tres_names.size() > 64) break;
        }
    a.qos.emplace_back();
    a.qos[0].name = "q";
    a.qos[0].users.push_back({1000, 0, 0, {}});
    a.assocs.resize(2);
    a.assocs[0].id = 1; // the job's
    a.assocs[0].parent = 2;
    a.assocs[1].id = 2;
    for (size_t i = 2; i < ls.size(); ++i) {
        const auto w = split_ws(ls[i]);
        if (w.size() < 3) continue;
        std::vector<int64_t> v;
        for (std::string_view n = w[2]; !n.empty() && v.size() < 64;) {
            const size_t c = n.find(',');
            const std::string_view x = n.substr(0, c);
            v.push_back(x.substr(0, 1) == "-" ? -1 : small_number(x));
            n.remove_prefix(c == std::string_view::npos ? n.size() : c + 1);
        }
        AcctLimits::Qos& q = a.qos[0];
        AcctLimits::Assoc& as = a.assocs[w[0] == "parent" ? 1 : 0];
        const bool qos = w[0] == "qos";
        if (w[1] == "grp") (qos ? q.grp_tres : as.grp_tres) = v;
        if (w[1] == "job") (qos ? q.max_tres_pj : as.max_tres_pj) = v;
        if (w[1] == "user" && qos) q.max_tres_pu = v;
        if (w[1] == "used") (qos ? q.used_tres : as.used_tres) = v;
        if (w[1] == "mine") q.users[0].tres = v;
    }
    SlurmJob j;
    j.state = JobState::Pending;
    j.num_nodes = 1;
    j.user_id = 1000;
    j.assoc_id = 1;
    j.qos = "q";
    j.tres_req = std::string(request);
    const auto held = held_back_by_limits(j, a);
    if (held && (held->kind != ReasonKind::AcctLimit || held->text.empty() ||
                 (held->text.rfind("QOS", 0) != 0 && held->text.rfind("Assoc", 0) != 0)))
        broken_invariant();
    return items > 0;
}

// A site's topology (topology.conf or topology.yaml) with the racks of
// the fixed 2 x 8 map beside it: what is written reads back with the racks
// as the topology "nvlslice", and written again from itself it is the same
// (the earlier blocks replaced, the site's topologies kept as they were).
inline void beside(std::string_view text) {
    const std::string out = write_topology_yaml_beside(snapshot_map(), text, "fuzz-site");
    if (read_topology_yaml(out, "out", {}, "nvlslice").domains().size() != 2) broken_invariant();
    const std::string again = write_topology_yaml_beside(snapshot_map(), out, "fuzz-site");
    if (again != out) broken_invariant();
}

} // namespace detail

// What the inputs came to, per reader: read (a model returned) or refused
// (nvl::Error, or no tag / record in the text). The mutation test reads it:
// mutations that never get past a reader's first check, or never break
// one, test nothing.
struct Tally {
    unsigned long long read[kReaders] = {}, refused[kReaders] = {};
};

inline int one_input(const uint8_t* data, size_t size, Tally* tally = nullptr) {
    if (size == 0) return 0;
    // the first byte picks the reader, the rest is the text
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    const unsigned reader = reader_of(data[0]);
    bool read = true;
    try {
        switch (reader) {
        case kHostlist: {
            auto names = hostlist_expand(text, 4096);
            // what compresses must expand back to the same names
            if (hostlist_expand(hostlist_compress(names), 4096) != names) broken_invariant();
            break;
        }
        case kRackMapYaml: {
            RackMap m = read_rack_map_yaml(text, "fuzz.yaml");
            RackMap again = read_rack_map_yaml(write_rack_map_yaml(m), "again.yaml");
            if (again.node_count() != m.node_count()) broken_invariant();
            break;
        }
        case kTopologyConf: read_topology_conf(text, "fuzz.conf"); break;
        case kTopologyYaml: read_topology_yaml(text, "fuzz.yaml"); break;
        case kRequestTag: {
            // a tag that parses must print back to one that parses the same
            if (auto t = RequestTag::parse(text)) {
                auto again = RequestTag::parse(t->str());
                if (!again || again->str() != t->str()) broken_invariant();
                (void)user_comment(text);
            } else {
                read = false;
            }
            break;
        }
        case kPlacementRecord: {
            // AdminComment: the record amid a site's text; a record the
            // helper writes in place of the one there (or after a text that
            // has none) is the one read back
            if (auto r = PlacementRecord::parse(text)) {
                const std::string s = r->str();
                auto again = PlacementRecord::parse(s);
                if (!again || again->str() != s) broken_invariant();
                auto in_place = PlacementRecord::parse(with_record(text, s));
                if (!in_place || in_place->str() != s) broken_invariant();
            } else {
                read = false;
                const std::string s = "nvlslice/1 placed slice=1 slices=n1 repairs=0 moves=0 job=7";
                auto added = PlacementRecord::parse(with_record(text, s));
                if (!added || added->str() != s) broken_invariant();
            }
            break;
        }
        case kHelperConfig: read_helper_config(text, "fuzz.yaml"); break;
        case kPluginArgs: {
            // plugstack.conf: "required PATH.so key=value ...", as Slurm splits it
            const auto words = detail::split_ws(text);
            std::vector<const char*> argv;
            for (const auto& w : words) argv.push_back(w.c_str());
            PluginConfig c = parse_plugin_args(int(argv.size()), argv.data());
            if (c.map.empty()) broken_invariant();
            break;
        }
        case kHttpRequest: read = detail::http_request(text); break;
        case kListen: {
            ListenAddress a = parse_listen(text);
            // an accepted address prints back as it was given, and reads the same
            ListenAddress again = parse_listen(a.str());
            if (again.host != a.host || again.port != a.port) broken_invariant();
            if (a.host.find('\0') != std::string::npos) broken_invariant();
            break;
        }
        case kFabricReport: detail::fabric_report(text); break;
        case kGpuFabric: detail::gpu_fabric(text); break;
        case kSnapshot: detail::snapshot(text); break;
        case kTrace: detail::sim_trace(text); break;
        case kUserOptions: detail::user_options(text); break;
        case kLicenses: read = detail::licenses(text); break;
        case kTresLimits: read = detail::tres_limits(text); break;
        case kBeside: detail::beside(text); break;
        }
    } catch (const Error&) {
        // a clear refusal is the expected outcome for most inputs
        read = false;
    }
    if (tally) ++(read ? tally->read : tally->refused)[reader];
    return 0;
}

} // namespace nvl::fuzz
