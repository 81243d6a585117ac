#include "error.hpp"
#include "hostlist.hpp"

#include "catch.hpp"

using namespace nvl;
using V = std::vector<std::string>;

TEST_CASE("hostlist expands single hosts, ranges and padding", "[hostlist][quick]") {
    CHECK(hostlist_expand("nvl0001") == V{"nvl0001"});
    CHECK(hostlist_expand("nvl[0001-0003,0020]") == V{"nvl0001", "nvl0002", "nvl0003", "nvl0020"});
    CHECK(hostlist_expand("n[8-11]") == V{"n8", "n9", "n10", "n11"});
    CHECK(hostlist_expand("n[08-11]") == V{"n08", "n09", "n10", "n11"});
    CHECK(hostlist_expand("n[98-100]") == V{"n98", "n99", "n100"});
    CHECK(hostlist_expand("") == V{});
}

TEST_CASE("hostlist expands several groups, suffixes and lists", "[hostlist][quick]") {
    CHECK(hostlist_expand("r[1-2]n[01-02]") == V{"r1n01", "r1n02", "r2n01", "r2n02"});
    CHECK(hostlist_expand("nvl[01-02]-ib") == V{"nvl01-ib", "nvl02-ib"});
    CHECK(hostlist_expand("a[1-2],b3,c[5,7]") == V{"a1", "a2", "b3", "c5", "c7"});
    CHECK(hostlist_expand("a1 a2") == V{"a1", "a2"});
    CHECK(hostlist_expand("n[3,1]") == V{"n3", "n1"}); // order is kept, as in Slurm
}

TEST_CASE("hostlist errors name the column and the fix", "[hostlist][quick]") {
    auto msg = [](const char* e) {
        try {
            hostlist_expand(e);
        } catch (const Error& x) {
            return std::string(x.what());
        }
        return std::string("no error");
    };
    CHECK_THAT(msg("n[1-3"), Catch::Contains("unmatched '['"));
    CHECK_THAT(msg("n1-3]"), Catch::Contains("unmatched ']'"));
    CHECK_THAT(msg("n[5-3]"), Catch::Contains("runs backwards") && Catch::Contains("column 5"));
    CHECK_THAT(msg("n[a-3]"), Catch::Contains("expected a number"));
    CHECK_THAT(msg("n[1-3]x[1"), Catch::Contains("unmatched '['"));
    CHECK_THAT(msg("n[[1]]"), Catch::Contains("nested"));
    CHECK_THAT(msg("a,,b"), Catch::Contains("empty host name"));
    CHECK_THAT(msg("n[1;2]"), Catch::Contains("unexpected ';'"));
    CHECK_THAT(msg("n[1-999999999]"), Catch::Contains("more than"));
    CHECK_THAT(msg("n[1-1000]m[1-2000]"), Catch::Contains("more than"));
}

TEST_CASE("hostlist compresses to the shortest run-merged form", "[hostlist][quick]") {
    CHECK(hostlist_compress({"nvl0001", "nvl0002", "nvl0003", "nvl0020"}) == "nvl[0001-0003,0020]");
    CHECK(hostlist_compress({"n8", "n9", "n10"}) == "n[8-10]");
    CHECK(hostlist_compress({"n08", "n09", "n10"}) == "n[08-10]");
    CHECK(hostlist_compress({"a1", "b1", "a2"}) == "a1,b1,a2");
    CHECK(hostlist_compress({"login"}) == "login");
    CHECK(hostlist_compress({"nvl01-ib", "nvl02-ib"}) == "nvl[01-02]-ib");
    CHECK(hostlist_compress({"n9", "n09"}) == "n9,n09");
    CHECK(hostlist_compress({}) == "");
}

TEST_CASE("hostlist round-trips", "[hostlist][quick]") {
    const V cases[] = {
        {"nvl0001", "nvl0002", "nvl0018", "nvl0019"},
        {"r1n01", "r1n02", "r2n01"},
        {"x", "y1", "y2", "y3", "z007"},
        {"n3", "n2", "n1"},
        {"n1", "n1"},
        {"a9", "a10", "a011", "a012"},
    };
    for (const auto& c : cases) CHECK(hostlist_expand(hostlist_compress(c)) == c);
}
