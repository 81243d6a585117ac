// nvlslice — what the running Slurm offers, for choosing the hand-off
// (slice_job.hpp: gate or native). The plugin (inside sbatch, salloc, srun)
// and the programs share it; the calls are compiled in slurm_calls.cpp. The
// caller has initialised libslurm (the clients have; SlurmCluster's
// constructor does).
#pragma once

#include "slice_job.hpp"

#include <cstdint>
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
    int tcp_timeout_s = 0;       // TCPTimeout (probe_slurm only; 0: not read)
    int slurmd_timeout_s = 0;    // SlurmdTimeout (probe_slurm only; 0: not read)
};

// One request to slurmctld: its configuration, as it runs now (configless
// sites included). Throws when slurmctld does not answer.
SlurmFeatures probe_slurm();

// Which of the `n` controllers (SlurmctldHost order) answer a ping now
// (the helper's and the tools' only: helper_calls.cpp).
std::vector<bool> ping_controllers(size_t n);

// The same from the configuration this process read when it initialised
// libslurm (every client does; configless sites get it from slurmctld):
// no request. slurmctld answers a configuration request slowly under load
// (seconds on 24.11), which no submission should wait for. libslurm and
// libslurmfull export the loaded configuration as `slurm_conf`; when it is
// not there or not loaded, one request it is.
SlurmFeatures local_slurm_features();

// The gate license as slurmctld counts it now (one request): whether
// slurm.conf defines it, its total and how many of it a reservation holds.
// Throws when slurmctld does not answer.
GateLicense load_gate_license(const std::string& name);

// The hand-off to use: `wanted` unless Auto, else what Slurm offers.
inline HandOff choose_hand_off(HandOff wanted, const SlurmFeatures& f) {
    return resolve_hand_off(wanted, f.segments, f.topology_plugin);
}

} // namespace nvl
