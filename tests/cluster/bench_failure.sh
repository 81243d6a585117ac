#!/bin/bash
# What a failed node costs a running 32-node job (two 16-node segments, one
# per rack), side by side on the same cluster: nvlslice's repair against
# Slurm alone, with its expedited requeue (25.11+) and with its plain
# requeue. Not part of the test command (25-35 minutes); run it with
#   NVL_SLURM=26.05 NVL_TESTS=bench_failure tests/cluster/run.sh
# NVL_BENCH_TRIALS (5) trials of each. The cluster is full: the job holds
# every node but the 4 nodes kept as spares (2 per rack), which Slurm alone
# sees as 4 idle nodes.
#
# Failures:
#   drain   a health check drains a node: nvlsliced repairs the job; Slurm
#           alone needs an admin's (or the check's) `scontrol requeue`, and
#           an admin's requeue is never expedited, so the expedited mode
#           marks the node DOWN as well (`scontrol update state=drain`, then
#           `state=down`), the one way Slurm requeues a job expedited
#           without a crash
#   slurmd  the node's slurmd is killed: Slurm marks it DOWN after
#           SlurmdTimeout (10 s here) and requeues the job itself
# Measured from the failure to the job running again: its batch script
# started again (the job writes the time; Restarts one higher, on 32 nodes
# without the failed one), with whether each rack it ran in before still
# holds one of its segments ("same racks") and how many of its nodes changed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
OUT=$(mktemp -d)
TRIALS=${NVL_BENCH_TRIALS:-5}
RESULTS=$OUT/results
: > "$RESULTS"
chmod 755 "$OUT"
# the job: writes when its batch script starts (each run), then a step on
# every node
WORK="date +%s.%N >> $OUT/starts.\$SLURM_JOB_ID; srun sleep 3000"

rack_of_node() { local n=$((10#${1#nvl})); if [ "$n" -le 18 ]; then echo rack001; else echo rack002; fi; }
racks_of_list() { for n in $(scontrol show hostnames "$1"); do rack_of_node "$n"; done | sort | uniq -c | awk '{print $2 ":" $1}' | paste -sd,; }
# running again: requeued since (Restarts above $2), on 32 nodes without
# the failed one $3 (while a requeued job completes, squeue can show it
# RUNNING with Restarts already raised and its node list shrinking)
back_running() {
    [ "$(state "$1")" = RUNNING ] && [ "$(restarts "$1")" -gt "$2" ] || return 1
    local nodes
    nodes=$(scontrol show hostnames "$(squeue -h -j "$1" -o %N)")
    [ "$(wc -l <<< "$nodes")" -eq 32 ] && ! grep -qx "$3" <<< "$nodes"
}

# one trial: MODE (nvlslice|expedite|plain) FAILURE (drain|slurmd) TRIAL
trial() {
    local mode=$1 failure=$2 k=$3 J before r0 victim t0 t1 after changed same
    cleanup; resume_all
    wait_for 60 all_up || { echo "# not all nodes up: $(sinfo -h -N -t down,drain,fail,unk,no_respond -o '%N %T' | sort -u | paste -sd' ')"; }
    if [ "$mode" = nvlslice ]; then
        settle
        J=$(sbatch --parsable -N 32 --nvl-slice=16 --requeue -J bench --wrap "$WORK")
    else
        wait_for 30 bash -c '[ -z "$(squeue -h -o %i)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
        local rq=--requeue; [ "$mode" = expedite ] && rq=--requeue=expedite
        J=$(sbatch --parsable -N 32 --segment=16 --exclusive "$rq" -J bench --wrap "$WORK")
    fi
    if [ -z "$J" ] || ! wait_for 60 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]"; then
        echo "$mode $failure $k never-started - -" >> "$RESULTS"
        not_ok "$mode/$failure #$k: the job did not start: ${J:-(not submitted)} $([ -n "$J" ] && squeue -h -j "$J" -o '%T %r')"
        return
    fi
    # its srun step up on every node (squeue takes --steps without --jobs)
    wait_for 20 bash -c "squeue -h -s -o %i | grep -q '^$J\.0\$'"
    before=$(squeue -h -j "$J" -o %N)
    r0=$(restarts "$J")
    # the fifth node of its second segment (rack002)
    victim=$(scontrol show hostnames "$before" | sed -n 21p)
    t0=$(now)
    case "$mode/$failure" in
        nvlslice/drain) scontrol update nodename="$victim" state=drain reason="bench: gpu xid 79" ;;
        plain/drain) scontrol update nodename="$victim" state=drain reason="bench: gpu xid 79"; scontrol requeue "$J" ;;
        # DRAIN then DOWN (as nvlsliced's NodeDown): DOWN alone is undone at
        # once by ReturnToService=2 while the node's slurmd answers
        expedite/drain) scontrol update nodename="$victim" state=drain reason="bench: gpu xid 79"
                        scontrol update nodename="$victim" state=down reason="bench: gpu xid 79" ;;
        */slurmd) "$CL" kill-node "$((10#${victim#nvl}))" ;;
    esac
    # running again: when its batch script started again, as the job
    # itself wrote it (a poll of squeue lags by its own RPCs, up to a
    # second or two while slurmctld requeues)
    if wait_for 400 back_running "$J" "$r0" "$victim" && t1=$(second_start "$OUT/starts.$J"); then
        after=$(squeue -h -j "$J" -o %N)
        changed=$(comm -13 <(scontrol show hostnames "$before" | sort) <(scontrol show hostnames "$after" | sort) | wc -l)
        if [ "$(racks_of_list "$after")" = "rack001:16,rack002:16" ]; then same=yes; else same="no($(racks_of_list "$after"))"; fi
        echo "$mode $failure $k $(secs "$t0" "$t1") $same $changed $(( $(restarts "$J") - r0 ))" >> "$RESULTS"
        echo "# $mode/$failure #$k: running again after $(secs "$t0" "$t1") s on $after (same racks: $same, $changed node(s) changed, $(( $(restarts "$J") - r0 )) requeue(s))"
    else
        echo "$mode $failure $k never - - -" >> "$RESULTS"
        not_ok "$mode/$failure #$k: not running again within 400 s: $(squeue -h -j "$J" -o '%T %r %N')"
    fi
    scancel "$J"
    wait_done "$J" 30
    if [ "$failure" = slurmd ]; then
        "$CL" start-node "$((10#${victim#nvl}))"
        wait_for 30 bash -c "[ \"\$(sinfo -h -n $victim -o %T)\" != down ] && [ \"\$(sinfo -h -n $victim -o %T)\" != 'down*' ]"
    fi
    scontrol update nodename="$victim" state=resume 2>/dev/null
}

# NVL_BENCH_MODES (all three) and NVL_BENCH_FAILURES (both): a part of it
MODES=" ${NVL_BENCH_MODES:-nvlslice expedite plain} " FAILURES=${NVL_BENCH_FAILURES:-drain slurmd}
echo "# bench: $(sinfo -V), $TRIALS trial(s) of each mode and failure"
if [[ $MODES = *" nvlslice "* ]]; then
    for k in $(seq 1 "$TRIALS"); do
        # nvlslice first, with its helper (run.sh started it)
        for f in $FAILURES; do trial nvlslice "$f" "$k"; done
    done
fi
if [[ $MODES = *" expedite "* || $MODES = *" plain "* ]]; then
    # Slurm alone: no helper, no spare reservation (its 4 nodes are idle ones)
    "$CL" kill-helper
    scontrol delete ReservationName=nvlslice_spares 2>/dev/null
    for k in $(seq 1 "$TRIALS"); do
        for m in expedite plain; do
            [[ $MODES = *" $m "* ]] || continue
            for f in $FAILURES; do trial "$m" "$f" "$k"; done
        done
    done
    "$CL" helper >/dev/null
fi

echo "# bench: time to running again (s), min-max over the trials; same racks; nodes changed; requeues"
for m in $MODES; do
    for f in $FAILURES; do
        awk -v m="$m" -v f="$f" '$1 == m && $2 == f && $4 ~ /^[0-9.]+$/ {
                n++; t = $4 + 0; if (n == 1 || t < lo) lo = t; if (n == 1 || t > hi) hi = t
                same += ($5 == "yes"); ch = ch (ch == "" ? "" : ",") $6; rq = rq (rq == "" ? "" : ",") $7 }
            $1 == m && $2 == f && $4 !~ /^[0-9.]+$/ { bad++ }
            END { printf "# %-9s %-7s %2d runs  %6.1f-%-6.1f s  same racks %d/%d  nodes changed %s  requeues %s%s\n",
                  m, f, n, lo, hi, same, n, ch, rq, bad ? "  (" bad " failed)" : "" }' "$RESULTS"
    done
done
# the trials that came back (the others were reported as they failed)
while read -r line; do ok "trial: $line"; done < <(awk '$4 ~ /^[0-9.]+$/' "$RESULTS")
rm -rf "$OUT"
summary "bench"
