#include "hostlist.hpp"

#include "error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace nvl {
namespace {

struct Range {
    uint64_t lo, hi;
    int width;
};

// One bracket group "[a-b,c]" or a literal piece of text.
struct Segment {
    std::string text;          // literal, when ranges is empty
    std::vector<Range> ranges; // bracket group
};

[[noreturn]] void fail(std::string_view expr, size_t col, const std::string& what) {
    throw Error(fmt::format("hostlist \"{}\", column {}: {}", expr, col + 1, what));
}

uint64_t parse_number(std::string_view expr, size_t& i, size_t end, int& width) {
    size_t start = i;
    uint64_t v = 0;
    while (i < end && expr[i] >= '0' && expr[i] <= '9') {
        if (i - start >= 18) fail(expr, start, "number too long");
        v = v * 10 + uint64_t(expr[i] - '0');
        ++i;
    }
    if (i == start) fail(expr, i, "expected a number inside [...]");
    width = int(i - start);
    return v;
}

// Parses the inside of a bracket group, expr[b] == '[', returns index past ']'.
size_t parse_group(std::string_view expr, size_t b, size_t end, std::vector<Range>& out) {
    size_t i = b + 1;
    for (;;) {
        int w = 0, w2 = 0;
        uint64_t lo = parse_number(expr, i, end, w);
        uint64_t hi = lo;
        if (i < end && expr[i] == '-') {
            ++i;
            size_t hs = i;
            hi = parse_number(expr, i, end, w2);
            if (hi < lo)
                fail(expr, hs, fmt::format("range {}-{} runs backwards (write the lower bound first)", lo, hi));
        }
        out.push_back({lo, hi, w});
        if (i >= end) fail(expr, b, "unmatched '[' (expected ']')");
        if (expr[i] == ']') return i + 1;
        if (expr[i] != ',')
            fail(expr, i, fmt::format("unexpected '{}' inside [...] (expected digits, '-', ',' or ']')", expr[i]));
        ++i;
    }
}

// The names of one expression together: 2^20 hosts of 16 characters. Bounds
// what a few KB of text may allocate (found by fuzzing: a 3 KB topology.conf
// line of 1M hosts with long names took gigabytes).
constexpr uint64_t kMaxNameBytes = uint64_t(16) << 20;

void expand_item(std::string_view expr, size_t begin, size_t end, size_t max_hosts, std::vector<std::string>& out,
                 uint64_t& bytes) {
    std::vector<Segment> segs;
    size_t i = begin;
    uint64_t product = 1;
    while (i < end) {
        if (expr[i] == '[') {
            Segment s;
            i = parse_group(expr, i, end, s.ranges);
            // checked on the way: neither the group's count nor the product
            // may wrap around past the cap
            uint64_t n = 0;
            for (const auto& r : s.ranges) {
                n += r.hi - r.lo + 1; // at most 10^18 each: no wrap while n <= max_hosts
                if (n > max_hosts) fail(expr, begin, fmt::format("expands to more than {} hosts", max_hosts));
            }
            if (product > max_hosts / n) fail(expr, begin, fmt::format("expands to more than {} hosts", max_hosts));
            product *= n;
            segs.push_back(std::move(s));
        } else if (expr[i] == ']') {
            fail(expr, i, "unmatched ']'");
        } else {
            size_t s = i;
            while (i < end && expr[i] != '[' && expr[i] != ']') ++i;
            segs.push_back({std::string(expr.substr(s, i - s)), {}});
        }
    }
    if (out.size() + product > max_hosts) fail(expr, begin, fmt::format("expands to more than {} hosts", max_hosts));
    uint64_t longest = 0; // the longest name this item makes
    for (const auto& s : segs) {
        uint64_t w = s.text.size();
        for (const auto& r : s.ranges) w = std::max<uint64_t>({w, uint64_t(r.width), fmt::formatted_size("{}", r.hi)});
        longest += w;
    }
    if (longest && product > (kMaxNameBytes - bytes) / longest)
        fail(expr, begin, fmt::format("expands to more than {} MiB of host names", kMaxNameBytes >> 20));
    bytes += product * longest;
    // Odometer over the bracket groups, first group outermost, like Slurm.
    std::vector<size_t> ri(segs.size(), 0);
    std::vector<uint64_t> val(segs.size(), 0);
    for (size_t k = 0; k < segs.size(); ++k)
        if (!segs[k].ranges.empty()) val[k] = segs[k].ranges[0].lo;
    for (;;) {
        std::string name;
        for (size_t k = 0; k < segs.size(); ++k) {
            if (segs[k].ranges.empty())
                name += segs[k].text;
            else
                name += fmt::format("{:0{}d}", val[k], segs[k].ranges[ri[k]].width);
        }
        out.push_back(std::move(name));
        // advance the innermost (last) group
        size_t k = segs.size();
        for (;;) {
            if (k == 0) return;
            --k;
            if (segs[k].ranges.empty()) continue;
            if (val[k] < segs[k].ranges[ri[k]].hi) {
                ++val[k];
                break;
            }
            if (ri[k] + 1 < segs[k].ranges.size()) {
                ++ri[k];
                val[k] = segs[k].ranges[ri[k]].lo;
                break;
            }
            ri[k] = 0;
            val[k] = segs[k].ranges[0].lo;
        }
    }
}

bool is_sep(char c) {
    return c == ',' || c == ' ' || c == '\t' || c == '\n';
}

} // namespace

std::vector<std::string> hostlist_expand(std::string_view expr, size_t max_hosts) {
    std::vector<std::string> out;
    uint64_t bytes = 0;
    size_t i = 0;
    const size_t n = expr.size();
    bool any = false;
    while (i < n) {
        if (is_sep(expr[i])) {
            if (expr[i] == ',' && !any) fail(expr, i, "empty host name before ','");
            if (expr[i] == ',') any = false;
            ++i;
            continue;
        }
        size_t s = i;
        int depth = 0;
        while (i < n && (depth > 0 || !is_sep(expr[i]))) {
            if (expr[i] == '[') {
                if (depth) fail(expr, i, "nested '[' (bracket groups cannot nest)");
                depth = 1;
            } else if (expr[i] == ']') {
                if (!depth) fail(expr, i, "unmatched ']'");
                depth = 0;
            }
            ++i;
        }
        if (depth) fail(expr, s, "unmatched '[' (expected ']')");
        expand_item(expr, s, i, max_hosts, out, bytes);
        any = true;
    }
    if (n > 0 && expr.find(',') != std::string_view::npos && !any) fail(expr, n - 1, "empty host name after ','");
    return out;
}

namespace {

struct Split {
    std::string_view prefix, suffix;
    uint64_t value = 0;
    int digits = 0; // 0: the name has no number
    bool padded = false;
};

Split split_name(std::string_view s) {
    Split r;
    size_t e = s.size();
    while (e > 0 && !(s[e - 1] >= '0' && s[e - 1] <= '9')) --e;
    if (e == 0) {
        r.prefix = s;
        return r;
    }
    size_t b = e;
    while (b > 0 && s[b - 1] >= '0' && s[b - 1] <= '9' && e - b < 18) --b;
    r.prefix = s.substr(0, b);
    r.suffix = s.substr(e);
    r.digits = int(e - b);
    r.padded = r.digits > 1 && s[b] == '0';
    for (size_t k = b; k < e; ++k) r.value = r.value * 10 + uint64_t(s[k] - '0');
    return r;
}

// Would formatting `sp.value` at `width` give back the name's own digits?
bool fits_width(const Split& sp, int width) {
    int natural = int(fmt::formatted_size("{}", sp.value));
    return sp.digits == std::max(natural, width);
}

} // namespace

std::string hostlist_compress(const std::vector<std::string>& names) {
    std::string out;
    size_t i = 0;
    while (i < names.size()) {
        Split first = split_name(names[i]);
        if (first.digits == 0) {
            if (!out.empty()) out += ',';
            out += names[i++];
            continue;
        }
        int width = first.padded ? first.digits : 1;
        std::vector<Range> ranges{{first.value, first.value, width}};
        size_t j = i + 1;
        for (; j < names.size(); ++j) {
            Split sp = split_name(names[j]);
            if (sp.digits == 0 || sp.prefix != first.prefix || sp.suffix != first.suffix || !fits_width(sp, width))
                break;
            if (sp.value == ranges.back().hi + 1)
                ranges.back().hi = sp.value;
            else
                ranges.push_back({sp.value, sp.value, width});
        }
        if (!out.empty()) out += ',';
        out.append(first.prefix);
        if (j == i + 1) {
            out += fmt::format("{:0{}d}", first.value, width);
        } else {
            out += '[';
            for (size_t k = 0; k < ranges.size(); ++k) {
                if (k) out += ',';
                out += fmt::format("{:0{}d}", ranges[k].lo, width);
                if (ranges[k].hi != ranges[k].lo) out += fmt::format("-{:0{}d}", ranges[k].hi, width);
            }
            out += ']';
        }
        out.append(first.suffix);
        i = j;
    }
    return out;
}

} // namespace nvl
