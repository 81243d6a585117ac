// nvlslice — the libslurm calls the helper's adapter, the tools and the
// SPANK plugin share (job_calls.hpp, slurm_features.hpp), compiled once.
// Linked whole into the plugin without libslurm: the Slurm process that
// loads the plugin provides the symbols, bound at load (-z now), so this
// unit holds only what the plugin calls; the helper's other calls are in
// helper_calls.cpp.
#include "config.h"

#include "job_calls.hpp"
#include "slurm_features.hpp"

#include "error.hpp"

#include <fmt/format.h>

extern "C" {
#include <slurm/slurm_errno.h>
}

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>

namespace nvl {
namespace slurm_calls {

int load_job(job_info_msg_t** msg, uint32_t job_id) {
#ifdef NVL_SLURM_STEP_ID_API
    return slurm_load_job(msg, job_step_id(job_id), SHOW_DETAIL);
#else
    return slurm_load_job(msg, job_id, SHOW_DETAIL);
#endif
}

void free_ctl_conf(slurm_conf_t* conf) {
#if HAVE_DECL_SLURM_FREE_CONF
    slurm_free_conf(conf);
#else
    slurm_free_ctl_conf(conf);
#endif
}

int last_error() {
#ifdef HAVE_SLURM_GET_ERRNO
    return slurm_get_errno();
#else
    return errno;
#endif
}

std::string error_text() {
    return slurm_strerror(last_error());
}

std::optional<std::string> load_admin_comment(uint32_t job_id) {
    job_info_msg_t* msg = nullptr;
    if (load_job(&msg, job_id) != 0 || !msg) return std::nullopt;
    // (an array's id brings its tasks too: the job's own record)
    const slurm_job_info_t* j = msg->record_count > 0 ? &msg->job_array[0] : nullptr;
    for (uint32_t i = 0; i < msg->record_count; ++i)
        if (msg->job_array[i].job_id == job_id) {
            j = &msg->job_array[i];
            break;
        }
    std::string text;
    if (j && j->admin_comment) text = j->admin_comment;
    slurm_free_job_info_msg(msg);
    return text;
}

int set_node_state(const std::string& node, uint32_t state, const std::string& reason) {
    update_node_msg_t m;
    slurm_init_update_node_msg(&m);
    m.node_names = const_cast<char*>(node.c_str());
    m.node_state = state;
    m.reason = const_cast<char*>(reason.c_str());
#ifdef HAVE_UPDATE_NODE_MSG_T_REASON_UID
    m.reason_uid = getuid();
#endif
    return slurm_update_node(&m);
}

} // namespace slurm_calls

SlurmFeatures probe_slurm() {
    SlurmFeatures f;
#ifdef HAVE_SLURM_SEGMENTS
    f.segments = true;
#endif
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != SLURM_SUCCESS || !conf)
        throw Error(fmt::format("cannot read slurmctld's configuration: {}", slurm_strerror(errno)));
    if (conf->topology_plugin) f.topology_plugin = conf->topology_plugin;
    if (conf->switch_type) f.switch_type = conf->switch_type;
    if (conf->version) f.version = conf->version;
    f.enforce_limits = (conf->accounting_storage_enforce & kEnforceLimits) != 0;
    f.tcp_timeout_s = conf->tcp_timeout;
    f.slurmd_timeout_s = static_cast<int>(conf->slurmd_timeout);
    for (uint32_t i = 0; i < conf->control_cnt; ++i)
        if (conf->control_machine && conf->control_machine[i]) f.controllers.emplace_back(conf->control_machine[i]);
    slurm_calls::free_ctl_conf(conf);
    return f;
}

SlurmFeatures local_slurm_features() {
    const auto* conf = static_cast<const slurm_conf_t*>(dlsym(RTLD_DEFAULT, "slurm_conf"));
    if (!conf || conf->control_cnt == 0) return probe_slurm();
    SlurmFeatures f;
#ifdef HAVE_SLURM_SEGMENTS
    f.segments = true;
#endif
    if (conf->topology_plugin) f.topology_plugin = conf->topology_plugin;
    if (conf->switch_type) f.switch_type = conf->switch_type;
    f.enforce_limits = (conf->accounting_storage_enforce & kEnforceLimits) != 0;
    // the client's own release: the libslurm this was built against
    // (slurm_version.h; the packages depend on exactly that libslurm).
    // slurm_api_version() is the API's number (38.0.0 on 22.05, 42 on
    // 24.11), which compared as a release made 24.11 look like 25.11+.
    constexpr long v = SLURM_VERSION_NUMBER;
    f.version = fmt::format("{}.{:02}.{}", SLURM_VERSION_MAJOR(v), SLURM_VERSION_MINOR(v), SLURM_VERSION_MICRO(v));
    return f;
}

GateLicense load_gate_license(const std::string& name) {
    license_info_msg_t* msg = nullptr;
    if (slurm_load_licenses(0, &msg, 0) != SLURM_SUCCESS || !msg)
        throw Error(fmt::format("cannot read the cluster's licenses from slurmctld: {}", slurm_strerror(errno)));
    GateLicense g;
    for (uint32_t i = 0; i < msg->num_lic; ++i) {
        const slurm_license_info_t& l = msg->lic_array[i];
        if (!l.name || name != l.name) continue;
        g.configured = true;
        g.total = l.total;
        g.reserved = l.reserved;
    }
    slurm_free_license_info_msg(msg);
    return g;
}

} // namespace nvl
