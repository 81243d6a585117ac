// One fuzz input through every reader of untrusted text: rack maps and
// Slurm topology files, hostlists, the request tag and the placement record
// (job comments are user-writable), and the helper's configuration. The contract under
// test: a reader either returns a valid model or throws nvl::Error with a
// message; any other exception, a crash or a sanitizer report is a bug.
// Used by the libFuzzer target (tests/fuzz/fuzz_readers.cpp, `make fuzz`)
// and by the mutation test of the unit suite.
#pragma once

#include "error.hpp"
#include "helper_config.hpp"
#include "hostlist.hpp"
#include "map_io.hpp"
#include "slice_job.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace nvl::fuzz {

inline int one_input(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    // the first byte picks the reader, the rest is the text
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        switch (data[0] % 7) {
        case 0: {
            auto names = hostlist_expand(text, 4096);
            // what compresses must expand back to the same names
            if (hostlist_expand(hostlist_compress(names), 4096) != names) __builtin_trap();
            break;
        }
        case 1: {
            RackMap m = read_rack_map_yaml(text, "fuzz.yaml");
            RackMap again = read_rack_map_yaml(write_rack_map_yaml(m), "again.yaml");
            if (again.node_count() != m.node_count()) __builtin_trap();
            break;
        }
        case 2: read_topology_conf(text, "fuzz.conf"); break;
        case 3: read_topology_yaml(text, "fuzz.yaml"); break;
        case 4: {
            // a tag that parses must print back to one that parses the same
            if (auto t = RequestTag::parse(text)) {
                auto again = RequestTag::parse(t->str());
                if (!again || again->str() != t->str()) __builtin_trap();
                (void)user_comment(text);
            }
            break;
        }
        case 5: {
            if (auto r = PlacementRecord::parse(text)) {
                auto again = PlacementRecord::parse(r->str());
                if (!again || again->str() != r->str()) __builtin_trap();
            }
            break;
        }
        case 6: read_helper_config(text, "fuzz.yaml"); break;
        }
    } catch (const Error&) {
        // a clear refusal is the expected outcome for most inputs
    }
    return 0;
}

} // namespace nvl::fuzz
