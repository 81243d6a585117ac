// nvlslice — what the running Slurm offers, for choosing the hand-off
// (slice_job.hpp: gate or native). Header-only: the plugin (inside sbatch,
// salloc, srun) and the programs share it. The caller has initialised
// libslurm (the clients have; SlurmCluster's constructor does).
#pragma once

#include "config.h"

#include "error.hpp"
#include "job_calls.hpp"
#include "slice_job.hpp"

#include <fmt/format.h>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <dlfcn.h>

#include <cerrno>
#include <string>
#include <vector>

namespace nvl {

// AccountingStorageEnforce's limits, qos and safe bits (slurmctld's
// ACCOUNTING_ENFORCE_* flags, not in Slurm's public headers; the same
// from 22.05 to 26.05).
inline constexpr uint32_t kEnforceLimits = (1u << 1) | (1u << 3) | (1u << 4);

struct SlurmFeatures {
    bool segments = false;                // built against a Slurm with --segment (24.05+)
    std::string topology_plugin;          // the controller's TopologyPlugin, e.g. "topology/block"
    std::string version;                  // the controller's version, e.g. "24.11.5"
    std::string switch_type;              // SwitchType, e.g. "switch/nvidia_imex"
    std::vector<std::string> controllers; // SlurmctldHost names, primary first
    bool enforce_limits = false; // AccountingStorageEnforce has limits (or safe, qos): Slurm holds jobs to them
};

// One request to slurmctld: its configuration, as it runs now (configless
// sites included). Throws when slurmctld does not answer.
inline SlurmFeatures probe_slurm() {
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
    for (uint32_t i = 0; i < conf->control_cnt; ++i)
        if (conf->control_machine && conf->control_machine[i]) f.controllers.emplace_back(conf->control_machine[i]);
    slurm_calls::free_ctl_conf(conf);
    return f;
}

// Which of the `n` controllers (SlurmctldHost order) answer a ping now.
inline std::vector<bool> ping_controllers(size_t n) {
    std::vector<bool> up(n, false);
    for (size_t i = 0; i < n; ++i) up[i] = slurm_ping(int(i)) == SLURM_SUCCESS;
    return up;
}

// The same from the configuration this process read when it initialised
// libslurm (every client does; configless sites get it from slurmctld):
// no request. slurmctld answers a configuration request slowly under load
// (seconds on 24.11), which no submission should wait for. libslurm and
// libslurmfull export the loaded configuration as `slurm_conf`; when it is
// not there or not loaded, one request it is.
inline SlurmFeatures local_slurm_features() {
    const auto* conf = static_cast<const slurm_conf_t*>(dlsym(RTLD_DEFAULT, "slurm_conf"));
    if (!conf || conf->control_cnt == 0) return probe_slurm();
    SlurmFeatures f;
#ifdef HAVE_SLURM_SEGMENTS
    f.segments = true;
#endif
    if (conf->topology_plugin) f.topology_plugin = conf->topology_plugin;
    if (conf->switch_type) f.switch_type = conf->switch_type;
    f.enforce_limits = (conf->accounting_storage_enforce & kEnforceLimits) != 0;
    // the client's own version (slurm_api_version(): 0xMMmmuu)
    const long v = slurm_api_version();
    f.version = fmt::format("{}.{:02}.{}", SLURM_VERSION_MAJOR(v), SLURM_VERSION_MINOR(v), SLURM_VERSION_MICRO(v));
    return f;
}

// The gate license as slurmctld counts it now (one request): whether
// slurm.conf defines it, its total and how many of it a reservation holds.
// Throws when slurmctld does not answer.
inline GateLicense load_gate_license(const std::string& name) {
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

// The hand-off to use: `wanted` unless Auto, else what Slurm offers.
inline HandOff choose_hand_off(HandOff wanted, const SlurmFeatures& f) {
    return resolve_hand_off(wanted, f.segments, f.topology_plugin);
}

} // namespace nvl
