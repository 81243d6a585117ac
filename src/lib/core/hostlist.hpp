// nvlslice — Slurm-compatible hostlist expressions, without libslurm.
//
// Syntax accepted by expand(), as Slurm's own parser does:
//   nvl0001                      a single host
//   nvl[0001-0018,0020]          ranges and single numbers in brackets;
//                                the width of the lower bound gives the
//                                zero padding ("[01-10]" -> 01 .. 10)
//   r[1-2]n[01-18]               several bracket groups: their product
//   nvl[01-03]-ib                text after a bracket group (suffix)
//   a[1-2],b3,c[5-6]             comma separated at the top level
// compress() is the inverse: it keeps the given order and merges runs of
// names that differ only in their last number (same prefix, suffix, width).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nvl {

// Expands a hostlist expression. Throws nvl::Error naming the expression,
// the offending column and what was expected. `max_hosts` bounds the result
// so that a typo such as "n[1-999999999]" is refused instead of eating memory.
std::vector<std::string> hostlist_expand(std::string_view expr, size_t max_hosts = 1u << 20);

// Compresses names to a hostlist expression; hostlist_expand() of the result
// gives back exactly `names`, in the same order.
std::string hostlist_compress(const std::vector<std::string>& names);

} // namespace nvl
