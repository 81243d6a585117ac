#include "slurm_cluster.hpp"
#include "action.hpp"

#include "config.h"

#include "error.hpp"
#include "hostlist.hpp"
#include "job_calls.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>
}

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>

namespace nvl {

namespace {

// Errors that mean slurmctld did not answer at all.
bool unreachable(int e) {
    switch (e) {
    case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
    case SLURM_COMMUNICATIONS_SEND_ERROR:
    case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
    case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
    case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
    case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
    case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
    case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
    case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
    case SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT:
    case ESLURM_IN_STANDBY_MODE:
    case ESLURM_IN_STANDBY_USE_BACKUP: return true;
    default: return false;
    }
}

[[noreturn]] void fail(const std::string& what) {
    int e = slurm_calls::last_error();
    const std::string msg = fmt::format("{}: {}", what, slurm_strerror(e));
    if (unreachable(e)) throw Unreachable(msg);
    throw Error(msg);
}

NodeState decode_node(uint32_t s, bool& failed, bool& completing, bool& not_responding) {
    const uint32_t base = s & NODE_STATE_BASE;
    const bool drain = s & NODE_STATE_DRAIN;
    failed = base == NODE_STATE_DOWN || (s & NODE_STATE_FAIL);
    completing = s & NODE_STATE_COMPLETING;
    not_responding = s & NODE_STATE_NO_RESPOND;
    switch (base) {
    case NODE_STATE_IDLE:
        if (drain) return NodeState::Drained;
        return completing ? NodeState::Allocated : NodeState::Idle;
    case NODE_STATE_ALLOCATED: return drain ? NodeState::Draining : NodeState::Allocated;
    case NODE_STATE_MIXED: return drain ? NodeState::Draining : NodeState::Mixed;
    case NODE_STATE_DOWN: return NodeState::Down;
    default: return NodeState::Unknown;
    }
}

JobState decode_job(uint32_t s) {
    if (s & JOB_COMPLETING) return JobState::Completing;
    switch (s & JOB_STATE_BASE) {
    case JOB_PENDING: return JobState::Pending;
    case JOB_RUNNING: return JobState::Running;
    case JOB_SUSPENDED: return JobState::Suspended;
    default: return JobState::Finished;
    }
}

std::string str(const char* s) {
    return s ? s : "";
}

// A job's pending reason by name, with libslurm's own table (exported, not
// declared in the public headers: configure found which name it has). The
// name is what squeue prints; slurm_reason.hpp sorts it into a kind.
#if HAVE_SLURM_JOB_STATE_REASON_STRING && !HAVE_DECL_SLURM_JOB_STATE_REASON_STRING
extern "C" const char* slurm_job_state_reason_string(enum job_state_reason inx);
#elif HAVE_SLURM_JOB_REASON_STRING && !HAVE_DECL_SLURM_JOB_REASON_STRING
extern "C" char* slurm_job_reason_string(enum job_state_reason inx);
#endif
std::string reason_name(uint32_t r) {
    const char* name = nullptr;
#if HAVE_SLURM_JOB_STATE_REASON_STRING
    name = slurm_job_state_reason_string(static_cast<enum job_state_reason>(r));
#elif HAVE_SLURM_JOB_REASON_STRING
    name = slurm_job_reason_string(static_cast<enum job_state_reason>(r));
#endif
    if (name && *name) return name;
    switch (r) { // no table in this libslurm: the reasons every Slurm shares
    case WAIT_NO_REASON: return "None";
    case WAIT_PRIORITY: return "Priority";
    case WAIT_DEPENDENCY: return "Dependency";
    case WAIT_RESOURCES: return "Resources";
    case WAIT_HELD: return "JobHeldAdmin";
    case WAIT_HELD_USER: return "JobHeldUser";
    case WAIT_TIME: return "BeginTime";
    case WAIT_NODE_NOT_AVAIL: return "ReqNodeNotAvail";
    case WAIT_LICENSES: return "Licenses";
    case WAIT_PART_DOWN: return "PartitionDown";
    case WAIT_PART_INACTIVE: return "PartitionInactive";
    case WAIT_PART_NODE_LIMIT: return "PartitionNodeLimit";
    case WAIT_PART_TIME_LIMIT: return "PartitionTimeLimit";
    case WAIT_ARRAY_TASK_LIMIT: return "JobArrayTaskLimit";
    case WAIT_RESERVATION: return "Reservation";
    default: return fmt::format("reason#{}", r); // Unknown: held back
    }
}

// One job's update request (slurm_calls::update_job): every field unset but the
// job's id, which `id_str` holds where 25.11+ names the job by a string
// (set_update_job_id); not copied, so that the request's pointer to it
// stays valid.
struct JobUpdate {
    job_desc_msg_t d;
    std::string id_str;
    explicit JobUpdate(JobId id) {
        slurm_init_job_desc_msg(&d);
        slurm_calls::set_update_job_id(d, id, id_str);
    }
    JobUpdate(const JobUpdate&) = delete;
    JobUpdate& operator=(const JobUpdate&) = delete;
};

void update(job_desc_msg_t& d, JobId id, const char* what) {
    if (slurm_calls::update_job(d) != SLURM_SUCCESS) fail(fmt::format("job {}: {}", id, what));
}

} // namespace

class SlurmClusterImpl final : public SlurmCluster {
  public:
    SlurmClusterImpl();
    ~SlurmClusterImpl() override;
    SlurmClusterImpl(const SlurmClusterImpl&) = delete;
    SlurmClusterImpl& operator=(const SlurmClusterImpl&) = delete;
    std::vector<SlurmNode> load_nodes() override;
    std::vector<SlurmJob> load_jobs() override;
    std::optional<Reservation> load_reservation(const std::string& name) override;
    std::vector<std::optional<Reservation>> load_reservations(const std::vector<std::string>& names,
                                                              const std::string& prefix,
                                                              std::vector<Reservation>* prefixed,
                                                              std::vector<Reservation>* all) override;
    AcctLimits load_limits() override;
    SlurmGates load_gates() override;
    void release_lease(const std::string& name, const std::string& id) override;
    std::optional<LeaseView> load_lease(const std::string& name) override;
    bool take_lease(const std::string& name, const std::string& license, const std::string& id, int64_t end) override;
    void renew_lease(const std::string& name, int64_t end) override;
    ClusterRead read_view(const ViewRequest& q) override;
    void apply(const Action& a, const action::Names& names) override { a.run(*this, names); }
    // The calls of the actions (action.hpp names each one's)
    void pin_job(JobId id, const std::string& nodes, int64_t start_at);
    void set_record(JobId id, const std::string& record);
    void hold(JobId id);
    void release(JobId id);
    void requeue_hold(JobId id);
    void requeue(JobId id);
    void allow_requeue(JobId id);
    void exclude_nodes(JobId id, const std::string& nodes, int64_t start_at);
    void set_licenses(JobId id, const std::string& licenses);
    void set_reservation(const std::string& name, const std::string& nodes, int64_t start_at, int64_t end_at);
    void ensure_gate(const std::string& reservation, const std::string& license, int64_t end_at);
    void lend_nodes(JobId id, uint32_t user_id, const std::string& name, const std::string& nodes, int64_t end_at);
    void end_lend(JobId id, const std::vector<JobId>& others, const std::string& name);
    void set_node_weight(const std::string& nodes, uint32_t weight);
    void set_node_down(const std::string& node, const std::string& reason);
    void abort_steps(JobId id);
    void stop_batch(JobId id);

  private:
    struct Cache;                  // frees the messages it holds
    std::unique_ptr<Cache> cache_; // last node/job messages: loads are incremental (update_time)
};

std::unique_ptr<SlurmCluster> SlurmCluster::open() {
    return std::make_unique<SlurmClusterImpl>();
}

struct SlurmClusterImpl::Cache {
    node_info_msg_t* nodes = nullptr;
    job_info_msg_t* jobs = nullptr;
    Cache() = default;
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;
    ~Cache() {
        if (nodes) slurm_free_node_info_msg(nodes);
        if (jobs) slurm_free_job_info_msg(jobs);
    }
};

SlurmClusterImpl::SlurmClusterImpl() : cache_(std::make_unique<Cache>()) {
    // Reads slurm.conf (SLURM_CONF) and loads the plugins the API needs (auth,
    // and in 24.11 the certificate manager); without it newer libslurm stops
    // with "Can't find plugin". Once per process.
    static const bool initialized = [] {
        slurm_init(nullptr);
        return true;
    }();
    (void)initialized;
}

SlurmClusterImpl::~SlurmClusterImpl() = default;

ClusterRead SlurmClusterImpl::read_view(const ViewRequest& q) {
    ClusterRead r;
    r.nodes = load_nodes();
    r.jobs = load_jobs();
    // one request for the spare, gate and protection reservations, the
    // lend reservations and, for the gates, every reservation
    std::vector<Reservation> every;
    auto resvs = load_reservations({q.spares, q.gate, q.protection}, q.lend_prefix, &r.lends, &every);
    r.spares = std::move(resvs[0]);
    r.gate = std::move(resvs[1]);
    r.protection = std::move(resvs[2]);
    // What Slurm tests before it starts a job and a waiting slice job's
    // reason may hide (the gate's Licenses, or None before the scheduler's
    // first look): its partition, the licenses it asks for, its
    // reservation; and Slurm's accounting limits, when it enforces them:
    // the ones it tests only when it places a job are hidden behind the
    // gate (Slurm 22.05), and a new job may have no reason yet
    if (!view_needs_gates(r.jobs, q)) return r;
    try {
        r.gates = load_gates();
        r.gates->reservations = std::move(every);
    } catch (const Error& e) {
        r.gates_error = e.what();
    }
    if (q.limits) {
        try {
            r.limits = load_limits();
        } catch (const Error& e) {
            r.limits_error = e.what();
        }
    }
    return r;
}

std::vector<SlurmNode> SlurmClusterImpl::load_nodes() {
    node_info_msg_t* msg = nullptr;
    time_t since = cache_->nodes ? cache_->nodes->last_update : 0;
    if (slurm_load_node(since, &msg, SHOW_ALL) != SLURM_SUCCESS) {
        if (slurm_calls::last_error() != SLURM_NO_CHANGE_IN_DATA || !cache_->nodes) fail("loading nodes");
    } else {
        if (cache_->nodes) slurm_free_node_info_msg(cache_->nodes);
        cache_->nodes = msg;
    }
    std::vector<SlurmNode> out;
    out.reserve(cache_->nodes->record_count);
    for (uint32_t i = 0; i < cache_->nodes->record_count; ++i) {
        const node_info_t& n = cache_->nodes->node_array[i];
        if (!n.name) continue;
        SlurmNode r;
        r.name = n.name;
        r.state = decode_node(n.node_state, r.failed, r.completing, r.not_responding);
        r.unregistered = (n.node_state & NODE_STATE_BASE) == NODE_STATE_UNKNOWN;
        r.reason = str(n.reason);
        r.features = str(n.features);
        r.weight = n.weight;
        r.addr = str(n.node_addr);
        r.port = n.port;
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<SlurmJob> SlurmClusterImpl::load_jobs() {
    job_info_msg_t* msg = nullptr;
    time_t since = cache_->jobs ? cache_->jobs->last_update : 0;
    if (slurm_load_jobs(since, &msg, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) {
        if (slurm_calls::last_error() != SLURM_NO_CHANGE_IN_DATA || !cache_->jobs) fail("loading jobs");
    } else {
        if (cache_->jobs) slurm_free_job_info_msg(cache_->jobs);
        cache_->jobs = msg;
    }
    std::vector<SlurmJob> out;
    for (uint32_t i = 0; i < cache_->jobs->record_count; ++i) {
        const slurm_job_info_t& j = cache_->jobs->job_array[i];
        SlurmJob r;
        r.id = j.job_id;
        r.state = decode_job(j.job_state);
        if (r.state == JobState::Finished) continue;
        r.held = j.priority == 0 && r.state == JobState::Pending;
        r.admin_held = r.held && j.state_reason == WAIT_HELD;
        r.stopped = r.state == JobState::Running && (j.job_state & JOB_STOPPED);
        r.reason = reason_name(j.state_reason);
        r.comment = str(j.comment);
        r.admin_comment = str(j.admin_comment);
        if (j.nodes && *j.nodes && r.state != JobState::Pending) r.nodes = hostlist_expand(j.nodes);
        r.req_nodes = str(j.req_nodes);
        r.exc_nodes = str(j.exc_nodes);
        r.num_nodes = int(j.num_nodes);
        r.submit_time = j.submit_time;
        r.start_time = j.start_time;
        r.restarts = int(j.restart_cnt);
        // A pending job's start_time is its begin time (StartTime=/BeginTime)
        // or a later expected start.
        if (r.state == JobState::Pending) r.begin_time = j.start_time;
        r.batch = j.batch_flag != 0;
        r.requeue = j.requeue != 0;
        r.name = str(j.name);
        r.partition = str(j.partition);
        r.priority = j.priority;
        r.licenses = str(j.licenses);
        r.tres_req = str(j.tres_req_str);
        if (r.state == JobState::Running && j.end_time > j.start_time) r.end_time = j.end_time;
        if (j.time_limit != NO_VAL && j.time_limit != INFINITE) r.time_limit = int64_t(j.time_limit) * 60;
        r.assoc_id = j.assoc_id;
        r.user_id = j.user_id;
        r.qos = str(j.qos);
        r.reservation = str(j.resv_name);
        if (j.array_job_id && j.array_job_id != NO_VAL) {
            r.array_id = j.array_job_id;
            if (j.array_max_tasks != NO_VAL && j.array_max_tasks != INFINITE) r.array_throttle = j.array_max_tasks;
        }
        out.push_back(std::move(r));
    }
    return out;
}

AcctLimits SlurmClusterImpl::load_limits() {
    assoc_mgr_info_request_msg_t req;
    std::memset(&req, 0, sizeof req);
    req.flags = ASSOC_MGR_INFO_FLAG_ASSOC | ASSOC_MGR_INFO_FLAG_QOS;
    assoc_mgr_info_msg_t* msg = nullptr;
    if (slurm_load_assoc_mgr_info(&req, &msg) != SLURM_SUCCESS || !msg) fail("loading the accounting limits");
    struct Free {
        assoc_mgr_info_msg_t* m;
        ~Free() { slurm_free_assoc_mgr_info_msg(m); }
    } guard{msg};
    // the node TRES's position in the arrays of this reply
    int node = -1;
    for (uint32_t i = 0; i < msg->tres_cnt; ++i)
        if (msg->tres_names && msg->tres_names[i] && std::strcmp(msg->tres_names[i], "node") == 0) node = int(i);
    auto tres = [&](const uint64_t* a) -> int64_t {
        if (!a || node < 0) return -1;
        const uint64_t v = a[node];
        return v == INFINITE64 || v == NO_VAL64 ? -1 : int64_t(v);
    };
    auto used = [&](const uint64_t* a) -> int64_t { return a && node >= 0 ? int64_t(a[node]) : 0; };
    // every TRES's limit (-1: none) and use, in tres_names' order
    auto limits_of = [&](const uint64_t* a) {
        std::vector<int64_t> v;
        if (!a) return v;
        v.reserve(msg->tres_cnt);
        for (uint32_t i = 0; i < msg->tres_cnt; ++i)
            v.push_back(a[i] == INFINITE64 || a[i] == NO_VAL64 ? -1 : int64_t(a[i]));
        return v;
    };
    auto uses_of = [&](const uint64_t* a) {
        std::vector<int64_t> v;
        if (!a) return v;
        v.reserve(msg->tres_cnt);
        for (uint32_t i = 0; i < msg->tres_cnt; ++i) v.push_back(a[i] == NO_VAL64 ? 0 : int64_t(a[i]));
        return v;
    };
    auto count = [](uint32_t v) -> int64_t { return v == INFINITE || v == NO_VAL ? -1 : int64_t(v); };
    AcctLimits out;
    for (uint32_t i = 0; i < msg->tres_cnt; ++i)
        out.tres_names.push_back(msg->tres_names && msg->tres_names[i] ? msg->tres_names[i] : "");
    // every element of a libslurm list (none for a null list)
    auto each = [](auto* list, auto&& fn) {
        if (!list) return;
        auto* it = slurm_list_iterator_create(list);
        while (void* e = slurm_list_next(it)) fn(e);
        slurm_list_iterator_destroy(it);
    };
    each(msg->assoc_list, [&](void* e) {
        const auto* a = static_cast<const slurmdb_assoc_rec_t*>(e);
        AcctLimits::Assoc r;
        r.id = a->id;
        r.parent = a->parent_id;
        r.acct = str(a->acct);
        r.user = str(a->user);
        r.grp_nodes = tres(a->grp_tres_ctld);
        r.grp_jobs = count(a->grp_jobs);
        r.max_jobs = count(a->max_jobs);
        r.max_nodes_per_job = tres(a->max_tres_ctld);
        if (a->max_wall_pj != INFINITE && a->max_wall_pj != NO_VAL) r.max_wall_s = int64_t(a->max_wall_pj) * 60;
        r.grp_tres = limits_of(a->grp_tres_ctld);
        r.max_tres_pj = limits_of(a->max_tres_ctld);
        if (a->usage) {
            r.used_nodes = used(a->usage->grp_used_tres);
            r.used_jobs = a->usage->used_jobs;
            r.used_tres = uses_of(a->usage->grp_used_tres);
        }
        out.assocs.push_back(std::move(r));
    });
    // by id, as held_back_by_limits() looks them up
    std::sort(out.assocs.begin(), out.assocs.end(),
              [](const AcctLimits::Assoc& x, const AcctLimits::Assoc& y) { return x.id < y.id; });
    each(msg->qos_list, [&](void* e) {
        const auto* q = static_cast<const slurmdb_qos_rec_t*>(e);
        AcctLimits::Qos r;
        r.name = str(q->name);
        r.grp_nodes = tres(q->grp_tres_ctld);
        r.grp_jobs = count(q->grp_jobs);
        r.max_nodes_per_user = tres(q->max_tres_pu_ctld);
        r.max_jobs_per_user = count(q->max_jobs_pu);
        r.max_nodes_per_job = tres(q->max_tres_pj_ctld);
        if (q->max_wall_pj != INFINITE && q->max_wall_pj != NO_VAL) r.max_wall_s = int64_t(q->max_wall_pj) * 60;
        r.lifts_partition_limits =
            (q->flags & (QOS_FLAG_PART_MIN_NODE | QOS_FLAG_PART_MAX_NODE | QOS_FLAG_PART_TIME_LIMIT)) != 0;
        r.grp_tres = limits_of(q->grp_tres_ctld);
        r.max_tres_pj = limits_of(q->max_tres_pj_ctld);
        r.max_tres_pu = limits_of(q->max_tres_pu_ctld);
        if (q->usage) {
            r.used_nodes = used(q->usage->grp_used_tres);
            r.used_jobs = q->usage->grp_used_jobs;
            r.used_tres = uses_of(q->usage->grp_used_tres);
            each(q->usage->user_limit_list, [&](void* u) {
                const auto* l = static_cast<const slurmdb_used_limits_t*>(u);
                r.users.push_back({l->uid, used(l->tres), int64_t(l->jobs), uses_of(l->tres)});
            });
        }
        out.qos.push_back(std::move(r));
    });
    return out;
}

std::optional<Reservation> SlurmClusterImpl::load_reservation(const std::string& name) {
    return load_reservations({name}, "", nullptr, nullptr).front();
}

SlurmGates SlurmClusterImpl::load_gates() {
    SlurmGates g;
    partition_info_msg_t* parts = nullptr;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS || !parts) fail("loading partitions");
    for (uint32_t i = 0; i < parts->record_count; ++i) {
        const partition_info_t& p = parts->partition_array[i];
        SlurmPartition x;
        x.name = str(p.name);
        // DOWN (submit, no scheduling) and INACTIVE stop its jobs
        // (job_limits_check); DRAIN (scheduling, no submit) runs them
        x.runs_jobs = p.state_up != PARTITION_DOWN && p.state_up != PARTITION_INACTIVE;
        x.inactive = p.state_up == PARTITION_INACTIVE;
        if (p.max_nodes != INFINITE && p.max_nodes != NO_VAL) x.max_nodes = p.max_nodes;
        if (p.min_nodes != NO_VAL) x.min_nodes = p.min_nodes;
        if (p.max_time != INFINITE && p.max_time != NO_VAL) x.max_time_s = int64_t(p.max_time) * 60;
        g.partitions.push_back(std::move(x));
    }
    slurm_free_partition_info_msg(parts);
    license_info_msg_t* lic = nullptr;
    if (slurm_load_licenses(0, &lic, 0) != SLURM_SUCCESS || !lic) fail("loading licenses");
    for (uint32_t i = 0; i < lic->num_lic; ++i) {
        const slurm_license_info_t& l = lic->lic_array[i];
        g.licenses.push_back({str(l.name), int64_t(l.total), int64_t(l.in_use), int64_t(l.reserved)});
    }
    slurm_free_license_info_msg(lic);
    return g;
}

std::vector<std::optional<Reservation>> SlurmClusterImpl::load_reservations(const std::vector<std::string>& names,
                                                                            const std::string& prefix,
                                                                            std::vector<Reservation>* prefixed,
                                                                            std::vector<Reservation>* all) {
    reserve_info_msg_t* msg = nullptr;
    if (slurm_load_reservations(0, &msg) != SLURM_SUCCESS) fail("loading reservations");
    std::vector<std::optional<Reservation>> out(names.size());
    if (prefixed) prefixed->clear();
    if (all) all->clear();
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        const reserve_info_t& r = msg->reservation_array[i];
        const std::string name = str(r.name);
        for (size_t k = 0; k < names.size(); ++k)
            if (!names[k].empty() && names[k] == name)
                out[k] = Reservation{names[k], str(r.node_list), r.start_time, r.end_time};
        if (prefixed && lend_job_of(prefix, name))
            prefixed->push_back(Reservation{name, str(r.node_list), r.start_time, r.end_time});
        if (all) all->push_back(Reservation{name, str(r.node_list), r.start_time, r.end_time});
    }
    slurm_free_reservation_info_msg(msg);
    return out;
}

void SlurmClusterImpl::pin_job(JobId id, const std::string& nodes, int64_t start_at) {
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.req_nodes = const_cast<char*>(nodes.c_str());
    if (start_at > 0) d.begin_time = time_t(start_at);
    update(d, id, fmt::format("pinning to {}", nodes).c_str());
}

void SlurmClusterImpl::exclude_nodes(JobId id, const std::string& nodes, int64_t start_at) {
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.exc_nodes = const_cast<char*>(nodes.c_str());
    if (start_at > 0) d.begin_time = time_t(start_at);
    update(d, id, nodes.empty() ? "clearing its excluded nodes" : fmt::format("excluding {}", nodes).c_str());
}

void SlurmClusterImpl::set_licenses(JobId id, const std::string& licenses) {
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.licenses = const_cast<char*>(licenses.c_str());
    update(d, id, fmt::format("setting licenses to \"{}\"", licenses).c_str());
}

void SlurmClusterImpl::allow_requeue(JobId id) {
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.requeue = 1;
    update(d, id, "setting Requeue=1");
}

void SlurmClusterImpl::set_record(JobId id, const std::string& record) {
    // AdminComment as it is now, not as the cycle's snapshot had it: a
    // site's text written since is kept too (Slurm has no compare-and-set:
    // a site's write in the same millisecond may still be lost, theirs or
    // ours)
    const std::optional<std::string> now = slurm_calls::load_admin_comment(id);
    const std::string text = with_record(now.value_or(std::string()), record);
    if (now && text == *now) return;
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.admin_comment = const_cast<char*>(text.c_str());
    update(d, id, "setting admin_comment");
}

void SlurmClusterImpl::hold(JobId id) {
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.priority = 0;
    d.alloc_sid = ALLOC_SID_ADMIN_HOLD;
    update(d, id, "hold");
}

void SlurmClusterImpl::release(JobId id) {
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.priority = INFINITE;
    update(d, id, "release");
}

void SlurmClusterImpl::requeue_hold(JobId id) {
    if (slurm_calls::requeue(id, JOB_REQUEUE_HOLD) != SLURM_SUCCESS) fail(fmt::format("job {}: requeue-hold", id));
}

void SlurmClusterImpl::requeue(JobId id) {
    if (slurm_calls::requeue(id, 0) != SLURM_SUCCESS) fail(fmt::format("job {}: requeue", id));
}

void SlurmClusterImpl::set_reservation(const std::string& name, const std::string& nodes, int64_t start_at,
                                       int64_t end_at) {
    auto cur = load_reservation(name);
    // A start time can only be moved before the reservation starts: a new
    // window is a new reservation.
    const bool new_window = cur && start_at > 0 && cur->start_time != start_at;
    if (nodes.empty() || new_window) {
        if (cur) {
            reservation_name_msg_t m;
            m.name = const_cast<char*>(name.c_str());
            if (slurm_delete_reservation(&m) != SLURM_SUCCESS) fail(fmt::format("deleting reservation {}", name));
        }
        if (nodes.empty()) return;
        cur.reset();
    }
    resv_desc_msg_t r;
    slurm_init_resv_desc_msg(&r);
    r.name = const_cast<char*>(name.c_str());
    r.node_list = const_cast<char*>(nodes.c_str());
    if (cur) {
        if (end_at > 0) r.end_time = time_t(end_at);
        if (slurm_update_reservation(&r) != SLURM_SUCCESS)
            fail(fmt::format("updating reservation {} to {}", name, nodes));
        return;
    }
    r.start_time = start_at > 0 ? time_t(start_at) : time(nullptr);
    if (end_at > 0)
        r.end_time = time_t(end_at);
    else
        r.duration = INFINITE;
    r.flags = RESERVE_FLAG_IGN_JOBS;
    r.users = const_cast<char*>("root");
    char* created = slurm_create_reservation(&r);
    if (!created) fail(fmt::format("creating reservation {} on {}", name, nodes));
    // The name is allocated by libslurm's own allocator, which the public
    // headers give no way to free; one short string per creation.
    (void)created;
}

void SlurmClusterImpl::lend_nodes(JobId id, uint32_t user_id, const std::string& name, const std::string& nodes,
                                  int64_t end_at) {
    // The owner by uid: slurmctld reads a numeric user as a uid, so the
    // helper's host need not know the cluster's users.
    const std::string user = std::to_string(user_id);
    resv_desc_msg_t r;
    slurm_init_resv_desc_msg(&r);
    r.name = const_cast<char*>(name.c_str());
    r.node_list = const_cast<char*>(nodes.c_str());
    r.users = const_cast<char*>(user.c_str());
    if (end_at > 0) r.end_time = time_t(end_at);
    if (load_reservation(name)) {
        // left by an earlier lend to this job (the helper stopped between
        // the two steps), or its lease moved on: these nodes now
        if (slurm_update_reservation(&r) != SLURM_SUCCESS)
            fail(fmt::format("updating the lend reservation {} to {}", name, nodes));
    } else {
        // from now (slurmctld's clock: no start time given), until its
        // lease ends (end_at; 0: without end);
        // OVERLAP: made while the spare reservation still holds the nodes;
        // IGNORE_JOBS: a repair's target is made while the job still runs
        // on it (kept by the reservation, later updates included);
        // NO_HOLD_JOBS_AFTER_END: should it ever end under the job, the job
        // is not held for it
        if (end_at <= 0) r.duration = INFINITE;
        r.flags = RESERVE_FLAG_OVERLAP | RESERVE_FLAG_IGN_JOBS | RESERVE_FLAG_NO_HOLD_JOBS;
        char* created = slurm_create_reservation(&r);
        if (!created) fail(fmt::format("creating the lend reservation {} on {} for uid {}", name, nodes, user));
        (void)created; // as in set_reservation
    }
    JobUpdate u(id);
    job_desc_msg_t& d = u.d;
    d.reservation = const_cast<char*>(name.c_str());
    update(d, id, fmt::format("moving it into the lend reservation {}", name).c_str());
}

void SlurmClusterImpl::end_lend(JobId id, const std::vector<JobId>& others, const std::string& name) {
    std::vector<JobId> all = others;
    if (id) all.insert(all.begin(), id);
    for (JobId j : all) {
        JobUpdate u(j);
        job_desc_msg_t& d = u.d;
        d.reservation = const_cast<char*>("");
        // a job that has just ended (or still completes after its end) no
        // longer holds the reservation
        if (slurm_calls::update_job(d) != SLURM_SUCCESS) {
            const int e = slurm_calls::last_error();
            if (e != ESLURM_INVALID_JOB_ID && e != ESLURM_JOB_FINISHED && e != ESLURM_JOB_NOT_PENDING_NOR_RUNNING)
                fail(fmt::format("job {}: taking it out of the lend reservation {}", j, name));
        }
    }
    reservation_name_msg_t m;
    m.name = const_cast<char*>(name.c_str());
    if (slurm_delete_reservation(&m) != SLURM_SUCCESS && slurm_calls::last_error() != ESLURM_RESERVATION_INVALID)
        fail(fmt::format("deleting the lend reservation {}", name));
}

void SlurmClusterImpl::set_node_weight(const std::string& nodes, uint32_t weight) {
    update_node_msg_t m;
    slurm_init_update_node_msg(&m);
    m.node_names = const_cast<char*>(nodes.c_str());
    m.weight = weight;
    if (slurm_update_node(&m) != SLURM_SUCCESS) fail(fmt::format("setting weight {} on {}", weight, nodes));
}

void SlurmClusterImpl::set_node_down(const std::string& node, const std::string& reason) {
    // DRAIN first, then DOWN, which keeps the drain flag: Slurm lets go of
    // the node's jobs now (as for a DOWN node) and the node stays out until
    // an admin resumes it, with the reason on it.
    for (uint32_t state : {uint32_t(NODE_STATE_DRAIN), uint32_t(NODE_STATE_DOWN)})
        if (slurm_calls::set_node_state(node, state, reason) != SLURM_SUCCESS)
            fail(fmt::format("marking {} {}", node, state == NODE_STATE_DRAIN ? "DRAIN" : "DOWN"));
}

void SlurmClusterImpl::abort_steps(JobId id) {
    // Slurm's abort signal (slurm_protocol_defs.h SIG_ABORT, 997 from 22.05
    // to 26.05): slurmstepd kills the step's tasks and, the step aborted,
    // reports its end without waiting for its reverse-tree children.
    // KILL_STEPS_ONLY: the batch script is left alone (the requeue that
    // follows ends it).
    constexpr uint16_t kSigAbort = 997;
    const std::string job = std::to_string(id);
    if (slurm_kill_job2(job.c_str(), kSigAbort, KILL_STEPS_ONLY, nullptr) != SLURM_SUCCESS)
        fail(fmt::format("job {}: aborting its steps", id));
}

void SlurmClusterImpl::stop_batch(JobId id) {
    // KILL_JOB_BATCH: the batch shell alone, not its children (srun ends on
    // its own once its step is aborted); slurmctld flags the job STOPPED
    const std::string job = std::to_string(id);
    if (slurm_kill_job2(job.c_str(), SIGSTOP, KILL_JOB_BATCH, nullptr) != SLURM_SUCCESS)
        fail(fmt::format("job {}: stopping its batch script", id));
}

std::optional<LeaseView> SlurmClusterImpl::load_lease(const std::string& name) {
    reserve_info_msg_t* msg = nullptr;
    if (slurm_load_reservations(0, &msg) != SLURM_SUCCESS || !msg) fail("loading the reservations (the lease)");
    std::optional<LeaseView> out;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        const reserve_info_t& r = msg->reservation_array[i];
        if (name != str(r.name)) continue;
        out = LeaseView{str(r.features), int64_t(r.end_time)};
    }
    slurm_free_reservation_info_msg(msg);
    return out;
}

bool SlurmClusterImpl::take_lease(const std::string& name, const std::string& license, const std::string& id,
                                  int64_t end) {
    resv_desc_msg_t r;
    slurm_init_resv_desc_msg(&r);
    r.name = const_cast<char*>(name.c_str());
    const std::string lic = license + ":1";
    r.licenses = const_cast<char*>(lic.c_str());
    r.users = const_cast<char*>("root");
    // no node: only the license, which no job asks for
    r.flags = RESERVE_FLAG_ANY_NODES;
    // the holder's id: Features is kept as given where no node is chosen
    // (every Slurm 22.05-26.05; Comment exists from 23.02 only)
    r.features = const_cast<char*>(id.c_str());
    r.start_time = time(nullptr);
    r.end_time = time_t(end);
    char* created = slurm_create_reservation(&r);
    if (created) return true; // (libslurm's string, not ours to free: as in set_reservation)
    const int e = slurm_calls::last_error();
    if (e == ESLURM_RESERVATION_NAME_DUP) return false; // another helper's, made first
    if (e == ESLURM_INVALID_LICENSES && load_lease(name)) return false;
    if (e == ESLURM_INVALID_LICENSES) {
        // no reservation of that name: the license is unknown to slurmctld
        // (or another reservation holds it)
        license_info_msg_t* l = nullptr;
        bool known = false;
        if (slurm_load_licenses(0, &l, 0) != SLURM_SUCCESS || !l)
            fail(fmt::format("creating the lease reservation {}: reading the licenses", name));
        for (uint32_t i = 0; i < l->num_lic; ++i)
            known = known || (l->lic_array[i].name && license == l->lic_array[i].name);
        slurm_free_license_info_msg(l);
        if (!known)
            throw LeaseUnconfigured(fmt::format("the lease reservation {} needs the license {}, which slurmctld does "
                                                "not have: add \"Licenses={}:1\" to slurm.conf (with a comma to an "
                                                "existing Licenses= line) and run scontrol reconfigure",
                                                name, license, license));
    }
    fail(fmt::format("creating the lease reservation {} (it holds the license {}; slurm.conf needs "
                     "\"Licenses={}:1\", and no other reservation may hold it)",
                     name, license, license));
}

void SlurmClusterImpl::renew_lease(const std::string& name, int64_t end) {
    resv_desc_msg_t r;
    slurm_init_resv_desc_msg(&r);
    r.name = const_cast<char*>(name.c_str());
    r.end_time = time_t(end);
    if (slurm_update_reservation(&r) != SLURM_SUCCESS) fail(fmt::format("renewing the lease reservation {}", name));
}

void SlurmClusterImpl::release_lease(const std::string& name, const std::string& id) {
    // only its own, still held (a stop while it renews: nobody else can
    // have taken it since)
    auto cur = load_lease(name);
    if (!cur || cur->holder != id) return;
    reservation_name_msg_t m;
    m.name = const_cast<char*>(name.c_str());
    if (slurm_delete_reservation(&m) != SLURM_SUCCESS && slurm_calls::last_error() != ESLURM_RESERVATION_INVALID)
        fail(fmt::format("deleting the lease reservation {}", name));
}

void SlurmClusterImpl::ensure_gate(const std::string& reservation, const std::string& license, int64_t end_at) {
    resv_desc_msg_t r;
    slurm_init_resv_desc_msg(&r);
    r.name = const_cast<char*>(reservation.c_str());
    if (load_reservation(reservation)) {
        if (end_at <= 0) return;
        r.end_time = time_t(end_at); // its lease moved on
        if (slurm_update_reservation(&r) != SLURM_SUCCESS)
            fail(fmt::format("moving the end of the gate reservation {}", reservation));
        return;
    }
    const std::string lic = license + ":1";
    r.licenses = const_cast<char*>(lic.c_str());
    r.users = const_cast<char*>("root");
    r.flags = RESERVE_FLAG_ANY_NODES; // LICENSE_ONLY: licenses, no nodes
    r.start_time = time(nullptr);
    // Its lease; without one, far out but explicit (an unlimited duration
    // ends after a year).
    r.end_time = end_at > 0 ? time_t(end_at) : time_t(4102444800); // 2100-01-01
    char* created = slurm_create_reservation(&r);
    if (!created)
        fail(fmt::format("creating the gate reservation {} (it holds the license {}; slurm.conf needs "
                         "\"Licenses={}:1\")",
                         reservation, license, license));
    (void)created;
}

} // namespace nvl
