// Remote context (slurmstepd): per-task slice environment and the node's GPU
// check. The slices are derived from SLURM_JOB_NODELIST, the rack map and
// the slice size (SPEC §3), with no RPC to slurmctld; only a placement that
// does not cut into whole per-rack slices (prefer mode's split fallback)
// needs the helper's record from the job's admin_comment.
#include "plugin.hpp"

#include "config.h"

#include "gpu_count.hpp"
#include "gpu_fabric.hpp"
#include "hostlist.hpp"
#include "job_calls.hpp"
#include "step_tree.hpp"

#include <fmt/format.h>

extern "C" {
#include <slurm/slurm.h>
}

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

namespace nvl::spank {
namespace {

std::string getenv_job(spank_t sp, const char* name) {
    char buf[8192];
    if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return {};
    return buf;
}

// This node's Slurm name. Only valid from task init on: before that the
// job environment still carries SLURMD_NODENAME of the node that launched
// the step (e.g. the batch host), which is why every node-side check runs
// in slurm_spank_task_init.
std::string node_name(spank_t sp) {
    return getenv_job(sp, "SLURMD_NODENAME");
}

void setenv_task(spank_t sp, const char* name, const std::string& value) {
    if (spank_setenv(sp, name, value.c_str(), 1) != ESPANK_SUCCESS)
        throw Error(fmt::format("cannot set {} in the task environment", name));
}

// The helper's record, read with the public API (slurm_load_job).
std::optional<PlacementRecord> load_record(uint32_t job_id) {
    const std::optional<std::string> text = slurm_calls::load_admin_comment(job_id);
    if (!text || text->empty()) return std::nullopt;
    std::optional<PlacementRecord> rec = PlacementRecord::parse(*text);
    if (rec && !rec->belongs_to(job_id)) rec.reset(); // another array task's, copied by Slurm
    return rec;
}

int slice_size_of(const RackMap& map, const SliceOptions& o, int job_nodes) {
    if (o.slice > 0) return o.slice;
    int k = auto_slice_size(job_nodes, map.max_slice(), map.defaults().slice_sizes);
    if (k == 0) throw Error(fmt::format("--nvl-slice=auto: {} nodes cannot be cut into equal slices", job_nodes));
    return k;
}

std::string with_node(std::string path, const std::string& host) {
    if (auto at = path.find("%n"); at != std::string::npos) path.replace(at, 2, host);
    return path;
}

struct FabricVerdict {
    bool checked = false; // false: nothing on this node to check
    std::string source;   // where the GPUs were read
    std::vector<std::string> problems;
    std::string note; // why nothing was checked
    // The problems are the GPUs' own, as read: only then may the node be
    // drained (not for a node missing from the map, nor for a read that
    // timed out, which fail the step but say nothing of the node's GPUs).
    bool drainable = false;
};

// This node's GPUs against the map's rack for it.
FabricVerdict fabric_verdict(const std::string& host) {
    const State& st = state();
    FabricVerdict v;
    const RackMap& map = rack_map();
    auto id = map.find_node(host);
    if (!id) {
        v.checked = true;
        v.problems.push_back(fmt::format("node {} is not in the rack map {}", host, st.config.map));
        return v;
    }
    const Domain& dom = map.domain(map.domain_of(*id));
    LocalFabric local = st.config.fabric_report.empty()
                            ? read_local_fabric_within(st.config.fabric_timeout_s * 1000)
                            : read_fabric_report(with_node(st.config.fabric_report, host), host);
    if (local.timed_out) {
        v.checked = true;
        v.problems.push_back(fmt::format("node {}: {} (plugstack.conf fabric_timeout={})", host, local.why_none,
                                         st.config.fabric_timeout_s));
        return v;
    }
    if (local.source.empty() || local.gpus.empty()) {
        v.note = local.source.empty()
                     ? fmt::format("node {}: NVLink fabric not checked: {}", host, local.why_none)
                     : fmt::format("node {}: NVLink fabric not checked: {} reports no GPU", host, local.source);
        return v;
    }
    v.checked = true;
    v.source = local.source;
    v.problems = check_node_fabric(host, local.gpus, dom.name, expected_fabric_key(dom));
    v.drainable = !v.problems.empty();
    return v;
}

} // namespace

void set_task_env(spank_t sp) {
    State& st = state();
    if (!st.options.slice_set) return;
    const RackMap& map = rack_map();
    const std::string nodelist = getenv_job(sp, "SLURM_JOB_NODELIST");
    const std::string host = node_name(sp);
    if (nodelist.empty() || host.empty()) throw Error("SLURM_JOB_NODELIST or the node name is missing in the job");
    const auto nodes = hostlist_expand(nodelist);
    std::vector<std::vector<std::string>> slices;
    try {
        for (const auto& s : derive_slices(map, nodes, slice_size_of(map, st.options, int(nodes.size()))))
            slices.push_back(map.node_names(s));
    } catch (const Error& derive_error) {
        uint32_t job_id = 0;
        spank_get_item(sp, S_JOB_ID, &job_id);
        auto rec = load_record(job_id);
        if (!rec || rec->slices.empty())
            throw Error(fmt::format("job {}: {}; and no nvlsliced placement record: NVL_* not set", job_id,
                                    derive_error.what()));
        for (const auto& hl : rec->slices) slices.push_back(hostlist_expand(hl));
    }
    SliceEnv e = slice_env_for(map, slices, host);
    setenv_task(sp, "NVL_SLICE_INDEX", std::to_string(e.index));
    setenv_task(sp, "NVL_SLICE_COUNT", std::to_string(e.count));
    setenv_task(sp, "NVL_SLICE_SIZE", std::to_string(e.size));
    setenv_task(sp, "NVL_SLICE_RANK", std::to_string(e.rank));
    setenv_task(sp, "NVL_DOMAIN", e.domain);
    setenv_task(sp, "NVL_SLICE_NODELIST", e.nodelist);
    setenv_task(sp, "NVL_SLICE_LEADER", e.leader);
}

bool check_node_gpus(spank_t sp) {
    State& st = state();
    if (!st.options.slice_set || st.config.check_gpus == GpuCheck::Off) return true;
    const std::string host = node_name(sp);
    const RackMap& map = rack_map();
    auto id = map.find_node(host);
    if (!id) {
        log_error(fmt::format("node {} is not in the rack map {}", host, st.config.map));
        return st.config.check_gpus != GpuCheck::Fail;
    }
    const int expected = map.domain(map.domain_of(*id)).gpus_per_node;
    const int found = count_nvidia_gpus(with_node(st.config.hwloc_xml, host));
    const std::optional<std::string> msg = gpu_check_message(host, expected, found);
    if (!msg) return true;
    log_error(*msg);
    return st.config.check_gpus != GpuCheck::Fail;
}

bool check_node_fabric(spank_t sp) {
    State& st = state();
    if (!st.options.slice_set || st.config.check_fabric == GpuCheck::Off) return true;
    const std::string host = node_name(sp);
    const FabricVerdict v = fabric_verdict(host);
    if (!v.checked) {
        log_verbose(v.note);
        return true;
    }
    if (v.problems.empty()) {
        log_verbose(fmt::format("node {}: NVLink fabric checked ({}): all GPUs Completed, Success, in the map's "
                                "domain",
                                host, v.source));
        return true;
    }
    for (const auto& p : v.problems) log_error(fmt::format("NVLink fabric check: {}", p));
    return st.config.check_fabric != GpuCheck::Fail;
}

void drain_on_fabric_failure(spank_t sp) {
    State& st = state();
    if (!st.options.slice_set || st.config.check_fabric != GpuCheck::Fail || !st.config.fabric_drain) return;
    static bool drained = false; // once per step (this slurmstepd)
    int exit_status = 0;
    if (drained || spank_get_item(sp, S_TASK_EXIT_STATUS, &exit_status) != ESPANK_SUCCESS || exit_status == 0) return;
    const std::string host = node_name(sp);
    if (host.empty()) return;
    const FabricVerdict v = fabric_verdict(host);
    if (!v.checked || !v.drainable) return; // no GPU read says anything is wrong with this node
    drained = true;
    std::string reason = "nvlslice fabric check: " + v.problems.front();
    if (v.problems.size() > 1) reason += fmt::format(" (+{} more)", v.problems.size() - 1);
    if (reason.size() > 240) reason.resize(240);
    if (slurm_calls::set_node_state(host, NODE_STATE_DRAIN, reason) != 0)
        log_error(fmt::format("node {} failed the NVLink fabric check but could not be drained: {}", host,
                              slurm_calls::error_text()));
    else
        log_info(fmt::format("node {} drained: {}", host, reason));
}

namespace {
// A job's mark on the node that a step of it was killed (nvlsliced's abort,
// for a dead node: end_stray_sruns()); root's alone, gone at the job's end.
// Named after the node too (slurmstepd and the job epilog have its Slurm
// name in SLURMD_NODENAME): where several slurmds share a host (Slurm's
// multiple-slurmd mode, the test clusters), another node's epilog, at the
// job's end, must not take this node's mark before its batch step ends.
constexpr const char* kMarkDir = "/run/nvlslice";
std::string abort_mark(uint32_t job) {
    const char* node = std::getenv("SLURMD_NODENAME");
    if (!node || !*node || std::strchr(node, '/')) return fmt::format("{}/aborted.{}", kMarkDir, job);
    return fmt::format("{}/aborted.{}.{}", kMarkDir, job, node);
}
} // namespace

void note_task_exit(spank_t sp) {
    int status = 0;
    if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS) return;
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) return;
    State& st = state();
    const bool first = !st.task_killed;
    st.task_killed = true;
    uint32_t job = 0, step = 0;
    if (!first || !st.options.slice_set || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || step == SLURM_BATCH_SCRIPT ||
        step == SLURM_EXTERN_CONT || geteuid() != 0)
        return;
    mkdir(kMarkDir, 0700);
    const int fd = open(abort_mark(job).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) close(fd);
}

void forget_abort(spank_t sp) {
    uint32_t job = 0;
    if (geteuid() == 0 && spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS) unlink(abort_mark(job).c_str());
}

// After nvlsliced aborts a slice job's step (a node of it died), every
// slurmstepd of the step reports its end at once without waiting for its
// children in the step's reverse tree: the first node to slurmctld, then
// ends; each of its children, which report to it, then finds it gone and
// retries it 5 times a second apart per message before it reports to
// slurmctld, its own children waiting on it meanwhile (4 to 16 s on the
// busy bench, where the job's restart waits for the last). Here, called
// before slurmstepd reports (slurm_spank_exit), a node with children in
// the tree waits a second for each level below it: its children, aborted
// at the same moment, report to it meanwhile, and it reports once, to a
// parent still waiting in turn. Only where a task of the step ended by
// SIGKILL (Slurm's abort kills them so; a job's cancel, requeue or time
// limit sends SIGTERM first), on a slice job, on nodes with children: a
// step killed so otherwise (scancel of one step, the OOM killer) ends that
// much later, 1 s a level (2 s for 8-56 nodes, 4 s for 2,304), no more.
void wait_for_tree_children(spank_t sp) {
    State& st = state();
    if (!st.task_killed || !st.options.slice_set || !st.config.abort_wait) return;
    // the batch script and the extern step report to slurmctld alone
    uint32_t step = 0, rank = 0, nodes = 0;
    if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || step == SLURM_BATCH_SCRIPT ||
        step == SLURM_EXTERN_CONT)
        return;
    if (spank_get_item(sp, S_JOB_NODEID, &rank) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_NNODES, &nodes) != ESPANK_SUCCESS)
        return;
    const StepTreePlace p = step_tree_place(static_cast<int>(rank), static_cast<int>(nodes));
    if (p.descendants == 0) return;
    const int wait_s = p.max_depth - p.depth;
    log_verbose(fmt::format("step killed: node {} of {} waits {} s for its {} node(s) below in the step's reverse tree",
                            rank, nodes, wait_s, p.descendants));
    timespec left{wait_s, 0};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
}

namespace {

// A process's command name and parent, from /proc/PID/stat (the name in
// parentheses may hold anything, so the fields are read after its last ')').
bool proc_stat(pid_t pid, std::string& comm, pid_t& ppid) {
    std::ifstream f(fmt::format("/proc/{}/stat", pid));
    std::string line;
    if (!std::getline(f, line)) return false;
    const auto open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return false;
    comm = line.substr(open + 1, close - open - 1);
    char state = 0;
    int parent = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &parent) != 2) return false;
    ppid = parent;
    return true;
}

// Whether a slurmstepd is among the process's ancestors (a step's task, or
// an srun a task started: not a leftover of the batch script).
bool under_slurmstepd(pid_t pid) {
    std::string comm;
    pid_t ppid = 0;
    for (int depth = 0; depth < 64 && pid > 1; ++depth) {
        if (!proc_stat(pid, comm, ppid)) return false;
        if (comm == "slurmstepd") return true;
        pid = ppid;
    }
    return false;
}

// Whether the process's environment names the job (SLURM_JOB_ID=<job>).
bool of_job(pid_t pid, uint32_t job) {
    std::ifstream f(fmt::format("/proc/{}/environ", pid), std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::string want = fmt::format("SLURM_JOB_ID={}", job);
    for (size_t at = 0; at < env.size();) {
        const size_t end = env.find('\0', at);
        const size_t len = (end == std::string::npos ? env.size() : end) - at;
        if (len == want.size() && env.compare(at, len, want) == 0) return true;
        if (end == std::string::npos) break;
        at = end + 1;
    }
    return false;
}

} // namespace

// When the batch script of a slice job whose step was killed ends (its job
// requeued after nvlsliced aborted its steps for a dead node), an srun it
// started may live on: under
// proctrack/linuxproc, which follows processes by their parents, an srun
// whose shell died first is no one's child any more and escapes the batch
// step's kill. Aborted, that srun waits KillWait + 2 s for the tasks of a
// node that went silent, then asks slurmctld to kill step 0 of its job once
// more; before Slurm 26.05 (which checks the step's unique id, SLUID)
// slurmctld kills step 0 of the job's next run with it, 32 s after the
// failure, when nvlsliced has already started that run. Here, as the batch
// step ends (slurmstepd, root), every srun of this job on the node that no
// slurmstepd holds (a step's task may run srun) and that runs as the job's
// user is killed, as proctrack/cgroup kills all of the batch step's
// processes. Only where a task of the job's step on this node was killed
// (the mark note_task_exit() leaves: nvlsliced's abort kills them so; a
// requeue, a cancel or a drain sends SIGTERM first, and their srun ends on
// its own, its tasks' ends reported to it). Nothing else is touched: a
// job's next run cannot start before this node reports the end of this one.
void end_stray_sruns(spank_t sp) {
    uint32_t step = 0, job = 0;
    uid_t uid = 0;
    struct stat mark {};
    if (!state().options.slice_set || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
        step != SLURM_BATCH_SCRIPT || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || lstat(abort_mark(job).c_str(), &mark) != 0)
        return;
    unlink(abort_mark(job).c_str());
    DIR* proc = opendir("/proc");
    if (!proc) return;
    std::vector<pid_t> stray;
    while (const dirent* e = readdir(proc)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (pid <= 1 || !end || *end) continue;
        std::string comm;
        pid_t ppid = 0;
        struct stat sb {};
        if (!proc_stat(pid_t(pid), comm, ppid) || comm != "srun") continue;
        if (stat(fmt::format("/proc/{}", pid).c_str(), &sb) != 0 || sb.st_uid != uid) continue;
        // (the srun itself is none: its ancestry is read from its parent)
        if (!of_job(pid_t(pid), job) || under_slurmstepd(ppid)) continue;
        stray.push_back(pid_t(pid));
    }
    closedir(proc);
    for (pid_t pid : stray)
        if (kill(pid, SIGKILL) == 0)
            log_info(fmt::format("job {}: its batch script ended, its srun (pid {}) outlived it: killed, so that it "
                                 "cannot cancel a step of the job's next run",
                                 job, pid));
}

} // namespace nvl::spank
