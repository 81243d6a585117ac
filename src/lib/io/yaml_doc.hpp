// nvlslice — a thin, strict reading layer over libyaml's document API.
// Every accessor names file:line:column of the node it complains about.
#pragma once

#include "error.hpp"

#include <yaml.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace nvl {

class YamlDoc {
  public:
    // Parses one YAML document; a syntax error becomes a ParseError at the
    // position libyaml reports. An empty input gives root() == nullptr.
    YamlDoc(std::string_view text, std::string file);
    ~YamlDoc();
    YamlDoc(const YamlDoc&) = delete;
    YamlDoc& operator=(const YamlDoc&) = delete;

    yaml_node_t* root();
    SourcePos pos(const yaml_node_t* n) const;
    [[noreturn]] void fail(const yaml_node_t* n, const std::string& msg) const;

    // Type checks: `what` says what was expected ("the rack map", "a domain").
    void expect_mapping(const yaml_node_t* n, std::string_view what) const;
    void expect_sequence(const yaml_node_t* n, std::string_view what) const;
    std::string scalar(const yaml_node_t* n, std::string_view key) const;
    long integer(const yaml_node_t* n, std::string_view key, long min, long max) const;
    bool boolean(const yaml_node_t* n, std::string_view key) const;
    // A list of integers, or a single integer.
    std::vector<int> int_list(yaml_node_t* n, std::string_view key, long min, long max);

    // Calls f(key, key node, value node) for each pair; a duplicate key or
    // a key not in `known` is an error naming the key and the accepted ones.
    void for_each_pair(yaml_node_t* map, const std::vector<std::string_view>& known,
                       const std::function<void(const std::string&, yaml_node_t*, yaml_node_t*)>& f);
    void for_each_item(yaml_node_t* seq, const std::function<void(yaml_node_t*)>& f);
    // Every pair of a mapping, any key (for copying a file through).
    void for_each_entry(yaml_node_t* map, const std::function<void(yaml_node_t*, yaml_node_t*)>& f);

  private:
    yaml_document_t doc_;
    bool loaded_ = false;
    std::string file_;
};

std::string read_file(const std::string& path);

} // namespace nvl
