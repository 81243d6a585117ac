#!/bin/bash
# A repair on a busy cluster: a 32-node slice job (two 16-node slices, an
# srun step on every node) runs while a backlog of smaller, lower-priority
# plain jobs waits for any node that frees. A node of the job drains. From
# the repair's requeue to the job's restart, its 31 healthy nodes complete
# and the spare leaves the spare reservation: neither may go to the backlog
# (nvlsliced keeps them in the job's own reservation, nvlslice_lend_<job>,
# made before the requeue). Then the same with Slurm alone: the same job
# without nvlslice, drained and requeued as a site would (on 25.11+ with
# --requeue=expedite and the node marked DOWN, Slurm's own way to keep a
# requeued job's nodes), beside the same backlog; what the backlog took is
# measured and printed, not asserted.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
OUT=$(mktemp -d)
chmod 755 "$OUT"
BACKLOG=${NVL_BACKLOG:-40}
echo "# busy_repair: mode $(nvl_mode), a backlog of $BACKLOG jobs"
WORK="date +%s.%N >> $OUT/starts.\$SLURM_JOB_ID; srun sleep 3000"

# BACKLOG jobs of 1, 2 or 4 nodes (in turn), far below the job's priority
backlog() {
    local i sizes=(1 2 4)
    for i in $(seq 1 "$BACKLOG"); do
        sbatch -Q -N "${sizes[$((i % 3))]}" --nice=10000 -J backlog -o /dev/null --wrap 'sleep 3000' >/dev/null
    done
}
backlog_running() { squeue -h -t R,CG -n backlog -o %i 2>/dev/null | wc -l; }
backlog_nodes() { squeue -h -t R,CG -n backlog -o %N 2>/dev/null | paste -sd,; }

cleanup; resume_all
settle || true
J=$(sbatch --parsable -N 32 --nvl-slice=16 --requeue -J measured -o /dev/null --wrap "$WORK")
if ! wait_for 30 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]"; then
    not_ok "the slice job did not start: $(squeue -h -j "$J" -o '%T %r') $(record "$J")"
    scancel -u root; rm -rf "$OUT"; summary busy; exit
fi
wait_for 20 bash -c "squeue -h -s -o %i | grep -q '^$J\.0\$'"
# placed: its record written (native mode: once Slurm started it)
wait_for 10 bash -c "scontrol show job $J | grep -q 'AdminComment=nvlslice/1 placed'"
BEFORE=$(nodes_of "$J")
backlog
wait_for 30 bash -c "[ \"\$(squeue -h -n backlog -o %i | wc -l)\" = $BACKLOG ]"
# every node but the spares is busy: the backlog waits for any that frees
sleep 1
expect_eq "the backlog waits: no free node besides the racks' spares" "0" "$(backlog_running)"
VICTIM=$(scontrol show hostnames "$BEFORE" | sed -n 5p)
r0=$(restarts "$J")
t0=$(now)
scontrol update nodename="$VICTIM" state=drain reason="busy_repair: gpu xid 79"
back() {
    local s
    s=$(squeue -h -j "$J" -o '%T %N' 2>/dev/null)
    [[ "$s" == "RUNNING "?* ]] && [ "$(restarts "$J")" -gt "$r0" ] &&
        [ "$(scontrol show hostnames "${s#RUNNING }" | grep -vcx "$VICTIM")" -eq 32 ]
}
if wait_for 30 back && t1=$(second_start "$OUT/starts.$J"); then
    AFTER=$(nodes_of "$J")
    changed=$(comm -13 <(scontrol show hostnames "$BEFORE" | sort) <(scontrol show hostnames "$AFTER" | sort) | paste -sd,)
    d=$(secs "$t0" "$t1")
    ok "running again $d s after the drain, on $AFTER (new: $changed)"
    expect_eq "each slice stayed in its rack" "$(racks_of "$BEFORE")" "$(racks_of "$AFTER")"
    check "one node changed, the failed one for a spare of its rack ($changed)" \
        [ "$(racks_of "$changed")" = "$(racks_of "$VICTIM")" ] && [ "$(tr ',' '\n' <<< "$changed" | wc -l)" = 1 ]
    echo "# measured: busy cluster, drain -> running again: $d s (nvlslice, $BACKLOG jobs waiting)"
else
    not_ok "not running again within 30 s of the drain: $(squeue -h -j "$J" -o '%T %r %N') $(record "$J"); backlog on $(backlog_nodes)"
fi
expect_eq "no backlog job started on the job's nodes or the spare meanwhile (the backlog ran on: $(backlog_nodes))" \
    "0" "$(backlog_running)"
# the job's own reservation is gone once it runs; it keeps its nodes
if wait_for 15 bash -c "! scontrol -o show reservation nvlslice_lend_$J >/dev/null 2>&1"; then
    ok "its reservation nvlslice_lend_$J ended once it ran"
else
    not_ok "its reservation nvlslice_lend_$J is still there: $(scontrol -o show reservation "nvlslice_lend_$J" 2>&1)"
fi
expect_eq "and it runs on, not held, in no reservation" "RUNNING (null)" "$(squeue -h -j "$J" -o '%T %v')"
grep -q "its target .* waits for it in the reservation nvlslice_lend_$J" "$NVL_CLUSTER_DIR/log/nvlsliced.log" &&
    ok "nvlsliced's log says where the target waits" || not_ok "nvlsliced's log: no line on job $J's target"
scancel -n measured; scancel -n backlog
cleanup
scontrol update nodename="$VICTIM" state=resume

# Slurm alone: the same job without nvlslice beside the same backlog. The
# spare reservation stays (its 4 nodes idle to either side); the helper
# does not act on a plain job.
expedite=""
if scontrol show config | grep -q enable_expedited_requeue; then expedite=1; fi
rq=--requeue; [ -n "$expedite" ] && rq=--requeue=expedite
seg=""; [ "$(nvl_mode)" = native ] && seg="--segment=16"
# (the 32 nodes outside the spare reservation: where nvlslice ran it)
P=$(sbatch --parsable -N 32 $seg "$rq" -J plain -o /dev/null --wrap "$WORK")
if wait_for 30 bash -c "[ \"\$(squeue -h -j $P -o %T)\" = RUNNING ]"; then
    wait_for 20 bash -c "squeue -h -s -o %i | grep -q '^$P\.0\$'"
    VICTIM=$(scontrol show hostnames "$(nodes_of "$P")" | sed -n 5p)
    backlog
    wait_for 30 bash -c "[ \"\$(squeue -h -n backlog -o %i | wc -l)\" = $BACKLOG ]"
    sleep 1
    r0=$(restarts "$P")
    t0=$(now)
    scontrol update nodename="$VICTIM" state=drain reason="busy_repair: gpu xid 79"
    if [ -n "$expedite" ]; then
        # DRAIN then DOWN: Slurm requeues an expedited job only on a node
        # failure, and keeps its nodes for it
        scontrol update nodename="$VICTIM" state=down reason="busy_repair: gpu xid 79"
        how="DOWN, expedited requeue"
    else
        scontrol requeue "$P"
        how="scontrol requeue"
    fi
    J=$P
    sleep 10
    took=$(backlog_running)
    if wait_for 35 back && t1=$(second_start "$OUT/starts.$P"); then
        echo "# measured: busy cluster, Slurm alone ($how): running again after $(secs "$t0" "$t1") s on $(racks_of "$(nodes_of "$P")"); $took backlog job(s) started within 10 s of the failure"
    else
        echo "# measured: busy cluster, Slurm alone ($how): not running again within 45 s ($(squeue -h -j "$P" -o '%T %r')); $took backlog job(s) started within 10 s of the failure, on $(backlog_nodes)"
    fi
    ok "Slurm alone beside the same backlog measured ($how)"
else
    not_ok "Slurm alone: the plain job did not start: $(squeue -h -j "$P" -o '%T %r')"
fi
scancel -n plain; scancel -n backlog
cleanup
scontrol update nodename="$VICTIM" state=resume
wait_for 30 all_up
rm -rf "$OUT"
summary busy
