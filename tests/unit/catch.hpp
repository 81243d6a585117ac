// Catch2 v2 or v3, one spelling for the tests: v3 split the single header,
// moved Approx into Catch:: and renamed the string matchers.
#pragma once

#ifdef NVL_CATCH2_V3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& s) {
    return Matchers::ContainsSubstring(s);
}
inline Matchers::StartsWithMatcher StartsWith(const std::string& s) {
    return Matchers::StartsWith(s);
}
inline Matchers::EndsWithMatcher EndsWith(const std::string& s) {
    return Matchers::EndsWith(s);
}
inline Matchers::ExceptionMessageMatcher Message(const std::string& s) {
    return Matchers::Message(s);
}
} // namespace Catch
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
