#include "reconcile.hpp"

#include "cycle.hpp"
#include "hostlist.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace nvl {

JobId lend_job_of(std::string_view prefix, std::string_view resv) {
    const size_t n = prefix.size();
    if (n == 0 || resv.size() <= n + 1 || resv.compare(0, n, prefix) != 0 || resv[n] != '_') return 0;
    if (resv[n + 1] == '0') return 0; // no leading zeros: one name per job
    JobId id = 0;
    for (size_t i = n + 1; i < resv.size(); ++i) {
        if (resv[i] < '0' || resv[i] > '9') return 0;
        const JobId digit = JobId(resv[i] - '0');
        if (id > (JobId(-1) - digit) / 10) return 0; // beyond a job id
        id = id * 10 + digit;
    }
    return id;
}

JobId HelperConfig::lend_job(const std::string& resv) const {
    return lend_job_of(lend_reservation, resv);
}

CycleOutput reconcile(const RackMap& map, const ClusterView& view, const HelperConfig& cfg, int64_t now,
                      HelperMemory& mem, int64_t mono) {
    if (mono < 0) mono = now;
    // slurmctld just started (restarted, or a controller took over from a
    // state where nodes are UNKNOWN): its nodes read unknown until their
    // slurmd registers again, a few seconds. Read as failed, they would
    // degrade whole racks and move slice jobs off them; the cycle waits.
    // A start shows a quarter of the map or more unregistered at once; a
    // node or two alone (a node never booted, SlurmdTimeout=0) are failed
    // nodes like any, and stop nothing.
    std::vector<std::string> unregistered;
    for (const SlurmNode& n : view.nodes)
        if (n.unregistered && map.find_node(n.name)) unregistered.push_back(n.name);
    std::vector<LogEntry> said;
    if (!mem.unregistered_since && unregistered.size() * 4 < map.node_count()) unregistered.clear();
    if (!unregistered.empty()) {
        if (!mem.unregistered_since) {
            mem.unregistered_since = mono;
            CycleOutput out;
            out.log.push_back({Severity::Warning, 0,
                               fmt::format("{} node(s) not registered with slurmctld yet ({}): it has just started; "
                                           "nothing is decided until they register (or {} s)",
                                           unregistered.size(), hostlist_compress(unregistered), kUnregisteredWaitS)});
            return out;
        }
        if (mono - *mem.unregistered_since < kUnregisteredWaitS) return {};
    } else if (mem.unregistered_since) {
        said.push_back(
            {Severity::Info, 0,
             fmt::format("every node registered with slurmctld again ({} s)", mono - *mem.unregistered_since)});
        mem.unregistered_since.reset();
    }
    CycleOutput out = detail::Cycle(map, view, cfg, now, mono, mem).run();
    out.log.insert(out.log.begin(), said.begin(), said.end());
    return out;
}

std::vector<ApplyFailure> apply(ClusterApi& api, const HelperConfig& cfg, const std::vector<Action>& actions,
                                void (*after_each)(const Action&), bool (*stop)()) {
    const action::Names names = action_names(cfg);
    std::vector<ApplyFailure> failures;
    std::unordered_set<JobId> failed_jobs;
    bool lend_failed = false;
    for (size_t i = 0; i < actions.size(); ++i) {
        const Action& a = actions[i];
        if (stop && stop()) break;                       // asked to stop: the next start reads Slurm afresh
        if (a.job && failed_jobs.count(a.job)) continue; // builds on the action that failed
        // a refused lend leaves its spare in the spare reservation: this
        // update would free it to any job (the next cycle decides afresh)
        if (lend_failed && a.after_refused_lend()) continue;
        try {
            api.apply(a, names);
        } catch (const Unreachable& e) {
            // slurmctld is away: the rest of the batch was decided from a
            // snapshot that may be old by the time it answers again, and
            // each request would wait out the same timeout. The next cycle
            // reads Slurm afresh.
            failures.push_back({0,
                                a.kind(), // slurmctld's absence, not the job's fault: no backoff for it
                                fmt::format("{}: {}; the {} action(s) after it are left for the next cycle", a.name(),
                                            e.what(), actions.size() - i - 1),
                                true,
                                {}});
            break;
        } catch (const std::exception& e) {
            failures.push_back(
                {a.job, a.kind(),
                 fmt::format("{}{}: {}", a.name(), a.nodes().empty() ? "" : " (" + a.nodes() + ")", e.what()), false,
                 a.job ? std::string() : backoff_key(a)});
            if (a.job) failed_jobs.insert(a.job);
            lend_failed = lend_failed || a.refused_lend();
            continue;
        }
        if (after_each) after_each(a);
    }
    return failures;
}

void note_applied(HelperMemory& mem, const std::vector<Action>& actions, const std::vector<ApplyFailure>& failures,
                  int64_t mono, int64_t wall) {
    auto book = [&](HelperMemory::Backoff& b, const std::string& error) {
        b.failures += 1;
        b.until = mono + std::min<int64_t>(300, int64_t(1) << std::min(b.failures, 9));
        b.error = error;
        b.recorded = false;
    };
    std::unordered_set<JobId> failed;
    std::unordered_set<std::string> failed_keys;
    bool all_tried = true; // an unreachable slurmctld ends the batch: the rest was not applied
    for (const auto& f : failures) {
        all_tried = all_tried && !f.unreachable;
        if (f.unreachable) continue; // slurmctld's absence: the cycle retries, nothing backs off
        if (!f.job) {
            if (failed_keys.insert(f.key).second) book(mem.cluster_backoff[f.key], f.error);
            continue;
        }
        if (!failed.insert(f.job).second) continue;
        // refused inside its wait: the record that says the job backs off
        // (the only action a job has then; Slurm refuses every update of a
        // job in an INACTIVE partition). Said in the log once; booked again
        // it would be retried every cycle, each one longer.
        if (auto b = mem.backoff.find(f.job); b != mem.backoff.end() && b->second.until > mono) {
            b->second.recorded = true;
            continue;
        }
        book(mem.backoff[f.job], f.error);
    }
    for (const auto& a : actions) {
        if (a.job && !failed.count(a.job)) {
            // what Slurm refused worked again: the backoff ends. Not an
            // action inside the wait (the record that says the job backs
            // off): that would end each wait at its first cycle, and the
            // refused action would be tried every cycle, its count never
            // past 1.
            auto b = mem.backoff.find(a.job);
            if (b != mem.backoff.end() && b->second.until <= mono) mem.backoff.erase(b);
        }
        if (!a.job && !failed_keys.count(backoff_key(a))) mem.cluster_backoff.erase(backoff_key(a));
        if (wall > 0 && all_tried && a.requeues() && !failed.count(a.job)) mem.requeued_at[a.job] = wall;
        if (const auto* d = a.get<action::NodeDown>();
            d && d->job_requeued && wall > 0 && all_tried && !failed_keys.count(backoff_key(a)))
            mem.requeued_at[d->job_requeued] = wall;
        // the record written is the one to write back over a site's
        // overwrite (HelperMemory::records); one that may not have been
        // written is not kept: the next cycle reads what Slurm has
        if (const auto* r = a.get<action::SetRecord>()) {
            if (all_tried && !failed.count(a.job) && !r->text.empty())
                mem.records[a.job] = r->text;
            else
                mem.records.erase(a.job);
        }
    }
}

} // namespace nvl
