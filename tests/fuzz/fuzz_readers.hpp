// One fuzz input through every reader of untrusted text. The contract under
// test: a reader either returns a valid model or throws nvl::Error with a
// message; any other exception, a crash or a sanitizer report is a bug.
// Used by the libFuzzer target (tests/fuzz/fuzz_readers.cpp, `make fuzz`)
// and by the mutation test of the unit suite.
#pragma once

#include "error.hpp"
#include "hostlist.hpp"
#include "map_io.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace nvl::fuzz {

inline int one_input(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    // the first byte picks the reader, the rest is the text
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        switch (data[0] % 4) {
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
        }
    } catch (const Error&) {
        // a clear refusal is the expected outcome for most inputs
    }
    return 0;
}

} // namespace nvl::fuzz
