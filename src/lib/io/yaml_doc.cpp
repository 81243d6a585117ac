#include "yaml_doc.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace nvl {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

YamlDoc::YamlDoc(std::string_view text, std::string file) : file_(std::move(file)) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) throw Error(file_ + ": cannot initialise the YAML parser");
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    if (!yaml_parser_load(&parser, &doc_)) {
        SourcePos p{file_, int(parser.problem_mark.line) + 1, int(parser.problem_mark.column) + 1};
        std::string msg = fmt::format("YAML syntax error: {}{}{}", parser.problem ? parser.problem : "unknown",
                                      parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        throw ParseError(p, msg);
    }
    loaded_ = true;
    yaml_parser_delete(&parser);
}

YamlDoc::~YamlDoc() {
    if (loaded_) yaml_document_delete(&doc_);
}

yaml_node_t* YamlDoc::root() {
    return yaml_document_get_root_node(&doc_);
}

SourcePos YamlDoc::pos(const yaml_node_t* n) const {
    if (!n) return {file_, 0, 0};
    return {file_, int(n->start_mark.line) + 1, int(n->start_mark.column) + 1};
}

void YamlDoc::fail(const yaml_node_t* n, const std::string& msg) const {
    throw ParseError(pos(n), msg);
}

static const char* kind(const yaml_node_t* n) {
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

void YamlDoc::expect_mapping(const yaml_node_t* n, std::string_view what) const {
    if (!n || n->type != YAML_MAPPING_NODE)
        fail(n, fmt::format("{} must be a mapping (key: value), found {}", what, n ? kind(n) : "nothing"));
}

void YamlDoc::expect_sequence(const yaml_node_t* n, std::string_view what) const {
    if (!n || n->type != YAML_SEQUENCE_NODE)
        fail(n, fmt::format("{} must be a list (- item), found {}", what, n ? kind(n) : "nothing"));
}

std::string YamlDoc::scalar(const yaml_node_t* n, std::string_view key) const {
    if (n->type != YAML_SCALAR_NODE) fail(n, fmt::format("\"{}\" must be a single value, found {}", key, kind(n)));
    return std::string(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
}

long YamlDoc::integer(const yaml_node_t* n, std::string_view key, long min, long max) const {
    std::string s = scalar(n, key);
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end || errno) fail(n, fmt::format("\"{}\" must be an integer, got \"{}\"", key, s));
    if (v < min || v > max) fail(n, fmt::format("\"{}\" must be between {} and {}, got {}", key, min, max, v));
    return v;
}

bool YamlDoc::boolean(const yaml_node_t* n, std::string_view key) const {
    std::string s = scalar(n, key);
    for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(n, fmt::format("\"{}\" must be true or false, got \"{}\"", key, s));
}

std::vector<int> YamlDoc::int_list(yaml_node_t* n, std::string_view key, long min, long max) {
    std::vector<int> out;
    if (n->type == YAML_SCALAR_NODE) {
        out.push_back(int(integer(n, key, min, max)));
        return out;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        fail(n, fmt::format("\"{}\" must be a list of integers, found {}", key, kind(n)));
    for_each_item(n, [&](yaml_node_t* item) { out.push_back(int(integer(item, key, min, max))); });
    return out;
}

void YamlDoc::for_each_pair(yaml_node_t* map, const std::vector<std::string_view>& known,
                            const std::function<void(const std::string&, yaml_node_t*, yaml_node_t*)>& f) {
    std::vector<std::string> seen;
    for (yaml_node_pair_t* p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; ++p) {
        yaml_node_t* k = yaml_document_get_node(&doc_, p->key);
        yaml_node_t* v = yaml_document_get_node(&doc_, p->value);
        if (k->type != YAML_SCALAR_NODE) fail(k, fmt::format("keys must be plain words, found {}", kind(k)));
        std::string key = scalar(k, "key");
        bool ok = false;
        for (auto kn : known) ok = ok || kn == key;
        if (!ok) {
            std::string list;
            for (auto kn : known) list += (list.empty() ? "" : ", ") + std::string(kn);
            fail(k, fmt::format("unknown key \"{}\" (accepted here: {})", key, list));
        }
        for (const auto& s : seen)
            if (s == key) fail(k, fmt::format("key \"{}\" is given twice", key));
        seen.push_back(key);
        f(key, k, v);
    }
}

void YamlDoc::for_each_entry(yaml_node_t* map, const std::function<void(yaml_node_t*, yaml_node_t*)>& f) {
    for (yaml_node_pair_t* p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; ++p)
        f(yaml_document_get_node(&doc_, p->key), yaml_document_get_node(&doc_, p->value));
}

void YamlDoc::for_each_item(yaml_node_t* seq, const std::function<void(yaml_node_t*)>& f) {
    for (yaml_node_item_t* it = seq->data.sequence.items.start; it < seq->data.sequence.items.top; ++it)
        f(yaml_document_get_node(&doc_, *it));
}

} // namespace nvl
