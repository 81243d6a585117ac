# NVL_WITH_YAML: libyaml, for the rack map and Slurm's topology.yaml.
AC_DEFUN([NVL_WITH_YAML], [
  AC_ARG_WITH([yaml],
    [AS_HELP_STRING([--with-yaml=PATH], [libyaml installation prefix (default: pkg-config)])],
    [], [with_yaml=check])
  AS_IF([test "x$with_yaml" != xcheck && test "x$with_yaml" != xyes],
        [YAML_CFLAGS="-isystem $with_yaml/include"
         YAML_LIBS="-L$with_yaml/lib -lyaml"],
        [PKG_CHECK_MODULES([YAML], [yaml-0.1], [],
          [AC_MSG_ERROR([libyaml not found: install Debian package libyaml-dev or pass --with-yaml=PATH])])])
  nvl_save_CPPFLAGS="$CPPFLAGS"; CPPFLAGS="$CPPFLAGS $YAML_CFLAGS"
  AC_CHECK_HEADER([yaml.h], [],
    [AC_MSG_ERROR([yaml.h not found: install Debian package libyaml-dev or pass --with-yaml=PATH])])
  CPPFLAGS="$nvl_save_CPPFLAGS"
  AC_SUBST([YAML_CFLAGS]) AC_SUBST([YAML_LIBS])
])
