// libFuzzer entry point: `make fuzz` builds tests/fuzz/fuzz-readers with
// clang, ASan and UBSan; run it on tests/fuzz/corpus. At exit it prints how
// many inputs each reader got (the first byte picks it, fuzz_readers.hpp).
#include "fuzz_readers.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

struct ReaderShare {
    unsigned long long runs[nvl::fuzz::kReaders] = {};
    unsigned long long slow = 0, over_budget = 0;
    ~ReaderShare() {
        unsigned long long total = 0;
        for (auto n : runs) total += n;
        if (!total) return;
        std::fprintf(stderr, "nvl-fuzz: %llu inputs by reader:", total);
        for (unsigned r = 0; r < nvl::fuzz::kReaders; ++r)
            std::fprintf(stderr, "%s %s %llu (%.1f%%)", r ? "," : "", nvl::fuzz::reader_name(r), runs[r],
                         100.0 * double(runs[r]) / double(total));
        std::fprintf(stderr, "; %llu slower than 50 ms, %llu over the allocation budget (not kept)\n", slow,
                     over_budget);
    }
} share;

} // namespace

#ifdef NVL_FUZZ_BUDGET_MB
// Long campaigns only: make fuzz FUZZ_CXXFLAGS=-DNVL_FUZZ_BUDGET_MB=64. The
// readers may expand hostlists to 2^20 names (by design); such an input takes
// seconds under ASan and, generated again and again by mutation, most of a
// campaign's time. In this build an input that allocates more than the
// budget in all is given up (not a failure, not kept) and the fuzzer moves
// on. It also gives up finding memory blow-ups and ASan's new/delete
// mismatch checks (these operators replace ASan's): the default build, which
// CI runs, has neither limit.
namespace {
struct OverBudget {};
bool counting = false;
size_t used = 0;
constexpr size_t kBudget = size_t(NVL_FUZZ_BUDGET_MB) << 20;

void* counted(size_t n) {
    if (counting && (used += n) > kBudget) {
        counting = false;
        throw OverBudget{};
    }
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void* counted_nothrow(size_t n) noexcept {
    if (counting && used + n > kBudget) return nullptr;
    if (counting) used += n;
    return std::malloc(n ? n : 1);
}
} // namespace

void* operator new(size_t n) {
    return counted(n);
}
void* operator new[](size_t n) {
    return counted(n);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
    return counted_nothrow(n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
    return counted_nothrow(n);
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size) ++share.runs[nvl::fuzz::reader_of(data[0])];
    const auto start = std::chrono::steady_clock::now();
#ifdef NVL_FUZZ_BUDGET_MB
    used = 0;
    counting = true;
    try {
        nvl::fuzz::one_input(data, size);
    } catch (const OverBudget&) {
        counting = false;
        ++share.over_budget;
        return -1;
    }
    counting = false;
#else
    nvl::fuzz::one_input(data, size);
#endif
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
