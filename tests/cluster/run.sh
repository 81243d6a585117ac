#!/bin/bash
# The real-cluster test tier: brings up the test cluster with the plugin
# from the build tree and runs every cluster test against it.
#   tests/cluster/run.sh BUILD_DIR
# Stops the cluster afterwards unless NVL_KEEP_CLUSTER=1. NVL_TESTS="test_rules"
# runs only the scripts named (test_plugin, test_native, test_helper,
# test_rules, test_load, lend_depth, busy_repair, test_remove, test_away,
# test_accounting, test_failover; bench_failure, bench_busy and replay run
# only when named). test_failover runs last, on the cluster started again
# with a backup slurmctld (NVL_BACKUP_CTLD=1, cluster.sh), about 2 minutes,
# by default on the host's Slurm only. NVL_ACCOUNTING=1 runs every script
# with real accounting (cluster.sh); NVL_ACCOUNTING=after runs them without,
# then starts the cluster again with accounting for test_accounting.
#
#   NVL_SLURM=24.11 tests/cluster/run.sh
# runs the same tests on Slurm 24.11 with topology/block: in the cached
# Debian 13 root of debian13-root.sh, the project is built there (against
# libslurm 24.11, Catch2 3) and this script runs again inside the root, with
# the same one-netns-per-node layout and that root's stock daemons and
# clients. NVL_SLURM=26.05 does the same with Slurm 26.05 in a Debian sid
# root (/var/cache/nvlslice/sid-root, or NVL_SID_ROOT).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if { [ "${NVL_SLURM:-}" = 24.11 ] || [ "${NVL_SLURM:-}" = 26.05 ]; } && [ -z "${NVL_IN_ROOT:-}" ]; then
    ROOTSH=$HERE/debian13-root.sh
    if [ "$NVL_SLURM" = 26.05 ]; then
        # Debian sid's Slurm 26.05, in a root of its own made the same way
        export NVL_ROOT_SUITE=sid NVL_DEBIAN13_ROOT=${NVL_SID_ROOT:-/var/cache/nvlslice/sid-root}
    fi
    "$ROOTSH" ensure || exit 1
    if [ "${NVL_ACCOUNTING:-0}" != 0 ]; then
        # Debian 13's slurmdbd 24.11.5 with its libmariadb3 1:11.8.9 exits at
        # start ("_check_mysql_concat_is_sane: null result", client error
        # 5027); with Debian 12's MariaDB client library it works against the
        # same server. The root's slurmdbd runs with the host's (cluster.sh).
        dblib=$(ldconfig -p | awk '$1 == "libmariadb.so.3" { print $NF; exit }')
        if [ -z "$dblib" ]; then
            # shellcheck source=tests/cluster/host_apt.sh
            . "$HERE/host_apt.sh"
            host_apt install -y -q libmariadb3 2>/dev/null ||
                { host_apt update -q 2>/dev/null; host_apt install -y -q libmariadb3 2>/dev/null; }
            dblib=$(ldconfig -p | awk '$1 == "libmariadb.so.3" { print $NF; exit }')
        fi
        [ -n "$dblib" ] || { echo "run.sh: NVL_ACCOUNTING: the host's MariaDB client library (libmariadb3) is missing" >&2; exit 1; }
        root=$("$ROOTSH" path)
        rm -rf "$root/var/tmp/nvlslice-dbclient" && mkdir -p "$root/var/tmp/nvlslice-dbclient"
        cp -L "$dblib" "$root/var/tmp/nvlslice-dbclient/libmariadb.so.3"
    fi
    # A copy of the tree, with the root's own autotools: the host's
    # generated files are not the root's to reuse. The root builds the
    # Debian packages against its own libslurm (make deb: dpkg-buildpackage
    # configures, builds and runs the unit tests), lintian checks them, and
    # the cluster tests run on that build: the binaries the packages hold.
    # NVL_ROOT_STEP=build builds and unit-tests only (the test command does
    # it beside the tier before); =test runs the cluster tests on that build.
    src=/var/tmp/nvlslice-src inner=/var/tmp/nvlslice-build
    if [ "${NVL_ROOT_STEP:-all}" != test ]; then
        echo "# the $NVL_SLURM tier: building the Debian packages in the Debian $NVL_SLURM root"
        "$ROOTSH" shell bash -c "set -e; rm -rf $src $inner; mkdir -p $src $inner
            tar -C /src --exclude=./build --exclude=./.git -cf - . | tar -C $src -xf -
            cd $src && autoreconf -fi >/dev/null 2>&1
            cd $inner && $src/configure -q >/dev/null
            DEB_BUILD_OPTIONS=parallel=\$(nproc) make -s deb > deb.log 2>&1 || {
                grep -A30 -E '^(FAIL|ERROR)|Error [0-9]|error:' deb.log | tail -40; tail -30 deb/*/tests/unit/nvl-unit.log 2>/dev/null; exit 1; }
            b=\$(ls -d $inner/deb/nvlslice-*/ | head -1); b=\${b%/}
            echo \"unit (Slurm $NVL_SLURM, Catch2 3): \$(sed -n 's/^All tests passed ([0-9]* assertions* in \\([0-9]*\\) test cases*).*/\\1/p' \$b/tests/unit/nvl-unit.log) passed\"
            cd deb
            echo \"packages (Slurm $NVL_SLURM): \$(ls -1 ./*.deb | grep -v dbgsym | xargs -n1 basename | paste -sd' '); nvlslice-spank depends on \$(dpkg-deb -f nvlslice-spank_*.deb Depends | grep -o 'libslurm[^,]*')\"
            lintian --tag-display-limit 0 ./*.changes > lintian.log 2>&1 || true
            if grep -q '^E:' lintian.log; then echo 'lintian (Slurm $NVL_SLURM):'; grep '^E:' lintian.log; exit 1; fi
            echo \"lintian (Slurm $NVL_SLURM): no error (\$(grep -c '^W:' lintian.log) warnings)\"
            echo \$b > $inner/.nvl-built
            " || { echo "run.sh: the packages' build, their unit tests or lintian in the $NVL_SLURM root failed" >&2; exit 1; }
        [ "${NVL_ROOT_STEP:-all}" = build ] && exit 0
    fi
    built=$(cat "$("$ROOTSH" path)$inner/.nvl-built" 2>/dev/null) ||
        { echo "run.sh: NVL_ROOT_STEP=test, but the $NVL_SLURM root has no finished build" >&2; exit 1; }
    # the tests as they are now (the build's copy of the tree may be older)
    "$ROOTSH" shell sh -c "rm -rf $src/tests/cluster && cp -a /src/tests/cluster $src/tests/cluster" ||
        { echo "run.sh: copying the tests into the $NVL_SLURM root failed" >&2; exit 1; }
    # the geometry and the benches' settings, when given
    pass=()
    for v in NVL_RACKS NVL_SLURMD_TIMEOUT NVL_TREE_WIDTH NVL_TCP_TIMEOUT NVL_SLURMD_DEBUG NVL_UPGRADE NVL_KEEP_STATE NVL_ADOPT $(compgen -v NVL_BENCH_); do [ -n "${!v:-}" ] && pass+=("$v=${!v}"); done
    # NVL_OWN_NET=1: the tier's cluster in a network namespace of its own
    # (its bridge, the nodes' links, slurmctld's and the helper's ports
    # and addresses are then its own), so that another tier's cluster may
    # run beside it at the same time (the test command runs 24.11 beside
    # 26.05); only loopback is up there, nothing reaches out
    own_net=()
    [ "${NVL_OWN_NET:-0}" = 1 ] && own_net=(unshare --net sh -c 'ip link set lo up && exec "$@"' own-net)
    exec "${own_net[@]}" "$ROOTSH" shell env NVL_IN_ROOT=1 NVL_SLURM="$NVL_SLURM" NVL_KEEP_CLUSTER="${NVL_KEEP_CLUSTER:-0}" NVL_TESTS="${NVL_TESTS:-}" \
        NVL_ACCOUNTING="${NVL_ACCOUNTING:-0}" NVL_SLURMDBD_LIBDIR=/var/tmp/nvlslice-dbclient "${pass[@]}" \
        $src/tests/cluster/run.sh "$built"
fi
# The packages' tier: `NVL_SLURM=installed tests/cluster/run.sh BUILD_DIR`
# builds the Debian packages (make deb in BUILD_DIR), installs them with apt
# in a fresh Debian 12 root of their own (debian13-root.sh with
# NVL_ROOT_SUITE=bookworm: Debian's Slurm 22.05 and nothing of the build
# tree) and runs the same tests there against the installed files.
# `NVL_SLURM=installed-26.05 tests/cluster/run.sh` does the same with the
# packages the 26.05 tier built in its root (against libslurm 26.05),
# installed in a Debian sid root of their own with Slurm 26.05 (native mode).
# With NVL_SITE=bare, either runs test_guide alone: the cluster starts as a
# site before nvlslice and the admin guide's install block makes it one
# (NVL_SITE=tree: a site with an InfiniBand tree of its own).
if [[ ${NVL_SLURM:-} = installed* ]] && [ -z "${NVL_IN_ROOT:-}" ]; then
    ROOTSH=$HERE/debian13-root.sh
    case $NVL_SLURM in
    installed)
        B=$(cd "${1:?usage: NVL_SLURM=installed run.sh BUILD_DIR}" && pwd)
        if [ -z "${NVL_DEBS_READY:-}" ]; then # set when BUILD_DIR/deb was just built (tests/packages.sh)
            echo "# the packages' tier: make deb"
            make -C "$B" -s deb > "$B/deb.log" 2>&1 || { tail -20 "$B/deb.log"; echo "run.sh: make deb failed" >&2; exit 1; }
        fi
        debs=$B/deb
        export NVL_ROOT_SUITE=bookworm NVL_DEBIAN13_ROOT=/var/cache/nvlslice/debian12-root NVL_ROOT_CGROUP=1 ;;
    installed-26.05)
        debs=$(NVL_ROOT_SUITE=sid NVL_DEBIAN13_ROOT=${NVL_SID_ROOT:-/var/cache/nvlslice/sid-root} "$ROOTSH" path)/var/tmp/nvlslice-build/deb
        ls "$debs"/nvlslice-spank_*.deb >/dev/null 2>&1 ||
            { echo "run.sh: no packages in $debs: build them first with NVL_SLURM=26.05 NVL_ROOT_STEP=build $0" >&2; exit 1; }
        export NVL_ROOT_SUITE=sid NVL_DEBIAN13_ROOT=${NVL_SID_INSTALLED_ROOT:-/var/cache/nvlslice/sid-installed-root} ;;
    *) echo "run.sh: NVL_SLURM=$NVL_SLURM: use installed (Slurm 22.05) or installed-26.05" >&2; exit 2 ;;
    esac
    export NVL_ROOT_PACKAGES="slurmctld slurmd slurm-client munge iproute2 procps ca-certificates"
    "$ROOTSH" ensure || exit 1
    root=$("$ROOTSH" path)
    rm -rf "$root/var/tmp/nvlslice-debs" && mkdir -p "$root/var/tmp/nvlslice-debs"
    for p in nvlslice-spank nvlsliced nvlslice-tools; do cp "$debs/$p"_*.deb "$root/var/tmp/nvlslice-debs/"; done
    echo "# the packages' tier: apt install $(cd "$root/var/tmp/nvlslice-debs" && echo *.deb) in a Debian $NVL_ROOT_SUITE root"
    "$ROOTSH" shell env DEBIAN_FRONTEND=noninteractive sh -c \
        'apt-get purge -y -q nvlslice-spank nvlsliced nvlslice-tools >/dev/null 2>&1;
         apt-get install -y -q --no-install-recommends /var/tmp/nvlslice-debs/*.deb >/var/tmp/nvlslice-debs/apt.log 2>&1 ||
             { tail -20 /var/tmp/nvlslice-debs/apt.log; exit 1; }
         dpkg-query -W -f="#   \${Package} \${Version}\n" nvlslice-spank nvlsliced nvlslice-tools' ||
        { echo "run.sh: installing the packages in the root failed" >&2; exit 1; }
    if [ -n "${NVL_SITE:-}" ]; then
        # A site before nvlslice: the install guide's steps install them
        # (test_guide.sh). Purged again, files and configuration; the
        # libraries they depend on stay, as a site has them (the guide's
        # apt then needs no network)
        echo "# a site before nvlslice: the packages purged again; the install guide's steps install them"
        "$ROOTSH" shell env DEBIAN_FRONTEND=noninteractive sh -c \
            'apt-get purge -y -q nvlslice-spank nvlsliced nvlslice-tools >/dev/null 2>&1;
             ! dpkg-query -W -f="\${Status}\n" nvlslice-spank nvlsliced nvlslice-tools 2>/dev/null | grep -q " installed$"' ||
            { echo "run.sh: purging the packages in the root failed" >&2; exit 1; }
    fi
    exec "$ROOTSH" shell env NVL_IN_ROOT=1 NVL_INSTALLED=1 NVL_KEEP_CLUSTER="${NVL_KEEP_CLUSTER:-0}" NVL_TESTS="${NVL_TESTS:-}" \
        NVL_SITE="${NVL_SITE:-}" \
        /src/tests/cluster/run.sh
fi
export NVL_CLUSTER_DIR=${NVL_CLUSTER_DIR:-/tmp/nvlslice-cluster}
export SLURM_CONF=$NVL_CLUSTER_DIR/etc/slurm.conf
if [ -n "${NVL_INSTALLED:-}" ] && [ -n "${NVL_SITE:-}" ]; then
    # a site before nvlslice: nothing of it installed yet (test_guide.sh)
    BUILD= PLUGIN=
    echo "# a site before nvlslice: the packages are in /var/tmp/nvlslice-debs, not installed"
elif [ -n "${NVL_INSTALLED:-}" ]; then
    # the installed files, not the build tree
    BUILD=
    PLUGIN=$(ls /usr/lib/*/nvlslice/spank_nvlslice.so 2>/dev/null | head -1)
    export NVL_TOPO=/usr/bin/nvl-topo
    [ -n "$PLUGIN" ] && [ -x /usr/sbin/nvlsliced ] && [ -x "$NVL_TOPO" ] ||
        { echo "run.sh: NVL_INSTALLED: the packages' files are missing" >&2; exit 1; }
    echo "# installed: $PLUGIN /usr/sbin/nvlsliced $NVL_TOPO"
else
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
PLUGIN=$BUILD/plugins/spank/.libs/spank_nvlslice.so
[ -f "$PLUGIN" ] || { echo "run.sh: $PLUGIN not built" >&2; exit 1; }
fi

# Simulated GPUs: every node has 4 in its hwloc fixture except nvl0036 (3),
# for the plugin's GPU check test.
mkdir -p "$NVL_CLUSTER_DIR/hwloc"
for i in $(seq 1 $(( ${NVL_RACKS:-2} * 18 ))); do
    n=$(printf nvl%04d "$i")
    f=node-4gpu.xml; [ "$n" = nvl0036 ] && f=node-3gpu.xml
    cp "$HERE/../data/hwloc/$f" "$NVL_CLUSTER_DIR/hwloc/$n.xml"
done
export NVL_PLUGIN=$PLUGIN
export BUILD_DIR=$BUILD
export NVL_HELPER_CONF="rack_failure_reasons: contained
defrag:
  enabled: true
  after: 3
  interval: 10"
# The plugin-alone tests pin and ungate jobs by hand: gate mode, on every
# tier. The helper tests then run in the mode chosen from the running
# Slurm (auto): gate on 22.05, native on 24.11 with topology/block.
# Simulated NVLink fabric: the rack map is discovered from a recorded report
# of every node's GPUs (fabric identity, state, health), and the plugin's
# fabric check reads the same report, which the tests edit to break a node.
# (the recorded report has the 2 racks of the tests; another NVL_RACKS, for
# the benches, has its map written by contrib/gen-map.sh and no fabric check)
if [ "${NVL_RACKS:-2}" = 2 ]; then
    export NVL_FABRIC_REPORT=$HERE/../data/fabric/cluster-36.txt
    export NVL_PLUGIN_ARGS="check_gpus=fail hwloc_xml=$NVL_CLUSTER_DIR/hwloc/%n.xml check_fabric=fail fabric_report=$NVL_CLUSTER_DIR/fabric.txt fabric_drain=yes mode=gate"
else
    export NVL_RACKS
    export NVL_PLUGIN_ARGS="check_gpus=fail hwloc_xml=$NVL_CLUSTER_DIR/hwloc/%n.xml mode=gate"
fi
start=$(date +%s)
# test_failover alone: the cluster with a backup slurmctld from the start
[ "${NVL_TESTS:-}" = test_failover ] && export NVL_BACKUP_CTLD=1
"$HERE/cluster.sh" up || { "$HERE/cluster.sh" down >/dev/null 2>&1; exit 1; }
total_pass=0 total_fail=0
# NVL_TESTS="test_rules test_load": only these scripts (all by default)
run_test() {
    local t=$1 out line p f t0
    case " ${NVL_TESTS:-$(basename "$t" .sh)} " in *" $(basename "$t" .sh) "*) ;; *) return 0 ;; esac
    out=$(mktemp)
    t0=$(date +%s)
    bash "$t" 2>&1 | tee "$out"
    line=$(grep -E '^[a-z]+: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -1)
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
    [ -n "$line" ] || { f=1; p=0; echo "not ok - $(basename "$t") printed no summary"; }
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
    echo "# $(basename "$t"): $(( $(date +%s) - t0 )) s"
    rm -f "$out"
}
# An upgrade of Slurm with nvlslice installed (tests/cluster/upgrade.sh runs
# both phases, each in its root): NVL_UPGRADE=before on the older Slurm, its
# state then carried to the newer one, NVL_UPGRADE=after there
if [ -n "${NVL_UPGRADE:-}" ]; then
    sed -i 's/ mode=gate$/ mode=auto/' "$NVL_CLUSTER_DIR/etc/plugstack.conf"
    if [ -n "${NVL_INSTALLED:-}" ]; then export NVL_HELPER=/usr/sbin/nvlsliced; else export NVL_HELPER=$BUILD/src/nvlsliced/nvlsliced; fi
    # before: the helper runs as on any site; after: the test starts it (the upgrade's last step)
    [ "$NVL_UPGRADE" = after ] || "$HERE/cluster.sh" helper || exit 1
    NVL_TESTS=${NVL_TESTS:-test_upgrade} run_test "$HERE/test_upgrade.sh"
    if [ "$NVL_UPGRADE" = before ]; then
        # the slurmds, their running steps, munged and the network stay for
        # the newer Slurm to take over (upgrade.sh); the rest is stopped
        "$HERE/cluster.sh" kill-helper; "$HERE/cluster.sh" stop-ctld
    else
        "$HERE/cluster.sh" down >/dev/null
    fi
    echo "# cluster tests took $(( $(date +%s) - start )) s"
    echo "cluster: $total_pass passed, $total_fail failed"
    [ "$total_fail" -eq 0 ]
    exit
fi
# A site before nvlslice (NVL_SITE=bare, the installed roots only): the
# admin guide's install block run as written, then the site at work
if [ -n "${NVL_SITE:-}" ]; then
    [ -n "${NVL_INSTALLED:-}" ] || { echo "run.sh: NVL_SITE (bare, tree) needs the packages: NVL_SLURM=installed or installed-26.05" >&2; exit 2; }
    NVL_TESTS=${NVL_TESTS:-test_guide} run_test "$HERE/test_guide.sh"
    [ "${NVL_KEEP_CLUSTER:-0}" = 1 ] || "$HERE/cluster.sh" down >/dev/null
    echo "# cluster tests took $(( $(date +%s) - start )) s"
    echo "cluster: $total_pass passed, $total_fail failed"
    [ "$total_fail" -eq 0 ]
    exit
fi
# The plugin alone first (jobs are pinned and ungated by hand), then with
# the helper. Without the helper, the gate reservation it keeps is made here.
"$HERE/cluster.sh" kill-helper
scontrol delete ReservationName=nvlslice_spares 2>/dev/null || true
scontrol delete ReservationName=nvlslice_protect 2>/dev/null || true
scontrol show reservation nvlslice_gate >/dev/null 2>&1 ||
    scontrol create reservation ReservationName=nvlslice_gate Users=root Licenses=nvlslice_gate:1 \
        Flags=LICENSE_ONLY StartTime=now EndTime=2099-12-31T00:00:00 >/dev/null
run_test "$HERE/test_plugin.sh"
# The helper tests use every node: from here on nvl0036 has its 4 GPUs.
cp "$HERE/../data/hwloc/node-4gpu.xml" "$NVL_CLUSTER_DIR/hwloc/nvl0036.xml"
sed -i 's/ mode=gate$/ mode=auto/' "$NVL_CLUSTER_DIR/etc/plugstack.conf"
if [ -n "${NVL_INSTALLED:-}" ]; then export NVL_HELPER=/usr/sbin/nvlsliced; else export NVL_HELPER=$BUILD/src/nvlsliced/nvlsliced; fi
"$HERE/cluster.sh" helper || exit 1
. "$HERE/lib.sh"
wait_for 10 mode_is
echo "# the helper tests run in $(nvl_mode) mode"
[ "$(nvl_mode)" = native ] && run_test "$HERE/test_native.sh"
run_test "$HERE/test_helper.sh"
# two helpers, one lease: one acts, the other takes over
run_test "$HERE/test_lease.sh"
run_test "$HERE/test_rules.sh"
run_test "$HERE/test_load.sh"
# a borrower behind 600 waiting jobs starts on its lent spare, and no job
# ahead takes a spare (under a minute)
run_test "$HERE/lend_depth.sh"
# a repair on a busy cluster: the backlog takes none of the job's nodes
# between its requeue and its restart (about a minute with Slurm alone's side)
run_test "$HERE/busy_repair.sh"
# nvlsliced --remove takes nvlslice out: nothing of it left, plain Slurm
# starts the waiting jobs (then the helper is started again)
run_test "$HERE/test_remove.sh"
run_test "$HERE/test_away.sh"
# with real accounting only (NVL_ACCOUNTING=1): it says so and passes otherwise
if [ "${NVL_ACCOUNTING:-0}" = 1 ]; then run_test "$HERE/test_accounting.sh"; fi
# NVL_ACCOUNTING=after: the tests above on a cluster without accounting, then
# the same cluster started again with real accounting (MariaDB, slurmdbd) for
# test_accounting alone, in the mode of this tier
if [ "${NVL_ACCOUNTING:-0}" = after ]; then
    case " ${NVL_TESTS:-test_accounting} " in *" test_accounting "*)
        echo "# the same cluster again, with real accounting (MariaDB, slurmdbd)"
        "$HERE/cluster.sh" kill-helper
        "$HERE/cluster.sh" down >/dev/null
        export NVL_ACCOUNTING=1
        "$HERE/cluster.sh" up || { "$HERE/cluster.sh" down >/dev/null 2>&1; exit 1; }
        sed -i 's/ mode=gate$/ mode=auto/' "$NVL_CLUSTER_DIR/etc/plugstack.conf"
        "$HERE/cluster.sh" helper || exit 1
        run_test "$HERE/test_accounting.sh" ;;
    esac
fi
# Only when named (NVL_TESTS="bench_failure"): the side-by-side of
# nvlslice's repair and Slurm's own requeues, 25-35 minutes
case " ${NVL_TESTS:-} " in *" bench_failure "*)
    [ "${NVL_ACCOUNTING:-0}" = 1 ] || { "$HERE/cluster.sh" helper >/dev/null 2>&1 || true; }
    run_test "$HERE/bench_failure.sh" ;;
esac
# Only when named (NVL_TESTS="bench_busy"): the same on a busy cluster, with
# every kind of failure and the backlog's throughput (bench_busy.sh says how
# to run it: 3 racks, SlurmdTimeout 60)
case " ${NVL_TESTS:-} " in *" bench_busy "*)
    [ "${NVL_ACCOUNTING:-0}" = 1 ] || { "$HERE/cluster.sh" helper >/dev/null 2>&1 || true; }
    run_test "$HERE/bench_busy.sh" ;;
esac
# Only when named (NVL_TESTS="replay"): a short trace replayed on this
# cluster with nvlslice and with Slurm alone, against the simulator on the
# same trace, about 30 minutes
case " ${NVL_TESTS:-} " in *" replay "*)
    [ "${NVL_ACCOUNTING:-0}" = 1 ] || { "$HERE/cluster.sh" helper >/dev/null 2>&1 || true; }
    run_test "$HERE/replay.sh" ;;
esac
# A backup slurmctld: the same cluster started again with a second
# controller, a helper beside each; a planned switch and the primary's
# host failing in the middle of a repair (about 2 minutes)
# (by default on the host's Slurm only: the lease itself is tested on every
# tier by test_lease)
failover_default=""
[ -z "${NVL_SLURM:-}" ] && failover_default=test_failover
case " ${NVL_TESTS:-$failover_default} " in *" test_failover "*)
    if [ "${NVL_BACKUP_CTLD:-0}" != 1 ]; then
        echo "# the same cluster again, with a backup slurmctld"
        "$HERE/cluster.sh" kill-helper
        "$HERE/cluster.sh" down >/dev/null
        # (without accounting: each controller is in a network namespace of
        # its own, where the test's slurmdbd on localhost is not reached)
        export NVL_BACKUP_CTLD=1 NVL_ACCOUNTING=0
        if "$HERE/cluster.sh" up; then
            sed -i 's/ mode=gate$/ mode=auto/' "$NVL_CLUSTER_DIR/etc/plugstack.conf"
        else
            echo "not ok - the cluster with a backup slurmctld did not start"
            total_fail=$((total_fail + 1))
        fi
    fi
    if [ "$(scontrol ping 2>/dev/null | grep -c UP)" -gt 0 ] && "$HERE/cluster.sh" helper; then
        run_test "$HERE/test_failover.sh"
    else
        echo "not ok - test_failover.sh: no cluster or helper to run it on"
        total_fail=$((total_fail + 1))
    fi ;;
esac
"$HERE/cluster.sh" kill-helper
"$HERE/cluster.sh" kill-helper-b
[ "${NVL_KEEP_CLUSTER:-0}" = 1 ] || "$HERE/cluster.sh" down >/dev/null
echo "# cluster tests took $(( $(date +%s) - start )) s"
echo "cluster: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
