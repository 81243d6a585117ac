#!/bin/bash
# The simulator checked against Slurm: one short trace (nvl-sim's job and
# failure generator, time-compressed) replayed on this real cluster twice,
# with nvlslice and with Slurm alone (its expedited requeue, 25.11+), then
# the simulator on the same trace file. It prints, side by side, the real and
# the simulated time from a node failure to the job running again and the
# goodput. Not part of the test command (about 20 minutes); run it with
#   NVL_SLURM=26.05 NVL_TESTS=replay tests/cluster/run.sh
# and keep its last output in tests/cluster/replay.out (date and commit).
#
# Settings: NVL_REPLAY_SCALE real seconds per trace hour (10), NVL_REPLAY_DAYS
# trace days (2), NVL_REPLAY_MTBF node MTBF in days (10), NVL_REPLAY_SEED (1).
# The trace is the 2 x 18 test cluster's: jobs of 1 to 32 nodes (the
# generator's 64- and 128-node jobs capped at 32, the 2 slices the cluster
# holds beside its spares), half of them checkpointing every trace hour, a
# failed node back after 24 trace hours. Failures alternate between a drain
# (a health check) and a killed slurmd (a crash): with nvlslice the helper
# repairs; with Slurm alone a drained node is also set DOWN (an admin's
# requeue is never expedited) and a crashed one is found by SlurmdTimeout.
# Every job pays the same startup (0.25 trace hours) at each start, and
# works in a batch script whose `srun sleep` step runs on every node.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
SCALE=${NVL_REPLAY_SCALE:-10}
DAYS=${NVL_REPLAY_DAYS:-2}
MTBF=${NVL_REPLAY_MTBF:-10}
SEED=${NVL_REPLAY_SEED:-1}
NVL_SIM=${NVL_SIM:-${BUILD_DIR:+$BUILD_DIR/src/tools/nvl-sim}}
NVL_SIM=${NVL_SIM:-/usr/bin/nvl-sim}
OUT=$(mktemp -d /tmp/nvlslice-replay.XXXXXX)
chmod 755 "$OUT"
STARTUP_H=0.25 CKPT_H=1 REPAIR_H=24
HORIZON=$(awk -v d="$DAYS" -v s="$SCALE" 'BEGIN { printf "%d", d * 24 * s }')
# the simulator's view of this cluster and of the helper it runs here
SIM_ARGS=(--racks 2 --nodes-per-rack 18 --slice 16 --spares 2 --days "$DAYS" --restart-hours "$STARTUP_H"
          --checkpoint-hours "$CKPT_H" --repair-hours "$REPAIR_H" --lend-spares none --defrag on
          --defrag-after "$(awk -v s="$SCALE" 'BEGIN { printf "%d", 3 * 3600 / s }')"
          --defrag-interval "$(awk -v s="$SCALE" 'BEGIN { printf "%d", 10 * 3600 / s }')")

# The trace: nvl-sim's generator, sizes capped at 32.
"$NVL_SIM" trace "${SIM_ARGS[@]}" --mtbf-days "$MTBF" --seed "$SEED" --write-trace "$OUT/gen.txt" >/dev/null ||
    { not_ok "nvl-sim could not write the trace"; summary replay; exit 1; }
awk '$1 == "job" && $3 > 32 { $3 = 32 } { print }' "$OUT/gen.txt" > "$OUT/trace.txt"
echo "# replay: $(sinfo -V), trace of $DAYS days (seed $SEED, MTBF $MTBF days): $(grep -c '^job' "$OUT/trace.txt") jobs, $(grep -c '^fail' "$OUT/trace.txt") failures; 1 trace hour = $SCALE s, horizon $HORIZON s"

# The job: WORK_S CKPT(0|1) CKPT_S STARTUP_S STATE. Progress is kept in
# STATE.kept (checkpointed work, checkpointing jobs only), STATE.run (this
# run's work start and the work it resumed from) and STATE.done.
cat > "$OUT/job.sh" <<'EOF'
#!/bin/bash
work=$1 ck=$2 cks=$3 startup=$4 st=$5
kept=0
if [ "$ck" = 1 ] && [ -f "$st.kept" ]; then kept=$(cat "$st.kept"); fi
sleep "$startup"
t0=$(date +%s.%N)
echo "$t0 $kept" > "$st.run"
srun sleep "$(awk -v w="$work" -v k="$kept" 'BEGIN { printf "%.1f", w - k }')" &
pid=$!
if [ "$ck" = 1 ]; then
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.5
        awk -v t0="$t0" -v now="$(date +%s.%N)" -v k="$kept" -v c="$cks" -v w="$work" \
            'BEGIN { v = k + int((now - t0) / c) * c; if (v > w) v = w; printf "%.1f\n", v }' > "$st.kept.new" &&
            mv "$st.kept.new" "$st.kept"
    done
fi
wait "$pid" && echo done > "$st.done"
EOF
chmod 755 "$OUT/job.sh"

node_name() { printf 'nvl%04d' "$(( $1 + 1 ))"; }
# the job running on node $1, if any
job_on() {
    squeue -h -t R -o '%i %N' | while read -r id nodes; do
        scontrol show hostnames "$nodes" | grep -qx "$1" && { echo "$id"; break; }
    done
}
back_running() { # JOB RESTARTS_BEFORE NODE
    [ "$(state "$1")" = RUNNING ] && [ "$(restarts "$1")" -gt "$2" ] || return 1
    ! scontrol show hostnames "$(squeue -h -j "$1" -o %N)" | grep -qx "$3"
}

# one replay: MODE (nvlslice|expedite)
replay() {
    local mode=$1 dir=$OUT/$1 t0 ev when kind a b c d
    mkdir -p "$dir" && chmod 755 "$dir"
    cleanup; resume_all
    wait_for 60 all_up || echo "# not all nodes up: $(sinfo -h -N -t down,drain,fail,unk,no_respond -o '%N %T' | sort -u | paste -sd' ')"
    if [ "$mode" = nvlslice ]; then
        settle
    else
        "$CL" kill-helper
        scontrol delete ReservationName=nvlslice_spares 2>/dev/null
    fi
    # events: submissions, failures, and the failed nodes' return
    {
        awk -v s="$SCALE" '$1 == "job" { printf "%.3f job %d %d %.1f %d\n", $2 * s, NR, $3, $4 * s, $5 }' "$OUT/trace.txt"
        awk -v s="$SCALE" -v r="$REPAIR_H" '$1 == "fail" { n++; printf "%.3f fail %d %s\n", $2 * s, $3, (n % 2 ? "drain" : "slurmd")
                                                       printf "%.3f back %d\n", ($2 + r) * s, $3 }' "$OUT/trace.txt"
    } | sort -n -k1,1 | awk -v h="$HORIZON" '$1 < h' > "$dir/events"
    declare -A down=()
    t0=$(date +%s.%N)
    echo "$t0" > "$dir/t0"
    while read -r -u 3 when kind a b c d; do
        local wait_s
        wait_s=$(awk -v t0="$t0" -v w="$when" -v now="$(date +%s.%N)" 'BEGIN { x = t0 + w - now; printf "%.3f", (x > 0 ? x : 0) }')
        sleep "$wait_s"
        case $kind in
        job) # a: trace line, b: nodes, c: work s, d: checkpointing
            # every job in slices of min(N, 16), as the simulator places
            # each policy's jobs: a smaller job is one slice (with
            # nvlslice a plain job that loses a drained node is Slurm's,
            # and keeps running on it)
            local args=(-N "$b" --exclusive -J "rp$a" -o /dev/null) k=$(( b < 16 ? b : 16 ))
            if [ "$mode" = nvlslice ]; then
                args+=(--requeue --nvl-slice="$k")
            else
                args+=(--requeue=expedite --segment="$k")
            fi
            sbatch "${args[@]}" "$OUT/job.sh" "$c" "$d" "$SCALE" "$(awk -v s="$SCALE" -v h="$STARTUP_H" 'BEGIN { print s * h }')" \
                "$dir/j$a" >/dev/null 2>>"$dir/sbatch.err" || echo "# $mode: sbatch of trace line $a failed: $(tail -1 "$dir/sbatch.err")"
            echo "$a $b $c" >> "$dir/jobs" ;;
        fail)
            local node j r0 tf
            node=$(node_name "$a")
            [ -n "${down[$node]:-}" ] && continue # already failed: the trace's next failure of it waits for it
            down[$node]=$b
            j=$(job_on "$node")
            r0=$( [ -n "$j" ] && restarts "$j")
            tf=$(date +%s.%N)
            case "$mode/$b" in
            nvlslice/drain) scontrol update nodename="$node" state=drain reason="replay: gpu xid 79" ;;
            expedite/drain) scontrol update nodename="$node" state=drain reason="replay: gpu xid 79"
                            scontrol update nodename="$node" state=down reason="replay: gpu xid 79" ;;
            */slurmd) "$CL" kill-node "$(( $a + 1 ))" ;;
            esac
            if [ -n "$j" ]; then
                # how long until it runs again (in the background; past the
                # horizon it counts as not resumed)
                ( end=$(awk -v t0="$t0" -v h="$HORIZON" 'BEGIN { printf "%d", t0 + h }')
                  while [ "$(date +%s)" -lt "$end" ]; do
                      if back_running "$j" "$r0" "$node"; then
                          echo "$j $b $(secs "$tf" "$(date +%s.%N)") $(secs "$t0" "$tf")" >> "$dir/resumed"; break
                      fi
                      sleep 0.3
                  done ) &
                echo "$j $b $(secs "$t0" "$tf")" >> "$dir/hit"
            fi ;;
        back)
            local node
            node=$(node_name "$a")
            case ${down[$node]:-} in
            slurmd) "$CL" start-node "$(( $a + 1 ))" ;;
            esac
            scontrol update nodename="$node" state=resume 2>/dev/null
            unset "down[$node]" ;;
        esac
    done 3< "$dir/events" # (fd 3: nothing in the loop reads the events as its input)
    # the horizon: what every job has done by then
    sleep "$(awk -v t0="$t0" -v h="$HORIZON" -v now="$(date +%s.%N)" 'BEGIN { x = t0 + h - now; printf "%.3f", (x > 0 ? x : 0) }')"
    local th
    th=$(date +%s.%N)
    squeue -h -o '%j %T' > "$dir/at_horizon"
    # each failed job's state then, for the ones not running again
    while read -r j b at; do
        echo "$j $b $at $(squeue -h -j "$j" -o '%T %r %N' 2>/dev/null | head -1) $(record "$j")"
    done < <(cat "$dir/hit" 2>/dev/null) > "$dir/hit_state"
    while read -r a b c; do
        local st=$dir/j$a s
        s=$(awk -v n="rp$a" '$1 == n { print $2 }' "$dir/at_horizon")
        if [ -f "$st.done" ]; then echo "$a $b $c"
        elif [ "$s" = RUNNING ] && [ -f "$st.run" ]; then
            read -r rs rk < "$st.run"
            awk -v a="$a" -v b="$b" -v w="$c" -v rs="$rs" -v rk="$rk" -v th="$th" \
                'BEGIN { v = rk + (th > rs ? th - rs : 0); if (v > w) v = w; printf "%s %s %.1f\n", a, b, v }'
        elif [ -f "$st.kept" ]; then echo "$a $b $(cat "$st.kept")"
        else echo "$a $b 0"; fi
    done < "$dir/jobs" > "$dir/useful"
    kill $(jobs -p) 2>/dev/null; wait 2>/dev/null
    cleanup
    for n in "${!down[@]}"; do [ "${down[$n]}" = slurmd ] && "$CL" start-node "$((10#${n#nvl}))"; done
    resume_all
    wait_for 60 all_up
    [ "$mode" = nvlslice ] || { "$CL" helper >/dev/null; }
}

# The helper as the simulator models it: no spares lent
export NVL_HELPER_CONF="$NVL_HELPER_CONF
lend_spares: none"
"$CL" kill-helper; "$CL" helper >/dev/null
replay nvlslice
replay expedite

# percentiles (nearest rank) of column 3 of a file, "-" for none
pcts() { sort -n -k3,3 "$1" 2>/dev/null | awk '{ v[NR] = $3 } END { if (!NR) { print "- - - -"; exit }
    split("50 90 99 100", q); for (i = 1; i <= 4; i++) { r = int((q[i] * NR + 99) / 100); if (r < 1) r = 1; printf "%s%.1f", (i > 1 ? " " : ""), v[r] } print "" }'; }
goodput() { awk -v h="$HORIZON" '{ u += $2 * $3 } END { printf "%.3f", u / (36 * h) }' "$1"; }

"$NVL_SIM" trace "${SIM_ARGS[@]}" --mtbf-days "$MTBF" --seed "$SEED" --trace "$OUT/trace.txt" --json > "$OUT/sim.json" ||
    not_ok "nvl-sim on the replayed trace failed"
# the simulator's figures for a policy: goodput, failures hit, p50 p90 p99 max (sim seconds)
sim_fig() {
    tr -d '\n' < "$OUT/sim.json" | sed 's/{"policy":/\n{"policy":/g' | grep "^{\"policy\":\"$1\"" | head -1 |
        sed -E 's/.*"goodput":([0-9.e+-]+),.*"failures":([0-9.]+),.*"resume_s":\{"p50":([0-9.e+-]+),"p90":([0-9.e+-]+),"p99":([0-9.e+-]+),"max":([0-9.e+-]+),.*/\1 \2 \3 \4 \5 \6/'
}
echo "# replay: real (this cluster) against simulated (nvl-sim on the same trace), 1 trace hour = $SCALE s"
echo "# time from a node failure to its job running again, real seconds (simulated: trace seconds / $((3600 / SCALE)))"
printf '# %-9s %-5s %8s %8s %8s %8s %8s %9s %8s\n' policy side failures p50 p90 p99 max unresumed goodput
for m in nvlslice expedite; do
    sp=nvlslice; [ "$m" = expedite ] && sp=block_expedite
    hit=$(wc -l < "$OUT/$m/hit" 2>/dev/null || echo 0); res=$(wc -l < "$OUT/$m/resumed" 2>/dev/null || echo 0)
    read -r p50 p90 p99 mx <<< "$(pcts "$OUT/$m/resumed")"
    printf '# %-9s %-5s %8s %8s %8s %8s %8s %9s %8s\n' "$m" real "$hit" "$p50" "$p90" "$p99" "$mx" "$((hit - res))" "$(goodput "$OUT/$m/useful")"
    read -r g f s50 s90 s99 smx <<< "$(sim_fig "$sp")"
    if [ -n "${g:-}" ]; then
        printf '# %-9s %-5s %8s %8s %8s %8s %8s %9s %8.3f\n' "$m" sim "$(awk -v x="$f" 'BEGIN { printf "%.0f", x }')" \
            "$(awk -v x="$s50" -v s="$SCALE" 'BEGIN { printf "%.1f", x * s / 3600 }')" \
            "$(awk -v x="$s90" -v s="$SCALE" 'BEGIN { printf "%.1f", x * s / 3600 }')" \
            "$(awk -v x="$s99" -v s="$SCALE" 'BEGIN { printf "%.1f", x * s / 3600 }')" \
            "$(awk -v x="$smx" -v s="$SCALE" 'BEGIN { printf "%.1f", x * s / 3600 }')" - "$g"
    fi
    [ "$hit" -gt 0 ] && ok "$m: $hit failure(s) hit a running job, $res of them running again within the horizon" ||
        not_ok "$m: no failure hit a running job: the replay measured nothing"
done
echo "# per failure (real): job, failure, seconds to running again, at second"
for m in nvlslice expedite; do sed "s/^/# $m /" "$OUT/$m/resumed" 2>/dev/null; done
echo "# not running again by the horizon (real): job, failure, at second, its state then, its record"
for m in nvlslice expedite; do
    while read -r j rest; do
        grep -q "^$j " "$OUT/$m/resumed" 2>/dev/null || echo "# $m $j $rest"
    done < <(cat "$OUT/$m/hit_state" 2>/dev/null)
done
# what the helper did for each failed job (its log, the last 8 lines of each)
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log
echo "# the helper's log for each job a failure hit (nvlslice)"
while read -r j _; do
    grep -E "job $j: " "$LOG" 2>/dev/null | tail -8 | sed "s/^/#   /"
done < <(sort -u -k1,1 "$OUT/nvlslice/hit" 2>/dev/null)
echo "# not modelled by the simulator: failure detection (SlurmdTimeout 10 s here for a killed slurmd), slurmctld's and nvlsliced's own seconds, epilogs"
rm -rf "$OUT"
summary replay
