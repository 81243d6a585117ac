#include "map_io.hpp"

#include "error.hpp"
#include "yaml_doc.hpp"

#include <fmt/format.h>

#include <cctype>

namespace nvl {

RackMap load_map(const std::string& path, MapFormat fmt, const MapDefaults& defaults) {
    std::string text = read_file(path);
    if (fmt == MapFormat::Auto) {
        auto ends = [&](std::string_view suf) {
            return path.size() >= suf.size() && path.compare(path.size() - suf.size(), suf.size(), suf) == 0;
        };
        if (ends(".conf")) {
            fmt = MapFormat::TopologyConf;
        } else {
            // the first meaningful character: '-' starts a YAML list
            fmt = MapFormat::NvlYaml;
            for (size_t i = 0; i < text.size(); ++i) {
                char c = text[i];
                if (c == '#') {
                    i = text.find('\n', i);
                    if (i == std::string::npos) break;
                    continue;
                }
                if (std::isspace(static_cast<unsigned char>(c))) continue;
                if (text.compare(i, 3, "---") == 0) {
                    i += 2;
                    continue;
                }
                if (c == '-' || c == '[') fmt = MapFormat::TopologyYaml;
                break;
            }
        }
    }
    switch (fmt) {
    case MapFormat::TopologyConf: return read_topology_conf(text, path, defaults);
    case MapFormat::TopologyYaml: return read_topology_yaml(text, path, defaults);
    default: return read_rack_map_yaml(text, path);
    }
}

void apply_overrides(RackMap& map, const MapOverrides& o, const std::string& origin) {
    try {
        if (o.spares) map.set_spares(*o.spares);
        if (o.gpus_per_node) map.set_gpus_per_node(*o.gpus_per_node);
    } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", origin, e.what()));
    }
    if (o.default_slice) {
        if (*o.default_slice < 1 || *o.default_slice > map.max_slice())
            throw Error(fmt::format("{}: default_slice={} is larger than any rack of the map can hold ({})", origin,
                                    *o.default_slice, map.max_slice()));
        map.defaults().default_slice = *o.default_slice;
    }
}

RackMap load_map(const std::string& path, const MapOverrides& o, const std::string& origin) {
    RackMap map = load_map(path);
    apply_overrides(map, o, origin);
    return map;
}

} // namespace nvl
