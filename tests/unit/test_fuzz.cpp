// Deterministic mutation fuzzing of every reader, inside make check: each
// corpus input is mutated (byte flips, insertions of syntax characters,
// deletions, splices) and run through the same harness as the libFuzzer
// target. A crash or an exception other than nvl::Error fails the test.
#include "../fuzz/fuzz_readers.hpp"

#include "catch.hpp"

#include <algorithm>
#include <cstring>

#include <dirent.h>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> corpus() {
    std::vector<std::string> out;
    const std::string dir = std::string(NVL_TEST_DATA) + "/../fuzz/corpus";
    DIR* d = opendir(dir.c_str());
    REQUIRE(d);
    while (dirent* e = readdir(d)) {
        // the seeds and regressions; a long campaign's minimized corpus
        // (campaign-*) is for make fuzz to start from, not for this test
        if (e->d_name[0] == '.' || std::strncmp(e->d_name, "campaign-", 9) == 0) continue;
        std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        out.push_back(ss.str());
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace

TEST_CASE("readers survive mutated input", "[fuzz][slow]") {
    auto seeds = corpus();
    REQUIRE(seeds.size() >= 5);
    std::mt19937_64 g(2026);
    const char syntax[] = "[]-,:#\n \t{}\"'|>&*!%0123456789=";
    nvl::fuzz::Tally tally;
    for (int i = 0; i < 20000; ++i) {
        std::string s = seeds[g() % seeds.size()];
        int edits = 1 + int(g() % 6);
        for (int e = 0; e < edits && s.size() > 1; ++e) {
            size_t pos = 1 + g() % (s.size() - 1);
            switch (g() % 4) {
            case 0: s[pos] = char(g() & 0xff); break;
            case 1: s.insert(pos, 1, syntax[g() % (sizeof syntax - 1)]); break;
            case 2: s.erase(pos, 1 + g() % 8); break;
            case 3: {
                const std::string& o = seeds[g() % seeds.size()];
                size_t from = g() % o.size();
                s.insert(pos, o.substr(from, g() % 24));
                break;
            }
            }
        }
        nvl::fuzz::one_input(reinterpret_cast<const uint8_t*>(s.data()), s.size(), &tally);
    }
    // every reader got mutated inputs it read and inputs it refused: the
    // mutations reach past each reader's first check and break it too
    for (unsigned r = 0; r < nvl::fuzz::kReaders; ++r) {
        CAPTURE(nvl::fuzz::reader_name(r), tally.read[r], tally.refused[r]);
        CHECK(tally.read[r] > 0);
        CHECK(tally.refused[r] > 0);
    }
}
