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

HelperSettings read_helper_config(std::string_view text, const std::string& file) {
    YamlDoc doc(text, file);
    HelperSettings s;
    s.reconcile.hand_off = HandOff::Auto; // nvlsliced asks the running Slurm
    yaml_node_t* root = doc.root();
    if (!root) throw ParseError({file, 1, 1}, "the configuration is empty (at least \"map: PATH\" is needed)");
    doc.expect_mapping(root, "the nvlsliced configuration");
    // A drain-reason pattern (ECMAScript, case-insensitive), refused at its
    // file:line when it does not compile.
    auto reason_pattern = [&](const std::string& k, yaml_node_t* v) {
        std::string p = doc.scalar(v, k);
        try {
            std::regex re(p, std::regex::ECMAScript | std::regex::icase);
        } catch (const std::regex_error& e) {
            doc.fail(v, fmt::format("\"{}\" is not a valid regular expression: {}", k, e.what()));
        }
        return p;
    };
    doc.for_each_pair(
        root,
        {"map",
         "spares",
         "gpus_per_node",
         "default_slice",
         "cycle_ms",
         "metrics_listen",
         "lock_file",
         "log",
         "reservation",
         "repair_drain_reasons",
         "rack_failure_reasons",
         "repair_not_responding_after",
         "prefer_wait",
         "replace_after",
         "lend_spares",
         "steer_weights",
         "gate_license",
         "gate_reservation",
         "protect",
         "protect_reservation",
         "mode",
         "defrag",
         "healthy_feature"},
        [&](const std::string& k, yaml_node_t*, yaml_node_t* v) {
            if (k == "map")
                s.map = doc.scalar(v, k);
            else if (k == "spares")
                s.overrides.spares = int(doc.integer(v, k, 0, 4096));
            else if (k == "gpus_per_node")
                s.overrides.gpus_per_node = int(doc.integer(v, k, 1, 1024));
            else if (k == "default_slice")
                s.overrides.default_slice = int(doc.integer(v, k, 1, 4096));
            else if (k == "cycle_ms")
                s.cycle_ms = int(doc.integer(v, k, 50, 60000));
            else if (k == "metrics_listen") {
                s.metrics_listen = doc.scalar(v, k);
                if (!s.metrics_listen.empty()) try {
                        (void)parse_listen(s.metrics_listen);
                    } catch (const Error& e) {
                        doc.fail(v, e.what());
                    }
            } else if (k == "lock_file")
                s.lock_file = doc.scalar(v, k);
            else if (k == "log") {
                s.log = doc.scalar(v, k);
                if (s.log != "auto" && s.log != "stderr" && s.log != "syslog")
                    doc.fail(v, fmt::format("\"log\": \"{}\": expected auto, stderr or syslog", s.log));
            } else if (k == "reservation")
                s.reconcile.reservation = doc.scalar(v, k);
            else if (k == "repair_drain_reasons")
                s.reconcile.repair_drain_reasons = reason_pattern(k, v);
            else if (k == "rack_failure_reasons")
                s.reconcile.rack_failure_reasons = reason_pattern(k, v);
            else if (k == "repair_not_responding_after")
                s.reconcile.repair_not_responding_after_s = int(doc.integer(v, k, 0, 86400));
            else if (k == "prefer_wait")
                s.reconcile.prefer_wait_s = int(doc.integer(v, k, 0, 30 * 86400));
            else if (k == "replace_after")
                s.reconcile.replace_after_s = int(doc.integer(v, k, 1, 86400));
            else if (k == "steer_weights")
                s.reconcile.steer_weights = doc.boolean(v, k);
            else if (k == "gate_license")
                s.reconcile.gate_license = doc.scalar(v, k);
            else if (k == "gate_reservation")
                s.reconcile.gate_reservation = doc.scalar(v, k);
            else if (k == "protect")
                s.reconcile.protect = doc.boolean(v, k);
            else if (k == "protect_reservation")
                s.reconcile.protect_reservation = doc.scalar(v, k);
            else if (k == "healthy_feature") {
                s.reconcile.healthy_feature = doc.scalar(v, k);
                if (!s.reconcile.healthy_feature.empty() && !valid_feature_name(s.reconcile.healthy_feature))
                    doc.fail(v, fmt::format("\"healthy_feature\": \"{}\" is not a Slurm node feature name (letters, "
                                            "digits, '_', '.', '-'; as in slurm.conf Features=)",
                                            s.reconcile.healthy_feature));
            } else if (k == "mode") {
                try {
                    s.reconcile.hand_off = parse_hand_off(doc.scalar(v, k), "mode");
                } catch (const Error& e) {
                    doc.fail(v, e.what());
                }
            } else if (k == "lend_spares") {
                try {
                    s.reconcile.lend = parse_lend_scope(doc.scalar(v, k));
                } catch (const Error& e) {
                    doc.fail(v, e.what());
                }
            } else {
                doc.expect_mapping(v, "\"defrag\"");
                doc.for_each_pair(v, {"enabled", "after", "interval", "allow_interactive", "for_repairs"},
                                  [&](const std::string& dk, yaml_node_t*, yaml_node_t* dv) {
                                      if (dk == "enabled")
                                          s.reconcile.defrag = doc.boolean(dv, dk);
                                      else if (dk == "after")
                                          s.reconcile.defrag_after_s = int(doc.integer(dv, dk, 0, 30 * 86400));
                                      else if (dk == "interval")
                                          s.reconcile.defrag_interval_s = int(doc.integer(dv, dk, 0, 30 * 86400));
                                      else if (dk == "for_repairs")
                                          s.reconcile.defrag_repairs = doc.boolean(dv, dk);
                                      else
                                          s.reconcile.defrag_interactive = doc.boolean(dv, dk);
                                  });
            }
        });
    if (s.map.empty()) doc.fail(root, "\"map\" is required: the rack map nvlsliced places slices on");
    return s;
}

HelperSettings load_helper_config(const std::string& path) {
    return read_helper_config(read_file(path), path);
}

} // namespace nvl
