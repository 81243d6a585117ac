// nvlslice — nvlsliced's configuration file (etc/nvlslice.yaml). The keys
// it shares with the plugin's plugstack.conf arguments (map, spares,
// gpus_per_node, default_slice) mean the same thing in both.
#pragma once

#include "map_io.hpp"
#include "model.hpp"
#include "reconcile.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

// metrics_listen: an IPv4 address and a port (0: any free port).
struct ListenAddress {
    std::string host;
    uint16_t port = 0;
    std::string str() const { return host + ":" + std::to_string(port); }
};
// "127.0.0.1:9817"; throws nvl::Error naming metrics_listen and the fix.
ListenAddress parse_listen(std::string_view v);

struct HelperSettings {
    std::string map;                                         // rack map (required)
    MapOverrides overrides;                                  // spares, gpus_per_node, default_slice over the map's
    int cycle_ms = 1000;                                     // reconcile period
    std::string metrics_listen = "127.0.0.1:9817";           // "" = no metrics endpoint; checked by parse_listen
    std::string lock_file = "/run/nvlsliced/nvlsliced.lock"; // its directory is made if missing
    // Where the log goes: auto = the journal (with each line's level) when
    // standard error is journald's stream, else standard error; stderr;
    // syslog (daemon facility, with levels).
    std::string log = "auto";
    // The lease that lets one helper act at a time (lease.hpp): the
    // reservation's name ("" = no lease: a helper acts wherever it runs,
    // with a backup controller the one beside the slurmctld in control),
    // the license it holds (slurm.conf: Licenses=<license>:1) and its
    // length in seconds.
    std::string lease_reservation = "nvlslice_lease";
    std::string lease_license = "nvlslice_lease";
    int lease_s = 30;
    HelperConfig reconcile;
    // Keys accepted but no longer in effect, each with file:line and what
    // replaced it: nvlsliced logs them as warnings.
    std::vector<std::string> notices;
};

// Strict: unknown keys refused with file:line:column and the accepted keys.
HelperSettings read_helper_config(std::string_view text, const std::string& file);
HelperSettings load_helper_config(const std::string& path);

} // namespace nvl
