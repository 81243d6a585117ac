#!/bin/bash
# The simulator against the busy bench: nvl-sim runs the bench's own
# cluster and load (3 racks x 18, SlurmdTimeout 60, the backlog drawn by
# the bench's seed: 1-16-node jobs of 20-90 s with a 2-minute time limit,
# half checkpointable, the measured 2 x 16 job first in priority, each
# failure struck once no node is idle but the spares, failed nodes back
# after 3 minutes) and its per-failure times (failure -> running again,
# p50 / p90 over 10 failures of each kind) are set beside the bench's
# (tests/cluster/bench_busy.out, the runs tests/cluster/figures.sh picks
# for README). Sides: nvlslice <-> nvlslice, Slurm alone's expedited
# requeue <-> block_expedite, its plain requeue <-> block; kinds: a drain,
# a dead node (the bench's killed slurmd and silent node: the simulator
# has one kind for both), a whole rack.
#   tests/cluster/sim_check.sh NVL_SIM            print the comparison
#   tests/cluster/sim_check.sh NVL_SIM --update   keep it in sim_check.out
#   tests/cluster/sim_check.sh NVL_SIM --check    exit 1 when it differs
#                                                 from sim_check.out, or a
#                                                 cell is out of tolerance
# Tolerance: a cell agrees when the simulator's p50 and p90 are each within
# a factor of 3 of the bench's or within 20 s of it. The simulator is
# deterministic: sim_check.out is what it printed, README's simulator row
# is made from it (figures.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SIM=${1:?usage: sim_check.sh NVL_SIM [--update|--check]}
MODE=${2:-}
KEPT=${NVL_SIM_CHECK_OUT:-$HERE/sim_check.out}
[ -x "$SIM" ] || { echo "sim_check.sh: $SIM is not an executable nvl-sim" >&2; exit 2; }
. "$HERE/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The trace: the measured job first (trace job 0, 32 nodes, longer than the
# run), then the bench's backlog in its drawn order, all waiting from the
# start (the simulator tries the first 8, the bench keeps 12 waiting), and
# 10 failures of a node of the measured job, 10 minutes apart from 6 min.
bench_draws 1 0.5 5000 > "$work/draws"
trace() { # KIND
    echo "# the busy bench's load, seed 1: made by tests/cluster/sim_check.sh"
    echo "job 0 32 1000 0"
    awk '{ printf "job 0.000001 %d %.6f %d\n", $1, $2 / 3600, $3 }' "$work/draws"
    for k in $(seq 1 10); do
        awk -v k="$k" -v kind="$1" 'BEGIN { printf "failjob %.6f 0 %d %s\n", 0.1 + 0.5 / 3600 + (k - 1) / 6, (k * 7) % 32, kind }'
    done
}
trace drain > "$work/trace.drain"
trace dead > "$work/trace.dead"
# nvlslice's dead node, from its DOWN to its job's nodes free: the bench's
# own trials (the newest run with killed-slurmd and silent-node trials of
# nvlslice, each less the probe's 6 s), one drawn per failure: Slurm's step
# teardown sometimes keeps one node completing a minute (bench_busy.out,
# "completion process took 80 seconds"), which no fixed figure models
# (a run that chose the failed nodes' places, NVL_BENCH_AT, is not the
# bench's load, nor is a run on a Slurm other than the bench's 26.05:
# skipped)
dead_draws=$(awk '/^# [0-9]+\. / { if (n && !skip) { last = cur }; cur = ""; n = 0; skip = 0; next }
    /^#    .*NVL_BENCH_AT=/ { skip = 1 }
    /^# bench_busy: slurm-wlm / && $4 !~ /^26\.05/ { skip = 1 }
    /^# nvlslice\/(slurmd|silent) #[0-9]+: running again after / { t = $7 - 6; if (t < 0) t = 0; cur = cur (n++ ? "," : "") t }
    END { if (n && !skip) last = cur; print last }' "${NVL_BENCH_OUT:-$HERE/bench_busy.out}")
common=(--racks 3 --nodes-per-rack 18 --days 2 --restart-hours 0 --requeue-delay 31 --slurmd-timeout 60
    --time-limit 120 --top-jobs 1 --sliced top --repair-hours 0.05 --failjob-busy-wait 120 --seed 1)
"$SIM" trace --trace "$work/trace.drain" "${common[@]}" > "$work/drain.out"
"$SIM" trace --trace "$work/trace.dead" "${common[@]}" ${dead_draws:+--complete-dead "$dead_draws"} > "$work/dead.out"
"$SIM" trace --trace "$work/trace.drain" "${common[@]}" --failjob-rack > "$work/rack.out"
# per policy: the table "Jobs of a slice or more, by failure kind"
sim_cell() { # RUN POLICY drain|dead -> "N P50 P90"
    awk -v pol="$2" -v kind="$3" '/by failure kind/ { on = 1; next } on && $1 == pol {
        if (kind == "drain") print $2, $3, $5; else print $8, $9, $11; exit }' "$work/$1.out"
}
"$HERE/figures.sh" --cells > "$work/bench"

{
    echo "# tests/cluster/sim_check.sh: nvl-sim on the busy bench's cluster and load, beside the bench (seconds from the failure to running again)"
    echo "# $(grep -m1 '^trace:' "$work/drain.out")"
    sed -n 's/^Assumed/# Assumed/p' "$work/drain.out"
    printf '# %-8s %-9s %-22s %-22s %s\n' kind side "bench p50 / p90 (n)" "nvl-sim p50 / p90 (n)" "agrees"
    for kind in drain slurmd silent rack; do
        for side in nvlslice expedite plain; do
            case $side in nvlslice) pol=nvlslice ;; expedite) pol=block_expedite ;; plain) pol=block ;; esac
            case $kind in drain) run=drain k=drain ;; rack) run=rack k=drain ;; *) run=dead k=dead ;; esac
            read -r sn s50 s90 <<< "$(sim_cell "$run" "$pol" "$k")"
            b=$(awk -v s="$side" -v k="$kind" '$1 == s && $2 == k { print $3, $4, $5 }' "$work/bench")
            if [ -z "$b" ]; then
                printf '# %-8s %-9s %-22s %-22s %s\n' "$kind" "$side" "not run" "$s50 / $s90 ($sn)" "-"
                continue
            fi
            read -r bn b50 b90 <<< "$b"
            verdict=$(awk -v b50="$b50" -v b90="$b90" -v s50="$s50" -v s90="$s90" 'function near(b, s) {
                    d = s - b; if (d < 0) d = -d
                    return d <= 20 || (b > 0 && s > 0 && s / b <= 3 && b / s <= 3) }
                BEGIN { print (near(b50, s50) && near(b90, s90)) ? "yes" : "NO" }')
            printf '# %-8s %-9s %-22s %-22s %s\n' "$kind" "$side" "$b50 / $b90 ($bn)" "$s50 / $s90 ($sn)" "$verdict"
        done
    done
} > "$work/check"

case $MODE in
"") cat "$work/check" ;;
--update) cp "$work/check" "$KEPT"; echo "sim_check: kept in $KEPT" ;;
--check)
    rc=0
    cmp -s "$work/check" "$KEPT" || { echo "sim_check.sh: nvl-sim's comparison with the bench differs from $KEPT (tests/cluster/sim_check.sh NVL_SIM --update):" >&2; diff "$KEPT" "$work/check" >&2 || true; rc=1; }
    if grep -q ' NO$' "$work/check"; then
        echo "sim_check.sh: the simulator is out of tolerance with the bench:" >&2
        grep ' NO$' "$work/check" >&2
        rc=1
    fi
    [ "$rc" = 0 ] && echo "sim_check: nvl-sim agrees with the busy bench in $(grep -c ' yes$' "$work/check") cells (within x3 or 20 s), as kept in sim_check.out"
    exit "$rc"
    ;;
*) echo "usage: sim_check.sh NVL_SIM [--update|--check]" >&2; exit 2 ;;
esac
