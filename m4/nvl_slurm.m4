# NVL_WITH_SLURM: Slurm's public headers (slurm/slurm.h, slurm/spank.h) and libslurm.
# Only the SPANK plugin and the slurmctld-side adapter use them; libnvlslice never does.
AC_DEFUN([NVL_WITH_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=PATH], [Slurm installation prefix (default: system)])],
    [], [with_slurm=check])
  SLURM_CPPFLAGS=""
  SLURM_LDFLAGS=""
  AS_IF([test "x$with_slurm" != xcheck && test "x$with_slurm" != xyes],
        [SLURM_CPPFLAGS="-isystem $with_slurm/include"
         SLURM_LDFLAGS="-L$with_slurm/lib -L$with_slurm/lib64"])
  nvl_save_CPPFLAGS="$CPPFLAGS"; nvl_save_LDFLAGS="$LDFLAGS"
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"; LDFLAGS="$LDFLAGS $SLURM_LDFLAGS"
  AC_CHECK_HEADERS([slurm/slurm.h slurm/spank.h], [],
    [AC_MSG_ERROR([Slurm public headers not found: install Debian package libslurm-dev or pass --with-slurm=PATH])])
  AC_CHECK_LIB([slurm], [slurm_load_node], [SLURM_LIBS="-lslurm"],
    [AC_MSG_ERROR([libslurm not found: install Debian package libslurm-dev or pass --with-slurm=PATH])])
  CPPFLAGS="$nvl_save_CPPFLAGS"; LDFLAGS="$nvl_save_LDFLAGS"
  AC_SUBST([SLURM_CPPFLAGS]) AC_SUBST([SLURM_LDFLAGS]) AC_SUBST([SLURM_LIBS])
])
