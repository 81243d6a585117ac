// nvlslice — text from users (job comments, names, reasons) made safe to
// print: one line, no terminal or log control characters.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace nvl {

// "2026-11-30T00:20:08" (local time), for logs and records.
inline std::string iso_time(int64_t t) {
    char buf[32] = {};
    std::time_t tt = std::time_t(t);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::localtime(&tt));
    return buf;
}

// Whether a comma-separated list (Slurm's node features) names `f`.
inline bool names_feature(std::string_view list, std::string_view f) {
    size_t a = 0;
    while (a <= list.size()) {
        size_t b = list.find(',', a);
        if (b == std::string_view::npos) b = list.size();
        if (list.substr(a, b - a) == f) return true;
        a = b + 1;
    }
    return false;
}

// Control characters (below 0x20, and 0x7f) as C escapes: "\n", "\r",
// "\t", "\x1b". A log line built from it stays one line: a user's comment
// cannot forge a second entry (journald reads "<0>" at a line's start as
// its level) nor move a terminal's cursor.
inline std::string escape_control(std::string_view s, bool backslash = false) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
        case '\\': out += backslash ? "\\\\" : "\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (u < 0x20 || u == 0x7f) {
                out += "\\x";
                out += hex[u >> 4];
                out += hex[u & 15];
            } else {
                out += c;
            }
        }
    }
    return out;
}

// A log line: escape_control() with a backslash doubled too, so that a
// typed "\n" reads apart from an escaped newline. (Records keep single
// backslashes: they are read back, and must print back the same.)
inline std::string escape_log(std::string_view s) {
    return escape_control(s, true);
}

} // namespace nvl
