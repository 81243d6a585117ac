# NVL_WITH_HWLOC: hwloc, for the node-side GPU count check.
AC_DEFUN([NVL_WITH_HWLOC], [
  AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--with-hwloc=PATH], [hwloc installation prefix (default: pkg-config)])],
    [], [with_hwloc=check])
  AS_IF([test "x$with_hwloc" != xcheck && test "x$with_hwloc" != xyes],
        [HWLOC_CFLAGS="-isystem $with_hwloc/include"
         HWLOC_LIBS="-L$with_hwloc/lib -lhwloc"],
        [PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
          [AC_MSG_ERROR([hwloc >= 2.0 not found: install Debian package libhwloc-dev or pass --with-hwloc=PATH])])])
  nvl_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $HWLOC_CFLAGS"
  AC_CHECK_HEADER([hwloc.h], [],
    [AC_MSG_ERROR([hwloc.h not found: install Debian package libhwloc-dev or pass --with-hwloc=PATH])])
  CPPFLAGS="$nvl_save_CPPFLAGS"
  AC_SUBST([HWLOC_CFLAGS]) AC_SUBST([HWLOC_LIBS])
])
