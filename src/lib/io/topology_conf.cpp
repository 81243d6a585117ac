// Reader of Slurm's topology.conf (topology/block and topology/tree).
#include "map_io.hpp"
#include "map_readers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nvl {

using namespace map_detail;

namespace {

struct ConfToken {
    std::string key; // lower case
    std::string value;
    int column;
};

std::string lower(std::string s) {
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// One line's Key=Value tokens, keys in lower case; `line` without its
// comment.
std::vector<ConfToken> tokens(std::string_view line, const std::string& file, int line_no) {
    std::vector<ConfToken> toks;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        if (i >= line.size()) break;
        size_t s = i;
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
        std::string_view tok = line.substr(s, i - s);
        size_t eq = tok.find('=');
        SourcePos p{file, line_no, int(s) + 1};
        if (eq == std::string_view::npos || eq == 0)
            throw ParseError(p, fmt::format("expected Key=Value, got \"{}\"", tok));
        toks.push_back({lower(std::string(tok.substr(0, eq))), std::string(tok.substr(eq + 1)), int(s) + 1});
    }
    return toks;
}

// A line's keys checked against what its first key allows (each once, none
// empty); its Nodes= token (null: none).
const ConfToken* checked_keys(const std::vector<ConfToken>& toks, const std::string& file, int line_no) {
    auto at = [&](const ConfToken& t) { return SourcePos{file, line_no, t.column}; };
    const std::string& head = toks[0].key;
    std::vector<std::string_view> known;
    if (head == "switchname")
        known = {"switchname", "switches", "nodes", "linkspeed"};
    else if (head == "blockname")
        known = {"blockname", "nodes"};
    else if (head == "blocksizes")
        known = {"blocksizes"};
    else
        throw ParseError(
            at(toks[0]),
            fmt::format("unknown line key \"{}\" (expected SwitchName=, BlockName= or BlockSizes=)", toks[0].key));
    const ConfToken* nodes = nullptr;
    for (size_t t = 0; t < toks.size(); ++t) {
        if (std::find(known.begin(), known.end(), toks[t].key) == known.end() || (t > 0 && toks[t].key == head)) {
            std::string list;
            for (size_t k = 1; k < known.size(); ++k) list += (list.empty() ? "" : ", ") + std::string(known[k]);
            throw ParseError(at(toks[t]), fmt::format("unknown or repeated key \"{}\" on a {} line (accepted: {})",
                                                      toks[t].key, head, list.empty() ? "nothing else" : list));
        }
        if (toks[t].value.empty()) throw ParseError(at(toks[t]), fmt::format("\"{}\" has an empty value", toks[t].key));
        if (toks[t].key == "nodes") nodes = &toks[t];
    }
    return nodes;
}

// BlockSizes=: a comma-separated list of node counts Slurm accepts.
void check_block_sizes(const ConfToken& tok, const SourcePos& at) {
    std::vector<int> sizes;
    for (size_t a = 0, b; a <= tok.value.size(); a = b + 1) {
        b = tok.value.find(',', a);
        if (b == std::string::npos) b = tok.value.size();
        std::string n = tok.value.substr(a, b - a);
        if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos)
            throw ParseError(
                at, fmt::format("BlockSizes must be a comma-separated list of node counts, got \"{}\"", tok.value));
        sizes.push_back(std::stoi(n));
    }
    if (auto why = block_sizes_problem(sizes)) throw ParseError(at, fmt::format("BlockSizes={}: {}", tok.value, *why));
}

} // namespace

RackMap read_topology_conf(std::string_view text, const std::string& file, const MapDefaults& defaults) {
    RackMap map(defaults);
    enum { None, Block, Tree } kind = None;
    // one topology per file: a block line after a tree line, or the reverse
    auto mixed = [&](const SourcePos& at, const char* key, const char* others) {
        throw ParseError(at,
                         fmt::format("{} in a file of {} lines (one topology per file: block or tree)", key, others));
    };
    int line_no = 0;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        ++line_no;
        size_t hash = line.find('#');
        if (hash != std::string_view::npos) line = line.substr(0, hash);
        start = end + 1;
        const std::vector<ConfToken> toks = tokens(line, file, line_no);
        if (toks.empty()) continue;
        const ConfToken* nodes = checked_keys(toks, file, line_no);
        const SourcePos at{file, line_no, toks[0].column};
        const std::string& head = toks[0].key;
        if (head == "blocksizes") {
            if (kind == Tree) mixed(at, "BlockSizes=", "SwitchName=");
            kind = Block;
            check_block_sizes(toks[0], at);
            continue;
        }
        if (head == "blockname") {
            if (kind == Tree) mixed(at, "BlockName=", "SwitchName=");
            kind = Block;
            if (!nodes) throw ParseError(at, fmt::format("block \"{}\" needs Nodes=", toks[0].value));
        } else {
            if (kind == Block) mixed(at, "SwitchName=", "BlockName=");
            kind = Tree;
            if (!nodes) continue; // an upper-level switch: not a domain
        }
        std::vector<std::string> names;
        try {
            names = hostlist_expand(nodes->value);
        } catch (const Error& e) {
            throw ParseError({file, line_no, nodes->column}, fmt::format("Nodes=: {}", e.what()));
        }
        Domain d;
        d.name = toks[0].value;
        d.gpus_per_node = defaults.gpus_per_node;
        d.spares = std::min(defaults.spares, int(names.size()) - 1);
        d.slice_sizes = defaults.slice_sizes;
        d.pos = at;
        map.add_domain(std::move(d), names); // errors name d.pos
    }
    if (map.domains().empty())
        throw ParseError({file, line_no, 0},
                         "no domain found: expected BlockName=... Nodes=... or leaf SwitchName=... Nodes=... lines");
    map.defaults().default_slice = std::min(defaults.default_slice, map.max_slice());
    return map;
}

} // namespace nvl
