# AX_NVL_CXX17: C++17 is mandatory; fail early with a clear message.
AC_DEFUN([AX_NVL_CXX17], [
  AC_MSG_CHECKING([whether $CXX accepts -std=c++17])
  nvl_save_CXXFLAGS="$CXXFLAGS"
  CXXFLAGS="$CXXFLAGS -std=c++17"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <optional>
#include <string_view>]], [[std::optional<std::string_view> o; (void)o;
#if __cplusplus < 201703L
#error not C++17
#endif]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([a C++17 compiler is required (Debian: apt-get install g++)])])
  CXXFLAGS="$nvl_save_CXXFLAGS"
  AX_CXXFLAGS_STD="-std=c++17"
  CXXFLAGS="$CXXFLAGS -std=c++17"
])
