// libFuzzer entry point: `make fuzz` builds tests/fuzz/fuzz-readers with
// clang, ASan and UBSan; run it on tests/fuzz/corpus. At exit it prints how
// many inputs each reader got (the first byte picks it, fuzz_readers.hpp).
#include "fuzz_readers.hpp"

#include <chrono>
#include <cstdio>

namespace {

struct ReaderShare {
    unsigned long long runs[nvl::fuzz::kReaders] = {};
    unsigned long long slow = 0;
    ~ReaderShare() {
        unsigned long long total = 0;
        for (auto n : runs) total += n;
        if (!total) return;
        std::fprintf(stderr, "nvl-fuzz: %llu inputs by reader:", total);
        for (unsigned r = 0; r < nvl::fuzz::kReaders; ++r)
            std::fprintf(stderr, "%s %s %llu (%.1f%%)", r ? "," : "", nvl::fuzz::reader_name(r), runs[r],
                         100.0 * double(runs[r]) / double(total));
        std::fprintf(stderr, "; %llu slower than 50 ms (not kept)\n", slow);
    }
} share;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size) ++share.runs[data[0] % nvl::fuzz::kReaders];
    const auto start = std::chrono::steady_clock::now();
    nvl::fuzz::one_input(data, size);
    // Hostlists that expand to the readers' caps (2^20 names, 16 MiB) are
    // correct but take seconds under ASan; kept in the corpus they would slow
    // every later run down. They are still run, and a hang still fails
    // (-timeout); -1 only keeps libFuzzer from growing the corpus with them.
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(50)) {
        ++share.slow;
        return -1;
    }
    return 0;
}
