// Allocator context: validate a slice request and hand it to Slurm.
//
// Two hand-offs (slice_job.hpp), chosen from the running Slurm unless
// plugstack.conf says mode=:
//  * native (topology/block and --segment, Slurm 24.05+): the job asks for
//    Slurm's own --segment=SLICE; Slurm orders, backfills and places each
//    segment inside one block (rack), the spare reservation keeps the
//    spares out of reach, nvlsliced repairs. Prefer jobs take the gate even
//    here: a segment job cannot run split after its wait; so does
//    checkpointable work small enough for a rack's spares (spares_first()),
//    which nvlsliced puts on idle spares first.
//  * gate (any Slurm): the job goes to Slurm tagged and behind the gate (one
//    gate license, which a reservation of nvlsliced's holds), so Slurm
//    computes its priority as for any job but cannot start it on rack-blind
//    nodes; nvlsliced picks the nodes in priority order, pins them and takes
//    the gate off.
// Both tag the job's comment and ask for whole nodes. sbatch, salloc and
// srun export their option table as the symbol
// `opt`, and libslurmfull exports slurm_option_set/get/isset. These are not
// public API, so they are looked up at run time: when any is missing the
// submission is refused. An untagged or ungated slice job is never
// submitted. A user's own --hold is kept: the job stays held.
#include "config.h"
#ifndef PACKAGE_VERSION
#error "config.h first: its feature tests (HAVE_SLURM_SEGMENTS) decide what this file compiles"
#endif

#include "plugin.hpp"

#include "slurm_features.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <optional>

namespace nvl::spank {
namespace {

struct OptionApi {
    void* opt = nullptr;
    int (*set)(void*, const char*, const char*, bool) = nullptr;
    char* (*get)(void*, const char*) = nullptr;
    bool (*isset)(void*, const char*) = nullptr;
    // slurm_xfree(void **) in new releases, (void **, file, line, func) in
    // old ones: passing all four suits both calling conventions.
    void (*xfree)(void**, const char*, int, const char*) = nullptr;

    void resolve() {
        opt = dlsym(RTLD_DEFAULT, "opt");
        *reinterpret_cast<void**>(&set) = dlsym(RTLD_DEFAULT, "slurm_option_set");
        *reinterpret_cast<void**>(&get) = dlsym(RTLD_DEFAULT, "slurm_option_get");
        *reinterpret_cast<void**>(&isset) = dlsym(RTLD_DEFAULT, "slurm_option_isset");
        *reinterpret_cast<void**>(&xfree) = dlsym(RTLD_DEFAULT, "slurm_xfree");
        std::string missing;
        if (!opt) missing += " opt";
        if (!set) missing += " slurm_option_set";
        if (!get) missing += " slurm_option_get";
        if (!isset) missing += " slurm_option_isset";
        if (!xfree) missing += " slurm_xfree";
        if (!missing.empty())
            throw Error(fmt::format("this client does not export what the slice hand-off needs (missing:{}); "
                                    "refusing to submit a slice job that Slurm could start on rack-blind nodes",
                                    missing));
    }

    // The option's value as a std::string; Slurm's copy is freed with xfree.
    std::optional<std::string> value(const char* name) const {
        char* v = get(opt, name);
        if (!v) return std::nullopt;
        std::string s(v);
        void* p = v;
        xfree(&p, __FILE__, __LINE__, __func__);
        return s;
    }

    void must_set(const char* name, const std::string& v) const {
        if (set(opt, name, v.c_str(), false) != 0)
            throw Error(fmt::format("could not set --{} on the submission; refusing to submit the slice job", name));
    }
};

// "-N 32" gives "32", "-N 2-4" gives "2-4", unset gives nothing.
void node_range(const OptionApi& api, int& lo, int& hi) {
    lo = hi = 0;
    if (!api.isset(api.opt, "nodes")) return;
    auto v = api.value("nodes");
    if (!v) return;
    char* end = nullptr;
    lo = int(std::strtol(v->c_str(), &end, 10));
    hi = lo;
    if (end && *end == '-') hi = int(std::strtol(end + 1, &end, 10));
}

Requeue requeue_of(const OptionApi& api) {
    auto v = api.value("requeue");
    return v ? parse_requeue_value(*v) : Requeue::NotBatch;
}

// What this client's Slurm runs, read once per process (no request where
// the client has loaded slurm.conf, else one).
const SlurmFeatures& client_features() {
    static std::optional<SlurmFeatures> f;
    if (!f) f = local_slurm_features();
    return *f;
}

// The hand-off of this process's submissions: plugstack.conf's mode=, or
// for auto what slurmctld runs.
HandOff hand_off_for(const PluginConfig& c) {
    static HandOff chosen = HandOff::Auto;
    if (c.hand_off != HandOff::Auto) return c.hand_off;
    if (chosen == HandOff::Auto) {
        try {
            chosen = choose_hand_off(HandOff::Auto, client_features());
        } catch (const Error& e) {
            throw Error(fmt::format("mode=auto (plugstack.conf): {}; set mode=gate or mode=native to choose without "
                                    "asking slurmctld",
                                    e.what()));
        }
    }
    return chosen;
}

} // namespace

void submit_hand_off(spank_t sp) {
    (void)sp;
    State& st = state();
    if (!st.options.any()) return; // not a slice job: untouched
    // srun inside an allocation: the options came back from sbatch/salloc;
    // the job is already placed. Change nothing.
    if (spank_context() == S_CTX_LOCAL && std::getenv("SLURM_JOB_ID")) return;

    SliceOptions o = st.options;
    if (!o.placement_set) o.mode = st.config.default_placement;
    OptionApi api;
    api.resolve();
    int lo = 0, hi = 0;
    node_range(api, lo, hi);
    RequestTag tag = make_request(rack_map(), o, lo, hi, requeue_of(api));
    tag.hand_off = hand_off_for(st.config);
#ifndef HAVE_SLURM_SEGMENTS
    if (tag.hand_off == HandOff::Native)
        throw Error("plugstack.conf mode=native: this Slurm has no --segment (24.05 or later is needed); use mode=gate "
                    "or mode=auto");
#endif
    // Slurm's segments always run whole: a prefer job, which may run split
    // after its wait, is placed by nvlsliced behind the gate.
    if (tag.hand_off == HandOff::Native && tag.mode == PlacementMode::Prefer) tag.hand_off = HandOff::Gate;
    // Checkpointable work that a rack's kept spares can take whole: Slurm
    // would start it at submission on a rack's slice room, while the spares
    // of the racks slice jobs fill idle; behind the gate nvlsliced puts it on
    // idle spares first. Only while the gate is there (else Slurm places it,
    // as any native job) and unless plugstack.conf says spares_first=no.
    if (tag.hand_off == HandOff::Native && st.config.spares_first && spares_first(tag, rack_map())) {
        if (auto open = gate_open_reason(st.config.gate, load_gate_license(st.config.gate)))
            log_verbose(fmt::format("not handed to nvlsliced for the spares first: {}", *open));
        else
            tag.hand_off = HandOff::Gate;
    }
    const bool native = tag.hand_off == HandOff::Native;
    if (native && api.isset(api.opt, "segment")) {
        auto seg = api.value("segment");
        if (seg && *seg != std::to_string(tag.slice))
            throw Error(fmt::format("--segment={} conflicts with --nvl-slice (slices of {} nodes): drop --segment, "
                                    "nvlslice sets it",
                                    *seg, tag.slice));
    }

    std::string user;
    if (api.isset(api.opt, "comment"))
        if (auto c = api.value("comment")) user = std::string(user_comment(*c));
    const std::string comment = tagged_comment(tag, user);
    if (comment.size() > kMaxSlurmComment)
        throw Error(fmt::format("--comment: with the slice tag ({} characters) the job's comment would be {} "
                                "characters, more than Slurm's limit of {}; shorten --comment to at most {} "
                                "characters",
                                comment.size() - user.size(), comment.size(), kMaxSlurmComment,
                                kMaxSlurmComment - (comment.size() - user.size())));
    api.must_set("comment", comment);
    // Whole nodes: a slice owns its NVLink domain's nodes; with CR_Core
    // Slurm would otherwise share them with other jobs.
    api.must_set("exclusive", "exclusive");
    const char* mode = tag.mode == PlacementMode::Prefer ? "prefer" : "strict";
    if (native) {
        api.must_set("segment", std::to_string(tag.slice));
        // Degraded racks: nvlsliced's spare reservation holds every node of
        // them, so Slurm offers none to this job; nothing to add here (a
        // constraint the healthy racks are too few for would have Slurm
        // refuse the job at submission, where plain Slurm queues it).
        // One IMEX channel per slice where Slurm can give it (25.11+ with
        // switch/nvidia_imex): a slice is one NVLink domain.
        std::optional<std::string> want_network;
        try {
            const SlurmFeatures& f = client_features();
            std::string user_n;
            if (api.isset(api.opt, "network"))
                if (auto n = api.value("network")) user_n = *n;
            want_network = network_for_slices(user_n, f.switch_type, f.version);
        } catch (const Error& e) {
            log_verbose(fmt::format("IMEX channels per slice not asked for: {}", e.what()));
        }
        if (want_network) api.must_set("network", *want_network);
        // Verify instead of trusting: the job must leave segmented and tagged.
        auto back = api.value("comment");
        auto back_seg = api.value("segment");
        if (!back || *back != comment || !back_seg || *back_seg != std::to_string(tag.slice))
            throw Error("the submission did not keep --segment and the slice tag; refusing to submit the slice job");
        log_verbose(fmt::format("slice job handed to Slurm (native): {} slice(s) of {} nodes, {}, --segment={}",
                                tag.count, tag.slice, mode, tag.slice));
        return;
    }
    // Behind the gate only while the gate is closed: a slice job submitted
    // before nvlsliced has made its reservation (or after it was removed)
    // could be started by Slurm at once, rack-blind.
    if (auto open = gate_open_reason(st.config.gate, load_gate_license(st.config.gate)))
        throw Error(*open + "; the slice job was not submitted");
    std::string lic;
    if (api.isset(api.opt, "licenses"))
        if (auto l = api.value("licenses")) lic = *l;
    const std::string gated = with_license(lic, st.config.gate);
    api.must_set("licenses", gated);
    // Verify instead of trusting: the job must leave gated and tagged.
    auto back = api.value("comment");
    auto back_lic = api.value("licenses");
    if (!back || *back != comment || !back_lic || !has_license(*back_lic, st.config.gate))
        throw Error("the submission did not keep the gate license and the slice tag; refusing to submit the slice "
                    "job");
    log_verbose(fmt::format("slice job handed to nvlsliced (gate): {} slice(s) of {} nodes, {}, behind the gate ({}) "
                            "until placed",
                            tag.count, tag.slice, mode, st.config.gate));
}

} // namespace nvl::spank
