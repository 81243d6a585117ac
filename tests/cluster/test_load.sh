#!/bin/bash
# Load test of nvlsliced on the real test cluster (see run.sh): 2,000 slice
# jobs wait while the cluster is busy. Measures the helper's cycle (and
# where its time goes: reading Slurm, deciding, asking Slurm), the time
# until every job carries its record, and squeue/sinfo latency with the
# helper running and stopped. No job may be lost or left without a record.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
N=${NVL_LOAD_JOBS:-2000}
OUT=$(mktemp -d)
cd "$OUT"

metrics() { (exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) 2>/dev/null; }
metric() { awk -v k="$1" '$1 == k { print $2 }' <<< "$2"; }
ms_of() { # ms_of COMMAND...: wall time of one run, in ms
    local t0 t1
    t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000000 ))
}
median_ms() { # median_ms RUNS COMMAND...
    local runs=$1 i; shift
    for i in $(seq 1 "$runs"); do ms_of "$@"; done | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
recorded() { squeue -h -t PD -n load -O admin_comment:60 | grep -c '^nvlslice/1 waiting'; }

echo "# load: $N slice jobs wait on a busy cluster"
scancel -u root 2>/dev/null; sleep 1
"$CL" helper >/dev/null
# every node but the spares busy with one plain job for the whole test
BUSY=$(sbatch --parsable -N 32 -J busy --wrap 'sleep 900')
wait_state "$BUSY" RUNNING 20 || not_ok "the busy job started: $(squeue -h -j "$BUSY" -o '%T %R')"

m0=$(metrics)
t0=$(date +%s.%N)
# sizes: 1 x 16, 2 x 16, 2 x 4, 1 x 1 nodes, in turn; 4 submitters at once
seq 1 "$N" | xargs -P 4 -I{} bash -c '
    case $(( {} % 4 )) in
        0) a="-N 16 --nvl-slice=16" ;; 1) a="-N 32 --nvl-slice=16" ;;
        2) a="-N 8 --nvl-slice=4" ;; 3) a="-N 1 --nvl-slice=1" ;;
    esac
    sbatch --parsable -J load $a --wrap "sleep 1" >> submitted.txt 2>> submit-errors.txt || echo fail >> submit-errors.txt'
t1=$(date +%s.%N)
submitted=$(grep -c '^[0-9]' submitted.txt)
expect_eq "all $N submissions accepted" "$N" "$submitted"
echo "# measured: $N sbatch --nvl-slice submissions (4 at a time) took $(secs "$t0" "$t1") s"

if wait_for 180 bash -c "[ \"\$(squeue -h -t PD -n load -O admin_comment:60 | grep -c '^nvlslice/1 waiting')\" -ge $N ]"; then
    t2=$(date +%s.%N)
    ok "every job carries its record ($(secs "$t1" "$t2") s after the last submission)"
else
    not_ok "records: $(recorded) of $N jobs recorded"
fi
sleep 5 # steady state: a few cycles with nothing new
m1=$(metrics)
sleep 10
m2=$(metrics)

pending=$(squeue -h -t PD -n load -o %i | wc -l)
expect_eq "no job lost: all $N pending" "$N" "$pending"
if [ "$(nvl_mode)" = native ]; then
    expect_eq "native: none started (no room outside the spares), none gated" "0 0" "$(squeue -h -t R -n load | wc -l) $(squeue -h -t PD -n load -o %W | grep -c nvlslice_gate)"
else
    expect_eq "all behind their gate (the gate license), none started rack-blind" "$N" "$(squeue -h -t PD -n load -o %W | grep -c nvlslice_gate)"
fi
expect_eq "none held: Slurm computes every priority" "0" "$(squeue -h -t PD -n load -o %Q | grep -cx 0)"
expect_eq "none without a record" "0" "$(squeue -h -t PD -n load -O admin_comment:20 | grep -vc '^nvlslice/1')"

delta() { awk -v a="$(metric "$1" "$2")" -v b="$(metric "$1" "$3")" 'BEGIN { printf "%.6f", b - a }'; }
phase() { # phase NAME FROM TO: seconds spent in the phase between two scrapes
    local k="nvlslice_cycle_phase_seconds_total{phase=\"$1\"}"
    awk -v a="$(metric "$k" "$2")" -v b="$(metric "$k" "$3")" 'BEGIN { printf "%.6f", b - a }'
}
c_first=$(delta nvlslice_cycle_seconds_count "$m0" "$m1")
s_first=$(delta nvlslice_cycle_seconds_sum "$m0" "$m1")
a_first=$(delta nvlslice_actions_total "$m0" "$m1")
c_steady=$(delta nvlslice_cycle_seconds_count "$m1" "$m2")
s_steady=$(delta nvlslice_cycle_seconds_sum "$m1" "$m2")
a_steady=$(delta nvlslice_actions_total "$m1" "$m2")
ld=$(phase load "$m1" "$m2"); de=$(phase decide "$m1" "$m2"); ap=$(phase apply "$m1" "$m2")
apf=$(phase apply "$m0" "$m1")
per() { awk -v s="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.1f", 1000 * s / c; else print "n/a" }'; }
c_first=${c_first%.*}; c_steady=${c_steady%.*}; a_first=${a_first%.*}; a_steady=${a_steady%.*}
echo "# measured: while the jobs arrived: $c_first cycles, mean $(per "$s_first" "$c_first") ms, $a_first actions (waiting records), applying them took $(awk -v s="$apf" 'BEGIN { printf "%.1f", s }') s in all"
echo "# measured: steady, $N waiting: $c_steady cycles, mean $(per "$s_steady" "$c_steady") ms (load $(per "$ld" "$c_steady"), decide $(per "$de" "$c_steady"), apply $(per "$ap" "$c_steady") ms), $a_steady actions"
check "steady cycles ask Slurm for nothing new" [ "$a_steady" -eq 0 ]
check "a steady cycle stays under 500 ms with $N waiting" awk -v s="$s_steady" -v c="$c_steady" 'BEGIN { exit !(c > 0 && 1000 * s / c < 500) }'

sq_with=$(median_ms 5 squeue -h); si_with=$(median_ms 5 sinfo -h)
"$CL" kill-helper
sleep 1
sq_without=$(median_ms 5 squeue -h); si_without=$(median_ms 5 sinfo -h)
echo "# measured: squeue with $N jobs: ${sq_with} ms with the helper, ${sq_without} ms without; sinfo: ${si_with} / ${si_without} ms (medians of 5)"
check "squeue stays responsive with the helper (under 2 s)" [ "$sq_with" -lt 2000 ]

scancel -u root
wait_for 60 bash -c '[ -z "$(squeue -h -o %i)" ]'
"$CL" helper >/dev/null
rm -rf "$OUT"
summary "load"
