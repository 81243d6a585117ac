#!/bin/bash
# Native mode on the real test cluster (see run.sh): on Slurm with
# topology/block and --segment, a slice job is Slurm's own segment job.
# Runs with nvlsliced up, in the mode it chose from the running Slurm.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
OUT=$(mktemp -d)
cd "$OUT"
CL="$HERE/cluster.sh"
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log

echo "# native: nvlsliced chose native mode from the running Slurm"
started=$(grep 'started:' "$LOG" | tail -1)
expect_match "its log names the mode and why" 'mode native \(chosen from the running Slurm; Slurm [0-9.]+, topology/block; pins (with a node pool|by excluding other nodes)\)' "$started"
# Slurm 25.11 and later take a node list on a job of several segments as a pool
ver=$(sed -n 's/.*; Slurm \([0-9]*\)\.\([0-9]*\)\..*/\1\2/p' <<< "$started")
if [ "${ver:-0}" -ge 2511 ]; then pool=1; how="with a node pool"; else pool=0; how="by excluding other nodes"; fi
expect_match "it pins $how on this Slurm" "pins $how" "$started"

echo "# native: bad values are refused before submission, no job created"
before=$(job_count)
refuse "non-numeric slice" 'nvlslice: --nvl-slice=sixteen: expected a slice size in nodes' -N 32 --nvl-slice=sixteen
refuse "not a multiple" 'nvlslice: --nvl-slice=16: -N 20 is not a multiple of the slice size' -N 20 --nvl-slice=16
refuse "slice larger than a rack" 'nvlslice: --nvl-slice=17: larger than any rack can hold' -N 17 --nvl-slice=17
refuse "a --segment of the user's that differs" 'nvlslice: --segment=8 conflicts with --nvl-slice \(slices of 16 nodes\)' -N 16 --segment=8 --nvl-slice=16
refuse "checkpointable without requeue" 'nvlslice: --nvl-checkpointable needs --requeue' -N 16 --nvl-slice=16 --nvl-checkpointable
expect_eq "no job was created by refused submissions" "$before" "$(job_count)"

echo "# native: 16 + 16 as Slurm's own segments, one per rack, the spares left free"
cleanup
J=$(sbatch --parsable -N 32 --nvl-slice=16 -o "$OUT/n-%j.out" \
    --wrap 'srun bash -c "echo \$SLURMD_NODENAME \$NVL_SLICE_INDEX \$NVL_DOMAIN \$NVL_SLICE_SIZE"; sleep 30')
expect_match "tagged native" 'handoff=native' "$(job_comment "$J")"
expect_eq "no gate license" "(null)" "$(job_field "$J" Licenses)"
expect_eq "whole nodes (--exclusive)" "NO" "$(job_field "$J" OverSubscribe)"
if wait_state "$J" RUNNING 20; then ok "Slurm started it by itself"; else not_ok "native start: $(squeue -h -j "$J" -o '%T %r')"; fi
expect_eq "one 16-node segment per rack, spares untouched" "nvl[0001-0016,0019-0034]" "$(job_field "$J" NodeList)"
expect_eq "the spares stay reserved" "nvl[0017-0018,0035-0036]" "$(resv_nodes)"
expect_eq "Slurm placed it: nvlsliced never pinned it" "(null)" "$(job_field "$J" ReqNodeList)"
wait_for 10 bash -c "scontrol show job $J | grep -q 'AdminComment=nvlslice/1 placed'"
expect_match "nvlsliced recorded its slices" '^nvlslice/1 placed slice=16 slices=nvl\[0001-0016\];nvl\[0019-0034\]' "$(record "$J")"
wait_for 10 bash -c "[ \"\$(wc -l < $OUT/n-$J.out 2>/dev/null)\" -ge 32 ]"
expect_eq "tasks see slice 0 on rack001 and slice 1 on rack002 (the same NVL_* as in gate mode)" "16 0 rack001 16,16 1 rack002 16" \
    "$(awk '{print $2, $3, $4}' "$OUT/n-$J.out" | sort | uniq -c | awk '{print $1, $2, $3, $4}' | paste -sd,)"

echo "# native: a drained node is repaired from the rack's spare, pinned $how"
t0=$(now)
scontrol update nodename=nvl0005 state=drain reason="nvlslice test: repair"
if wait_for 30 bash -c "[ \"\$(squeue -h -j $J -o '%T %N')\" = 'RUNNING nvl[0001-0004,0006-0017,0019-0034]' ]"; then
    ok "running again on the rack's spare nvl0017 in $(secs "$t0" "$(now)") s"
else
    not_ok "repair: $(squeue -h -j "$J" -o '%T %N %r')"
fi
if [ "$pool" = 1 ]; then
    expect_eq "its ReqNodeList is the placement (a pool of exactly its nodes)" "nvl[0001-0004,0006-0017,0019-0034]" "$(job_field "$J" ReqNodeList)"
    expect_eq "no exclusion" "(null)" "$(job_field "$J" ExcNodeList)"
else
    expect_eq "every other node excluded" "nvl[0005,0018,0035-0036]" "$(job_field "$J" ExcNodeList)"
fi
scancel "$J"
wait_done "$J" 20
scontrol update nodename=nvl0005 state=resume

if [ "$pool" = 1 ]; then
    echo "# native: with Slurm's expedited requeue (25.11+), a killed slurmd: one requeue, the job on its rack's spare"
    cleanup; resume_all
    wait_for 60 all_up || not_ok "all nodes up before the case: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"
    settle
    E=$(sbatch --parsable -N 16 --nvl-slice=16 --requeue=expedite -J expedite --wrap 'sleep 600')
    if wait_for 20 bash -c "[ \"\$(squeue -h -j $E -o %T)\" = RUNNING ]"; then
        ok "started by Slurm in one rack, asking for expedited requeue ($(job_field "$E" ExpeditedRequeue)): $(squeue -h -j "$E" -o %N)"
    else
        not_ok "expedite job started: $(squeue -h -j "$E" -o '%T %N %r')"
    fi
    ENODES=$(squeue -h -j "$E" -o %N)
    EVICTIM=$(scontrol show hostnames "$ENODES" | sed -n 7p)
    if [ -n "$EVICTIM" ]; then
        # the spare it should land on: the first of its rack's in the reservation
        if [ "$((10#${EVICTIM#nvl}))" -le 18 ]; then ESPARE=nvl0017; else ESPARE=nvl0035; fi
        EWANT=$(scontrol show hostlist "$( (scontrol show hostnames "$ENODES" | grep -vx "$EVICTIM"; echo "$ESPARE") | sort | paste -sd,)")
        t0=$(now)
        "$CL" kill-node "$((10#${EVICTIM#nvl}))"
        if wait_for 150 bash -c "[ \"\$(squeue -h -j $E -o '%T %N')\" = 'RUNNING $EWANT' ]"; then
            ok "running again on the rack's spare $ESPARE, $(secs "$t0" "$(now)") s after $EVICTIM's slurmd was killed (Slurm marks it DOWN after SlurmdTimeout)"
        else
            not_ok "after the kill of $EVICTIM's slurmd: $(squeue -h -j "$E" -o '%T %N %r') (expected $EWANT) $(record "$E")"
        fi
        expect_eq "exactly one requeue (Restarts=1)" "1" "$(job_field "$E" Restarts)"
        # Either order of the race: the helper saw the job pending after
        # Slurm's requeue and pinned it to the node pool of its repair, or
        # Slurm started it first, on the spare the reservation gave up for
        # the repair, and the helper's record follows it.
        erec() { case "$(record "$E")" in *" slices=$EWANT repairs=1 "*) return 0 ;; esac; return 1; }
        if wait_for 10 erec; then
            ok "its record names where it runs, with one repair: $(record "$E")"
        else
            not_ok "its record catches up with where it runs ($EWANT, repairs=1): $(record "$E")"
        fi
        expect_match "not held (priority above 0)" '^[1-9]' "$(job_field "$E" Priority)"
        ereq=$(job_field "$E" ReqNodeList)
        if [ "$ereq" = "$EWANT" ]; then
            ok "the helper pinned its repair: its ReqNodeList is the repaired placement"
        elif [ "$ereq" = "(null)" ] && grep -qF "job $E: Slurm restarted it (requeued by Slurm after a node of its placement failed) on $EWANT" "$LOG"; then
            ok "Slurm started it first on the spare the reservation gave up for its repair; the helper followed"
        else
            not_ok "its ReqNodeList is the repaired placement, or Slurm restarted it there and the helper followed: ReqNodeList=$ereq; $(grep "job $E:" "$LOG" | tail -3)"
        fi
        scancel "$E"
        wait_done "$E" 20
        "$CL" start-node "$((10#${EVICTIM#nvl}))"
        wait_for 30 bash -c "[ \"\$(sinfo -h -n $EVICTIM -o %T)\" != down ] && [ \"\$(sinfo -h -n $EVICTIM -o %T)\" != 'down*' ]"
    fi
    resume_all
fi

echo "# native: slice jobs submitted while a rack degrades: none starts there once nvlsliced has seen it"
cleanup; resume_all
wait_for 60 all_up || not_ok "all nodes up before the case: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"
settle
# a plain job runs on rack001: its nodes too are kept from new jobs once it ends
PJ=$(sbatch --parsable -N 2 -w 'nvl[0001-0002]' --wrap 'sleep 8')
LOADJOBS=$OUT/load-jobs
: > "$LOADJOBS"
( for i in $(seq 1 48); do
      sbatch --parsable -N 8 --nvl-slice=8 -J degload --wrap 'sleep 6' >> "$LOADJOBS" 2>/dev/null
      sleep 0.25
  done ) &
SUBMITTER=$!
sleep 3
BAD=nvl0003
t_drain=$(date +%s)
scontrol update nodename="$BAD" state=drain reason="Xid 145: NVLink contained error"
rack1_reserved() { [ "$(scontrol show hostnames "$(resv_nodes)" | grep -cE '^nvl00(0[1-9]|1[0-8])$')" = 18 ]; }
if wait_for 10 rack1_reserved; then
    t_off=$(date +%s)
    ok "the spare reservation holds all 18 nodes of rack001 (the drained one and the busy ones too) $((t_off - t_drain)) s after the drain"
else
    t_off=$t_drain
    not_ok "rack001 held in the spare reservation: $(resv_nodes); $(grep -i 'rack001' "$LOG" | tail -3)"
fi
expect_match "the log names the degraded rack" 'rack rack001 degraded: nvl0003 is out with a rack-level failure' "$(cat "$LOG")"
# a slice job the healthy rack alone cannot hold, submitted now: it waits,
# as the same job waits in plain Slurm; neither is refused
BIG=$(sbatch --parsable -N 32 --nvl-slice=16 -J degbig --wrap 'sleep 5' 2>&1)
PLAINBIG=$(sbatch --parsable -N 32 -J degplain --wrap 'sleep 5' 2>&1)
expect_match "a 2-slice job submitted while only one rack is healthy is taken (plain Slurm: $PLAINBIG)" '^[0-9]+$' "$BIG"
expect_match "plain Slurm takes the same 32-node job" '^[0-9]+$' "$PLAINBIG"
expect_eq "it waits (pending, not refused; plain Slurm: $(squeue -h -j "$PLAINBIG" -o '%T %r' 2>/dev/null))" "PENDING" "$(squeue -h -j "$BIG" -o %T 2>/dev/null)"
scancel "$PLAINBIG" 2>/dev/null
wait "$SUBMITTER"
# every job that started on rack001: when (its last start)
late="" early=0 n=0
while read -r j; do
    [ -n "$j" ] || continue
    n=$((n + 1))
    info=$(scontrol show job "$j" 2>/dev/null)
    nodes=$(sed -n 's/^ *NodeList=\([^ ]*\).*/\1/p' <<< "$info")
    st=$(sed -n 's/.* StartTime=\([^ ]*\) .*/\1/p' <<< "$info")
    case "$nodes" in ''|'(null)') continue ;; esac
    grep -qE '^nvl00(0[1-9]|1[0-8])$' <(scontrol show hostnames "$nodes") || continue
    [ "$st" = Unknown ] && continue
    if [ "$(date -d "$st" +%s)" -gt "$t_off" ]; then late+=" $j@$st($nodes)"; else early=$((early + 1)); fi
done < "$LOADJOBS"
echo "# $n slice jobs submitted in 12 s; $early started on rack001 before the reservation held it (drain at $(date -d @"$t_drain" +%T))"
expect_eq "all 48 submissions were taken" "48" "$n"
expect_eq "none of them started on rack001 after nvlsliced reserved it" "" "$late"
wait_for 20 bash -c "[ -z \"\$(squeue -h -j $PJ 2>/dev/null)\" ]" || true
expect_eq "the plain job's nodes, free again, stay reserved" "2" "$(scontrol show hostnames "$(resv_nodes)" | grep -cE '^nvl000[12]$')"
scancel -n degload 2>/dev/null
scontrol update nodename="$BAD" state=resume
rack1_back() { ! scontrol show hostnames "$(resv_nodes)" | grep -qx nvl0001; }
if wait_for 15 rack1_back; then
    ok "resumed: rack001 leaves the reservation but for its spares ($(resv_nodes))"
else
    not_ok "rack001 out of the reservation after recovery: $(resv_nodes)"
fi
if wait_for 30 bash -c "[ \"\$(squeue -h -j $BIG -o %T)\" = RUNNING ]"; then
    ok "the 2-slice job runs once rack001 recovered ($(squeue -h -j "$BIG" -o %N))"
else
    not_ok "the 2-slice job after recovery: $(squeue -h -j "$BIG" -o '%T %r %N') $(scontrol show job "$BIG" | grep -o 'AdminComment=[^ ]*')"
fi
cleanup

echo "# native: a prefer job takes the gate (a segment cannot run split after its wait)"
# held, so that it stays behind its gate to be looked at (free racks would
# have nvlsliced place it, and take the gate off, at once)
P=$(sbatch --parsable --hold -N 16 --nvl-slice=16 --nvl-placement=prefer --wrap 'sleep 5')
expect_match "tagged gate" 'placement=prefer checkpointable=0 handoff=gate' "$(job_comment "$P")"
expect_match "behind the gate license" 'nvlslice_gate:1' "$(job_field "$P" Licenses)"

cleanup
rm -rf "$OUT"
summary "native"
