# Shared by the cluster tests: assertions that count, and Slurm helpers.
# Every test prints "ok - name" or "not ok - name" with what was seen.
PASS=${PASS:-0}
FAIL=${FAIL:-0}
# The programs under test: the build tree's (BUILD_DIR), or as installed
# from the packages (run.sh with NVL_INSTALLED=1 sets them).
NVL_TOPO=${NVL_TOPO:-${BUILD_DIR:-}/src/tools/nvl-topo}
NVL_HELPER=${NVL_HELPER:-${BUILD_DIR:-}/src/nvlsliced/nvlsliced}

ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }

# check NAME COMMAND...: passes when COMMAND exits 0
check() {
    local name=$1; shift
    if "$@"; then ok "$name"; else not_ok "$name"; fi
}

# expect_eq NAME EXPECTED ACTUAL
expect_eq() {
    if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: expected [$2], got [$3]"; fi
}

# expect_match NAME REGEX TEXT. From a here-string, not a pipe: under
# pipefail, grep -q leaving at the first match made a long TEXT's writer
# die of SIGPIPE, and a match count as a failure.
expect_match() {
    if grep -qE -- "$2" <<< "$3"; then ok "$1"; else not_ok "$1: [$3] does not match /$2/"; fi
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds
wait_for() {
    local deadline=$(( $(date +%s) + $1 )); shift
    while [ "$(date +%s)" -lt "$deadline" ]; do "$@" && return 0; sleep 0.1; done
    return 1
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

job_field() { # job_field JOBID Field
    scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
restarts() { job_field "$1" Restarts; }
# second_start FILE: the time a job's batch script wrote on its second
# start (its first run again after a requeue), once it is there (10 s)
second_start() {
    wait_for 10 bash -c "[ \"\$(wc -l < '$1' 2>/dev/null)\" -ge 2 ]" && sed -n 2p "$1"
}

# wait_state JOBID STATE [SECONDS]
wait_state() {
    local deadline=$(( $(date +%s) + ${3:-30} ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        [ "$(job_field "$1" JobState)" = "$2" ] && return 0
        sleep 0.2
    done
    return 1
}

job_comment() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *Comment=//p' | sed 's/ *$//'; }

# wait_done JOBID [SECONDS]: until the job reaches a final state
wait_done() {
    local deadline=$(( $(date +%s) + ${2:-30} ))
    while [ "$(date +%s)" -lt "$deadline" ]; do
        case "$(job_field "$1" JobState)" in
            COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) return 0 ;;
        esac
        sleep 0.2
    done
    return 1
}

# The hand-off nvlsliced runs in (gate or native), from its start line.
nvl_mode() {
    sed -n 's/.*started: .*, mode \([a-z]*\) (.*/\1/p' "$NVL_CLUSTER_DIR/log/nvlsliced.log" 2>/dev/null | tail -1
}
# mode_is [MODE]: the helper's log says it started (in MODE), for wait_for
mode_is() { if [ -n "${1:-}" ]; then [ "$(nvl_mode)" = "$1" ]; else [ -n "$(nvl_mode)" ]; fi; }

# A job's state as squeue prints it ("" once it has left).
state() { squeue -h -j "$1" -o %T 2>/dev/null; }
nodes_of() { squeue -h -j "$1" -o %N 2>/dev/null; }

# A slice job's placement record (admin_comment) and the spare reservation.
# admin_comment JOB: the whole field; record JOB: the helper's part of it
# (a site's text before or after it, " | " between, left out)
admin_comment() { scontrol show job "$1" 2>/dev/null | sed -n 's/^ *AdminComment=//p' | sed 's/ *$//'; }
record() { admin_comment "$1" | sed -nE 's/^(.* \| )?(nvlslice\/.*)$/\2/p' | sed 's/ | .*//'; }
resv_nodes() { scontrol show reservation nvlslice_spares 2>/dev/null | sed -n 's/^ *Nodes=\([^ ]*\).*/\1/p'; }
# outside_spares HOSTLIST [COUNT]: the nodes of HOSTLIST that are not in the
# spare reservation, comma-separated (the first COUNT of them). An earlier
# repair may leave a spare mid-rack (the spare it used is replaced by a free
# node of the rack), where Slurm would not start a job pinned with -w.
outside_spares() {
    comm -23 <(scontrol show hostnames "$1" | sort) <(scontrol show hostnames "$(resv_nodes)" | sort) |
        head -n "${2:-100000}" | paste -sd,
}
# racks_of HOSTLIST: the test cluster's racks (18 nodes each) HOSTLIST spans
racks_of() {
    local n
    for n in $(scontrol show hostnames "$1"); do
        n=$((10#${n#nvl}))
        printf 'rack%03d\n' $(((n - 1) / 18 + 1))
    done | sort -u | paste -sd' '
}
# No job left, and no node still completing one (a job killed right after
# its start keeps its nodes completing for a while).
cleanup() {
    scancel -u root 2>/dev/null
    wait_for 60 bash -c '[ -z "$(squeue -h -o %i)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
}
resume_all() { scontrol update nodename=nvl[0001-0036] state=resume 2>/dev/null; true; }
# Every node up and answering (after a killed slurmd came back, 24.11 takes
# a few seconds to register it): no down, drained, failing, unknown or
# not-responding node left.
all_up() {
    [ -z "$(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o %N 2>/dev/null)" ]
}
# refuse NAME REGEX sbatch-args...: the submission must fail, saying REGEX
refuse() {
    local name=$1 re=$2; shift 2
    local err rc
    err=$(sbatch "$@" --wrap true 2>&1); rc=$?
    if [ $rc -ne 0 ] && grep -qE -- "$re" <<< "$err"; then ok "$name"; else not_ok "$name: rc=$rc [$err]"; fi
}

job_count() { squeue -h -o %i 2>/dev/null | wc -l; }

# After cleanup and resume_all: no job, every node idle (or held as a
# spare), and the helper's spare reservation back to each rack's last two
# nodes (a rack that runs nothing has its spares there again).
settled() {
    [ -z "$(squeue -h -o %i 2>/dev/null)" ] || return 1
    [ -z "$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 != "idle" && $2 != "reserved"')" ] || return 1
    [ "$(resv_nodes)" = "nvl[0017-0018,0035-0036]" ]
}
# settle: until settled (30 s at most); when not, says what is left, so a
# case that then fails shows why
settle() {
    wait_for 30 settled && return 0
    echo "# not settled after 30 s: nodes $(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 != "idle" && $2 != "reserved" { print $1 ":" $2 }' | sort -u | paste -sd' ');" \
        "spares $(resv_nodes); jobs $(squeue -h -o '%i:%T' 2>/dev/null | paste -sd' ')"
    return 1
}

summary() {
    echo "$1: $PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ]
}

# bench_draws SEED CKPT N: the busy bench's backlog, "SIZE SECONDS CKPT" a
# line, drawn from SEED (bench_busy.sh submits them, sim_check.sh gives
# them to the simulator): sizes 1, 1, 2, 2, 4, 8 or 16 nodes, run times
# uniform in 20-90 s, CKPT 1 for a share CKPT of them. GNU awk by name:
# mawk's rand() draws other numbers from the same seed, and the simulator's
# check (sim_check.sh) must see the backlog the bench submitted.
bench_draws() {
    command -v gawk >/dev/null || { echo "bench_draws: gawk is needed (apt-get install gawk): the backlog is drawn with GNU awk's rand()" >&2; return 2; }
    gawk -v seed="$1" -v ck="$2" -v n="$3" 'BEGIN { srand(seed); split("1 1 2 2 4 8 16", s, " ");
        for (i = 0; i < n; i++) { z = s[int(rand() * 7) + 1]; t = 20 + int(rand() * 71); printf "%d %d %d\n", z, t, rand() < ck } }'
}

# bench_summary SIDE KIND RESULTS: bench_busy's summary line of one kind and
# side from its trial lines ("SIDE KIND TRIAL SECONDS SAME REQUEUES [ROOM]"):
# p50 / p90 / max, each slice in one rack, requeues, failed trials; where
# the trials say whether the new rack had room at the fault (ROOM "now" or
# "later": nvlslice's whole rack), the slowest of those with room and their
# count
bench_summary() {
    awk -v m="$1" -v f="$2" '$1 == m && $2 == f && $4 ~ /^[0-9.]+$/ { t[++n] = $4 + 0; same += ($5 == "yes"); rq = rq (rq == "" ? "" : ",") $6
            if ($7 == "now" || $7 == "later") { told++ }
            if ($7 == "now") { rn++; if ($4 + 0 > rmax) rmax = $4 + 0 } }
        $1 == m && $2 == f && $4 !~ /^[0-9.]+$/ { bad++ }
        END { if (!n) { printf "# %-9s %-7s no run came back (%d failed)\n", m, f, bad; exit }
              for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (t[j] < t[i]) { x = t[i]; t[i] = t[j]; t[j] = x }
              i50 = int(0.5 * (n - 1) + 0.5) + 1; i90 = int(0.9 * (n - 1) + 0.5) + 1
              room = told ? (rn ? sprintf("  room free now %d/%d, max %.1f s", rn, told, rmax) : sprintf("  room free now 0/%d", told)) : ""
              printf "# %-9s %-7s %2d runs  p50 %6.1f  p90 %6.1f  max %6.1f s  one rack per slice %d/%d  requeues %s%s%s\n",
                  m, f, n, t[i50], t[i90], t[n], same, n, rq, bad ? "  (" bad " failed)" : "", room }' "$3"
}
