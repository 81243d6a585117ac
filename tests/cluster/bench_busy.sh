#!/bin/bash
# What a node failure costs a running 32-node job (two 16-node slices, an
# srun step on every node) on a busy cluster, side by side on the same
# cluster and the same backlog: nvlslice (native mode, shipped defaults;
# runs 13-40 added repair_not_responding_after: 5), Slurm alone with its expedited requeue
# (--requeue=expedite, enable_expedited_requeue, topology/block,
# --segment=16) and Slurm alone with its plain requeue. Not part of the
# test command (about 15 minutes a trial of every kind and side); run it by
# name, on Slurm 26.05, 3 racks x 18, SlurmdTimeout 60:
#   NVL_SLURM=26.05 NVL_RACKS=3 NVL_SLURMD_TIMEOUT=60 NVL_TESTS=bench_busy \
#       NVL_BENCH_TRIALS=10 tests/cluster/run.sh
# README's nvlslice figures add NVL_TCP_TIMEOUT=1 (slurm.conf TCPTimeout=1,
# as doc/admin-guide.txt advises for nvlslice, its cost stated there);
# Slurm alone's are at its default 2 s (at 1 s its trials were no faster:
# bench_tcp_timeout.out). TCPTimeout is the cluster's: one a run.
# Settings: NVL_BENCH_TRIALS (2), NVL_BENCH_MODES ("nvlslice expedite
# plain"), NVL_BENCH_FAILURES ("drain slurmd silent rack"), NVL_BENCH_SEED
# (1), NVL_BENCH_DEPTH (waiting backlog jobs kept, 12), NVL_BENCH_TIMEOUT
# (seconds a trial waits for the job to run again, 600), NVL_BENCH_STEADY
# (seconds of the steady phase after each side's trials, 600; 0: none),
# NVL_BENCH_ALONE (seconds of a phase after it with the measured job
# cancelled: the backlog alone on the whole cluster; 0, the default: none),
# NVL_BENCH_CKPT (the backlog's checkpointable share, 0.5), NVL_BENCH_AT
# (the places in the job's node list of the failed node, taken in turn, e.g.
# "2 10 18 26": the nodes with children in an srun step's reverse tree,
# Slurm's fixed width 7 over 32 nodes; unset: (7 k mod 32) + 1 for trial
# k), NVL_BENCH_DEBUG
# (slurmctld's log level for the run, e.g. debug2: each node's epilog
# completion is logged, to see where a trial's seconds go; unset: info;
# NVL_SLURMD_DEBUG sets the slurmds' and slurmstepds' level the same way),
# NVL_BENCH_DEBUGFLAGS (slurmctld's DebugFlags added for the run, e.g.
# Steps,AuditRPCs: who cancels a step, from which address).
#
# The backlog: jobs far below the measured job's priority (--nice), sizes
# 1, 1, 2, 2, 4, 8 or 16 nodes and run times uniform in 20-90 s, half of
# them checkpointable (--requeue; on the nvlslice side also
# --nvl-slice=SIZE --nvl-checkpointable, as their users would say it: the
# work the helper may lend spares to and requeue first, the 16-node ones
# too (a repair's defragmentation may free a rack from them; runs 1-11
# gave them --requeue alone); NVL_BENCH_CKPT, the share, 0.5, as
# nvl-sim's trace assumes; 0: none), drawn from NVL_BENCH_SEED (the same
# list on every side), each with a time
# limit of 2 minutes, as every job on a production cluster has one (its
# DefaultTime or MaxTime): without one, neither Slurm's backfill nor
# nvlslice's protection of racks can tell when a node frees, and any job
# behind the measured one takes each node that does; submitted so that
# NVL_BENCH_DEPTH of them always wait: every node Slurm may give them is
# busy. The measured job is the top priority; each trial waits until no
# node is idle but the spare reservation's.
#
# Failures (the failed nodes are restored after each trial):
#   drain   a health check drains one node of the job. Slurm alone acts on
#           a node failure, not a drain: the expedited side marks it DOWN
#           too (DRAIN, then DOWN: Slurm requeues an expedited job on a
#           node failure and keeps its nodes), the plain side requeues the
#           job (scontrol requeue), as a site's check would.
#   slurmd  the node's slurmd is killed (its job's processes live on).
#   silent  the node goes silent: every process of it killed and its link
#           down (cluster.sh silence-node): a kernel panic or power loss.
#   rack    every node of one rack of the job fails within a second (one
#           NVLink switch fault takes a whole NVL72 rack): drained (and,
#           on the expedited side, DOWN) with the reason "NVLink switch
#           fault"; the plain side requeues the job.
# A failure comes once the measured job's srun step has run 5 s (from run
# 19 on; before, within a second of its start or restart): a node fails
# under a job that has run a while, not in the second it starts, when the
# helper's probe has not had a cycle to add the job's nodes yet (and
# slurmctld's ping does not care).
# Measured from the failure to the job running again (its batch script
# started again, Restarts one higher, on 32 nodes none of them failed):
# p50 / p90 / max per kind and side, whether each slice stayed in one rack
# (16 nodes per rack it uses), requeues; the backlog's throughput over
# each side's trials; and, after them, a steady phase of NVL_BENCH_STEADY
# seconds on every side (the measured job running, no failure): the
# backlog's jobs and node-hours done per hour there are the price of the
# spares.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
OUT=$(mktemp -d)
chmod 755 "$OUT"
TRIALS=${NVL_BENCH_TRIALS:-2}
SEED=${NVL_BENCH_SEED:-1}
DEPTH=${NVL_BENCH_DEPTH:-12}
TIMEOUT=${NVL_BENCH_TIMEOUT:-600}
STEADY=${NVL_BENCH_STEADY:-600}
ALONE=${NVL_BENCH_ALONE:-0}
CKPT=${NVL_BENCH_CKPT:-0.5}
[ -n "${NVL_BENCH_DEBUG:-}" ] && scontrol setdebug "$NVL_BENCH_DEBUG"
[ -n "${NVL_BENCH_DEBUGFLAGS:-}" ] && scontrol setdebugflags "+$NVL_BENCH_DEBUGFLAGS"
MODES=" ${NVL_BENCH_MODES:-nvlslice expedite plain} "
FAILURES=${NVL_BENCH_FAILURES:-drain slurmd silent rack}
RESULTS=$OUT/results
: > "$RESULTS"
ALL=$(sinfo -h -N -o %N | sort -u)
NODES=$(wc -l <<< "$ALL")
RACKS=$((NODES / 18))
echo "# bench_busy: $(sinfo -V), $RACKS racks x 18, SlurmdTimeout $(scontrol show config | sed -n 's/^SlurmdTimeout *= *//p'), TCPTimeout $(scontrol show config | sed -n 's/^TCPTimeout *= *//p'), $TRIALS trial(s) of each kind and side, seed $SEED"

# The backlog's jobs, drawn once: "SIZE SECONDS CHECKPOINTABLE" per line.
# Each logs its start, its end, and its stop when it is requeued or
# cancelled (SIGTERM; the node time of a run stopped is counted up to the
# stop, not done work: a job requeued and not started again before a
# window ends was counted as running to its end before).
bench_draws "$SEED" "$CKPT" 5000 > "$OUT/draws"
echo "# bench_busy: backlog sizes $(head -1000 "$OUT/draws" | awk '{ n[$1]++ } END { for (k in n) printf "%s:%d ", k, n[k] }')(first 1000), mean run $(head -1000 "$OUT/draws" | awk '{ t += $2 } END { printf "%.0f", t / NR }') s, checkpointable $(head -1000 "$OUT/draws" | awk '{ c += $3 } END { printf "%.0f", 100 * c / NR }') %"

# feeder SIDE: keeps DEPTH backlog jobs waiting, in the drawn order
feeder() {
    local side=$1 k=0 size secs ck waiting opts
    while true; do
        waiting=$(squeue -h -t PD -n backlog -o %i 2>/dev/null | wc -l)
        while [ "$waiting" -lt "$DEPTH" ]; do
            k=$((k + 1))
            read -r size secs ck < <(sed -n "${k}p" "$OUT/draws")
            opts=()
            if [ "$ck" = 1 ]; then
                opts=(--requeue)
                [ "$side" = nvlslice ] && [ "$size" -le 16 ] && opts+=(--nvl-slice="$size" --nvl-checkpointable)
            fi
            sbatch -Q -N "$size" "${opts[@]}" --nice=10000 --time=2 -J backlog -o /dev/null \
                --wrap "trap 'echo \"$side \$SLURM_JOB_ID $size \$(date +%s.%N) stop\" >> $OUT/backlog.log; exit 1' TERM; echo \"$side \$SLURM_JOB_ID $size \$(date +%s.%N) start\" >> $OUT/backlog.log; sleep $secs & wait; echo \"$side \$SLURM_JOB_ID $size \$(date +%s.%N) end\" >> $OUT/backlog.log" >/dev/null
            waiting=$((waiting + 1))
        done
        sleep 1
    done
}
FEEDER=""
start_feeder() { feeder "$1" & FEEDER=$!; }
stop_feeder() { [ -n "$FEEDER" ] && kill "$FEEDER" 2>/dev/null; wait "$FEEDER" 2>/dev/null; FEEDER=""; }
trap 'stop_feeder' EXIT

rack_of() { local n=$((10#${1#nvl})); printf 'rack%03d' $(((n - 1) / 18 + 1)); }
# per rack the job's nodes, "rack001:16,rack002:16"
racks_count() { for n in $(scontrol show hostnames "$1"); do rack_of "$n"; echo; done | sort | uniq -c | awk '{print $2 ":" $1}' | paste -sd,; }
# each slice in one rack: every rack it uses holds a multiple of 16 of its nodes
whole_slices() { ! racks_count "$1" | tr ',' '\n' | awk -F: '$2 % 16 != 0 { bad = 1 } END { exit !bad }'; }
# no node idle but those the spare reservation holds: the backlog has them
saturated() {
    local idle spares
    idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u)
    spares=$(scontrol show hostnames "$(resv_nodes)" 2>/dev/null | sort -u)
    [ -z "$(comm -23 <(echo "$idle" | grep .) <(echo "$spares" | grep .))" ]
}

J=""
LAST="" # "KIND K" of the trial that brought the job back last
WORK="date +%s.%N >> $OUT/starts.\$SLURM_JOB_ID; srun sleep 30000"
submit_measured() {
    case $1 in
        nvlslice) J=$(sbatch --parsable -N 32 --nvl-slice=16 --requeue -J measured -o /dev/null --wrap "$WORK") ;;
        expedite) J=$(sbatch --parsable -N 32 --segment=16 --exclusive --requeue=expedite -J measured -o /dev/null --wrap "$WORK") ;;
        plain) J=$(sbatch --parsable -N 32 --segment=16 --exclusive --requeue -J measured -o /dev/null --wrap "$WORK") ;;
    esac
}
# running again: requeued since (Restarts above $2), on 32 nodes, none of $3 (a file of names)
back_running() {
    local s
    s=$(squeue -h -j "$J" -o '%T %N' 2>/dev/null)
    [[ "$s" == "RUNNING "?* ]] && [ "$(restarts "$J")" -gt "$1" ] || return 1
    s=$(scontrol show hostnames "${s#RUNNING }")
    [ "$(wc -l <<< "$s")" -eq 32 ] && [ -z "$(comm -12 <(sort <<< "$s") <(sort "$2"))" ]
}
restore() { # restore KIND VICTIMS-FILE
    local n
    case $1 in
        slurmd) for n in $(cat "$2"); do "$CL" start-node "$((10#${n#nvl}))"; done ;;
        silent) for n in $(cat "$2"); do "$CL" revive-node "$((10#${n#nvl}))"; done ;;
    esac
    scontrol update nodename="$(paste -sd, "$2")" state=resume 2>/dev/null
    wait_for 120 bash -c "[ -z \"\$(sinfo -h -N -n $(paste -sd, "$2") -t down,drain,drained,draining,fail,unk,no_respond -o %N)\" ]" ||
        echo "# not back after 120 s: $(sinfo -h -N -n "$(paste -sd, "$2")" -o '%N %T' | sort -u | paste -sd' ')"
}

# how_ended JOB: its state, reason, restarts and exit code, for a trial
# whose measured job ended by itself
how_ended() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[^ ]*\|Reason=[^ ]*\|Restarts=[^ ]*\|ExitCode=[^ ]*' | paste -sd' '; }

# one trial: SIDE KIND K
trial() {
    local side=$1 kind=$2 k=$3 r0 t0 t1 before victims="$OUT/victims" n same i at
    local st=""
    [ -n "$J" ] && st=$(state "$J")
    # a job that ran again and has ended since, by itself: the trial before
    # failed after all (its line in the results says so too)
    if [ -n "$J" ] && [ -n "$LAST" ] && [ "$st" != RUNNING ]; then
        echo "$side $LAST ended-after - - -" >> "$RESULTS"
        not_ok "$side/${LAST% *} #${LAST#* }: the measured job ran again, then ended by itself: $(how_ended "$J")"
    fi
    LAST=""
    if [ -z "$J" ] || [ "$st" != RUNNING ]; then
        [ -n "$J" ] && scancel "$J"
        submit_measured "$side"
        wait_for 300 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]" ||
            { echo "$side $kind $k never-started - - -" >> "$RESULTS"; not_ok "$side/$kind #$k: the measured job did not start: $(squeue -h -j "$J" -o '%T %r')"; return; }
    fi
    wait_for 30 bash -c "squeue -h -s -o %i | grep -q '^$J\.0\$'"
    # the step has run 5 s (squeue's step time, in seconds once past 0:05)
    wait_for 30 bash -c "[ \"\$(squeue -h -s -j $J -o '%i %M' | awk '\$1 == \"$J.0\" { n = split(\$2, t, \":\"); print t[n - 1] * 60 + t[n] }')\" -ge 5 ] 2>/dev/null"
    wait_for 120 saturated || echo "# $side/$kind #$k: not saturated: idle $(sinfo -h -N -t idle -o %N | sort -u | paste -sd,)"
    before=$(nodes_of "$J")
    # the job may have ended meanwhile, with no failure of ours: a trial
    # that failed (its state and exit code said), not a bench that stops
    if [ "$(state "$J")" != RUNNING ] || [ -z "$before" ]; then
        echo "$side $kind $k ended-unfailed - - -" >> "$RESULTS"
        not_ok "$side/$kind #$k: the measured job ended before the failure came: $(how_ended "$J")"
        J=""
        return
    fi
    r0=$(restarts "$J")
    case $kind in
        rack) n=$(scontrol show hostnames "$before" | sed -n "$(( (k % 2) * 16 + 1 ))p")
              n=$((10#${n#nvl})); lo=$(( (n - 1) / 18 * 18 + 1 ))
              for i in $(seq "$lo" $((lo + 17))); do printf 'nvl%04d\n' "$i"; done > "$victims" ;;
        *) if [ -n "${NVL_BENCH_AT:-}" ]; then
               # the node at these places of the job's node list, in turn
               read -r -a at <<< "$NVL_BENCH_AT"
               i=${at[$(( (k - 1) % ${#at[@]} ))]}
           else
               i=$(( (k * 7) % 32 + 1 ))
           fi
           scontrol show hostnames "$before" | sed -n "${i}p" > "$victims" ;;
    esac
    local vl; vl=$(paste -sd, "$victims")
    # the helper's log from here on: the room its repair found (below)
    local hlog="$NVL_CLUSTER_DIR/log/nvlsliced.log" hfrom=0
    [ -f "$hlog" ] && hfrom=$(wc -l < "$hlog")
    t0=$(now)
    case "$side/$kind" in
        */slurmd) "$CL" kill-node "$((10#${vl#nvl}))" ;;
        */silent) "$CL" silence-node "$((10#${vl#nvl}))" ;;
        nvlslice/drain) scontrol update nodename="$vl" state=drain reason="bench: gpu xid 79" ;;
        nvlslice/rack) scontrol update nodename="$vl" state=drain reason="bench: NVLink switch fault" ;;
        expedite/drain|expedite/rack)
            scontrol update nodename="$vl" state=drain reason="bench: $kind"
            scontrol update nodename="$vl" state=down reason="bench: $kind" ;;
        plain/drain|plain/rack)
            scontrol update nodename="$vl" state=drain reason="bench: $kind"
            scontrol requeue "$J" ;;
    esac
    t1=""
    if wait_for "$TIMEOUT" back_running "$r0" "$victims" &&
        wait_for 10 bash -c "[ \"\$(wc -l < $OUT/starts.$J)\" -ge $((r0 + 2)) ]"; then
        t1=$(sed -n "$((r0 + 2))p" "$OUT/starts.$J")
    fi
    if [ -n "$t1" ]; then
        local after room=- why=""; after=$(nodes_of "$J")
        if whole_slices "$after"; then same=yes; else same="no($(racks_count "$after"))"; fi
        # a whole rack under nvlslice: whether the slice's new rack had room
        # at the fault (the goal is "within 60 s where room exists"): its
        # repair's first plan says "free in N s by its jobs' time limits"
        # where it waited for work that cannot be requeued
        if [ "$side/$kind" = nvlslice/rack ] && [ -f "$hlog" ]; then
            local plan; plan=$(tail -n +"$((hfrom + 1))" "$hlog" | grep -m1 "job $J: repair.*: slice [0-9]*: .*moved to " || true)
            why=$(grep -o "moved to [a-z0-9]* ([^)]*)" <<< "$plan" | head -1 | sed 's/^moved to [a-z0-9]* (\(.*\))$/\1/' || true)
            case $plan/$why in
                /*) room=- ;;
                *"/free in "*) room=later ;;
                */) room=now; why="free now" ;;
                *) room=now ;;
            esac
        fi
        echo "$side $kind $k $(secs "$t0" "$t1") $same $(( $(restarts "$J") - r0 )) $room" >> "$RESULTS"
        echo "# $side/$kind #$k: running again after $(secs "$t0" "$t1") s on $(racks_count "$after") (each slice in one rack: $same, $(( $(restarts "$J") - r0 )) requeue(s)$([ -n "$why" ] && echo "; its new rack's room: $why")); failed $vl"
        LAST="$kind $k"
    else
        echo "$side $kind $k never - -" >> "$RESULTS"
        not_ok "$side/$kind #$k: not running again within $TIMEOUT s: $(squeue -h -j "$J" -o '%T %r %N') $(record "$J")"
        scancel "$J"; J=""
    fi
    restore "$kind" "$victims"
}

# sample_window SIDE PHASE SECONDS: once no node is idle but the spares,
# PHASE's window of SECONDS; every 5 s the idle nodes, those of them in
# nvlslice_spares, and the lent jobs running (lend reservations and lent=1
# jobs are the helper's; Slurm alone has neither), so that the price of the
# spares is seen, not guessed
sample_window() {
    local side=$1 phase=$2 secs=$3 end idle spare lent
    wait_for 120 saturated
    WIN_T0[$side/$phase]=$(now)
    end=$(awk -v a="${WIN_T0[$side/$phase]}" -v d="$secs" 'BEGIN { printf "%d", a + d }')
    while [ "$(date +%s)" -lt "$end" ]; do
        idle=$(sinfo -h -N -t idle -o %N | sort -u)
        spare=$(scontrol show hostnames "$(resv_nodes)" 2>/dev/null | sort -u)
        lent=$(squeue -h -t R -o '%i' | while read -r j; do scontrol show job "$j" | grep -q 'AdminComment=.*lent=1' && echo "$j"; done | wc -l)
        echo "$(grep -c . <<< "$idle") $(comm -12 <(echo "$idle") <(echo "$spare") | grep -c .) $lent" >> "$OUT/$phase-$side.samples"
        sleep 5
    done
    WIN_T1[$side/$phase]=$(now)
}

declare -A SIDE_T0 SIDE_T1 WIN_T0 WIN_T1
for side in nvlslice expedite plain; do
    [[ $MODES = *" $side "* ]] || continue
    scancel -u root 2>/dev/null
    wait_for 120 bash -c '[ -z "$(squeue -h -o %i)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
    if [ "$side" = nvlslice ]; then
        # the shipped defaults (etc/nvlslice.yaml: a cycle a second,
        # defragmentation for a job blocked an hour, at most one an hour,
        # the probe's silent_after 5 s). Runs 1-12 had the test cluster's
        # tuning instead (cycle 500 ms, defragmentation after 3 s, one per
        # 10 s) and not the silent path (the helper's start rewrote it);
        # runs 13-40 added repair_not_responding_after: 5
        "$CL" kill-helper
        NVL_HELPER_CONF="" NVL_HELPER_CYCLE_MS=1000 "$CL" helper >/dev/null
        spares_kept() { [ -n "$(resv_nodes)" ]; }
        wait_for 30 spares_kept
    else
        # Slurm alone: no helper, none of its reservations
        "$CL" kill-helper
        for r in $(scontrol -o show reservation 2>/dev/null | sed -n 's/^ReservationName=\(nvlslice_[a-z_0-9]*\) .*/\1/p'); do
            [ "$r" = nvlslice_gate ] || scontrol delete ReservationName="$r" 2>/dev/null
        done
    fi
    J=""
    SIDE_T0[$side]=$(now)
    start_feeder "$side"
    for k in $(seq 1 "$TRIALS"); do
        for f in $FAILURES; do trial "$side" "$f" "$k"; done
    done
    SIDE_T1[$side]=$(now)
    # The steady phase: the same backlog beside the measured job running,
    # no failure, for a fixed time on every side: what the backlog gets
    # done there is the price of the spares (the trials' windows differ
    # in length and in how long the measured job held its nodes).
    if [ "$STEADY" -gt 0 ]; then
        if [ -z "$J" ] || [ "$(state "$J")" != RUNNING ]; then
            [ -n "$J" ] && scancel "$J"
            submit_measured "$side"
            wait_for 300 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]" ||
                echo "# $side: the measured job did not start for the steady phase: $(squeue -h -j "$J" -o '%T %r')"
        fi
        sample_window "$side" steady "$STEADY"
    fi
    # The backlog alone on the whole cluster: the measured job cancelled,
    # the same backlog, no failure. Here the spares hold their share of
    # the nodes the backlog may use (2 of 18 a rack); beside the measured
    # job they are 6 of the 22 nodes it leaves.
    if [ "$ALONE" -gt 0 ]; then
        [ -n "$J" ] && scancel "$J"; J=""
        sample_window "$side" alone "$ALONE"
    fi
    stop_feeder
    scancel -u root 2>/dev/null
done
wait_for 120 bash -c '[ -z "$(squeue -h -o %i)" ]'
"$CL" helper >/dev/null 2>&1

# backlog_rate SIDE T0 T1 [MEASURED-NODES]: the side's backlog jobs ended
# and node-hours done an hour from T0 to T1 (a job's run clipped to the
# window); with MEASURED-NODES, also the cluster's busy share, the measured
# job's nodes counted (0: none ran)
backlog_rate() {
    awk -v m="$1" -v a="$2" -v b="$3" -v busy="${4:-}" -v nodes="$NODES" '
        function clip(x) { return x < a ? a : (x > b ? b : x) }
        $1 == m && $5 == "start" { st[$2] = $4; sz[$2] = $3 }
        $1 == m && $5 == "end" && ($2 in st) { if ($4 >= a && $4 <= b) done++; ns += sz[$2] * (clip($4) - clip(st[$2])); delete st[$2] }
        $1 == m && $5 == "stop" && ($2 in st) { ns += sz[$2] * (clip($4) - clip(st[$2])); delete st[$2] }
        END { for (j in st) ns += sz[j] * (b - clip(st[j])); h = (b - a) / 3600
              share = ""
              if (busy != "")
                  share = sprintf("; %s%.0f %% of the cluster", busy ? sprintf("with the measured job %d nodes busy: ", busy) : "",
                                  100 * (ns + busy * (b - a)) / (nodes * (b - a)))
              printf "# %-9s %6.0f s  %5.1f jobs/h  %6.1f node-h/h (of %d nodes%s)\n", m, b - a, done / h, ns / 3600 / h, nodes, share }' \
        "$OUT/backlog.log" 2>/dev/null
}
if [ "$TRIALS" -gt 0 ]; then
    echo "# bench_busy: time to running again (s) p50 / p90 / max over the trials; each slice in one rack; requeues"
    for side in nvlslice expedite plain; do
        [[ $MODES = *" $side "* ]] || continue
        for f in $FAILURES; do bench_summary "$side" "$f" "$RESULTS"; done
    done
    echo "# bench_busy: the backlog's throughput over each side's run (jobs ended, node-hours done, per hour)"
    for side in nvlslice expedite plain; do
        # (inside the window only: the steady phase follows it)
        [[ $MODES = *" $side "* ]] && backlog_rate "$side" "${SIDE_T0[$side]}" "${SIDE_T1[$side]}"
    done
fi
# report_window PHASE MEASURED-NODES: each side's backlog rate in PHASE's
# window, and where the node-hours went by the samples
report_window() {
    local phase=$1 busy=$2 side
    for side in nvlslice expedite plain; do
        [[ $MODES = *" $side "* ]] && [ -n "${WIN_T0[$side/$phase]:-}" ] || continue
        backlog_rate "$side" "${WIN_T0[$side/$phase]}" "${WIN_T1[$side/$phase]}" "$busy"
        awk -v m="$side" -v p="$phase" '{ n++; i += $1; s += $2; l += $3 }
            END { if (n) printf "# %-9s %s, %d samples 5 s apart: idle nodes %.1f on average, %.1f of them spares; lent jobs running %.1f\n", m, p, n, i / n, s / n, l / n }' \
            "$OUT/$phase-$side.samples" 2>/dev/null
    done
}
if [ "$STEADY" -gt 0 ]; then
    echo "# bench_busy: the backlog beside the measured job, no failure, $STEADY s on each side (jobs ended, node-hours done, per hour): the price of the spares"
    report_window steady 32
fi
if [ "$ALONE" -gt 0 ]; then
    echo "# bench_busy: the backlog alone on the whole cluster, no measured job, no failure, $ALONE s on each side (jobs ended, node-hours done, per hour): the price of the spares where they are 2 of each rack's 18 nodes the backlog may use"
    report_window alone 0
fi
while read -r line; do ok "trial: $line"; done < <(awk '$4 ~ /^[0-9.]+$/' "$RESULTS")
rm -rf "$OUT"
summary bench
