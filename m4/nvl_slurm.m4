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
  AC_LANG_PUSH([C])
  # API drift between releases, each found by a feature test (never by
  # the version number).
  #
  # 26.05 names a job by a slurm_step_id_t passed by value where 22.05-25.11
  # take a uint32_t job id (slurm_load_job, slurm_requeue, the kill/signal
  # calls). Tested as C++, as the callers are: slurm.h's SLURM_BACKWARD_COMPAT
  # wrappers (C11 _Generic) are no use there.
  AC_LANG_PUSH([C++])
  AC_MSG_CHECKING([how slurm_load_job and slurm_requeue name a job])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[extern "C" {
#include <slurm/slurm.h>
}]],
      [[uint32_t id = 1; job_info_msg_t* m = nullptr;
        return slurm_load_job(&m, id, SHOW_DETAIL) + slurm_requeue(id, 0);]])],
    [AC_MSG_RESULT([by a job id])],
    [AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[extern "C" {
#include <slurm/slurm.h>
}]],
        [[slurm_step_id_t s = {}; s.job_id = 1; s.step_id = NO_VAL; s.step_het_comp = NO_VAL;
          job_info_msg_t* m = nullptr;
          return slurm_load_job(&m, s, SHOW_DETAIL) + slurm_requeue(s, 0);]])],
      [AC_MSG_RESULT([by a slurm_step_id_t])
       AC_DEFINE([NVL_SLURM_STEP_ID_API], [1],
         [slurm_load_job/slurm_requeue take a slurm_step_id_t by value (26.05+), not a job id])],
      [AC_MSG_RESULT([neither])
       AC_MSG_ERROR([slurm_load_job/slurm_requeue take neither a job id nor a slurm_step_id_t: an unknown Slurm API; see config.log])])])
  AC_LANG_POP([C++])
  # 26.05 renamed slurm_free_ctl_conf() to slurm_free_conf().
  AC_CHECK_DECLS([slurm_free_conf], [], [], [[#include <slurm/slurm.h>]])
  # 25.11 dropped job_desc_msg_t.job_id (job_id_str names the job to update).
  AC_CHECK_MEMBERS([job_desc_msg_t.job_id], [], [], [[#include <slurm/slurm.h>]])
  # 26.05 dropped update_node_msg_t.reason_uid (slurmctld takes the sender's).
  AC_CHECK_MEMBERS([update_node_msg_t.reason_uid], [], [], [[#include <slurm/slurm.h>]])
  # 24.11 dropped slurm_get_errno(): errno carries the error instead.
  AC_CHECK_DECLS([slurm_get_errno], [AC_DEFINE([HAVE_SLURM_GET_ERRNO], [1], [libslurm has slurm_get_errno])], [],
    [[#include <slurm/slurm.h>]])
  # 25.05: a plugin may say how a failing remote slurm_spank_init is taken
  # (slurm_spank_init_failure_mode: ESPANK_NODE_FAILURE drains the node,
  # the default; ESPANK_JOB_FAILURE fails the job alone).
  AC_CHECK_DECLS([ESPANK_JOB_FAILURE], [], [], [[#include <slurm/spank.h>]])
  # Segments (24.05+): --segment on the client, segment_size in a job request.
  AC_CHECK_MEMBERS([job_desc_msg_t.segment_size],
    [AC_DEFINE([HAVE_SLURM_SEGMENTS], [1], [Slurm jobs can ask for segments (--segment)])], [],
    [[#include <slurm/slurm.h>]])
  # A job's pending reason by name, with libslurm's own table: exported but
  # not declared in the public headers; 22.05 calls it
  # slurm_job_reason_string, 23.02+ slurm_job_state_reason_string.
  AC_CHECK_LIB([slurm], [slurm_job_state_reason_string],
    [AC_DEFINE([HAVE_SLURM_JOB_STATE_REASON_STRING], [1], [libslurm exports slurm_job_state_reason_string])],
    [AC_CHECK_LIB([slurm], [slurm_job_reason_string],
      [AC_DEFINE([HAVE_SLURM_JOB_REASON_STRING], [1], [libslurm exports slurm_job_reason_string])],
      [AC_MSG_WARN([libslurm exports no reason-to-name function: pending reasons are named by nvlslice's own short table])])])
  AC_CHECK_DECLS([slurm_job_state_reason_string, slurm_job_reason_string], [], [], [[#include <slurm/slurm.h>]])
  AC_MSG_CHECKING([for slurm_load_jobs, slurm_update_job, reservations, licenses, slurm_ping in slurm.h])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <slurm/slurm.h>]],
      [[job_info_msg_t *j; node_info_msg_t *n; reserve_info_msg_t *r; job_desc_msg_t d; resv_desc_msg_t rd;
        slurm_init_job_desc_msg(&d); slurm_init_resv_desc_msg(&rd);
        (void)slurm_load_jobs(0, &j, SHOW_ALL); (void)slurm_load_node(0, &n, SHOW_ALL);
        (void)slurm_load_reservations(0, &r); (void)slurm_update_job(&d);
        (void)slurm_update_reservation(&rd);
        license_info_msg_t *l; (void)slurm_load_licenses(0, &l, 0); slurm_free_license_info_msg(l);
        slurm_conf_t *c; (void)slurm_load_ctl_conf(0, &c); (void)slurm_ping(0);
        (void)c->control_cnt; (void)c->control_machine;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([this slurm.h lacks the job/node/reservation/license API nvlsliced uses (Slurm 22.05 or later is needed)])])
  AC_LANG_POP([C])
  CPPFLAGS="$nvl_save_CPPFLAGS"; LDFLAGS="$nvl_save_LDFLAGS"
  AC_SUBST([SLURM_CPPFLAGS]) AC_SUBST([SLURM_LDFLAGS]) AC_SUBST([SLURM_LIBS])
])
