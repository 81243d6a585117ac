# NVL_WITH_CATCH2: Catch2 for the unit tests under `make check`, either
# major version: v2 is one header (catch2/catch.hpp, Debian 12), v3 a
# compiled library with split headers (catch2/catch_test_macros.hpp,
# libCatch2, Debian 13). tests/unit/catch.hpp hides the difference; the
# check is a feature test of the headers, not a version number.
AC_DEFUN([NVL_WITH_CATCH2], [
  AC_ARG_WITH([catch2],
    [AS_HELP_STRING([--with-catch2=PATH], [Catch2 installation prefix or header directory (default: system)])],
    [], [with_catch2=check])
  CATCH2_CPPFLAGS=""
  CATCH2_LIBS=""
  AS_IF([test "x$with_catch2" != xcheck && test "x$with_catch2" != xyes],
        [AS_IF([test -d "$with_catch2/include"],
               [CATCH2_CPPFLAGS="-isystem $with_catch2/include"; CATCH2_LDFLAGS="-L$with_catch2/lib"],
               [CATCH2_CPPFLAGS="-isystem $with_catch2"])])
  nvl_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $CATCH2_CPPFLAGS"
  AC_LANG_PUSH([C++])
  nvl_catch2=none
  AC_CHECK_HEADER([catch2/catch_test_macros.hpp], [nvl_catch2=3],
    [AC_CHECK_HEADER([catch2/catch.hpp], [nvl_catch2=2])])
  AS_IF([test "$nvl_catch2" = 3],
        [nvl_save_LIBS="$LIBS"; nvl_save_LDFLAGS="$LDFLAGS"; LDFLAGS="$LDFLAGS $CATCH2_LDFLAGS"
         LIBS="-lCatch2 $LIBS"
         AC_MSG_CHECKING([for the Catch2 v3 library])
         AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <catch2/catch_session.hpp>]],
                                         [[Catch::Session s; return s.run();]])],
           [AC_MSG_RESULT([yes]); CATCH2_LIBS="$CATCH2_LDFLAGS -lCatch2"],
           [AC_MSG_RESULT([no])
            AC_MSG_ERROR([Catch2 v3 headers found but not libCatch2: install Debian package catch2 or pass --with-catch2=PATH])])
         LIBS="$nvl_save_LIBS"; LDFLAGS="$nvl_save_LDFLAGS"
         CATCH2_CPPFLAGS="$CATCH2_CPPFLAGS -DNVL_CATCH2_V3=1"])
  AS_IF([test "$nvl_catch2" = none],
    [AC_MSG_ERROR([Catch2 not found (catch2/catch.hpp or catch2/catch_test_macros.hpp): install Debian package catch2 or pass --with-catch2=PATH])])
  AC_LANG_POP([C++])
  CPPFLAGS="$nvl_save_CPPFLAGS"
  AC_SUBST([CATCH2_CPPFLAGS])
  AC_SUBST([CATCH2_LIBS])
])
