#include "error.hpp"

namespace nvl {

std::string SourcePos::str() const {
    std::string s = file.empty() ? std::string("<input>") : file;
    if (line > 0) {
        s += ':' + std::to_string(line);
        if (column > 0) s += ':' + std::to_string(column);
    }
    return s;
}

} // namespace nvl
