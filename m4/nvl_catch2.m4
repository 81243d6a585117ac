# NVL_WITH_CATCH2: Catch2 v2 (single header), for the unit tests under `make check`.
AC_DEFUN([NVL_WITH_CATCH2], [
  AC_ARG_WITH([catch2],
    [AS_HELP_STRING([--with-catch2=PATH], [directory holding catch2/catch.hpp (default: system)])],
    [], [with_catch2=check])
  CATCH2_CPPFLAGS=""
  AS_IF([test "x$with_catch2" != xcheck && test "x$with_catch2" != xyes],
        [CATCH2_CPPFLAGS="-isystem $with_catch2"])
  nvl_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $CATCH2_CPPFLAGS"
  AC_CHECK_HEADER([catch2/catch.hpp], [],
    [AC_MSG_ERROR([Catch2 v2 (catch2/catch.hpp) not found: install Debian package catch2 or pass --with-catch2=PATH])])
  CPPFLAGS="$nvl_save_CPPFLAGS"
  AC_SUBST([CATCH2_CPPFLAGS])
])
