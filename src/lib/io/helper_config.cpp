#include "helper_config.hpp"

#include "plugin_config.hpp"
#include "yaml_doc.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>

#include <regex>

namespace nvl {

ListenAddress parse_listen(std::string_view v) {
    const size_t colon = v.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
        throw Error(fmt::format("metrics_listen: \"{}\": expected IPV4-ADDRESS:PORT, e.g. 127.0.0.1:9817 (\"\" turns "
                                "the endpoint off)",
                                v));
    ListenAddress a;
    a.host = std::string(v.substr(0, colon));
    const std::string_view port = v.substr(colon + 1);
    unsigned long p = 0;
    bool digits = !port.empty() && port.size() <= 5;
    for (char c : port) {
        digits = digits && c >= '0' && c <= '9';
        if (digits) p = p * 10 + unsigned(c - '0');
    }
    if (!digits || p > 65535)
        throw Error(fmt::format("metrics_listen: \"{}\": the port \"{}\" is not a number from 0 to 65535", v, port));
    in_addr addr{};
    // inet_pton reads up to a NUL: "127.0.0.1\0x" (a YAML "\0") is no address
    if (a.host.find('\0') != std::string::npos || inet_pton(AF_INET, a.host.c_str(), &addr) != 1)
        throw Error(fmt::format("metrics_listen: \"{}\": \"{}\" is not an IPv4 address (use 127.0.0.1, or the "
                                "address of the interface Prometheus scrapes)",
                                v, a.host));
    a.port = uint16_t(p);
    return a;
}

namespace {

// One entry per configuration key: its name and how its value is read and
// checked into the settings (the defaults are HelperSettings' own). The
// names are the keys accepted; an unknown one is refused with the list.
struct Key {
    std::string_view name;
    void (*read)(YamlDoc& doc, const std::string& k, yaml_node_t* v, HelperSettings& s);
};

// A drain-reason pattern (ECMAScript, case-insensitive), refused at its
// file:line when it does not compile.
std::string reason_pattern(YamlDoc& doc, const std::string& k, yaml_node_t* v) {
    std::string p = doc.scalar(v, k);
    try {
        std::regex re(p, std::regex::ECMAScript | std::regex::icase);
    } catch (const std::regex_error& e) {
        doc.fail(v, fmt::format("\"{}\" is not a valid regular expression: {}", k, e.what()));
    }
    return p;
}

// A value parsed by a function that throws nvl::Error: refused at its file:line.
template <class F> auto checked(YamlDoc& doc, yaml_node_t* v, F&& parse) -> decltype(parse()) {
    try {
        return parse();
    } catch (const Error& e) {
        doc.fail(v, e.what());
    }
}

using S = HelperSettings;
using D = YamlDoc;
using N = yaml_node_t*;
using K = const std::string&;

const Key kDefragKeys[] = {
    {"enabled", [](D& d, K k, N v, S& s) { s.reconcile.defrag = d.boolean(v, k); }},
    {"after", [](D& d, K k, N v, S& s) { s.reconcile.defrag_after_s = int(d.integer(v, k, 0, 30 * 86400)); }},
    {"interval", [](D& d, K k, N v, S& s) { s.reconcile.defrag_interval_s = int(d.integer(v, k, 0, 30 * 86400)); }},
    {"allow_interactive", [](D& d, K k, N v, S& s) { s.reconcile.defrag_interactive = d.boolean(v, k); }},
    {"restart_cost", [](D& d, K k, N v, S& s) { s.reconcile.defrag_restart_cost_s = int(d.integer(v, k, 0, 86400)); }},
    {"for_repairs", [](D& d, K k, N v, S& s) { s.reconcile.defrag_repairs = d.boolean(v, k); }},
};

void read_keys(D& doc, N map, const Key* begin, const Key* end, S& s);

const Key kKeys[] = {
    {"map", [](D& d, K k, N v, S& s) { s.map = d.scalar(v, k); }},
    {"spares", [](D& d, K k, N v, S& s) { s.overrides.spares = int(d.integer(v, k, 0, 4096)); }},
    {"gpus_per_node", [](D& d, K k, N v, S& s) { s.overrides.gpus_per_node = int(d.integer(v, k, 1, 1024)); }},
    {"default_slice", [](D& d, K k, N v, S& s) { s.overrides.default_slice = int(d.integer(v, k, 1, 4096)); }},
    {"cycle_ms", [](D& d, K k, N v, S& s) { s.cycle_ms = int(d.integer(v, k, 50, 60000)); }},
    {"metrics_listen",
     [](D& d, K k, N v, S& s) {
         s.metrics_listen = d.scalar(v, k);
         if (!s.metrics_listen.empty()) checked(d, v, [&] { return parse_listen(s.metrics_listen); });
     }},
    {"lock_file", [](D& d, K k, N v, S& s) { s.lock_file = d.scalar(v, k); }},
    {"log",
     [](D& d, K k, N v, S& s) {
         s.log = d.scalar(v, k);
         if (s.log != "auto" && s.log != "stderr" && s.log != "syslog")
             d.fail(v, fmt::format("\"log\": \"{}\": expected auto, stderr or syslog", s.log));
     }},
    {"reservation", [](D& d, K k, N v, S& s) { s.reconcile.reservation = d.scalar(v, k); }},
    {"lease_reservation", [](D& d, K k, N v, S& s) { s.lease_reservation = d.scalar(v, k); }},
    {"lease_license",
     [](D& d, K k, N v, S& s) {
         s.lease_license = d.scalar(v, k);
         if (s.lease_license.empty())
             d.fail(v, "\"lease_license\" is empty: give the license the lease reservation holds (default "
                       "nvlslice_lease; slurm.conf: Licenses=nvlslice_lease:1)");
     }},
    {"lease_length", [](D& d, K k, N v, S& s) { s.lease_s = int(d.integer(v, k, 10, 600)); }},
    {"repair_drain_reasons", [](D& d, K k, N v, S& s) { s.reconcile.repair_drain_reasons = reason_pattern(d, k, v); }},
    {"rack_failure_reasons", [](D& d, K k, N v, S& s) { s.reconcile.rack_failure_reasons = reason_pattern(d, k, v); }},
    {"silent_after", [](D& d, K k, N v, S& s) { s.reconcile.silent_after_s = int(d.integer(v, k, 0, 3600)); }},
    {"repair_not_responding_after",
     [](D& d, K k, N v, S& s) { s.reconcile.repair_not_responding_after_s = int(d.integer(v, k, 0, 86400)); }},
    {"prefer_wait", [](D& d, K k, N v, S& s) { s.reconcile.prefer_wait_s = int(d.integer(v, k, 0, 30 * 86400)); }},
    {"replace_after", [](D& d, K k, N v, S& s) { s.reconcile.replace_after_s = int(d.integer(v, k, 1, 86400)); }},
    {"reservation_lease",
     [](D& d, K k, N v, S& s) { s.reconcile.reservation_lease_s = d.integer(v, k, 300, 30 * 86400); }},
    {"repair_hold_max",
     [](D& d, K k, N v, S& s) { s.reconcile.repair_hold_max_s = int(d.integer(v, k, 0, 7 * 86400)); }},
    {"lend_spares",
     [](D& d, K k, N v, S& s) { s.reconcile.lend = checked(d, v, [&] { return parse_lend_scope(d.scalar(v, k)); }); }},
    {"steer_weights", [](D& d, K k, N v, S& s) { s.reconcile.steer_weights = d.boolean(v, k); }},
    {"gate_license", [](D& d, K k, N v, S& s) { s.reconcile.gate_license = d.scalar(v, k); }},
    {"gate_reservation", [](D& d, K k, N v, S& s) { s.reconcile.gate_reservation = d.scalar(v, k); }},
    {"protect", [](D& d, K k, N v, S& s) { s.reconcile.protect = d.boolean(v, k); }},
    {"protect_reservation", [](D& d, K k, N v, S& s) { s.reconcile.protect_reservation = d.scalar(v, k); }},
    {"lend_reservation",
     [](D& d, K k, N v, S& s) {
         s.reconcile.lend_reservation = d.scalar(v, k);
         if (s.reconcile.lend_reservation.empty())
             d.fail(v, "\"lend_reservation\" is empty: give the prefix of the reservations that hold lent spares "
                       "(default nvlslice_lend)");
     }},
    {"repair_reservation", [](D& d, K k, N v, S& s) { s.reconcile.repair_reservation = d.boolean(v, k); }},
    {"abort_steps", [](D& d, K k, N v, S& s) { s.reconcile.abort_steps = d.boolean(v, k); }},
    {"mode",
     [](D& d, K k, N v, S& s) {
         s.reconcile.hand_off = checked(d, v, [&] { return parse_hand_off(d.scalar(v, k), "mode"); });
     }},
    {"defrag",
     [](D& d, K, N v, S& s) {
         d.expect_mapping(v, "\"defrag\"");
         read_keys(d, v, std::begin(kDefragKeys), std::end(kDefragKeys), s);
     }},
    // Before the spare reservation held degraded racks whole, the helper
    // took this feature off their nodes; Slurm then refused submissions the
    // healthy racks were too few for. Accepted, so that an older file still
    // loads, and reported.
    {"healthy_feature",
     [](D& d, K k, N v, S& s) {
         if (!d.scalar(v, k).empty())
             s.notices.push_back(fmt::format(
                 "{}: \"healthy_feature\" is no longer used: the spare reservation holds every node of a degraded "
                 "rack, so Slurm offers none to a new job; remove the key (and feature= from plugstack.conf)",
                 d.pos(v).str()));
     }},
};

void read_keys(D& doc, N map, const Key* begin, const Key* end, S& s) {
    std::vector<std::string_view> names;
    for (const Key* key = begin; key != end; ++key) names.push_back(key->name);
    doc.for_each_pair(map, names, [&](const std::string& k, yaml_node_t*, yaml_node_t* v) {
        for (const Key* key = begin; key != end; ++key)
            if (key->name == k) return key->read(doc, k, v, s);
    });
}

} // namespace

HelperSettings read_helper_config(std::string_view text, const std::string& file) {
    YamlDoc doc(text, file);
    HelperSettings s;
    s.reconcile.hand_off = HandOff::Auto; // nvlsliced asks the running Slurm
    yaml_node_t* root = doc.root();
    if (!root) throw ParseError({file, 1, 1}, "the configuration is empty (at least \"map: PATH\" is needed)");
    doc.expect_mapping(root, "the nvlsliced configuration");
    read_keys(doc, root, std::begin(kKeys), std::end(kKeys), s);
    if (s.map.empty()) doc.fail(root, "\"map\" is required: the rack map nvlsliced places slices on");
    return s;
}

HelperSettings load_helper_config(const std::string& path) {
    return read_helper_config(read_file(path), path);
}

} // namespace nvl
