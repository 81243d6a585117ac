// Allocator context: validate a slice request and hand it to the helper.
//
// The hand-off: the job goes to Slurm tagged and behind the gate (one gate
// license, which a reservation of nvlsliced's holds), so Slurm computes its
// priority as for any job but cannot start it on rack-blind nodes;
// nvlsliced picks the nodes in priority order, pins them and takes the gate
// off. sbatch, salloc and srun export their option table as the symbol
// `opt`, and libslurmfull exports slurm_option_set/get/isset. These are not
// public API, so they are looked up at run time: when any is missing the
// submission is refused. An untagged or ungated slice job is never
// submitted. A user's own --hold is kept: the job stays held.
#include "plugin.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

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
    if (!v || *v == "invalid-context") return Requeue::NotBatch;
    if (*v == "requeue") return Requeue::Requeue;
    if (*v == "no-requeue") return Requeue::NoRequeue;
    return Requeue::Unset;
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

    std::string user;
    if (api.isset(api.opt, "comment"))
        if (auto c = api.value("comment")) user = std::string(user_comment(*c));
    const std::string comment = tagged_comment(tag, user);
    api.must_set("comment", comment);
    std::string lic;
    if (api.isset(api.opt, "licenses"))
        if (auto l = api.value("licenses")) lic = *l;
    const std::string gated = with_license(lic, st.config.gate);
    api.must_set("licenses", gated);
    // Whole nodes: a slice owns its NVLink domain's nodes; with CR_Core
    // Slurm would otherwise share them with other jobs.
    api.must_set("exclusive", "exclusive");
    // Verify instead of trusting: the job must leave gated and tagged.
    auto back = api.value("comment");
    auto back_lic = api.value("licenses");
    if (!back || *back != comment || !back_lic || !has_license(*back_lic, st.config.gate))
        throw Error("the submission did not keep the gate license and the slice tag; refusing to submit the slice "
                    "job");
    log_verbose(fmt::format("slice job handed to nvlsliced: {} slice(s) of {} nodes, {}, behind the gate ({}) until "
                            "placed",
                            tag.count, tag.slice, tag.mode == PlacementMode::Prefer ? "prefer" : "strict",
                            st.config.gate));
}

} // namespace nvl::spank
