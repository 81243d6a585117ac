#!/bin/bash
# nvlslice's scale tier: a real Slurm 22.05 slurmctld with 2,304 emulated
# nodes (128 racks x 18) behind one front-end slurmd, nvlsliced running
# against it, and the helper's mean cycle time measured in three states:
# idle, one running 2,048-node slice job, and that job plus 200 pending
# slice jobs that cannot start.
#
#   tests/scale/frontend.sh BUILD     build Slurm once (cached), start, measure,
#                                     stop; BUILD is the project's build dir
#   tests/scale/frontend.sh down      stop what an earlier run left running
#
# Settings (environment):
#   NVL_HELPER              nvlsliced to run (BUILD/src/nvlsliced/nvlsliced)
#   NVL_SCALE_CACHE         front-end Slurm build (/var/cache/nvlslice/slurm-frontend)
#   NVL_SCALE_DIR           state, configs, logs (/tmp/nvlslice-scale)
#   NVL_SCALE_PORT          slurmctld port; slurmd uses the next one (6917)
#   NVL_SCALE_METRICS_PORT  helper metrics port (first free from 9917)
#   NVL_SCALE_SECONDS       length of each measured interval (45)
#   NVL_SCALE_PENDING       pending slice jobs in the third state (200)
#   NVL_SCALE_CYCLE_MS      helper cycle_ms (1000, the shipped default)
#   NVL_SCALE_KEEP=1        leave everything running after measuring
#
# Debian's slurm-wlm-emulator binaries are not front-end builds, so Slurm is
# built from Debian's own source with --enable-front-end (2-4 minutes on two
# cores, once). Must run as root. Never touches tests/cluster/cluster.sh's
# cluster: own state dir, munged socket, ports, hostnames and PID files.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
CACHE=${NVL_SCALE_CACHE:-/var/cache/nvlslice/slurm-frontend}
DIR=${NVL_SCALE_DIR:-/tmp/nvlslice-scale}
CTL_PORT=${NVL_SCALE_PORT:-6917}
SLURMD_PORT=$((CTL_PORT + 1))
INTERVAL=${NVL_SCALE_SECONDS:-45}
PENDING=${NVL_SCALE_PENDING:-200}
CYCLE_MS=${NVL_SCALE_CYCLE_MS:-1000}
KEEP=${NVL_SCALE_KEEP:-0}
RACKS=128
PER=18
SPARES=2
NODES=$((RACKS * PER))
SLICE=$((PER - SPARES))
BIG=$((RACKS * SLICE))
SLURM_UPSTREAM=22.05.8
PREFIX=$CACHE/prefix
CTL_NAME=nvlscalectl
FE_NAME=nvlscalefe
CONF=$DIR/etc/slurm.conf
CLIENT_CONF=$DIR/etc/slurm-client.conf
SRC_LIST=/etc/apt/sources.list.d/nvlslice-deb-src.list

die() { echo "scale: error: $*" >&2; exit 1; }
log() { echo "scale: $*"; }

# --- stopping (by PID file only) ---------------------------------------------

# A live process whose command line names $2 (guards against PID reuse); a
# zombie left unreaped by init counts as dead.
alive() {
    local pid
    [ -f "$1" ] || return 1
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    awk '{ exit ($3 == "Z") ? 1 : 0 }' "/proc/$pid/stat" 2>/dev/null || return 1
    [ -z "${2:-}" ] && return 0
    local cmd
    cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline") || return 1
    [[ $cmd == *"$2"* ]]
}

# SIGTERM, up to 10 s, then SIGKILL; only if the PID still runs $2.
stop_pidfile() {
    local f=$1 what=$2 pid
    if alive "$f" "$what"; then
        pid=$(cat "$f")
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            alive "$f" "$what" || break
            sleep 0.1
        done
        alive "$f" "$what" && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
}

down() {
    local run=$DIR/run
    [ -d "$run" ] || { log "nothing to stop in $DIR"; return 0; }
    stop_pidfile "$run/nvlsliced.pid" nvlsliced
    rm -f "$run/nvlsliced.lock"
    # The front end runs in its own PID namespace whose init is slurmd: when
    # it goes, the kernel kills every job step and task it started.
    stop_pidfile "$run/slurmd.init.pid" slurmd
    stop_pidfile "$run/slurmd.unshare.pid" unshare
    stop_pidfile "$run/slurmctld.pid" slurmctld
    stop_pidfile "$run/munged.pid" munged
    log "down ($DIR)"
}

# --- the one-time front-end build ----------------------------------------------

need_pkgs() {
    local p missing=()
    for p in "$@"; do
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# deb-src lines for this release's suites, from the host's own apt sources
# (one-line and deb822 files), so the source comes from the mirror the host
# already trusts.
deb_src_lines() {
    local codename f
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] && [ "$f" != "$SRC_LIST" ] || continue
        case "$f" in
        *.sources)
            awk -v cn="$codename" '
            function flush(   i, j, k, nt, nu, ns, t, u, s, opt, isdeb) {
                if (types != "" && tolower(enabled) != "no") {
                    nt = split(types, t, /[ \t]+/)
                    for (k = 1; k <= nt; k++) if (t[k] == "deb") isdeb = 1
                    # an inline key block cannot go on a one-line entry
                    opt = (signed ~ /^\//) ? "[signed-by=" signed "] " : ""
                    nu = split(uris, u, /[ \t]+/); ns = split(suites, s, /[ \t]+/)
                    if (isdeb)
                        for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
                            if (u[i] != "" && (s[j] == cn || index(s[j], cn "-") == 1))
                                print "deb-src " opt u[i] " " s[j] " " comps
                }
                types = uris = suites = comps = signed = enabled = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            /^[ \t]/   { next }
            { key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
              if (key == "types") types = val; else if (key == "uris") uris = val
              else if (key == "suites") suites = val; else if (key == "components") comps = val
              else if (key == "signed-by") signed = val; else if (key == "enabled") enabled = val }
            END { flush() }' "$f" ;;
        *)
            awk -v cn="$codename" '
            $1 == "deb" {
                k = 2
                if ($2 ~ /^\[/) while (k <= NF && $k !~ /\]$/) k++
                suite = $(k + 2)
                if (suite == cn || index(suite, cn "-") == 1) { $1 = "deb-src"; print }
            }' "$f" ;;
        esac
    done
}

# (awk reads all of apt-cache's output: an early grep -q exit would fail the
# pipeline under pipefail.)
have_src() {
    apt-cache showsrc slurm-wlm 2>/dev/null | awk -v v="$SLURM_UPSTREAM-" '$1 == "Version:" && index($2, v) == 1 { f = 1 } END { exit !f }'
}

ensure_deb_src() {
    have_src && return 0
    local lines
    lines=$(deb_src_lines | sort -u)
    [ -n "$lines" ] || die "no Debian entries for this release in the host's apt sources to derive deb-src from"
    log "adding deb-src entries ($SRC_LIST) and updating apt"
    { echo "# Added by nvlslice tests/scale/frontend.sh: sources for the front-end Slurm build"; echo "$lines"; } > "$SRC_LIST"
    apt-get update -qq
    have_src ||
        die "apt offers no slurm-wlm $SLURM_UPSTREAM source (see $SRC_LIST)"
}

build_slurm() {
    local stamp=$PREFIX/.nvlslice-frontend-build
    if [ -f "$stamp" ] && [ -x "$PREFIX/sbin/slurmctld" ]; then
        log "front-end Slurm: $(cat "$stamp")"
        return 0
    fi
    mkdir -p "$CACHE"
    exec 8>"$CACHE/.lock"
    if ! flock -n 8; then
        log "waiting for another run's build of $PREFIX"
        flock 8
    fi
    if [ -f "$stamp" ] && [ -x "$PREFIX/sbin/slurmctld" ]; then
        exec 8>&-
        log "front-end Slurm: $(cat "$stamp")"
        return 0
    fi
    need_pkgs dpkg-dev gcc make pkgconf libmunge-dev munge
    ensure_deb_src
    local t0 work=$CACHE/src blog=$CACHE/build.log ver tree step
    t0=$(date +%s)
    rm -rf "$work" "$PREFIX"
    mkdir -p "$work"
    log "fetching Debian's slurm-wlm source"
    (cd "$work" && apt-get source -qq slurm-wlm) >"$blog" 2>&1 || { tail -20 "$blog" >&2; die "apt-get source slurm-wlm failed"; }
    tree=$(find "$work" -maxdepth 1 -type d -name "slurm-wlm-$SLURM_UPSTREAM" | head -1)
    [ -n "$tree" ] || die "apt-get source did not give slurm-wlm $SLURM_UPSTREAM (see $work)"
    ver=$(cd "$tree" && dpkg-parsechangelog -S Version)

    # Front-end builds crash slurmctld at the end of every batch job: the
    # batch step's epilog-complete reaches _step_dealloc_lps, which tests
    # bits of a step_node_bitmap that a front-end batch step never gets.
    local f=$tree/src/slurmctld/step_mgr.c
    sed -i '/^static void _step_dealloc_lps(step_record_t \*step_ptr)$/,/^}/{
/^\tif (step_ptr->step_layout == NULL)\t\/\* batch step \*\/$/{
n
a\
\tif (!step_ptr->step_node_bitmap)\t/* nvlslice scale tier: front-end batch step */\
\t\treturn;
}
}' "$f"
    [ "$(grep -c 'nvlslice scale tier: front-end batch step' "$f")" -eq 1 ] ||
        die "could not apply the front-end guard to $f (source layout changed?)"

    log "building slurm-wlm $ver with --enable-front-end into $PREFIX (several minutes; log $blog)"
    # Only what a controller, one slurmd and the client commands need: every
    # optional plugin off, no docs, no static libraries.
    for step in configure make install; do
        case $step in
        configure)
            (cd "$tree" && ./configure --prefix="$PREFIX" --sysconfdir="$PREFIX/etc" \
                --enable-front-end --disable-static --disable-debug --disable-slurmrestd --disable-x11 \
                --without-hdf5 --without-rrdtool --without-pmix --without-ucx --without-freeipmi \
                --without-nvml --without-rsmi --without-hwloc --without-lz4 --without-readline \
                --without-jwt --without-json --without-yaml --without-http-parser --without-bpf \
                --without-ofed --without-netloc --without-datawarp --with-oneapi=no) >>"$blog" 2>&1 ;;
        make) make -C "$tree/src" -j"$(nproc)" >>"$blog" 2>&1 ;;
        install) make -C "$tree/src" install >>"$blog" 2>&1 ;;
        esac || { tail -30 "$blog" >&2; die "Slurm $step failed (full log: $blog)"; }
    done
    grep -q '#define HAVE_FRONT_END 1' "$tree/config.h" || die "configure did not enable the front end"
    for f in sbin/slurmctld sbin/slurmd sbin/slurmstepd bin/sbatch bin/squeue bin/sinfo bin/scontrol; do
        [ -x "$PREFIX/$f" ] || die "the build did not install $f"
    done
    case $(ldd "$PREFIX/sbin/slurmctld") in *"not found"*) die "slurmctld misses libraries: ldd $PREFIX/sbin/slurmctld" ;; esac
    rm -rf "$work"
    echo "slurm-wlm $ver, --enable-front-end, built $(date -u +%FT%TZ) in $(($(date +%s) - t0)) s" > "$stamp"
    log "built in $(($(date +%s) - t0)) s"
    exec 8>&-
}

# --- the cluster -------------------------------------------------------------

port_free() { [ -z "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; }

pick_metrics_port() {
    if [ -n "${NVL_SCALE_METRICS_PORT:-}" ]; then
        [ "$NVL_SCALE_METRICS_PORT" != 9817 ] || die "metrics port 9817 belongs to the test cluster's helper"
        port_free "$NVL_SCALE_METRICS_PORT" || die "metrics port $NVL_SCALE_METRICS_PORT is in use"
        echo "$NVL_SCALE_METRICS_PORT"
        return
    fi
    local p
    for ((p = 9917; p < 9999; p++)); do
        port_free "$p" && { echo "$p"; return; }
    done
    die "no free metrics port in 9917..9998"
}

write_confs() {
    local r lo hi nodes=""
    for ((r = 1; r <= RACKS; r++)); do
        lo=$(((r - 1) * PER + 1)); hi=$((r * PER))
        nodes+=$(printf 'NodeName=nvl[%04d-%04d] CPUs=1 RealMemory=500 Features=rack%03d State=UNKNOWN' "$lo" "$hi" "$r")$'\n'
    done
    cat > "$CONF" <<CONF
# Written by tests/scale/frontend.sh: nvlslice's scale tier (front-end Slurm).
ClusterName=nvlscale
SlurmctldHost=$CTL_NAME(127.0.0.1)
SlurmctldPort=$CTL_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket.2,cred_expire=30
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=10
JobRequeue=1
UnkillableStepTimeout=120
MinJobAge=600
SchedulerParameters=sched_interval=5,bf_interval=5
PriorityType=priority/multifactor
PriorityWeightAge=1000
Licenses=nvlslice_gate:1
MailProg=/bin/true
PlugStackConfig=$DIR/etc/plugstack.conf
FrontendName=$FE_NAME FrontendAddr=127.0.0.1 Port=$SLURMD_PORT
$nodes
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
CONF
    # nvlsliced links Debian's libslurm, which is not a front-end build and
    # stops at a FrontendName line; it only talks to slurmctld anyway.
    grep -v '^FrontendName=' "$CONF" > "$CLIENT_CONF"
    : > "$DIR/etc/plugstack.conf"
    "$SRC/contrib/gen-map.sh" "$RACKS" "$PER" nvl rack "$SPARES" > "$DIR/etc/nvlslice-map.yaml"
}

start_munge() {
    [ -f "$DIR/munge/munge.key" ] || {
        dd if=/dev/urandom bs=1024 count=1 of="$DIR/munge/munge.key" 2>/dev/null
        chmod 400 "$DIR/munge/munge.key"
    }
    munged --socket="$DIR/munge/munge.socket.2" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" ||
        die "munged did not start (log: $DIR/log/munged.log)"
}

start_slurm() {
    # slurmctld checks its own hostname against SlurmctldHost. Daemons run in
    # our own directory, not the caller's (which may go away), and a core
    # dump lands there.
    (cd "$DIR/run" && exec setsid unshare --uts sh -c "hostname $CTL_NAME && exec '$PREFIX/sbin/slurmctld' -D -i -f '$CONF'") \
        >"$DIR/log/slurmctld.stdout" 2>&1 < /dev/null &
    echo $! > "$DIR/run/slurmctld.pid"
    mkdir -p "$DIR/spool/$FE_NAME"
    # The front end gets its own PID namespace (and /proc for proctrack), so
    # stopping it can never leave a job's tasks behind on this host.
    (cd "$DIR/run" && exec setsid unshare --uts --mount --propagation private --pid --fork --mount-proc \
        sh -c "hostname $FE_NAME && exec '$PREFIX/sbin/slurmd' -D -f '$CONF'") \
        >"$DIR/log/slurmd.stdout" 2>&1 < /dev/null &
    local u=$! child=""
    echo "$u" > "$DIR/run/slurmd.unshare.pid"
    for _ in $(seq 1 50); do
        child=$(cat /proc/"$u"/task/*/children 2>/dev/null | awk '{print $1; exit}')
        [ -n "$child" ] && break
        sleep 0.1
    done
    [ -n "$child" ] || die "the front-end slurmd did not start (log: $DIR/log/slurmd.stdout)"
    echo "$child" > "$DIR/run/slurmd.init.pid"
}

check_daemons() {
    alive "$DIR/run/slurmctld.pid" slurmctld || { tail -15 "$DIR/log/slurmctld.log" "$DIR/log/slurmctld.stdout" >&2 2>/dev/null || true; die "slurmctld is not running ($1)"; }
    alive "$DIR/run/slurmd.init.pid" slurmd || { tail -15 "$DIR/log/slurmd.log" "$DIR/log/slurmd.stdout" >&2 2>/dev/null || true; die "the front-end slurmd is not running ($1)"; }
    if [ -f "$DIR/run/nvlsliced.pid" ]; then
        alive "$DIR/run/nvlsliced.pid" nvlsliced || { tail -15 "$DIR/log/nvlsliced.log" >&2 || true; die "nvlsliced is not running ($1)"; }
    fi
}

wait_idle() {
    local deadline=$(($(date +%s) + 120)) idle=0
    while [ "$(date +%s)" -lt "$deadline" ]; do
        check_daemons "waiting for idle nodes"
        # exact states: "idle", not idle+drain or idle*
        idle=$("$PREFIX/bin/sinfo" -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
        [ "$idle" -eq "$NODES" ] && return 0
        sleep 0.5
    done
    die "only $idle of $NODES nodes idle after 120 s (log: $DIR/log/slurmctld.log)"
}

# Front-end builds without the guard lose slurmctld when a batch job ends:
# prove this build survives one before measuring anything.
smoke_job() {
    local id st="" deadline=$(($(date +%s) + 60))
    id=$("$PREFIX/bin/sbatch" --parsable -N 1 -J nvlscale-smoke -o /dev/null --chdir=/ --wrap true | cut -d';' -f1) ||
        die "sbatch of a 1-node smoke job failed"
    while [ "$(date +%s)" -lt "$deadline" ]; do
        alive "$DIR/run/slurmctld.pid" slurmctld ||
            die "slurmctld died when batch job $id ended (is the front-end guard in $PREFIX? log: $DIR/log/slurmctld.log)"
        st=$("$PREFIX/bin/squeue" -h -t all -j "$id" -O State 2>/dev/null | sed 's/[[:space:]]*$//')
        [ "$st" = COMPLETED ] && break
        sleep 0.5
    done
    [ "$st" = COMPLETED ] || die "smoke job $id is ${st:-gone}, not COMPLETED, after 60 s"
    sleep 1 # epilog-complete, where the unguarded build crashes, comes just after
    check_daemons "after smoke job $id ended"
    wait_idle
}

start_helper() {
    cat > "$DIR/etc/nvlslice.yaml" <<HCONF
# nvlsliced configuration for the scale tier (see etc/nvlslice.yaml)
map: $DIR/etc/nvlslice-map.yaml
cycle_ms: $CYCLE_MS
lock_file: $DIR/run/nvlsliced.lock
metrics_listen: 127.0.0.1:$MPORT
reservation: nvlslice_spares
HCONF
    (cd "$DIR/run" && SLURM_CONF=$CLIENT_CONF exec setsid "$HELPER" --config "$DIR/etc/nvlslice.yaml") \
        >>"$DIR/log/nvlsliced.log" 2>&1 < /dev/null &
    echo $! > "$DIR/run/nvlsliced.pid"
    for _ in $(seq 1 100); do
        grep -q "nvlsliced: started" "$DIR/log/nvlsliced.log" 2>/dev/null && metrics > /dev/null 2>&1 && return 0
        alive "$DIR/run/nvlsliced.pid" nvlsliced || break
        sleep 0.1
    done
    tail -10 "$DIR/log/nvlsliced.log" >&2 || true
    die "nvlsliced did not start or serve metrics on 127.0.0.1:$MPORT"
}

# --- jobs and measurements ---------------------------------------------------

# Exactly what the SPANK plugin writes for --nvl-slice (src/lib/io/slice_job.cpp),
# behind the same gate license (nvlsliced keeps the reservation that holds it).
tag() { echo "nvlslice/1 nodes=$1 slice=$2 count=$(($1 / $2)) auto=0 placement=strict checkpointable=0"; }

submit() { # NODES SLICE NAME
    "$PREFIX/bin/sbatch" --parsable -N "$1" -J "$3" -L nvlslice_gate:1 --exclusive --comment "$(tag "$1" "$2")" \
        -o /dev/null --chdir=/ --wrap 'sleep 100000' | cut -d';' -f1
}

metrics() { curl -sf --max-time 5 "http://127.0.0.1:$MPORT/metrics"; }

# "SUM COUNT ERRORS" of the helper's cycle summary, now.
snapshot() {
    metrics | awk '$1 == "nvlslice_cycle_seconds_sum" { s = $2 } $1 == "nvlslice_cycle_seconds_count" { c = $2 }
                   $1 == "nvlslice_cycle_errors_total" { e = $2 } END { if (s == "" || c == "") exit 1; print s, c, e + 0 }' ||
        die "cannot read nvlslice_cycle_seconds from 127.0.0.1:$MPORT/metrics"
}

ROWS=()
measure() { # LABEL
    local a b
    a=$(snapshot)
    log "measuring \"$1\" for $INTERVAL s"
    sleep "$INTERVAL"
    check_daemons "while measuring \"$1\""
    b=$(snapshot)
    ROWS+=("$(awk -v l="$1" -v a="$a" -v b="$b" 'BEGIN {
        split(a, x, " "); split(b, y, " "); n = y[2] - x[2]
        if (n <= 0) { printf "%-40s %7d %14s %7d", l, 0, "no cycles", y[3] - x[3]; exit }
        printf "%-40s %7d %14.3f %7d", l, n, (y[1] - x[1]) / n, y[3] - x[3] }')")
    log "${ROWS[-1]}"
}

job_field() { "$PREFIX/bin/squeue" -h -j "$1" -O "$2" 2>/dev/null | sed 's/[[:space:]]*$//'; }

wait_running() { # JOB NODES TIMEOUT
    local deadline=$(($(date +%s) + $3)) st=""
    while [ "$(date +%s)" -lt "$deadline" ]; do
        check_daemons "waiting for job $1 to run"
        st=$(job_field "$1" State)
        [ "$st" = RUNNING ] && break
        sleep 0.5
    done
    [ "$st" = RUNNING ] || {
        "$PREFIX/bin/squeue" -j "$1" -O jobid,state,reason,admin_comment:200 >&2 || true
        tail -10 "$DIR/log/nvlsliced.log" >&2 || true
        die "job $1 is $st, not RUNNING, after $3 s"
    }
    [ "$(job_field "$1" NumNodes)" = "$2" ] || die "job $1 runs on $(job_field "$1" NumNodes) nodes, not $2"
}

# Waits until the helper has written a record on each of these jobs.
wait_recorded() { # TIMEOUT JOB...
    local deadline=$(($(date +%s) + $1)) left
    shift
    while :; do
        check_daemons "waiting for the helper to see the pending jobs"
        left=$("$PREFIX/bin/squeue" -h -O jobid:12,admin_comment:40 -j "$(IFS=,; echo "$*")" 2>/dev/null |
            awk '$2 !~ /^nvlslice\//' | wc -l)
        [ "$left" -eq 0 ] && return 0
        [ "$(date +%s)" -lt "$deadline" ] || die "$left pending jobs still without a helper record after the wait"
        sleep 1
    done
}

run() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (daemons in their own namespaces, package installs)"
    [[ $CTL_PORT =~ ^[0-9]+$ ]] || die "NVL_SCALE_PORT must be a port number"
    case $CTL_PORT in 6816 | 6817 | 6818) die "ports 6817/6818 belong to the test cluster (tests/cluster/cluster.sh)" ;; esac
    [ "$(readlink -m "$DIR")" != /tmp/nvlslice-cluster ] || die "NVL_SCALE_DIR must not be the test cluster's directory"
    HELPER=${NVL_HELPER:-${BUILD:+$BUILD/src/nvlsliced/nvlsliced}}
    [ -n "$HELPER" ] || die "usage: $0 BUILD_DIR | down (or set NVL_HELPER)"
    [ -x "$HELPER" ] || die "no nvlsliced at $HELPER (build the project first)"
    HELPER=$(readlink -f "$HELPER")
    [[ $INTERVAL =~ ^[0-9]+$ ]] && [ "$INTERVAL" -ge 5 ] || die "NVL_SCALE_SECONDS must be at least 5"
    need_pkgs munge curl iproute2 util-linux

    local f
    for f in nvlsliced slurmd.init slurmctld munged; do
        ! alive "$DIR/run/$f.pid" || die "a scale cluster from $DIR is still running (NVL_SCALE_KEEP=1?): stop it with $0 down"
    done
    build_slurm
    port_free "$CTL_PORT" || die "port $CTL_PORT is in use (set NVL_SCALE_PORT)"
    port_free "$SLURMD_PORT" || die "port $SLURMD_PORT is in use (set NVL_SCALE_PORT)"
    MPORT=$(pick_metrics_port)

    rm -rf "${DIR:?}/state" "${DIR:?}/spool" "${DIR:?}/log" "${DIR:?}/etc"
    mkdir -p "$DIR"/{etc,munge,state,spool,log,run}
    # munged refuses a socket directory others cannot search (rather than
    # overriding its checks with --force)
    chmod 755 "$DIR/munge"
    [ "$KEEP" = 1 ] || trap 'down' EXIT
    trap 'exit 130' INT TERM HUP
    export SLURM_CONF=$CONF

    write_confs
    start_munge
    local t0 t1
    t0=$(date +%s.%N)
    start_slurm
    wait_idle
    t1=$(date +%s.%N)
    log "$NODES nodes idle ($RACKS racks x $PER, one front end) $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after start"
    smoke_job
    log "a batch job ran and ended; slurmctld survived it"
    start_helper
    log "nvlsliced running, metrics on 127.0.0.1:$MPORT"
    sleep 3 # let the helper create its spare reservation before the first interval

    measure "idle"

    local big
    big=$(submit "$BIG" "$SLICE" nvlscale-big) || die "sbatch of the $BIG-node slice job failed"
    t0=$(date +%s.%N)
    wait_running "$big" "$BIG" 180
    t1=$(date +%s.%N)
    log "job $big ($BIG nodes, $RACKS slices of $SLICE) placed and RUNNING $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after submission"
    measure "one running $BIG-node slice job"

    local ids=() i id
    for ((i = 1; i <= PENDING; i++)); do
        id=$(submit "$SLICE" "$SLICE" nvlscale-pend) || die "sbatch of pending job $i failed"
        ids+=("$id")
    done
    log "submitted $PENDING pending $SLICE-node slice jobs (${ids[0]}..${ids[-1]})"
    wait_recorded 180 "${ids[@]}"
    [ "$(job_field "$big" State)" = RUNNING ] || die "job $big stopped running"
    local running
    running=$("$PREFIX/bin/squeue" -h -t RUNNING -o %i | wc -l)
    [ "$running" -eq 1 ] || die "$running jobs run; expected only job $big (the cluster is full)"
    measure "plus $PENDING pending $SLICE-node slice jobs"
    [ "$(job_field "$big" State)" = RUNNING ] || die "job $big stopped running"

    echo
    printf '%-40s %7s %14s %7s\n' "state (nvlsliced, $RACKS racks x $PER nodes)" cycles "mean cycle (s)" errors
    printf '%s\n' "${ROWS[@]}"
    echo "($INTERVAL s per state, cycle_ms $CYCLE_MS; delta nvlslice_cycle_seconds_sum / delta _count)"
    echo
    if [ "$KEEP" = 1 ]; then
        log "left running: export SLURM_CONF=$CONF PATH=$PREFIX/bin:\$PATH; stop with: $0 down"
    fi
}

case "${1:-}" in
    down) down ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) BUILD=${1:-}; run ;;
esac
