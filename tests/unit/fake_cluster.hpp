// A ClusterApi in memory, for unit tests of apply() and the cycle: jobs,
// nodes and the reservation as plain records, every call logged, and
// failures injected per operation and job.
#pragma once

#include "cluster_api.hpp"
#include "error.hpp"
#include "hostlist.hpp"

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

namespace nvl::test {

class FakeCluster : public ClusterApi {
  public:
    std::vector<SlurmNode> nodes;
    std::vector<SlurmJob> jobs;
    std::optional<Reservation> resv;
    std::vector<std::string> calls;            // "hold 7", "pin 7 n[001-016] 0", ...
    std::map<std::string, std::string> faults; // "release 7" -> error message

    std::vector<SlurmNode> load_nodes() override { return nodes; }
    std::vector<SlurmJob> load_jobs() override { return jobs; }
    std::optional<Reservation> load_reservation(const std::string&) override { return resv; }
    void pin_job(JobId id, const std::string& n, int64_t start_at) override {
        call(fmt::format("pin {}", id), fmt::format(" {} {}", n, start_at));
        job(id).req_nodes = n;
    }
    void exclude_nodes(JobId id, const std::string& n, int64_t start_at) override {
        call(fmt::format("exclude {}", id), fmt::format(" {} {}", n, start_at));
        job(id).exc_nodes = n;
    }
    void set_admin_comment(JobId id, const std::string& text) override {
        call(fmt::format("record {}", id));
        job(id).admin_comment = text;
    }
    void hold(JobId id) override {
        call(fmt::format("hold {}", id));
        job(id).held = job(id).admin_held = true;
    }
    void release(JobId id) override {
        call(fmt::format("release {}", id));
        job(id).held = job(id).admin_held = false;
    }
    void requeue_hold(JobId id) override {
        call(fmt::format("requeue-hold {}", id));
        job(id).state = JobState::Pending;
        job(id).held = true;
    }
    void requeue(JobId id) override {
        call(fmt::format("requeue {}", id));
        job(id).state = JobState::Pending;
    }
    void allow_requeue(JobId id) override {
        call(fmt::format("allow-requeue {}", id));
        job(id).requeue = true;
    }
    void set_licenses(JobId id, const std::string& l) override {
        call(fmt::format("licenses {}", id), " \"" + l + "\"");
        job(id).licenses = l;
    }
    void set_reservation(const std::string& name, const std::string& n, int64_t start_at, int64_t end_at) override {
        call("reservation", fmt::format(" {} {} {} {}", name, n, start_at, end_at));
        resv = Reservation{name, n, start_at, end_at};
    }
    void ensure_gate(const std::string& reservation, const std::string& license) override {
        call("gate", fmt::format(" {} {}", reservation, license));
    }
    void set_node_weight(const std::string& n, uint32_t w) override { call(fmt::format("weight {}", w), " " + n); }
    void set_active_features(const std::string& n, const std::string& f) override {
        call("features", fmt::format(" {} \"{}\"", n, f));
        for (const auto& name : hostlist_expand(n))
            for (auto& x : nodes)
                if (x.name == name) x.active_features = f;
    }
    void set_node_down(const std::string& n, const std::string& reason) override {
        call("down " + n, " \"" + reason + "\"");
        for (auto& x : nodes)
            if (x.name == n) {
                x.state = NodeState::Drained; // DOWN + DRAIN: shown drained
                x.failed = true;
                x.not_responding = true;
                x.reason = reason;
            }
    }

  private:
    // Records the call, then fails it if a fault names it (as Slurm would:
    // nothing changes).
    void call(const std::string& key, const std::string& rest = "") {
        calls.push_back(key + rest);
        auto f = faults.find(key);
        if (f != faults.end()) throw Error(f->second);
    }
    SlurmJob& job(JobId id) {
        for (auto& j : jobs)
            if (j.id == id) return j;
        throw Error(fmt::format("Invalid job id specified ({})", id));
    }
};

} // namespace nvl::test
