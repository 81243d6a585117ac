#include "eligibility.hpp"

#include "slice_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>

namespace nvl {

bool reason_holds_back(std::string_view r) {
    return holds_back(reason_kind(r));
}

HeldBack HeldBack::from_text(std::string text) {
    const std::string_view name = std::string_view(text).substr(0, text.find(' '));
    HeldBack h{reason_kind(name), {}, refuses_updates(name)};
    h.text = std::move(text);
    return h;
}

std::optional<HeldBack> held_back_by_slurm(const SlurmJob& j, int64_t now, std::string_view gate_license) {
    if (j.state != JobState::Pending) return std::nullopt;
    const bool first_start = j.restarts == 0;
    const ReasonKind k = j.reason.kind();
    // A pending job's begin_time is Slurm's StartTime: its begin time, or a
    // later start the scheduler expects. Slurm says which with its reason
    // (BeginTime, set before any license or node test); a job not looked at
    // yet (None) whose StartTime lies ahead waits for its begin time too.
    if (first_start && j.begin_time > now && (k == ReasonKind::None || k == ReasonKind::BeginTime)) {
        char when[32] = "?";
        const time_t t = time_t(j.begin_time);
        struct tm tm {};
        if (localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        return HeldBack{ReasonKind::BeginTime, fmt::format("BeginTime (eligible at {})", when)};
    }
    // Licenses: the gate's in gate mode (held_back_by_gates looks past it);
    // Slurm's own for a job without it
    if (k == ReasonKind::Licenses && (gate_license.empty() || !has_license(j.licenses, gate_license)))
        return HeldBack{k, j.reason.name()};
    if (!holds_back(k)) return std::nullopt;
    // a requeued job's BeginTime is Slurm's requeue delay, not the user's
    if (!first_start && k == ReasonKind::BeginTime) return std::nullopt;
    if (k == ReasonKind::Unknown)
        return HeldBack{k, fmt::format("{} (a reason this nvlslice does not know)", j.reason.name())};
    return HeldBack{k, j.reason.name(), j.reason.refuses_updates()};
}

namespace {

// the licenses of `request` ("a:2,b", or "a|b": one of) short now for a job
// (in a reservation: the reservations' licenses count as its own)
bool licenses_short(std::string_view request, const std::vector<SlurmLicense>& have, std::string_view gate,
                    bool in_reservation, std::string* which) {
    const bool any_of = request.find('|') != std::string_view::npos;
    bool all_short = true, some_short = false;
    LicenseItem it;
    while (next_license_item(request, it, any_of ? '|' : ',')) {
        const std::string_view name = it.name;
        const int64_t want = it.count;
        if (name == gate) {
            all_short = false; // the gate's is the helper's to open
            continue;
        }
        bool is_short = false;
        for (const auto& l : have)
            if (l.name == name) {
                const int64_t free = l.total - l.in_use - (in_reservation ? 0 : l.reserved);
                is_short = free < want;
            }
        // a license slurmctld does not list: remote (a database's), not
        // counted here; Slurm's own reason will say
        if (is_short) {
            some_short = true;
            if (which && which->empty()) *which = std::string(name);
        } else {
            all_short = false;
        }
    }
    return any_of ? all_short && some_short : some_short;
}

} // namespace

std::optional<HeldBack> held_back_by_gates(const SlurmJob& j, const SlurmGates& g, int array_running,
                                           std::string_view gate_license, int64_t now, const AcctLimits* limits) {
    if (j.state != JobState::Pending) return std::nullopt;
    // any other reason: Slurm tested all this already
    if (!j.reason.is(ReasonKind::None) && !j.reason.is(ReasonKind::Licenses)) return std::nullopt;
    bool size_and_time = j.qos.empty();
    if (!size_and_time && limits)
        for (const auto& q : limits->qos)
            if (q.name == j.qos) size_and_time = !q.lifts_partition_limits;
    // its partitions ("a,b": any of them that would run it)
    if (!j.partition.empty() && !g.partitions.empty()) {
        std::string_view parts = j.partition;
        std::optional<HeldBack> why;
        bool any_runs = false, any_known = false;
        while (!parts.empty() && !any_runs) {
            const size_t c = parts.find(',');
            const std::string_view name = parts.substr(0, c);
            parts.remove_prefix(c == std::string_view::npos ? parts.size() : c + 1);
            for (const auto& p : g.partitions) {
                if (p.name != name) continue;
                any_known = true;
                std::string w;
                if (!p.runs_jobs)
                    w = p.inactive ? "PartitionInactive" : "PartitionDown";
                else if (size_and_time &&
                         ((p.max_nodes >= 0 && j.num_nodes > p.max_nodes) || j.num_nodes < p.min_nodes))
                    w = "PartitionNodeLimit";
                else if (size_and_time && p.max_time_s >= 0 && j.time_limit > p.max_time_s)
                    w = "PartitionTimeLimit";
                if (w.empty())
                    any_runs = true;
                else if (!why)
                    why = HeldBack{ReasonKind::Partition, fmt::format("{} (partition {})", w, p.name), p.inactive};
            }
        }
        if (any_known && !any_runs) return why;
    }
    // a reservation of its own that has not started (or is gone)
    if (!j.reservation.empty()) {
        const Reservation* r = nullptr;
        for (const auto& x : g.reservations)
            if (x.name == j.reservation) r = &x;
        if (r && r->start_time > now)
            return HeldBack{ReasonKind::Reservation, fmt::format("Reservation ({} starts later)", j.reservation)};
    }
    // licenses besides the gate's
    if (!j.licenses.empty()) {
        std::string which;
        if (licenses_short(j.licenses, g.licenses, gate_license, !j.reservation.empty(), &which))
            return HeldBack{ReasonKind::Licenses, fmt::format("Licenses ({} in use)", which)};
    }
    if (j.array_id && j.array_throttle > 0 && array_running >= int(j.array_throttle))
        return HeldBack{ReasonKind::ArrayThrottle, fmt::format("JobArrayTaskLimit ({} of its array run, at most {})",
                                                               array_running, j.array_throttle)};
    return std::nullopt;
}

namespace {

// Slurm's reason names for a TRES limit, by the TRES's kind
// (_get_tres_state_reason: cpu, mem, energy, node and billing by position,
// the others by type)
enum TresKind { kCpu, kMem, kEnergy, kNode, kBilling, kGres, kLicense, kBB, kOther };
TresKind tres_kind(std::string_view name) {
    if (name == "cpu") return kCpu;
    if (name == "mem") return kMem;
    if (name == "energy") return kEnergy;
    if (name == "node") return kNode;
    if (name == "billing") return kBilling;
    if (name.substr(0, 5) == "gres/") return kGres;
    if (name.substr(0, 8) == "license/") return kLicense;
    if (name.substr(0, 3) == "bb/") return kBB;
    return kOther;
}
const char* const kQosGrp[] = {"QOSGrpCpuLimit", "QOSGrpMemLimit", "QOSGrpEnergy", "QOSGrpNodeLimit", "QOSGrpBilling",
                               "QOSGrpGRES",     "QOSGrpLicense",  "QOSGrpBB",     "QOSGrpUnknown"};
const char* const kQosMaxJob[] = {"QOSMaxCpuPerJobLimit",  "QOSMaxMemoryPerJob",  "QOSMaxEnergyPerJob",
                                  "QOSMaxNodePerJobLimit", "QOSMaxBillingPerJob", "QOSMaxGRESPerJob",
                                  "QOSMaxLicensePerJob",   "QOSMaxBBPerJob",      "QOSMaxUnknownPerJob"};
const char* const kQosMaxUser[] = {"QOSMaxCpuPerUserLimit",  "QOSMaxMemoryPerUser",  "QOSMaxEnergyPerUser",
                                   "QOSMaxNodePerUserLimit", "QOSMaxBillingPerUser", "QOSMaxGRESPerUser",
                                   "QOSMaxLicensePerUser",   "QOSMaxBBPerUser",      "QOSMaxUnknownPerUser"};
const char* const kAssocGrp[] = {"AssocGrpCpuLimit",  "AssocGrpMemLimit", "AssocGrpEnergy",
                                 "AssocGrpNodeLimit", "AssocGrpBilling",  "AssocGrpGRES",
                                 "AssocGrpLicense",   "AssocGrpBB",       "AssocGrpUnknown"};
const char* const kAssocMaxJob[] = {"AssocMaxCpuPerJobLimit",  "AssocMaxMemPerJob",     "AssocMaxEnergyPerJob",
                                    "AssocMaxNodePerJobLimit", "AssocMaxBillingPerJob", "AssocMaxGRESPerJob",
                                    "AssocMaxLicensePerJob",   "AssocMaxBBPerJob",      "AssocMaxUnknownPerJob"};

int64_t tres_at(const std::vector<int64_t>& v, size_t p, int64_t none) {
    return p < v.size() ? v[p] : none;
}

} // namespace

bool next_tres_item(std::string_view& s, TresCount& out) {
    while (!s.empty()) {
        const size_t c = s.find(',');
        const std::string_view item = s.substr(0, c);
        s.remove_prefix(c == std::string_view::npos ? s.size() : c + 1);
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        const std::string_view name = item.substr(0, eq), v = item.substr(eq + 1);
        // digits, an optional fraction, an optional unit (memory: to MB)
        size_t i = 0;
        int64_t whole = 0;
        while (i < v.size() && v[i] >= '0' && v[i] <= '9' && whole < (int64_t(1) << 40))
            whole = whole * 10 + (v[i++] - '0');
        if (i == 0) continue;
        double frac = 0, scale = 0.1;
        if (i < v.size() && v[i] == '.')
            for (++i; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i, scale /= 10) frac += (v[i] - '0') * scale;
        double mb_per_unit = 1;
        if (i < v.size()) {
            switch (v[i]) {
            case 'K': mb_per_unit = 1.0 / 1024; break;
            case 'M': mb_per_unit = 1; break;
            case 'G': mb_per_unit = 1024; break;
            case 'T': mb_per_unit = 1024.0 * 1024; break;
            case 'P': mb_per_unit = 1024.0 * 1024 * 1024; break;
            default: mb_per_unit = -1;
            }
            ++i;
        }
        if (mb_per_unit < 0 || i != v.size()) continue;
        // capped: 2^40 P of memory is past any int64_t
        const double value = std::min((double(whole) + frac) * (name == "mem" ? mb_per_unit : 1), 0x1p62);
        out = {name, int64_t(value + 0.999999)};
        return true;
    }
    return false;
}

const AcctLimits::Assoc* AcctLimits::assoc(uint32_t id) const {
    auto it = std::lower_bound(assocs.begin(), assocs.end(), id, [](const Assoc& x, uint32_t v) { return x.id < v; });
    return it != assocs.end() && it->id == id ? &*it : nullptr;
}

namespace {

std::optional<std::string> limit_reason(const SlurmJob& j, const AcctLimits& a) {
    if (j.state != JobState::Pending || j.num_nodes <= 0) return std::nullopt;
    const int64_t n = j.num_nodes;
    auto over = [](int64_t limit, int64_t used, int64_t add) { return limit >= 0 && used + add > limit; };
    const AcctLimits::Qos* q = nullptr;
    for (const auto& x : a.qos)
        if (x.name == j.qos) q = &x;
    // MaxWall: the job's time limit above it (a job without one has the
    // partition's, which Slurm compares the same way; not known here)
    const bool q_wall = q && q->max_wall_s >= 0;
    if (q_wall && j.time_limit > q->max_wall_s) return std::string("QOSMaxWallDurationPerJobLimit");
    if (q) {
        if (over(q->max_nodes_per_job, 0, n)) return std::string("QOSMaxNodePerJobLimit");
        if (over(q->grp_nodes, q->used_nodes, n)) return std::string("QOSGrpNodeLimit");
        if (over(q->grp_jobs, q->used_jobs, 1)) return std::string("QOSGrpJobsLimit");
        for (const auto& u : q->users)
            if (u.uid == j.user_id) {
                if (over(q->max_nodes_per_user, u.nodes, n)) return std::string("QOSMaxNodePerUserLimit");
                if (over(q->max_jobs_per_user, u.jobs, 1)) return std::string("QOSMaxJobsPerUserLimit");
            }
        if (over(q->max_nodes_per_user, 0, n)) return std::string("QOSMaxNodePerUserLimit");
    }
    const bool q_grp_nodes = q && q->grp_nodes >= 0, q_grp_jobs = q && q->grp_jobs >= 0,
               q_job_nodes = q && q->max_nodes_per_job >= 0;
    const AcctLimits::Assoc* at = a.assoc(j.assoc_id);
    if (at) {
        if (!q_wall && at->max_wall_s >= 0 && j.time_limit > at->max_wall_s)
            return std::string("AssocMaxWallDurationPerJobLimit");
        if (over(at->max_jobs, at->used_jobs, 1)) return std::string("AssocMaxJobsLimit");
        if (!q_job_nodes && over(at->max_nodes_per_job, 0, n)) return std::string("AssocMaxNodePerJobLimit");
    }
    // the Grp limits of its association and of every account above it
    const AcctLimits::Assoc* own = at;
    for (int depth = 0; at && depth < 64; ++depth, at = at->parent ? a.assoc(at->parent) : nullptr) {
        if (!q_grp_nodes && over(at->grp_nodes, at->used_nodes, n)) return std::string("AssocGrpNodeLimit");
        if (!q_grp_jobs && over(at->grp_jobs, at->used_jobs, 1)) return std::string("AssocGrpJobsLimit");
    }
    // Every other TRES it asks for (cpu, mem, billing, gres/gpu, a
    // license ...), as acct_policy tests them after node selection: the
    // QOS's limits first, then the association's where the QOS sets none of
    // that kind on that TRES. Its request as Slurm counted it at
    // submission (exclusive nodes may count more: a limit may be missed
    // here, never made up).
    if (a.tres_names.empty() || j.tres_req.empty()) return std::nullopt;
    const AcctLimits::Use* mine = nullptr;
    if (q)
        for (const auto& u : q->users)
            if (u.uid == j.user_id) mine = &u;
    std::string_view request = j.tres_req;
    TresCount t;
    while (next_tres_item(request, t)) {
        const TresKind k = tres_kind(t.name);
        if (t.count <= 0 || k == kNode || k == kEnergy) continue; // nodes: above; energy is never limited
        size_t p = 0;
        while (p < a.tres_names.size() && a.tres_names[p] != t.name) ++p;
        if (p == a.tres_names.size()) continue; // not tracked by accounting: never limited
        auto say = [&](const char* reason, int64_t limit, int64_t used) {
            return fmt::format("{} ({}: {} asked, {} in use, limit {})", reason, t.name, t.count, used, limit);
        };
        if (q) {
            if (const int64_t l = tres_at(q->max_tres_pj, p, -1); over(l, 0, t.count)) return say(kQosMaxJob[k], l, 0);
            if (const int64_t l = tres_at(q->grp_tres, p, -1); over(l, tres_at(q->used_tres, p, 0), t.count))
                return say(kQosGrp[k], l, tres_at(q->used_tres, p, 0));
            const int64_t used = mine ? tres_at(mine->tres, p, 0) : 0;
            if (const int64_t l = tres_at(q->max_tres_pu, p, -1); over(l, used, t.count))
                return say(kQosMaxUser[k], l, used);
        }
        const bool q_grp = q && tres_at(q->grp_tres, p, -1) >= 0, q_job = q && tres_at(q->max_tres_pj, p, -1) >= 0;
        if (own && !q_job)
            if (const int64_t l = tres_at(own->max_tres_pj, p, -1); over(l, 0, t.count))
                return say(kAssocMaxJob[k], l, 0);
        int depth = 0;
        for (const AcctLimits::Assoc* x = own; !q_grp && x && depth < 64;
             x = x->parent ? a.assoc(x->parent) : nullptr, ++depth)
            if (const int64_t l = tres_at(x->grp_tres, p, -1); over(l, tres_at(x->used_tres, p, 0), t.count))
                return say(kAssocGrp[k], l, tres_at(x->used_tres, p, 0));
    }
    return std::nullopt;
}

} // namespace

std::optional<HeldBack> held_back_by_limits(const SlurmJob& j, const AcctLimits& a) {
    if (auto r = limit_reason(j, a)) return HeldBack{ReasonKind::AcctLimit, std::move(*r)};
    return std::nullopt;
}

bool needs_limits(const SlurmJob& j, std::string_view gate_license) {
    return j.state == JobState::Pending && (has_license(j.licenses, gate_license) ||
                                            std::string_view(j.comment).substr(0, kTagPrefix.size()) == kTagPrefix);
}

} // namespace nvl
