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
  # API drift between releases (22.05 .. development branch): the current
  # development branch takes a slurm_step_id_t where 22.05-25.11 take a job id.
  AC_LANG_PUSH([C])
  AC_MSG_CHECKING([whether slurm_requeue takes a job id])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
      [[uint32_t id = 1; return slurm_requeue(id, 0);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no, a slurm_step_id_t])
     AC_DEFINE([NVL_SLURM_STEP_ID_API], [1], [slurm_requeue/slurm_load_job take a slurm_step_id_t])])
  # 24.11 dropped slurm_get_errno(): errno carries the error instead.
  AC_CHECK_DECLS([slurm_get_errno], [AC_DEFINE([HAVE_SLURM_GET_ERRNO], [1], [libslurm has slurm_get_errno])], [],
    [[#include <slurm/slurm.h>]])
  # Segments (24.05+): --segment on the client, segment_size in a job request.
  AC_CHECK_MEMBERS([job_desc_msg_t.segment_size],
    [AC_DEFINE([HAVE_SLURM_SEGMENTS], [1], [Slurm jobs can ask for segments (--segment)])], [],
    [[#include <slurm/slurm.h>]])
  AC_MSG_CHECKING([for slurm_load_jobs, slurm_update_job, reservations in slurm.h])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
      [[job_info_msg_t *j; node_info_msg_t *n; reserve_info_msg_t *r; job_desc_msg_t d; resv_desc_msg_t rd;
        slurm_init_job_desc_msg(&d); slurm_init_resv_desc_msg(&rd);
        (void)slurm_load_jobs(0, &j, SHOW_ALL); (void)slurm_load_node(0, &n, SHOW_ALL);
        (void)slurm_load_reservations(0, &r); (void)slurm_update_job(&d);
        (void)slurm_update_reservation(&rd);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([this slurm.h lacks the job/node/reservation API nvlsliced uses (Slurm 22.05 or later is needed)])])
  AC_LANG_POP([C])
  CPPFLAGS="$nvl_save_CPPFLAGS"; LDFLAGS="$nvl_save_LDFLAGS"
  AC_SUBST([SLURM_CPPFLAGS]) AC_SUBST([SLURM_LDFLAGS]) AC_SUBST([SLURM_LIBS])
])
