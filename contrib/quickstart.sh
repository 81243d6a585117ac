#!/bin/bash
# nvlslice quick start on Debian 12. Run from the source tree, as root or
# with sudo available:
#   contrib/quickstart.sh demo   install, build, and run the demo
#   contrib/quickstart.sh test   install, build, and run the tests
# Installs only Debian packages, builds out of tree in ./build.
set -euo pipefail
# A command that ends the script says so, with its line (errexit alone is
# silent); where errexit is off (set +e) a failure is the script's to handle.
set -E
trap 'rc=$?; [[ $- != *e* ]] || echo "quickstart.sh: stopped at line $LINENO: \"$BASH_COMMAND\" returned $rc" >&2' ERR

cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=${NVL_BUILD_DIR:-$SRC/build}
JOBS=${NVL_JOBS:-$(nproc)}

PACKAGES=(g++ make autoconf automake libtool pkg-config
          libslurm-dev libhwloc-dev libyaml-dev libfmt-dev catch2 gawk)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "==> installing Debian packages: ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

build() {
    if [ ! -x "$SRC/configure" ] || [ "$SRC/configure.ac" -nt "$SRC/configure" ]; then
        echo "==> autoreconf"
        (cd "$SRC" && autoreconf -fi >/dev/null 2>&1) || (cd "$SRC" && autoreconf -fi)
    fi
    mkdir -p "$BUILD"
    if [ ! -f "$BUILD/Makefile" ] || [ "$SRC/configure" -nt "$BUILD/Makefile" ]; then
        echo "==> configure"
        (cd "$BUILD" && "$SRC/configure" -q)
    fi
    echo "==> make -j$JOBS"
    make -C "$BUILD" -s -j"$JOBS"
}

demo() {
    local place="$BUILD/src/tools/nvl-place" map="$SRC/etc/nvlslice-map.yaml"
    echo
    echo "== nvlslice demo, part 1: a real Slurm cluster on this machine (2 racks x 18 nodes)"
    echo
    export NVL_CLUSTER_DIR=${NVL_CLUSTER_DIR:-/tmp/nvlslice-cluster}
    export SLURM_CONF=$NVL_CLUSTER_DIR/etc/slurm.conf
    export NVL_PLUGIN=$BUILD/plugins/spank/.libs/spank_nvlslice.so NVL_PLUGIN_ARGS=check_gpus=off
    export NVL_HELPER=$BUILD/src/nvlsliced/nvlsliced
    as_root env NVL_CLUSTER_DIR="$NVL_CLUSTER_DIR" NVL_PLUGIN="$NVL_PLUGIN" NVL_PLUGIN_ARGS="$NVL_PLUGIN_ARGS" \
        NVL_HELPER="$NVL_HELPER" "$SRC/tests/cluster/cluster.sh" up
    local log=$NVL_CLUSTER_DIR/log/nvlsliced.log out
    out=$(mktemp -d)
    cd "$out"
    # awaited, never slept on: each step waits for the state it shows
    await() { # await SECONDS COMMAND...: until COMMAND succeeds (polled every 0.1 s)
        local n=$(($1 * 10)); shift
        for _ in $(seq 1 "$n"); do "$@" && return 0; sleep 0.1; done
        return 1
    }
    await 30 scontrol show reservation nvlslice_spares >/dev/null 2>&1
    echo "-- spares reserved by nvlsliced (2 per rack):"
    sinfo -T
    echo
    echo "-- two small jobs land on nvl0003 and nvl0024; then a 32-node job asks for 2 slices of 16:"
    local p1 p2 j
    p1=$(sbatch --parsable -w nvl0003 -J small --wrap 'sleep 600')
    p2=$(sbatch --parsable -w nvl0024 -J small --wrap 'sleep 600')
    await 30 bash -c "[ \"\$(squeue -h -j $p1,$p2 -t R | wc -l)\" = 2 ]"
    j=$(sbatch --parsable -N 32 --nvl-slice=16 -J train -o "$out/train.out" \
        --wrap 'srun bash -c "echo \$SLURMD_NODENAME slice=\$NVL_SLICE_INDEX rank=\$NVL_SLICE_RANK rack=\$NVL_DOMAIN leader=\$NVL_SLICE_LEADER"; sleep 600')
    echo "   sbatch -N 32 --nvl-slice=16 train.sh  ->  job $j"
    await 30 bash -c "scontrol show job $j | grep -q 'AdminComment=nvlslice/1 waiting'"
    squeue -O "JobID:6,Name:8,State:10,Reason:14,NodeList:10,admin_comment:140"
    echo
    echo "-- each rack has 17 free nodes: 16 would fit only by taking a spare, so the job waits."
    echo "   The small jobs end:"
    scancel "$p1" "$p2"
    await 30 bash -c "[ \"\$(squeue -h -j $j -o %T)\" = RUNNING ]"
    squeue -O "JobID:6,Name:8,State:10,NodeList:28,admin_comment:110"
    # the 32 tasks' lines reach the output file within a few seconds
    await 30 bash -c "[ \"\$(grep -c slice= '$out/train.out' 2>/dev/null)\" -ge 32 ]"
    echo "   what the tasks see (4 of 32):"
    sort -V "$out/train.out" | sed -n '1p;16p;17p;32p' | sed 's/^/     /'
    echo
    echo "-- a GPU fails on nvl0005: scontrol update nodename=nvl0005 state=drain reason=\"gpu xid 79\""
    local t0 t1 before
    before=$(squeue -h -j "$j" -o %N)
    t0=$(date +%s.%N)
    scontrol update nodename=nvl0005 state=drain reason="gpu xid 79"
    for _ in $(seq 1 200); do
        case "$(squeue -h -j "$j" -o '%T %N')" in "RUNNING nvl[0001-0004,0006-"*) break ;; esac
        sleep 0.05
    done
    t1=$(date +%s.%N)
    squeue -O "JobID:6,Name:8,State:10,NodeList:36,admin_comment:110"
    echo "   running again on the rack's spare $(comm -13 <(scontrol show hostnames "$before" | sort) \
        <(scontrol show hostnames "$(squeue -h -j "$j" -o %N)" | sort) | paste -sd,) after $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"
    echo "   spares now: $(scontrol show reservation nvlslice_spares | sed -n 's/^ *Nodes=\([^ ]*\).*/\1/p')"
    echo
    echo "-- nvlsliced's log:"
    tail -n 8 "$log" | sed 's/^/   /'
    echo
    echo "-- its metrics (http://127.0.0.1:9817/metrics):"
    (exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) | grep -E '^nvlslice_(placements|repairs|cycle_seconds)' | sed 's/^/   /'
    scancel "$j"
    scontrol update nodename=nvl0005 state=resume
    cd "$SRC"
    rm -rf "$out"
    if [ "${NVL_KEEP_CLUSTER:-0}" = 1 ]; then
        echo; echo "The cluster keeps running: export SLURM_CONF=$SLURM_CONF; stop it with tests/cluster/cluster.sh down"
    else
        as_root env NVL_CLUSTER_DIR="$NVL_CLUSTER_DIR" "$SRC/tests/cluster/cluster.sh" down >/dev/null
    fi
    echo
    echo "== part 2: the engine on 128 NVL72 racks x 18 nodes ($map)"
    echo
    echo "-- a 64-node job as 4 slices of 16 on a cluster 30% busy with scattered small jobs:"
    "$place" --map "$map" --fill 0.30 --seed 7 --nodes 64 --nvl-slice 16
    echo
    echo "-- 24 nodes with --nvl-slice=auto: balanced 12 + 12, never 16 + 8:"
    "$place" --map "$map" --fill 0.30 --seed 7 --nodes 24 --nvl-slice auto
    echo
    echo "-- the same 64-node job when the cluster is 50% busy: no rack has 16 free besides its spares:"
    "$place" --map "$map" --fill 0.50 --seed 7 --nodes 64 --nvl-slice 16 || true
    echo
    echo "-- with --nvl-placement=prefer once its wait has passed: the fewest racks, marked split:"
    "$place" --map "$map" --fill 0.50 --seed 7 --nodes 64 --nvl-slice 16 --nvl-placement prefer --split
    echo
    echo "-- the placement engine and a whole helper cycle against one-scan baselines, 1,400 racks x 18 nodes:"
    "$BUILD/src/tools/nvl-bench" --decisions 5000 --baseline-decisions 500 --runs 3 --cycles 1
}

renice_tree() { # renice_tree PID NICENESS: PID and every process under it
    # (errexit holds here: a leaf's pgrep finds no child and fails)
    local all="$1" pids="$1" next p
    while [ -n "$pids" ]; do
        next=""
        for p in $pids; do next+=" $(pgrep -P "$p" || true)"; done
        pids=$(echo $next)
        all+=" $pids"
    done
    as_root renice -n "$2" -p $all > /dev/null 2>&1 || true
}

# Tools the tests use from Debian packages that are unpacked, not installed
# (no service starts, no dependencies pulled in): promtool from prometheus
# checks nvlsliced's metrics, hardening-check (a perl script) from
# devscripts checks the built binaries. Prints the tool's path, or nothing
# when it cannot be had.
fetch_tool() { # fetch_tool PACKAGE PATH-IN-PACKAGE
    local dir=/var/cache/nvlslice/$1
    if [ ! -x "$dir/$2" ]; then
        as_root mkdir -p "$dir"
        (cd "$dir" && { as_root apt-get download -qq "$1" >/dev/null 2>&1 ||
            { as_root apt-get update -qq && as_root apt-get download -qq "$1" >/dev/null 2>&1; }; }) &&
            as_root sh -c "dpkg-deb -x $dir/$1_*.deb $dir && rm -f $dir/$1_*.deb" || true
    fi
    if [ -x "$dir/$2" ]; then echo "$dir/$2"; fi
}

test_suite() {
    echo "==> unit tests (make check)"
    make -C "$BUILD" -s -j"$JOBS" check || { cat "$BUILD"/tests/unit/*.log 2>/dev/null | tail -50; exit 1; }
    local n
    n=$(sed -n 's/^All tests passed ([0-9]* assertions* in \([0-9]*\) test cases*).*/\1/p' "$BUILD"/tests/unit/nvl-unit.log)
    echo "unit: ${n:-0} passed, 0 failed"
    echo "==> hardened build (hardening-check, exported symbols)"
    local hc hp=0 hf=1
    hc=$(fetch_tool devscripts usr/bin/hardening-check)
    if [ -n "$hc" ]; then
        local out
        out=$(mktemp)
        "$SRC/tests/hardening.sh" "$hc" "$BUILD" | tee "$out" || true
        hp=$(sed -nE 's/^hardening: ([0-9]+) passed, ([0-9]+) failed$/\1/p' "$out")
        hf=$(sed -nE 's/^hardening: ([0-9]+) passed, ([0-9]+) failed$/\2/p' "$out")
        rm -f "$out"
    else
        echo "not ok - hardening-check (Debian's devscripts) could not be downloaded"
    fi
    echo "==> alert rules (contrib/prometheus) under promtool's rule tests, on recorded metrics"
    local rules_tool
    rules_tool=$(fetch_tool prometheus usr/bin/promtool)
    if [ -n "$rules_tool" ] && "$SRC/tests/prometheus/alerts.sh" "$rules_tool" "$SRC/tests/prometheus/recorded"; then
        echo "ok - every shipped alert fires where it should and nowhere else"
        hp=$(( ${hp:-0} + 1 ))
    else
        echo "not ok - the shipped alert rules (promtool: ${rules_tool:-could not be downloaded})"
        hf=$(( ${hf:-0} + 1 ))
    fi
    echo "==> the admin guide's step 3 (licenses into slurm.conf) on slurm.conf files as sites have them (tests/guide_licenses.sh)"
    if "$SRC/tests/guide_licenses.sh" > "$BUILD/guide_licenses.log" 2>&1; then
        echo "ok - the guide's licenses step: $(tail -1 "$BUILD/guide_licenses.log")"
        hp=$(( ${hp:-0} + 1 ))
    else
        grep '^not ok' "$BUILD/guide_licenses.log"
        echo "not ok - the guide's licenses step: $(tail -1 "$BUILD/guide_licenses.log")"
        hf=$(( ${hf:-0} + 1 ))
    fi
    echo "==> the figures in README and doc/figures.txt, as tests/cluster/figures.sh makes them from the kept outputs"
    if "$SRC/tests/cluster/figures.sh" --check; then
        echo "ok - the figures in README and doc/figures.txt are the kept outputs' (tests/cluster/*.out), not typed by hand"
        hp=$(( ${hp:-0} + 1 ))
    else
        echo "not ok - README or doc/figures.txt differ from the kept outputs in tests/cluster/*.out"
        hf=$(( ${hf:-0} + 1 ))
    fi
    echo "==> the simulator against the busy bench: nvl-sim on the bench's cluster and load (tests/cluster/sim_check.sh)"
    if "$SRC/tests/cluster/sim_check.sh" "$BUILD/src/tools/nvl-sim" --check; then
        echo "ok - nvl-sim's per-failure times agree with the bench's, as tests/cluster/sim_check.out keeps them"
        hp=$(( ${hp:-0} + 1 ))
    else
        echo "not ok - nvl-sim's per-failure times and tests/cluster/sim_check.out (or the bench's)"
        hf=$(( ${hf:-0} + 1 ))
    fi
    # Real-cluster tiers, each on stock Debian daemons: Slurm 22.05 from
    # Debian 12 (gate mode), Slurm 26.05 from a Debian sid root and Slurm
    # 24.11 from a Debian 13 root, both with topology/block (native mode);
    # the roots are built once and cached (tests/cluster/debian13-root.sh).
    # 22.05 and 26.05 run the whole suite and end on the same cluster
    # started again with real accounting (MariaDB, slurmdbd:
    # tests/cluster/test_accounting.sh). 24.11 runs native mode's own
    # scripts (test_native, test_helper: placement, repairs, moves, the
    # baselines); the plugin-alone, rules, load and accounting scripts
    # drive the same native code there as on 26.05 and are not repeated.
    # NVL_TIERS="22.05" runs the first only.
    local tiers=${NVL_TIERS:-22.05 26.05 24.11} tier out rc=0 trc cp cf tp=${hp:-0} tf=${hf:-1} promtool t0 roots="" pre
    promtool=$(fetch_tool prometheus usr/bin/promtool)
    # The roots' builds and unit tests run beside the 22.05 tier (niced, so
    # that they do not starve its slurmctld), one root after the other, so
    # that each root tier only tests. Once the 22.05 tier is done they are
    # niced no more: on a machine busy with other work at the normal
    # priority (a build in another terminal) a niced build gets a tenth of
    # a core and would not finish. The timeout catches a hung build.
    for tier in $tiers; do [ "$tier" = 22.05 ] || roots+=" $tier"; done
    pre=$(mktemp -d)
    local prepid=""
    if [ -n "$roots" ]; then
        # sudo asks no password in the background: its ticket is renewed here
        [ "$(id -u)" -eq 0 ] || sudo -v
        ( set +e
          for tier in $roots; do
              if [ "$(id -u)" -eq 0 ]; then run=(); else run=(sudo -n); fi
              "${run[@]}" env NVL_SLURM="$tier" NVL_ROOT_STEP=build timeout 3600 nice -n 10 \
                  "$SRC/tests/cluster/run.sh" > "$pre/$tier.log" 2>&1
              # written whole, then renamed: the tier never reads half of it
              echo $? > "$pre/$tier.rc.new" && mv "$pre/$tier.rc.new" "$pre/$tier.rc"
          done ) &
        prepid=$!
    fi
    # tier_run TIER OUT: the tier's cluster tests, their output into OUT and
    # their exit status into OUT.rc
    tier_run() {
        local tier=$1 out=$2
        case "$tier" in
        22.05) as_root env NVL_PROMTOOL="$promtool" NVL_ACCOUNTING=after "$SRC/tests/cluster/run.sh" "$BUILD" ;;
        24.11) as_root env NVL_SLURM="$tier" NVL_ROOT_STEP=test NVL_OWN_NET="${NVL_OWN_NET:-0}" \
                   NVL_TESTS="${NVL_TESTS:-test_native test_helper test_rules lend_depth busy_repair}" "$SRC/tests/cluster/run.sh" ;;
        *) as_root env NVL_SLURM="$tier" NVL_ROOT_STEP=test NVL_ACCOUNTING=after "$SRC/tests/cluster/run.sh" ;;
        esac > "$out" 2>&1
        echo $? > "$out.rc"
        date +%s > "$out.end"
    }
    # tier_count TIER OUT T0: its closing line, added to the totals
    tier_count() {
        local tier=$1 out=$2 t0=$3 trc t1
        trc=$(cat "$out.rc" 2>/dev/null || echo 1)
        t1=$(cat "$out.end" 2>/dev/null || date +%s)
        cp=$(sed -nE 's/^cluster: ([0-9]+) passed, ([0-9]+) failed$/\1/p' "$out" | tail -1)
        cf=$(sed -nE 's/^cluster: ([0-9]+) passed, ([0-9]+) failed$/\2/p' "$out" | tail -1)
        echo "tier $tier: ${cp:-0} passed, ${cf:-1} failed ($(( t1 - t0 )) s)"
        tp=$((tp + ${cp:-0})); tf=$((tf + ${cf:-1}))
        [ "$trc" -eq 0 ] || rc=$trc
    }
    # The 24.11 tier runs beside the 26.05 one, its cluster in a network
    # namespace of its own (run.sh's NVL_OWN_NET): both mostly wait on
    # their clusters, and one after the other they took 30 of the
    # command's minutes. Its output follows the 26.05 tier's.
    local beside="" beside_out="$pre/beside.out" beside_t0=0 beside_pid=""
    [[ " $tiers " = *" 26.05 "* ]] && [[ " $tiers " = *" 24.11 "* ]] && beside=24.11
    for tier in $tiers; do
        # (run beside 26.05 already; or its turn comes first: alone then)
        if [ "$tier" = "$beside" ]; then [ -n "$beside_pid" ] && continue; beside=""; fi
        echo "==> cluster tests on Slurm $tier (real slurmctld + slurmd in network namespaces)"
        out=$(mktemp)
        t0=$(date +%s)
        if [ "$tier" != 22.05 ]; then
            # its build, made beside the 22.05 tier: every root's build is
            # awaited before the first root tier, so that none runs beside
            # a root tier (a build there starved slurmctld 10 s, 26.05)
            # (the builder gone without a word counts as a failed build)
            local r
            [ -n "$prepid" ] && renice_tree "$prepid" 0
            for r in $roots; do
                while [ ! -f "$pre/$r.rc" ]; do
                    kill -0 "$prepid" 2>/dev/null || { [ -f "$pre/$r.rc" ] || echo 1 > "$pre/$r.rc"; break; }
                    sleep 2
                done
            done
            { grep -v '^#' "$pre/$tier.log" 2>/dev/null || true; } | tail -30
            if [ "$(cat "$pre/$tier.rc")" != 0 ]; then
                echo "tier $tier: 0 passed, 1 failed (its build or unit tests in the root failed)"
                tf=$((tf + 1)); rc=1; rm -f "$out"; continue
            fi
            if [ "$tier" = 26.05 ] && [ -n "$beside" ]; then
                if [ "$(cat "$pre/$beside.rc")" = 0 ]; then
                    echo "# the $beside tier runs beside this one, its cluster in a network namespace of its own"
                    beside_t0=$(date +%s)
                    set +e
                    NVL_OWN_NET=1 tier_run "$beside" "$beside_out" &
                    beside_pid=$!
                    set -e
                fi
            fi
        fi
        set +e
        tier_run "$tier" "$out" &
        tail --pid=$! -n +1 -f "$out" 2>/dev/null
        wait $!
        tier_count "$tier" "$out" "$t0"
        set -e
        rm -f "$out" "$out.rc" "$out.end"
        if [ "$tier" = 26.05 ] && [ -n "$beside_pid" ]; then
            echo "==> cluster tests on Slurm $beside (real slurmctld + slurmd in network namespaces; run beside the 26.05 tier)"
            set +e
            wait "$beside_pid"
            cat "$beside_out"
            tier_count "$beside" "$beside_out" "$beside_t0"
            set -e
        fi
    done
    wait
    rm -rf "$pre"
    [ "${hf:-1}" -eq 0 ] || rc=1
    # One closing line for the whole run: test cases, build and cluster checks.
    echo "tests: $(( ${n:-0} + tp )) passed, $tf failed"
    return "$rc"
}

case "${1:-}" in
    demo) install_packages; build; demo ;;
    test) install_packages; build; test_suite ;;
    *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
