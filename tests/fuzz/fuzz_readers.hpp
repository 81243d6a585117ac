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
    kTrace = 13, // nvl-sim --trace FILE (first byte 247)
    kReaders = 14
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
    static const char* const names[kReaders] = {"hostlist",     "rack map yaml",    "topology.conf", "topology.yaml",
                                                "request tag",  "placement record", "helper config", "plugin args",
                                                "http request", "metrics_listen",   "fabric report", "gpu fabric csv",
                                                "snapshot",     "sim trace"};
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
            if (auto r = PlacementRecord::parse(text)) {
                auto again = PlacementRecord::parse(r->str());
                if (!again || again->str() != r->str()) broken_invariant();
            } else {
                read = false;
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
        }
    } catch (const Error&) {
        // a clear refusal is the expected outcome for most inputs
        read = false;
    }
    if (tally) ++(read ? tally->read : tally->refused)[reader];
    return 0;
}

} // namespace nvl::fuzz
