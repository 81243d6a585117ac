// nvlslice — errors of the core.
//
// Every error the core raises is an nvl::Error: a message that already says
// what was wrong, where (file:line:column when it came from a file) and what
// would be accepted. Adapters catch it at their boundary (SPANK, CLI main)
// and print what() as it is; nothing is re-worded on the way out.
#pragma once

#include <stdexcept>
#include <string>

namespace nvl {

class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// slurmctld did not answer (connection refused, timed out, in standby):
// nothing of the request is known to have happened, and whatever comes
// next in the same batch would wait out the same timeout. Thrown by the
// libslurm adapter; apply() stops its batch on it.
class Unreachable : public Error {
  public:
    explicit Unreachable(const std::string& msg) : Error(msg) {}
};

// A position in a text input; line and column count from 1, 0 = unknown.
struct SourcePos {
    std::string file;
    int line = 0;
    int column = 0;

    // "file:line:column" (or the parts that are known).
    std::string str() const;
};

// Thrown by the readers: "file:line:column: message".
class ParseError : public Error {
  public:
    ParseError(const SourcePos& pos, const std::string& msg) : Error(pos.str() + ": " + msg), pos_(pos) {}
    const SourcePos& pos() const { return pos_; }

  private:
    SourcePos pos_;
};

} // namespace nvl
