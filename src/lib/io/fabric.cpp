#include "fabric.hpp"

#include "error.hpp"
#include "hostlist.hpp"

#include <fmt/args.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

namespace nvl {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t at = 0;
    for (;;) {
        size_t p = s.find(sep, at);
        out.push_back(trim(s.substr(at, p == std::string_view::npos ? std::string_view::npos : p - at)));
        if (p == std::string_view::npos) break;
        at = p + 1;
    }
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// nvl2 before nvl10: digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            size_t i2 = i, j2 = j;
            while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
            while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
            std::string_view x(a.data() + i, i2 - i), y(b.data() + j, j2 - j);
            while (x.size() > 1 && x.front() == '0') x.remove_prefix(1);
            while (y.size() > 1 && y.front() == '0') y.remove_prefix(1);
            if (x.size() != y.size()) return x.size() < y.size();
            if (x != y) return x < y;
            i = i2;
            j = j2;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

} // namespace

GpuFabric parse_gpu_fabric(std::string_view csv) {
    auto f = split(csv, ',');
    if (f.size() < 4 || f.size() > 5)
        throw Error(fmt::format("\"{}\": expected UUID, CLIQUE, STATE, STATUS[, HEALTH] (nvidia-smi "
                                "--query-gpu=fabric.clusterUuid,fabric.cliqueId,fabric.state,fabric.status "
                                "--format=csv,noheader)",
                                trim(csv)));
    GpuFabric g;
    g.cluster_uuid = std::string(f[0]);
    g.clique = std::string(f[1]);
    g.state = std::string(f[2]);
    g.status = std::string(f[3]);
    if (f.size() == 5) g.health = std::string(f[4]);
    return g;
}

std::optional<std::string> gpu_fabric_problem(const GpuFabric& g) {
    if (!iequals(g.state, "Completed"))
        return fmt::format("fabric state {} (expected Completed: the GPU has not joined its NVLink domain)",
                           g.state.empty() ? "(none)" : g.state);
    if (!iequals(g.status, "Success")) return fmt::format("fabric status {} (expected Success)", g.status);
    const bool zero_uuid = g.cluster_uuid.empty() || std::all_of(g.cluster_uuid.begin(), g.cluster_uuid.end(),
                                                                 [](char c) { return c == '0' || c == '-'; });
    if (zero_uuid || g.cluster_uuid.find("N/A") != std::string::npos)
        return fmt::format("ClusterUUID {} (none: not in an NVLink domain)", g.cluster_uuid);
    if (g.clique.empty() || g.clique == "0" || g.clique.find("N/A") != std::string::npos)
        return fmt::format("CliqueId {} (0 or none: not in an NVLink domain)", g.clique.empty() ? "(none)" : g.clique);
    if (!g.health.empty() && !iequals(g.health, "Healthy") && g.health.find("N/A") == std::string::npos)
        return fmt::format("fabric health {} (expected Healthy)", g.health);
    return {};
}

std::string fabric_domain_key(const GpuFabric& g) {
    return g.cluster_uuid + "." + g.clique;
}

std::vector<NodeFabric> parse_fabric_report(std::string_view text, const std::string& file) {
    std::vector<NodeFabric> out;
    std::unordered_map<std::string, size_t> index;
    int line_no = 0;
    size_t at = 0;
    while (at <= text.size()) {
        size_t nl = text.find('\n', at);
        std::string_view raw = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
        at = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++line_no;
        std::string_view line = trim(raw);
        if (line.empty() || line.front() == '#') continue;
        size_t sp = line.find_first_of(" \t\v\f\r"); // the blanks trim() takes: a name never ends in one
        const std::string node(line.substr(0, sp));
        std::string_view rest = sp == std::string_view::npos ? std::string_view() : trim(line.substr(sp));
        auto [it, fresh] = index.emplace(node, out.size());
        if (fresh) out.push_back(NodeFabric{node, {}, line_no});
        NodeFabric& n = out[it->second];
        if (rest.empty()) continue; // a node whose nvidia-smi printed nothing: no GPUs
        for (std::string_view gpu : split(rest, ';')) {
            if (gpu.empty()) continue;
            try {
                n.gpus.push_back(parse_gpu_fabric(gpu));
            } catch (const Error& e) {
                throw ParseError({file, line_no, 1}, fmt::format("node {}: GPU {}: {}", node, n.gpus.size(), e.what()));
            }
        }
    }
    return out;
}

std::optional<std::string> node_fabric_problem(const NodeFabric& n) {
    if (n.gpus.empty()) return "no GPU reported (nvidia-smi printed nothing)";
    for (size_t i = 0; i < n.gpus.size(); ++i)
        if (auto p = gpu_fabric_problem(n.gpus[i])) return fmt::format("GPU {}: {}", i, *p);
    const std::string key = fabric_domain_key(n.gpus.front());
    for (size_t i = 1; i < n.gpus.size(); ++i)
        if (fabric_domain_key(n.gpus[i]) != key)
            return fmt::format("GPUs in two NVLink domains: GPU 0 in {}, GPU {} in {}", key, i,
                               fabric_domain_key(n.gpus[i]));
    return {};
}

Discovery discover_map(const std::vector<NodeFabric>& nodes, const DiscoverOptions& o) {
    Discovery d;
    struct Group {
        std::string uuid, clique;
        std::vector<std::string> names;
        std::map<size_t, int> gpu_counts; // count -> nodes
    };
    std::map<std::string, Group> groups;
    for (const auto& n : nodes) {
        if (auto p = node_fabric_problem(n)) {
            d.left_out.emplace_back(n.node, *p);
            continue;
        }
        Group& g = groups[fabric_domain_key(n.gpus.front())];
        g.uuid = n.gpus.front().cluster_uuid;
        g.clique = n.gpus.front().clique;
        g.names.push_back(n.node);
        g.gpu_counts[n.gpus.size()] += 1;
    }
    if (groups.empty())
        throw Error(fmt::format(
            "no node has a usable NVLink fabric identity ({} node(s) left out{})", d.left_out.size(),
            d.left_out.empty() ? ""
                               : fmt::format(", e.g. {}: {}", d.left_out.front().first, d.left_out.front().second)));
    std::vector<Group*> order;
    for (auto& [key, g] : groups) {
        std::sort(g.names.begin(), g.names.end(), natural_less);
        order.push_back(&g);
    }
    std::sort(order.begin(), order.end(),
              [](const Group* a, const Group* b) { return natural_less(a->names.front(), b->names.front()); });
    MapDefaults def;
    def.spares = o.spares;
    def.default_slice = o.default_slice;
    d.map = RackMap(def);
    for (size_t i = 0; i < order.size(); ++i) {
        const Group& g = *order[i];
        Domain dom;
        const std::string key = g.uuid + "." + g.clique;
        if (o.rename.empty()) {
            dom.name = key;
        } else {
            try {
                fmt::dynamic_format_arg_store<fmt::format_context> args;
                args.push_back(fmt::arg("index", int(i + 1)));
                args.push_back(fmt::arg("uuid", g.uuid));
                args.push_back(fmt::arg("clique", g.clique));
                dom.name = fmt::vformat(o.rename, args);
            } catch (const fmt::format_error& e) {
                throw Error(fmt::format("--rename \"{}\": {} (use {{index}}, {{uuid}} and {{clique}}, e.g. "
                                        "\"rack{{index:03}}\")",
                                        o.rename, e.what()));
            }
        }
        // the most common GPU count of its nodes
        size_t gpus = 0;
        int best = -1;
        for (auto [count, n] : g.gpu_counts)
            if (n > best) best = n, gpus = count;
        if (g.gpu_counts.size() > 1)
            d.notes.push_back(
                fmt::format("{}: nodes report different GPU counts; {} GPUs per node taken", dom.name, gpus));
        dom.gpus_per_node = int(gpus);
        dom.spares = o.spares;
        if (int(g.names.size()) <= dom.spares) {
            dom.spares = std::max(0, int(g.names.size()) - 1);
            d.notes.push_back(fmt::format("{}: {} node(s), not more than {} spare(s): spares set to {}", dom.name,
                                          g.names.size(), o.spares, dom.spares));
        }
        dom.feature.clear();
        dom.fabric = key;
        d.map.add_domain(std::move(dom), g.names);
        d.keys.push_back(key);
    }
    return d;
}

bool looks_like_fabric_key(std::string_view s) {
    const size_t dot = s.rfind('.');
    if (dot == std::string_view::npos || dot + 1 == s.size()) return false;
    for (char c : s.substr(dot + 1))
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    int hex = 0;
    for (char c : s.substr(0, dot)) {
        if (c == '-') continue;
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
        ++hex;
    }
    return hex == 32;
}

std::string expected_fabric_key(const Domain& d) {
    if (!d.fabric.empty()) return d.fabric;
    return looks_like_fabric_key(d.name) ? d.name : std::string();
}

std::vector<std::string> check_node_fabric(const std::string& node, const std::vector<GpuFabric>& gpus,
                                           const std::string& rack, const std::string& expected_key) {
    std::vector<std::string> out;
    for (size_t i = 0; i < gpus.size(); ++i) {
        if (auto p = gpu_fabric_problem(gpus[i])) {
            out.push_back(fmt::format("node {} GPU {}: {}", node, i, *p));
            continue;
        }
        const std::string key = fabric_domain_key(gpus[i]);
        if (!expected_key.empty() && !iequals(key, expected_key))
            out.push_back(fmt::format("node {} GPU {}: in NVLink domain {}, but the rack map puts {} in {} "
                                      "(domain {}): fix the map (nvl-topo discover) or the cabling",
                                      node, i, key, node, rack, expected_key));
    }
    return out;
}

std::string fabric_state_name(unsigned state) {
    switch (state) {
    case 0: return "Not Supported";
    case 1: return "Not Started";
    case 2: return "In Progress";
    case 3: return "Completed";
    }
    return fmt::format("Unknown ({})", state);
}

std::string fabric_uuid_string(const unsigned char* b) {
    std::string out;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
        out += fmt::format("{:02x}", b[i]);
    }
    return out;
}

std::string fabric_health_from_mask(unsigned mask) {
    // NVML's health mask: 2-bit fields (0 = not reported, 1 = true, 2 =
    // false) at bits 0 (degraded bandwidth), 2 (route recovery in progress),
    // 4 (route unhealthy), 6 (access timeout recovery in progress); bits 8-11
    // the configuration (0 = not reported, 1 = correct, more = what is wrong).
    static constexpr struct {
        unsigned shift;
        const char* name;
    } kFlags[] = {{0, "Degraded Bandwidth"},
                  {2, "Route Recovery In Progress"},
                  {4, "Route Unhealthy"},
                  {6, "Access Timeout Recovery In Progress"}};
    std::string bad;
    bool reported = false;
    for (const auto& f : kFlags) {
        const unsigned v = (mask >> f.shift) & 0x3u;
        if (v != 0) reported = true;
        if (v == 1) bad += (bad.empty() ? "" : ", ") + std::string(f.name);
    }
    const unsigned config = (mask >> 8) & 0xfu;
    if (config != 0) reported = true;
    if (config > 1) {
        static constexpr const char* kConfig[] = {"",
                                                  "",
                                                  "Incorrect SysGUID",
                                                  "Incorrect Chassis Serial Number",
                                                  "No Partition",
                                                  "Insufficient NVLinks",
                                                  "Incompatible GPU Firmware",
                                                  "Invalid Location"};
        bad += (bad.empty() ? "" : ", ") + std::string(config < 8 ? kConfig[config] : "Incorrect Configuration");
    }
    if (!bad.empty()) return bad;
    return reported ? "Healthy" : "";
}

std::vector<std::string> compare_with_fabric(const RackMap& map, const std::vector<NodeFabric>& nodes) {
    std::vector<std::string> out;
    std::map<std::string, std::set<std::string>> racks_of_key; // fabric domain -> map racks
    std::map<std::string, std::set<std::string>> keys_of_rack; // map rack -> fabric domains
    std::set<std::string> seen;
    for (const auto& n : nodes) {
        seen.insert(n.node);
        auto id = map.find_node(n.node);
        if (auto p = node_fabric_problem(n)) {
            out.push_back(fmt::format("fabric: {} {}: {}", n.node, id ? "cannot be placed" : "(not in the map)", *p));
            continue;
        }
        const std::string key = fabric_domain_key(n.gpus.front());
        if (!id) {
            out.push_back(fmt::format("fabric: {} is in NVLink domain {} but in no rack of the map", n.node, key));
            continue;
        }
        const std::string rack = map.domain(map.domain_of(*id)).name;
        racks_of_key[key].insert(rack);
        keys_of_rack[rack].insert(key);
    }
    for (const auto& [rack, keys] : keys_of_rack)
        if (keys.size() > 1) {
            std::string list;
            for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
            out.push_back(fmt::format("fabric: rack {} spans {} NVLink domains ({}): its slices would cross "
                                      "InfiniBand",
                                      rack, keys.size(), list));
        }
    for (const auto& [key, racks] : racks_of_key)
        if (racks.size() > 1) {
            std::string list;
            for (const auto& r : racks) list += (list.empty() ? "" : ", ") + r;
            out.push_back(fmt::format("fabric: NVLink domain {} is split over racks {} of the map", key, list));
        }
    std::vector<std::string> missing;
    for (NodeId id = 0; id < map.node_count(); ++id)
        if (!seen.count(map.node_name(id))) missing.push_back(map.node_name(id));
    if (!missing.empty())
        out.push_back(fmt::format("fabric: {} node(s) of the map were not in the discovery: {}", missing.size(),
                                  hostlist_compress(missing)));
    return out;
}

} // namespace nvl
