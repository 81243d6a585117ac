// nvlslice — small helpers shared by the command-line tools: strict option
// parsing (unknown options are refused by name) and synthetic cluster states
// for demos and benchmarks.
#pragma once

#include "error.hpp"
#include "model.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace nvl::cli {

// --name value, --name=value, or --flag. `spec` maps each option to whether
// it takes a value. Throws nvl::Error naming the option.
class Options {
  public:
    Options(int argc, char** argv, const std::map<std::string, bool>& spec) {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            if (a.rfind("--", 0) != 0) {
                positional_.push_back(a);
                continue;
            }
            std::string name = a.substr(2), value;
            bool inline_value = false;
            if (auto eq = name.find('='); eq != std::string::npos) {
                value = name.substr(eq + 1);
                name = name.substr(0, eq);
                inline_value = true;
            }
            auto it = spec.find(name);
            if (it == spec.end()) throw Error(fmt::format("unknown option --{} (see --help)", name));
            if (it->second && !inline_value) {
                if (i + 1 >= argc) throw Error(fmt::format("option --{} needs a value", name));
                value = argv[++i];
            } else if (!it->second && inline_value) {
                throw Error(fmt::format("option --{} takes no value", name));
            }
            values_[name] = value;
        }
    }
    bool has(const std::string& n) const { return values_.count(n) != 0; }
    std::string str(const std::string& n, const std::string& def = "") const {
        auto it = values_.find(n);
        return it == values_.end() ? def : it->second;
    }
    long integer(const std::string& n, long def, long min, long max) const {
        if (!has(n)) return def;
        const std::string& s = values_.at(n);
        char* end = nullptr;
        long v = std::strtol(s.c_str(), &end, 10);
        if (s.empty() || *end || v < min || v > max)
            throw Error(fmt::format("--{}={}: expected an integer from {} to {}", n, s, min, max));
        return v;
    }
    double real(const std::string& n, double def, double min, double max) const {
        if (!has(n)) return def;
        const std::string& s = values_.at(n);
        char* end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end || !(v >= min && v <= max))
            throw Error(fmt::format("--{}={}: expected a number from {} to {}", n, s, min, max));
        return v;
    }
    const std::vector<std::string>& positional() const { return positional_; }

  private:
    std::map<std::string, std::string> values_;
    std::vector<std::string> positional_;
};

// A uniform draw in [0, 1) from raw generator bits: the same on every
// platform for a seed (std::uniform_real_distribution is not).
inline double unit(std::mt19937_64& g) {
    return double(g() >> 11) * (1.0 / 9007199254740992.0);
}

// Scatters small jobs (1-4 nodes each) over the cluster rack-blind, the way
// free nodes end up on a busy shared cluster, until `fraction` of the nodes
// are allocated; then `idle_racks` random domains are emptied (jobs ended).
inline int scatter_jobs(Snapshot& snap, double fraction, uint64_t seed, int idle_racks = 0) {
    std::mt19937_64 g(seed);
    const RackMap& map = snap.map();
    const size_t n = map.node_count();
    size_t target = size_t(fraction * double(n) + 0.5), busy = 0;
    JobId job = 1000;
    int guard = 0;
    while (busy < target && guard++ < 1 << 22) {
        NodeId start = NodeId(g() % n);
        int len = 1 + int(g() % 4);
        ++job;
        for (int i = 0; i < len && busy < target; ++i) {
            NodeId id = NodeId((start + NodeId(i)) % n);
            if (snap.node(id).state != NodeState::Idle) continue;
            snap.set(id, {NodeState::Allocated, job, -1, false});
            ++busy;
        }
    }
    for (int r = 0; r < idle_racks && !map.domains().empty(); ++r) {
        DomainId d = DomainId(g() % map.domains().size());
        for (NodeId id : map.domain(d).nodes)
            if (snap.node(id).state == NodeState::Allocated) {
                snap.set(id, {NodeState::Idle, 0, -1, false});
                --busy;
            }
    }
    return int(busy);
}

} // namespace nvl::cli
