# NVL_WITH_FMT: {fmt}, for messages and report formatting.
AC_DEFUN([NVL_WITH_FMT], [
  AC_ARG_WITH([fmt],
    [AS_HELP_STRING([--with-fmt=PATH], [{fmt} installation prefix (default: pkg-config)])],
    [], [with_fmt=check])
  AS_IF([test "x$with_fmt" != xcheck && test "x$with_fmt" != xyes],
        [FMT_CFLAGS="-isystem $with_fmt/include"
         FMT_LIBS="-L$with_fmt/lib -lfmt"],
        [PKG_CHECK_MODULES([FMT], [fmt >= 7], [],
          [AC_MSG_ERROR([{fmt} >= 7 not found: install Debian package libfmt-dev or pass --with-fmt=PATH])])])
  nvl_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $FMT_CFLAGS"
  AC_CHECK_HEADER([fmt/format.h], [],
    [AC_MSG_ERROR([fmt/format.h not found: install Debian package libfmt-dev or pass --with-fmt=PATH])])
  CPPFLAGS="$nvl_save_CPPFLAGS"
  AC_SUBST([FMT_CFLAGS]) AC_SUBST([FMT_LIBS])
])
