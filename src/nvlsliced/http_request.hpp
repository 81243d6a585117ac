// nvlsliced — what the metrics endpoint answers to a request, decided from
// the request's bytes alone (no socket): the one parser of untrusted
// network input in the helper, fuzzed with the readers.
#pragma once

#include <cstddef>
#include <string_view>

namespace nvl::http {

// Requests are read up to this many bytes; a longer head is refused.
inline constexpr size_t kMaxRequest = 8192;

enum class Verdict {
    Incomplete,  // the head has not ended yet: read on
    Metrics,     // GET /metrics (or /): the metrics with a body
    MetricsHead, // HEAD /metrics (or /): the headers only
    BadRequest,  // 400: not an HTTP request line
    NotFound,    // 404: another path
    BadMethod,   // 405: another method
    TooLarge,    // 431: the head is longer than kMaxRequest
};

// The status line's code and text for a verdict (Incomplete: none).
inline int status_code(Verdict v) {
    switch (v) {
    case Verdict::Metrics:
    case Verdict::MetricsHead: return 200;
    case Verdict::BadRequest: return 400;
    case Verdict::NotFound: return 404;
    case Verdict::BadMethod: return 405;
    case Verdict::TooLarge: return 431;
    case Verdict::Incomplete: break;
    }
    return 0;
}
inline const char* status_text(Verdict v) {
    switch (v) {
    case Verdict::Metrics:
    case Verdict::MetricsHead: return "OK";
    case Verdict::BadRequest: return "Bad Request";
    case Verdict::NotFound: return "Not Found";
    case Verdict::BadMethod: return "Method Not Allowed";
    case Verdict::TooLarge: return "Request Header Fields Too Large";
    case Verdict::Incomplete: break;
    }
    return "";
}

// `in`: the bytes a client has sent so far. `closed`: the client has
// finished sending (a request line without the blank line after it, as
// `printf 'GET /metrics\n'` sends, is still answered).
inline Verdict judge_request(std::string_view in, bool closed = false) {
    const size_t eol = in.find('\n');
    std::string_view line = in.substr(0, eol);
    if (eol == std::string_view::npos) {
        if (in.size() >= kMaxRequest) return Verdict::TooLarge;
        if (!closed) return Verdict::Incomplete;
        if (in.empty()) return Verdict::BadRequest; // connected and left without a word
    } else if (!closed && in.find("\n\n") == std::string_view::npos && in.find("\n\r\n") == std::string_view::npos) {
        // the head ends at an empty line
        return in.size() >= kMaxRequest ? Verdict::TooLarge : Verdict::Incomplete;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // METHOD SP TARGET [SP VERSION]
    const size_t sp1 = line.find(' ');
    if (sp1 == 0 || sp1 == std::string_view::npos) return Verdict::BadRequest;
    const std::string_view method = line.substr(0, sp1);
    std::string_view rest = line.substr(sp1 + 1);
    const size_t sp2 = rest.find(' ');
    std::string_view target = rest.substr(0, sp2);
    if (sp2 != std::string_view::npos) {
        const std::string_view version = rest.substr(sp2 + 1);
        if (version.substr(0, 5) != "HTTP/" || version.find(' ') != std::string_view::npos) return Verdict::BadRequest;
    }
    if (target.empty() || target.front() != '/') return Verdict::BadRequest;
    for (char c : line)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return Verdict::BadRequest;
    for (char c : method)
        if (c < 'A' || c > 'Z') return Verdict::BadRequest;
    if (method != "GET" && method != "HEAD") return Verdict::BadMethod;
    target = target.substr(0, target.find('?')); // a scraper's query string is ignored
    if (target != "/metrics" && target != "/") return Verdict::NotFound;
    return method == "GET" ? Verdict::Metrics : Verdict::MetricsHead;
}

} // namespace nvl::http
