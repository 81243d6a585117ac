// nvlslice SPANK plugin — the one boundary file: every symbol Slurm looks
// up is here, and every entry point catches everything, logs once with the
// "nvlslice: " prefix and returns -1. No C++ exception reaches Slurm.
#include "config.h"

#include "plugin.hpp"
#include "text.hpp"

#include "map_io.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>

extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const unsigned int plugin_version;
extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(nvlslice, 1);
#if HAVE_DECL_ESPANK_JOB_FAILURE
// Chosen on purpose (Slurm 25.05+; earlier Slurm drains the node): the one
// thing that fails slurm_spank_init on a node is this plugin's own
// plugstack.conf line, usually one file shared by every node, so draining
// would take each node a job touches out of service for a configuration
// error; the job fails with the error in slurmd's log instead. A user's
// bad option is refused at submission, before any node; hardware faults
// are found at task start and drain only with fabric_drain=yes.
int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif
}

namespace nvl::spank {

State& state() {
    static State s;
    return s;
}

const RackMap& rack_map() {
    State& st = state();
    if (!st.map) {
        MapOverrides o{st.config.spares, st.config.gpus_per_node, st.config.default_slice};
        st.map = std::make_unique<RackMap>(load_map(st.config.map, o, "plugstack.conf (map=" + st.config.map + ")"));
    }
    return *st.map;
}

// Every line escaped (text.hpp): an option value, a node name or a map
// path a user or a file gave cannot start a line of its own in slurmd's
// log or the user's terminal.
void log_error(const std::string& msg) {
    slurm_error("nvlslice: %s", escape_log(msg).c_str());
}
void log_info(const std::string& msg) {
    slurm_info("nvlslice: %s", escape_log(msg).c_str());
}
void log_verbose(const std::string& msg) {
    slurm_verbose("nvlslice: %s", escape_log(msg).c_str());
}

} // namespace nvl::spank

namespace {

using namespace nvl;
using namespace nvl::spank;

template <class F> int guarded(const char* where, F&& f) noexcept {
    try {
        return f();
    } catch (const std::exception& e) {
        try {
            log_error(e.what());
        } catch (...) {}
    } catch (...) {
        slurm_error("nvlslice: unexpected error in %s", where);
    }
    return -1;
}

enum OptionId { kSlice = 1, kPlacement = 2, kCheckpointable = 3, kCheckpointEvery = 4 };

int option_cb(int val, const char* optarg, int remote) {
    return guarded("option", [&] {
        SliceOptions& o = state().options;
        const char* v = optarg ? optarg : "";
        switch (val) {
        case kSlice:
            o.slice = parse_slice_option(v);
            o.slice_set = true;
            break;
        case kPlacement:
            o.mode = parse_placement_option(v);
            o.placement_set = true;
            break;
        case kCheckpointable: o.checkpointable = true; break;
        case kCheckpointEvery: o.checkpoint_s = parse_checkpoint_every_option(v); break;
        }
        (void)remote;
        return 0;
    });
}

// The one option table: every option, its help starting with [nvlslice].
struct spank_option kOptions[] = {
    {const_cast<char*>("nvl-slice"), const_cast<char*>("SIZE|auto"),
     const_cast<char*>("[nvlslice] Run the job as slices of SIZE nodes, each slice inside one NVLink domain "
                       "(rack); auto = fewest racks, equal slices. Needs -N."),
     1, kSlice, option_cb},
    {const_cast<char*>("nvl-placement"), const_cast<char*>("strict|prefer"),
     const_cast<char*>("[nvlslice] strict (default): wait until every slice fits in one rack; prefer: after a "
                       "wait, run on the fewest racks."),
     1, kPlacement, option_cb},
    {const_cast<char*>("nvl-checkpointable"), nullptr,
     const_cast<char*>("[nvlslice] The job checkpoints and may be requeued to defragment racks (needs --requeue)."), 0,
     kCheckpointable, option_cb},
    {const_cast<char*>("nvl-checkpoint-every"), const_cast<char*>("TIME"),
     const_cast<char*>(
         "[nvlslice] How often the checkpointable job checkpoints (as --time: minutes, or hours:minutes:seconds): "
         "defragmentation then requeues the jobs that lose least."),
     1, kCheckpointEvery, option_cb},
    SPANK_OPTIONS_TABLE_END};

bool client_or_remote(spank_t sp) {
    spank_context_t c = spank_context();
    (void)sp;
    return c == S_CTX_ALLOCATOR || c == S_CTX_LOCAL || c == S_CTX_REMOTE;
}

} // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
    return guarded("slurm_spank_init", [&] {
        if (!client_or_remote(sp)) return 0;
        state().config = parse_plugin_args(ac, av);
        if (spank_context() == S_CTX_REMOTE)
            for (const auto& n : state().config.notices) log_info(n);
        for (struct spank_option* o = kOptions; o->name; ++o)
            if (spank_option_register(sp, o) != ESPANK_SUCCESS)
                throw Error(fmt::format("cannot register option --{}", o->name));
        return 0;
    });
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
    (void)ac;
    (void)av;
    return guarded("slurm_spank_init_post_opt", [&] {
        spank_context_t c = spank_context();
        if (c == S_CTX_ALLOCATOR || c == S_CTX_LOCAL) submit_hand_off(sp);
        return 0;
    });
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    (void)ac;
    (void)av;
    return guarded("slurm_spank_task_init", [&] {
        if (spank_context() != S_CTX_REMOTE) return 0;
        if (!check_node_gpus(sp)) return -1; // the task fails on this node, with the reason logged
        if (!check_node_fabric(sp)) return -1;
        set_task_env(sp);
        return 0;
    });
}

int slurm_spank_task_exit(spank_t sp, int ac, char** av) {
    (void)ac;
    (void)av;
    return guarded("slurm_spank_task_exit", [&] {
        if (spank_context() != S_CTX_REMOTE) return 0;
        note_task_exit(sp);
        drain_on_fabric_failure(sp);
        return 0;
    });
}

// A job epilog that does nothing, always successfully: with one, slurmd
// reports each node's end of a job itself (an epilog-complete message,
// read by slurmctld at once). Without any epilog, a node that has nothing
// left of the job when slurmctld's terminate comes answers that terminate
// directly, and slurmctld reads those answers only once every node the
// terminate went to has answered: after a node failure, once the failed
// node has timed out (MessageTimeout, 10 s). That is the case of every
// job whose steps nvlsliced aborted before marking a silent node DOWN, and
// its repair waited the 10 s (the busy bench's runs 16 to 20). Never
// fails: a failed epilog drains the node.
int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
    (void)ac;
    (void)av;
    // (never fails: the mark of a killed step goes, if there is one)
    guarded("slurm_spank_job_epilog", [&] {
        forget_abort(sp);
        return 0;
    });
    return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char** av) {
    (void)ac;
    (void)av;
    return guarded("slurm_spank_exit", [&] {
        state().map.reset();
        if (spank_context() == S_CTX_REMOTE) {
            wait_for_tree_children(sp);
            end_stray_sruns(sp);
        }
        return 0;
    });
}

} // extern "C"
