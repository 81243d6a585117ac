#include "rack_health.hpp"

#include "error.hpp"
#include "hostlist.hpp"

#include <fmt/format.h>

namespace nvl {

std::optional<std::string> rack_degraded_why(const Snapshot& snap, DomainId d, const std::vector<std::string>& reasons,
                                             const std::optional<std::regex>& rack_scope) {
    const Domain& dom = snap.map().domain(d);
    std::vector<NodeId> failed;
    for (NodeId id : dom.nodes)
        if (!is_healthy(snap.node(id).state)) failed.push_back(id);
    if (rack_scope)
        for (NodeId id : failed)
            if (id < reasons.size() && !reasons[id].empty() && std::regex_search(reasons[id], *rack_scope))
                return fmt::format("{} is out with a rack-level failure: \"{}\"", snap.map().node_name(id),
                                   reasons[id]);
    if (int(failed.size()) > dom.spares)
        return fmt::format("{} failed node(s) ({}), more than its {} spare(s)", failed.size(),
                           hostlist_compress(snap.map().node_names(failed)), dom.spares);
    return {};
}

int mark_degraded_racks(Snapshot& snap, const std::vector<std::string>& reasons,
                        const std::optional<std::regex>& rack_scope) {
    int n = 0;
    for (DomainId d = 0; d < snap.map().domains().size(); ++d) {
        std::optional<std::string> why = rack_degraded_why(snap, d, reasons, rack_scope);
        n += why.has_value();
        snap.set_degraded(d, why.value_or(""));
    }
    return n;
}

std::vector<std::string> node_reasons(const RackMap& map, const std::vector<SlurmNode>& nodes) {
    std::vector<std::string> out(map.node_count());
    for (const auto& n : nodes)
        if (!n.reason.empty())
            if (auto id = map.find_node(n.name)) out[*id] = n.reason;
    return out;
}

std::optional<std::regex> reason_regex(const std::string& pattern, const std::string& origin) {
    if (pattern.empty()) return std::nullopt;
    try {
        return std::regex(pattern, std::regex::ECMAScript | std::regex::icase | std::regex::nosubs);
    } catch (const std::regex_error& e) {
        throw Error(fmt::format("{}: \"{}\" is not a valid regular expression ({})", origin, pattern, e.what()));
    }
}

} // namespace nvl
