// libFuzzer entry point: `make fuzz` builds tests/fuzz/fuzz-readers with
// clang, ASan and UBSan; run it on tests/fuzz/corpus.
#include "fuzz_readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return nvl::fuzz::one_input(data, size);
}
