// nvlslice — what the map readers share (internal to src/lib): limits and
// the YAML helpers of the two YAML readers.
#pragma once

#include "hostlist.hpp"
#include "yaml_doc.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

namespace nvl::map_detail {

constexpr long kMaxNodesPerDomain = 4096;
constexpr long kMaxGpus = 1024;

inline std::vector<std::string> expand_at(YamlDoc& doc, yaml_node_t* n, std::string_view key) {
    std::vector<std::string> names;
    auto one = [&](yaml_node_t* item) {
        std::string expr = doc.scalar(item, key);
        try {
            auto part = hostlist_expand(expr);
            names.insert(names.end(), part.begin(), part.end());
        } catch (const ParseError&) {
            throw;
        } catch (const Error& e) {
            doc.fail(item, fmt::format("\"{}\": {}", key, e.what()));
        }
    };
    if (n->type == YAML_SEQUENCE_NODE)
        doc.for_each_item(n, one);
    else
        one(n);
    if (names.empty()) doc.fail(n, fmt::format("\"{}\" names no node", key));
    return names;
}

inline void check_slice_sizes(YamlDoc& doc, yaml_node_t* n, const std::vector<int>& sizes) {
    for (size_t i = 1; i < sizes.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (sizes[i] == sizes[j]) doc.fail(n, fmt::format("\"slice_sizes\" lists {} twice", sizes[i]));
}

} // namespace nvl::map_detail
