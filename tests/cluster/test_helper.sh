#!/bin/bash
# Cluster tests of nvlsliced on the real test cluster (see run.sh): the
# helper runs on the controller host with a 500 ms cycle, defragmentation
# after 3 s, and the spare reservation nvlslice_spares.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
OUT=$(mktemp -d)
[ -n "${NVL_HELPER:-}" ] || { echo "test_helper.sh: NVL_HELPER (the nvlsliced binary) must be set" >&2; exit 1; }
cd "$OUT"
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log
# Scrapes of /metrics in three states of this run, for the shipped alert
# rules (tests/prometheus/alerts.sh, at the end): two a few seconds apart,
# so that a counter's rate is the helper's own
SCRAPES=$NVL_CLUSTER_DIR/scrapes
rm -rf "$SCRAPES"; mkdir -p "$SCRAPES"
scrape_pair() { # scrape_pair NAME
    local i
    for i in 1 2; do
        [ "$i" = 2 ] && sleep 2 # (the second point of a rate, not a wait for a state)
        { echo "# at $(date +%s.%N)"
          (exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3) | tr -d '\r' | sed '1,/^$/d'
        } > "$SCRAPES/$1.$i.prom"
    done
}

running_on() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ] && [ "$(nodes_of "$1")" = "$2" ]; }
# the rack of every node of a job: rack001, rack002, or "both"
rack_of() {
    local n r=""
    for n in $(scontrol show hostnames "$(nodes_of "$1")"); do
        n=$((10#${n#nvl}))
        if [ "$n" -le 18 ]; then n=rack001; else n=rack002; fi
        [ -z "$r" ] || [ "$r" = "$n" ] || { echo both; return; }
        r=$n
    done
    echo "$r"
}
runs_in() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ] && [ "$(rack_of "$1")" = "$2" ]; }
# running JOB without NODE: state and nodes from one squeue call (two calls
# could see RUNNING, then the empty node list of the job just requeued)
running_without() {
    local s
    s=$(squeue -h -j "$1" -o '%T %N' 2>/dev/null)
    [[ "$s" == "RUNNING "?* ]] && ! grep -qx "$2" <<< "$(scontrol show hostnames "${s#RUNNING }")"
}

MODE=$(nvl_mode)
echo "# helper: mode $MODE (nvlsliced's log: $(grep -o 'mode [a-z]* ([^)]*)' "$LOG" | tail -1))"
check "nvlsliced names its mode in its log" [ -n "$MODE" ]
expect_match "nvl-topo show names it too" "Mode=$MODE " "$("$NVL_TOPO" show --map "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml" 2>&1 | tail -1)"

echo "# helper: the spare reservation"
wait_for 10 bash -c "[ \"\$(scontrol show reservation nvlslice_spares 2>/dev/null | sed -n 's/^ *Nodes=\([^ ]*\).*/\1/p')\" = 'nvl[0017-0018,0035-0036]' ]"
expect_eq "two spares per rack reserved, visible in scontrol" "nvl[0017-0018,0035-0036]" "$(resv_nodes)"
expect_match "and in sinfo -T" 'nvlslice_spares +ACTIVE' "$(sinfo -T)"
scrape_pair healthy

echo "# helper: the baseline: plain Slurm requeueing the same 32-node job with a running srun step"
# How long Slurm itself takes from a requeue until the job is pending with
# all its nodes free again: no repair can be faster than that.
P=$(sbatch --parsable -N 32 -w 'nvl[0001-0016,0019-0034]' -J plain32 --wrap 'srun sleep 300')
wait_for 20 bash -c "[ \"\$(squeue -h -j $P -o %T)\" = RUNNING ]"; sleep 2
t0=$(now)
scontrol requeuehold "$P"
wait_for 30 bash -c "[ \"\$(squeue -h -j $P -o %T)\" = PENDING ] && [ -z \"\$(sinfo -h -t completing -o %N)\" ]"
BASE=$(secs "$t0" "$(now)")
echo "# measured: plain Slurm, requeue -> pending with its 32 nodes free: $BASE s"
scancel "$P"; wait_for 20 bash -c '[ -z "$(squeue -h -o %i)" ]'

echo "# helper: the baseline: plain Slurm, a node of a running 16-node job fails (drain + requeue) -> running again"
# What a site without nvlslice does when a health check finds a bad GPU:
# drain the node and requeue the job; Slurm holds it until its begin time
# (requeue + cred_expire + 1: 30 s here, 120 s by default) and starts it
# on other nodes.
P=$(sbatch --parsable -N 16 --requeue -J plain16 --wrap 'srun sleep 300')
wait_for 20 bash -c "[ \"\$(squeue -h -j $P -o %T)\" = RUNNING ]"; sleep 1
pn=$(scontrol show hostnames "$(squeue -h -j "$P" -o %N)" | sed -n 5p)
t0=$(now)
scontrol update nodename="$pn" state=drain reason="gpu xid 79"
scontrol requeue "$P"
if wait_for 120 bash -c "[ \"\$(squeue -h -j $P -o %T)\" = RUNNING ] && scontrol show job $P | grep -q 'Restarts=1'"; then
    RERUN=$(secs "$t0" "$(now)")
    echo "# measured: plain Slurm, drain + requeue -> running again: $RERUN s (cred_expire=30 here; Slurm's default of 120 s adds 90 s)"
    ok "plain Slurm's requeued job runs again ($RERUN s), off the drained node: $(squeue -h -j "$P" -o %N)"
else
    RERUN=never
    not_ok "plain Slurm's requeued job runs again: $(squeue -h -j "$P" -o '%T %r')"
fi
# its srun step up before it is cancelled: a batch script killed while its
# srun connects leaves the step's slurmstepd retrying MESSAGE_TASK_EXIT to
# a gone srun, the nodes COMPLETING for over a minute (26.05)
# (squeue -s lists every step: 26.05 refuses --steps with --jobs)
wait_for 20 bash -c "squeue -h -s -o %i | grep -q '^$P\.0\$'"
scancel "$P"; cleanup
scontrol update nodename="$pn" state=resume
settle

echo "# helper: a 2-slice job on a fragmented cluster waits with the reason, then lands 16 + 16"
P1=$(sbatch --parsable -w nvl0003 -J frag1 --wrap 'sleep 300')
P2=$(sbatch --parsable -w nvl0024 -J frag2 --wrap 'sleep 300')
wait_for 15 running_on "$P1" nvl0003; wait_for 15 running_on "$P2" nvl0024
# (each run of its batch script writes when it started: the repair below
# is timed to the job's own start, not to a poll of squeue)
J=$(sbatch --parsable -N 32 --nvl-slice=16 -o "$OUT/frag-%j.out" \
    --wrap "date +%s.%N >> $OUT/starts.\$SLURM_JOB_ID; "'srun bash -c "echo \$SLURMD_NODENAME \$NVL_SLICE_INDEX \$NVL_DOMAIN"; sleep 300')
wait_for 10 bash -c "scontrol show job $J | grep -q 'AdminComment=nvlslice/1 waiting'"
# each rack has 17 free: 16 would fit only by eating a spare
expect_match "the record says why it waits" "^nvlslice/1 waiting slice=16 .*reason=would consume spares: 0 of 2 16-node slices fit without taking domains' spares" "$(record "$J")"
expect_match "squeue shows it (-O admin_comment)" 'would consume spares' "$(squeue -h -j "$J" -O admin_comment:200)"
expect_eq "meanwhile Slurm has not started it" "PENDING" "$(job_field "$J" JobState)"
if [ "$MODE" = native ]; then
    expect_eq "native: Slurm keeps it waiting itself (--segment=16, no gate, not held)" "PENDING (null)" "$(job_field "$J" JobState) $(job_field "$J" Licenses)"
    expect_match "its tag says native" 'handoff=native' "$(job_comment "$J")"
else
    wait_for 8 bash -c "[ \"\$(squeue -h -j $J -o %r)\" = Licenses ]"
    expect_eq "while it waits it is behind its gate, not held" "PENDING Licenses nvlslice_gate:1" "$(job_field "$J" JobState) $(job_field "$J" Reason) $(job_field "$J" Licenses)"
fi
check "with the priority Slurm computed ($(job_field "$J" Priority))" [ "$(job_field "$J" Priority)" -gt 0 ]
scancel "$P1" "$P2"
if wait_for 20 running_on "$J" 'nvl[0001-0016,0019-0034]'; then ok "placed 16 + 16, one slice per rack"; else not_ok "placed 16 + 16: $(nodes_of "$J") $(record "$J")"; fi
expect_eq "each rack keeps its 2 spares" "nvl[0017-0018,0035-0036]" "$(resv_nodes)"
wait_for 5 bash -c "scontrol show job $J | grep -q 'AdminComment=nvlslice/1 placed'" # native: recorded once Slurm started it
expect_match "placement recorded in admin_comment" '^nvlslice/1 placed slice=16 slices=nvl\[0001-0016\];nvl\[0019-0034\] repairs=0' "$(record "$J")"
wait_for 15 bash -c "[ \"\$(wc -l < '$OUT/frag-$J.out' 2>/dev/null)\" -ge 32 ]" # every task has printed
expect_eq "tasks see slice 0 on rack001 and slice 1 on rack002" "16 0 rack001,16 1 rack002" \
    "$(awk '{print $2, $3}' "$OUT/frag-$J.out" | sort | uniq -c | awk '{print $1, $2, $3}' | paste -sd,)"

echo "# helper: a site's AdminComment: written over by a health check, appended to by a tagger"
scontrol update jobid="$J" AdminComment="nhc: nvl0005 gpu xid 79 seen"
if wait_for 10 bash -c "scontrol show job $J | grep -q 'AdminComment=nhc: nvl0005 gpu xid 79 seen | nvlslice/1 placed slice=16 '"; then
    ok "the record written over comes back after the site's text"
else
    not_ok "the record written over: $(admin_comment "$J")"
fi
expect_eq "said once in the log" 1 "$(grep -c "job $J: its AdminComment was written over (now \"nhc: nvl0005 gpu xid 79 seen\")" "$LOG")"
scontrol update jobid="$J" AdminComment="$(admin_comment "$J") | acct: proj-a"

echo "# helper: drain a node of the running job -> same rack's spare"
t0=$(now)
scontrol update nodename=nvl0005 state=drain reason="gpu xid 79"
# running again: its batch script's second start
if wait_for 15 running_on "$J" 'nvl[0001-0004,0006-0017,0019-0034]' && t1=$(second_start "$OUT/starts.$J"); then
    d=$(secs "$t0" "$t1")
    ok "running again on the spare nvl0017 in $d s"
    echo "# measured: drain -> running again: $d s (plain Slurm: requeue -> nodes free $BASE s, drain + requeue -> running again $RERUN s)"
    check "within 5 s of the drain ($d s)" awk -v d="$d" 'BEGIN { exit !(d <= 5.0) }'
else
    not_ok "repair from the spare: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J")"
fi
expect_match "the record counts the repair" 'repairs=1 moves=0' "$(record "$J")"
expect_match "the site's text kept around it, as it was" '^nhc: nvl0005 gpu xid 79 seen \| nvlslice/1 placed slice=16 .*repairs=1 .* \| acct: proj-a$' "$(admin_comment "$J")"
expect_eq "the used spare left the reservation" "nvl[0018,0035-0036]" "$(resv_nodes)"
expect_match "the helper logged job, nodes and reason" "job $J: repair: slice 0: 1 failed node\(s\) replaced inside rack001: removed nvl0005 added nvl0017" "$(cat "$LOG")"
wait_for 15 grep -q 'nvl0017 0 rack001' "$OUT/frag-$J.out" # the restarted job's tasks print again
expect_match "after the repair nvl0017 is rank 15 of slice 0" 'nvl0017 0 rack001' "$(cat "$OUT/frag-$J.out")"

echo "# helper: kill -9 of the helper in the middle of a repair, restart -> converges"
"$CL" kill-helper
NVLSLICED_TEST_KILL_AFTER=requeue-hold "$CL" helper
scontrol update nodename=nvl0006 state=drain reason="gpu xid 48"
wait_for 10 bash -c "grep -q 'test hook: killed after requeue-hold of job $J' '$LOG'"
expect_match "the helper died right after requeue-hold" 'killed after requeue-hold' "$(tail -3 "$LOG")"
wait_for 60 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = PENDING ]" # Slurm finishes the requeue (seconds; more under load)
expect_match "the job is left held mid-repair" '^PENDING' "$(squeue -h -j "$J" -o %T)"
"$CL" helper
if wait_for 15 running_on "$J" 'nvl[0001-0004,0007-0034]'; then
    ok "after the restart the repair finished: running on nvl0018"
else
    not_ok "restart converges: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J")"
fi
expect_match "repairs counted once each" 'repairs=2 moves=0' "$(record "$J")"
expect_eq "no job left held" "" "$(squeue -h -t PD -o '%i %r' | grep -i held)"
expect_eq "rack001's spares are both used" "nvl[0035-0036]" "$(resv_nodes)"
scrape_pair spares_used

echo "# helper: spares are lent to checkpointable work (here a 2-node job); a repair takes them back first"
# J runs on nvl[0001-0004,0007-0034]: rack001's spares are used; rack002's are nvl[0035-0036]
L=$(sbatch --parsable -N 2 --nvl-slice=2 --nvl-checkpointable --requeue -J lent --wrap 'sleep 300')
wait_for 15 bash -c "[ \"\$(squeue -h -j $L -t R -o %i | wc -l)\" = 1 ]"
expect_eq "the 2-node checkpointable job runs on rack002's spares" "nvl[0035-0036]" "$(nodes_of "$L")"
expect_match "recorded as lent" 'lent=1' "$(record "$L")"
expect_eq "the lent spares left the reservation" "" "$(resv_nodes)"
scontrol update nodename=nvl0020 state=drain reason="gpu xid 79"
if wait_for 15 bash -c "squeue -h -j $J -t R -o %N | grep -q 'nvl0035\|nvl0036\|nvl\[.*003[56]'"; then
    ok "the repair took a lent spare back: $(nodes_of "$J")"
else
    not_ok "repair with lent spares: $(squeue -h -j "$J" -o '%T %N') $(record "$J")"
fi
expect_match "the lent job was requeued (not killed) to give its spare back" 'Restarts=1' "$(scontrol show job "$L")"
expect_match "the helper logged it" "job $J: repair takes back a lent spare: requeued checkpointable job $L" "$(cat "$LOG")"
scancel "$L"
# the repaired job's batch step has started before it is cancelled
wait_for 15 bash -c "squeue -h -s -o %i 2>/dev/null | grep -q '^$J\.batch\$'"

if [ "$MODE" = native ]; then
    echo "# helper (native): checkpointable work Slurm starts before the helper's cycle sees it stands in for its rack's spares"
    # Slurm starts such work at submission, or by its backfill while the
    # helper saw no room for it: recorded lent by the placement's rule all
    # the same, so that its rack's spares may take other work (as they do
    # for the work the helper itself placed, above)
    cleanup; resume_all
    settle
    spares_are() { [ "$(resv_nodes)" = "$1" ]; }
    wait_for 10 spares_are 'nvl[0017-0018,0035-0036]'
    SPID=$(cat "$NVL_CLUSTER_DIR/run/nvlsliced.pid")
    kill -STOP "$SPID" # no cycle while Slurm starts it
    # 4 nodes: more than a rack's spares take, so handed to Slurm natively
    S=$(sbatch --parsable -N 4 --nvl-slice=4 --nvl-checkpointable --requeue -J small --wrap 'sleep 300')
    wait_for 15 bash -c "[ \"\$(squeue -h -j $S -t R -o %i | wc -l)\" = 1 ]"
    expect_eq "Slurm started it before any cycle of the helper saw it" "RUNNING " "$(squeue -h -j "$S" -o %T) $(record "$S")"
    kill -CONT "$SPID"
    small_lent() { record "$S" | grep -q 'lent=1'; }
    wait_for 10 small_lent
    expect_match "recorded as lent once the helper sees it" 'placed slice=4 .*lent=1' "$(record "$S")"
    case $(rack_of "$S") in rack001) OTHER='nvl[0035-0036]' ;; *) OTHER='nvl[0017-0018]' ;; esac
    wait_for 10 spares_are "$OTHER"
    expect_eq "its rack's spares left the reservation: other work may run there" "$OTHER" "$(resv_nodes)"
    scancel "$S"
    wait_for 15 spares_are 'nvl[0017-0018,0035-0036]'
    expect_eq "kept again once it ended" "nvl[0017-0018,0035-0036]" "$(resv_nodes)"

    echo "# helper (native): checkpointable work that a rack's spares can take goes to nvlsliced first, which puts it on idle spares"
    # Handed to Slurm natively it would start at once on rack001's slice
    # room (as the 4-node job above did), while rack002's spares idle
    # beside the 16-node job that fills the rest of it
    B=$(sbatch --parsable -N 16 --exclusive -w 'nvl[0019-0034]' -J fill --wrap 'sleep 300')
    wait_for 15 running_on "$B" 'nvl[0019-0034]' || not_ok "a 16-node job fills rack002 but its spares: $(squeue -h -j "$B" -o '%T %r %N')"
    kill -STOP "$SPID"
    S=$(sbatch --parsable -N 2 --nvl-slice=2 --nvl-checkpointable --requeue -J small --wrap 'sleep 300')
    expect_match "tagged gate" 'nodes=2 .*checkpointable=1 handoff=gate' "$(job_comment "$S")"
    expect_match "behind the gate license" 'nvlslice_gate:1' "$(job_field "$S" Licenses)"
    sleep 3 # Slurm's scheduler runs at submission and then every few seconds: it must start nothing
    expect_eq "Slurm leaves it waiting behind the gate while the helper is stopped" "PENDING Licenses" "$(squeue -h -j "$S" -o '%T %r')"
    kill -CONT "$SPID"
    wait_for 15 bash -c "[ \"\$(squeue -h -j $S -t R -o %i | wc -l)\" = 1 ]"
    expect_eq "it runs on rack002's idle spares, rack001's 18 nodes left whole" "nvl[0035-0036]" "$(nodes_of "$S")"
    expect_match "recorded as lent" 'lent=1' "$(record "$S")"
    expect_match "the helper logged it as a lent spare" "job $S: placed 1 slice\(s\) of 2: rack002 nvl\[0035-0036\] \(a lent spare\)" "$(cat "$LOG")"
    scancel "$S" "$B"
    wait_for 15 spares_are 'nvl[0017-0018,0035-0036]'
fi

echo "# helper: rack001 out of spares -> the slice moves to the other rack, or waits with the reason"
cleanup; resume_all
settle
# -w: where the helper's best fit puts it in gate mode, and where Slurm must
# in native mode (one segment may name its nodes); a repair replaces it
J=$(sbatch --parsable -N 16 --nvl-slice=16 -w 'nvl[0001-0016]' --wrap 'sleep 300')
wait_for 15 running_on "$J" 'nvl[0001-0016]' || not_ok "16-node job placed on rack001: $(nodes_of "$J")"
scontrol update nodename=nvl[0002-0004] state=drain reason="nvlink down"
# the move's time is not the claim here (test_native and bench_failure time
# repairs): up to a minute for Slurm to complete the requeued run, which
# took over 20 s on 24.11 with a build running beside the tests
if wait_for 60 running_on "$J" 'nvl[0019-0034]'; then ok "3 failed nodes: moved to rack002"; else not_ok "move to rack002: $(squeue -h -j "$J" -o '%T %N') $(record "$J")"; fi
expect_match "the record counts the move" 'repairs=1 moves=1' "$(record "$J")"
scontrol update nodename=nvl[0020-0022] state=drain reason="nvlink down"
# (its record says so until it is pending again, then why it waits: the log keeps it)
wait_for 10 grep -q "job $J: .*requeued to wait for room" "$LOG"
expect_match "no rack has room: requeued to wait with its priority, and says why" "job $J: node\(s\) nvl\[0020-0022\] failed; slice 0: rack002 is degraded \(3 failed node\(s\) \(nvl\[0020-0022\]\), more than its 2 spare\(s\)\) and no other domain has room for 16 nodes: requeued to wait for room with its priority" "$(cat "$LOG")"
if wait_for 30 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = PENDING ]"; then ok "it waits pending (requeued, not held): $(squeue -h -j "$J" -o '%T %r')"; else not_ok "requeued to wait: $(squeue -h -j "$J" -o '%T %r %N')"; fi
expect_eq "not held (it keeps its priority)" "" "$(squeue -h -j "$J" -o %r | grep -i held)"
# room again: it is placed in one rack, as any waiting slice job
scontrol update nodename=nvl[0020-0022] state=resume
if wait_for 60 runs_in "$J" rack002; then ok "room again in rack002: it runs there ($(nodes_of "$J"))"; else not_ok "placed again after the wait: $(squeue -h -j "$J" -o '%T %r %N') $(record "$J")"; fi

echo "# helper: no room now, but rack002 frees within its job's time limit -> the repair holds that target for the job from its requeue (repair_hold_max)"
cleanup; resume_all
wait_for 60 all_up; settle
J=$(sbatch --parsable -N 16 --nvl-slice=16 -w 'nvl[0001-0016]' --requeue --wrap 'sleep 600')
wait_for 15 running_on "$J" 'nvl[0001-0016]' || not_ok "16-node job placed on rack001: $(nodes_of "$J")"
# rack002 busy but for its spares, with a job that has a time limit (2 min)
B=$(sbatch --parsable -N 16 -w 'nvl[0019-0034]' --time=2 -J busy --wrap 'sleep 600')
wait_for 15 running_on "$B" 'nvl[0019-0034]' || not_ok "rack002 busy: $(squeue -h -j "$B" -o '%T %r %N')"
scontrol update nodename=nvl[0002-0004] state=drain reason="nvlink down"
if wait_for 15 grep -q "job $J: node(s) nvl\[0002-0004\] failed and no rack has room now: requeued, its target held for it in nvlslice_lend_$J" "$LOG"; then
    ok "rack001 degraded, rack002 busy: requeued with its target held ($(grep -o "job $J: node(s) nvl\[0002-0004\] failed and no rack has room now.*" "$LOG" | tail -1 | sed 's/.*; //'))"
else
    not_ok "the held repair: $(grep "job $J" "$LOG" | tail -3)"
fi
wait_for 15 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = PENDING ]"
expect_match "it waits in its own reservation, its target's nodes in it" "ReservationName=nvlslice_lend_$J .*Nodes=nvl\[0019-0036\]|Nodes=nvl\[0019-0036\].*nvlslice_lend_$J" "$(scontrol show res "nvlslice_lend_$J" -o 2>/dev/null)"
# A higher-priority job for the same nodes, submitted before they free: Slurm
# alone would start it there the moment the busy job ends; the held target
# is the repaired job's.
P=$(sbatch --parsable -N 16 -w 'nvl[0019-0034]' -p urgent -J urgent --wrap 'sleep 600')
sleep 1
scancel "$B"
if wait_for 30 runs_in "$J" rack002; then ok "rack002 freed: the repaired job runs there ($(nodes_of "$J")), $(restarts "$J") restart"; else not_ok "started on its held target: $(squeue -h -j "$J" -o '%T %r %N') $(record "$J"); $(scontrol show res -o | grep -o 'ReservationName=nvlslice_lend[^ ]* .*Nodes=[^ ]*' | sed 's/StartTime.*Nodes=/Nodes=/')"; fi
expect_eq "the higher-priority job did not take the held target" "PENDING" "$(squeue -h -j "$P" -o %T)"
wait_for 15 bash -c "! scontrol show res nvlslice_lend_$J >/dev/null 2>&1" || true
scancel "$P"

echo "# helper: no room anywhere -> a rack with checkpointable work is held for the slice and freed at once, the slice moves there (defrag.for_repairs)"
cleanup; resume_all
wait_for 60 all_up; settle
J=$(sbatch --parsable -N 16 --nvl-slice=16 -w 'nvl[0001-0016]' --requeue --wrap 'sleep 600')
wait_for 15 running_on "$J" 'nvl[0001-0016]' || not_ok "16-node job placed on rack001: $(nodes_of "$J")"
# rack001's spares run an admin's job in the spare reservation: not
# checkpointable, so no repair takes them back
A=$(sbatch --parsable -N 2 -w 'nvl[0017-0018]' --reservation=nvlslice_spares -J admin --wrap 'sleep 600')
wait_for 15 running_on "$A" 'nvl[0017-0018]' || not_ok "admin's job on rack001's spares: $(squeue -h -j "$A" -o '%T %r %N')"
K=$(sbatch --parsable -N 16 --nvl-slice=16 --nvl-checkpointable --requeue -J ckpt --wrap 'sleep 600')
wait_for 15 running_on "$K" 'nvl[0019-0034]' || not_ok "checkpointable job on rack002: $(nodes_of "$K") $(record "$K")"
scontrol update nodename=nvl0005 state=drain reason="gpu xid 79"
if wait_for 60 running_on "$J" 'nvl[0019-0034]'; then
    ok "the slice moved to rack002, freed for it"
else
    not_ok "repair by freeing a rack: $(squeue -h -j "$J" -o '%T %N') $(record "$J")"
fi
expect_match "the checkpointable job was requeued for it, not killed" 'Restarts=1' "$(scontrol show job "$K")"
# (its record said why while it yielded; the next cycle records why it waits)
expect_eq "it waits for room: rack002 is the repaired job's now" "PENDING" "$(squeue -h -j "$K" -o %T)"
expect_match "the helper logged it" "job $J: repair frees its target: requeued checkpointable job\(s\) $K" "$(cat "$LOG")"
expect_eq "the admin's job kept its nodes" "RUNNING nvl[0017-0018]" "$(squeue -h -j "$A" -o '%T %N')"

echo "# helper: a node's slurmd killed -> nvlsliced's probe finds it (silent_after: 5 s, the default), the same repair"
cleanup; resume_all
settle
J=$(sbatch --parsable -N 16 --nvl-slice=16 -w 'nvl[0001-0016]' --requeue --wrap 'sleep 600')
wait_for 15 running_on "$J" 'nvl[0001-0016]' || not_ok "16-node job placed: $(nodes_of "$J")"
t0=$(now)
"$CL" kill-node 7
if wait_for 150 running_on "$J" 'nvl[0001-0006,0008-0017]'; then
    t1=$(now); ok "running again on the spare after nvl0007's slurmd was killed ($(secs "$t0" "$t1") s after the kill)"
    T_DOWN=$(secs "$t0" "$t1")
    echo "# measured: slurmd killed -> running again: $T_DOWN s (nvlsliced's probe: refused for silent_after=5 s, then DOWN and the repair)"
else
    not_ok "repair after a killed slurmd: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J") $(sinfo -h -n nvl0007 -o %T)"
fi
expect_match "the helper's probe drained it and marked it down, with the reason" \
    "^nvlsliced: slurmd did not answer nvlsliced's probe for [0-9]+ s \(silent_after=5\); slice job $J repaired on a spare" \
    "$(sinfo -h -n nvl0007 -o %E)"
"$CL" start-node 7
scontrol update nodename=nvl0007 state=resume 2>/dev/null
wait_for 20 bash -c '[ "$(sinfo -h -n nvl0007 -o %T)" != "down" ] && [ "$(sinfo -h -n nvl0007 -o %T)" != "down*" ]'

echo "# helper: a node goes silent (its processes killed, its link down) -> repaired in seconds; a 3 s blip is left alone"
cleanup; resume_all
wait_for 60 all_up || not_ok "all nodes up before the case: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"
settle
J=$(sbatch --parsable -N 16 --nvl-slice=16 -w 'nvl[0001-0016]' --requeue --wrap 'srun sleep 600')
wait_for 15 running_on "$J" 'nvl[0001-0016]' || not_ok "16-node job placed: $(nodes_of "$J")"
wait_for 20 bash -c "squeue -h -s -o %i | grep -q '^$J\.0\$'"
# a blip: the link of nvl0009 down for 3 s, then up (the node and its job live on)
ip link set nvlv0009 down; sleep 3; ip link set nvlv0009 up
sleep 10 # past silent_after: it must have answered again in between
expect_eq "a 3 s network blip of nvl0009 requeues nothing" "RUNNING nvl[0001-0016] 0" "$(squeue -h -j "$J" -o '%T %N') $(restarts "$J")"
expect_eq "and drains nothing" "" "$(sinfo -h -n nvl0009 -t down,drain -o %N)"
t0=$(now)
"$CL" silence-node 11
silent_back() { running_without "$J" nvl0011; }
if wait_for 120 silent_back; then
    T_SILENT=$(secs "$t0" "$(now)")
    ok "running again without nvl0011 $T_SILENT s after it went silent, on $(nodes_of "$J")"
    echo "# measured: silent node -> running again: $T_SILENT s (silent_after=5, SlurmdTimeout=$(scontrol show config | sed -n 's/^SlurmdTimeout *= *//p'))"
else
    not_ok "repair of a silent node: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J") $(sinfo -h -n nvl0011 -o '%T %E')"
fi
expect_match "marked down by the probe, with the reason" "^nvlsliced: slurmd did not answer nvlsliced's probe" "$(sinfo -h -n nvl0011 -o %E)"
# The aborted run's srun waits KillWait + 2 s for nvl0011's tasks, then asks
# slurmctld to kill step 0 of its job once more, which before Slurm 26.05 is
# the next run's step; under proctrack/linuxproc it may outlive its batch
# script (the busy bench on 24.11: 2 of 8 such trials). The plugin ends it as
# the batch step ends (the next case); the next run and its step must
# outlive that moment.
R_SILENT=$(restarts "$J")
left=$(awk -v t0="$t0" -v now="$(now)" 'BEGIN { s = t0 + 45 - now; print (s > 0) ? int(s) + 1 : 0 }')
sleep "$left" # past KillWait (30 s) + 2 s after the abort: the old srun's moment
expect_eq "45 s after the silence the job's next run still runs, its step too" "RUNNING $R_SILENT $J.0" \
    "$(squeue -h -j "$J" -o %T) $(restarts "$J") $(squeue -h -s -j "$J" -o %i | grep -x "$J\.0")"
scancel "$J"; cleanup
"$CL" revive-node 11
scontrol update nodename=nvl0011 state=resume 2>/dev/null
wait_for 60 all_up || not_ok "nvl0011 back: $(sinfo -h -n nvl0011 -o '%T %E')"

echo "# plugin: an srun that outlives its slice job's batch script is ended with the batch step"
# A task of its step killed by SIGKILL (as nvlsliced's abort kills them),
# the other still running, then its shell killed while its srun waits (as a
# requeue's terminate can leave it under proctrack/linuxproc): the srun is
# no one's child any more, and only the plugin's end of the batch step ends it
cleanup
J=$(sbatch --parsable -N 2 --nvl-slice=2 -o /dev/null \
    --wrap 'srun bash -c '"'"'[ "$SLURM_NODEID" = 0 ] && kill -9 $$; sleep 600'"'"' & sleep 4; kill -9 $$')
ended() { grep -q "job $J: its batch script ended, its srun (pid [0-9]*) outlived it: killed" "$NVL_CLUSTER_DIR"/log/slurmd-*.log; }
if wait_for 60 ended; then ok "the batch script's leftover srun killed as its batch step ended, and logged"
else not_ok "the leftover srun of job $J: $(squeue -h -j "$J" -o '%T %r') $(grep -h "\[$J\.batch\]" "$NVL_CLUSTER_DIR"/log/slurmd-*.log | tail -3)"; fi
left_over() { for p in $(pgrep -x srun); do tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "SLURM_JOB_ID=$J" && return 0; done; return 1; }
expect_eq "no srun of the job is left on the node" "" "$(left_over && echo "an srun of job $J")"
cleanup
# Each node's mark of a killed step is its own (aborted.JOB.NODE): where
# several slurmds share a host (here), a node whose step had ended before
# the job's end (a silent node's DOWN comes 6 s after the abort) runs its
# job epilog at once and must not take the batch host's mark before the
# batch step ends (the busy bench on 24.11, run 43: the old srun then
# lived on and cancelled the next run's step)
J=$(sbatch --parsable -N 2 --nvl-slice=2 -o /dev/null --wrap 'srun bash -c "kill -9 \$\$"; sleep 600')
wait_for 45 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]" || not_ok "job $J started: $(squeue -h -j "$J" -o '%T %r')"
want=$(scontrol show hostnames "$(squeue -h -j "$J" -o %N)" 2>/dev/null | sed "s/^/aborted.$J./" | paste -sd' ')
marks() { (cd /run/nvlslice 2>/dev/null && ls -d aborted."$J"* 2>/dev/null | paste -sd' '); }
both_marked() { [ -n "$want" ] && [ "$(marks)" = "$want" ]; }
wait_for 30 both_marked
expect_eq "a killed step leaves each node a mark of its own" "$want" "$(marks)"
scancel "$J"
gone() { [ -z "$(squeue -h -j "$J" -o %i 2>/dev/null)" ]; }
wait_for 60 gone
expect_eq "each node's job epilog takes its own" "" "$(marks)"
cleanup

echo "# helper: a degraded rack (rack_failure_reasons: contained) is emptied of slice jobs, checkpointable first"
cleanup; resume_all
wait_for 60 all_up || not_ok "all nodes up before the case: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"
settle
# A and C on rack001's nodes outside the spare reservation
R1_FREE=$(outside_spares 'nvl[0001-0018]' | tr , '\n')
A_W=$(sed -n 1,8p <<< "$R1_FREE" | paste -sd,) C_W=$(sed -n 9,16p <<< "$R1_FREE" | paste -sd,)
A=$(sbatch --parsable -N 8 --nvl-slice=8 -w "$A_W" --requeue -J sliceA --wrap 'sleep 300')
# (the start itself is not what this case measures: up to 45 s, and why not when it fails)
wait_for 45 runs_in "$A" rack001 || not_ok "slice job A on rack001: $(squeue -h -j "$A" -o '%T %r %N') $(record "$A")"
C=$(sbatch --parsable -N 8 --nvl-slice=8 -w "$C_W" --requeue --nvl-checkpointable -J ckptC --wrap 'sleep 300')
wait_for 45 runs_in "$C" rack001 || not_ok "checkpointable slice job C on rack001: $(squeue -h -j "$C" -o '%T %r %N') $(record "$C")"
A_NODES=$(nodes_of "$A")
# rack002 keeps room for one 8-node slice: a plain job holds 8 of its nodes
F=$(sbatch --parsable -N 8 -w 'nvl[0019-0026]' -J filler --wrap 'sleep 300')
wait_for 15 running_on "$F" 'nvl[0019-0026]' || not_ok "filler on rack002: $(nodes_of "$F")"
# a node of rack001 that runs no job drains with a contained NVLink error
BAD=$(comm -23 <(scontrol show hostnames 'nvl[0001-0018]' | sort) \
    <(scontrol show hostnames "$(nodes_of "$A"),$(nodes_of "$C")" | sort) | head -1)
scontrol update nodename="$BAD" state=drain reason="Xid 145: NVLink contained error"
if wait_for 20 runs_in "$C" rack002; then ok "the checkpointable job moved first, to rack002's room ($(nodes_of "$C"))"; else not_ok "C moved: $(squeue -h -j "$C" -o '%T %N') $(record "$C")"; fi
expect_eq "the other job keeps running on the degraded rack until there is room" "RUNNING $A_NODES" "$(squeue -h -j "$A" -o '%T %N')"
wait_for 10 bash -c "scontrol show job $A | grep -q 'reason=move waits'"
expect_match "and says why" "reason=move waits: slice 0: rack001 is degraded \\($BAD is out with a rack-level failure: \"Xid 145: NVLink contained error\"\\)" "$(record "$A")"
expect_match "the log names the degraded rack and why" "rack rack001 degraded: $BAD is out with a rack-level failure: \"Xid 145: NVLink contained error\": no new slice is placed there" "$(cat "$LOG")"
expect_match "nvl-topo show names it" "Degraded: $BAD is out with a rack-level failure" \
    "$("$NVL_TOPO" show --map "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml" --rack-failure-reasons contained rack001)"
expect_match "the metrics show it" 'nvlslice_rack_degraded\{rack="rack001"\} 1' "$(exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3)"
scrape_pair degraded
scancel "$F"
if wait_for 30 runs_in "$A" rack002; then ok "room on rack002: the other job moved too ($(nodes_of "$A"))"; else not_ok "A moved: $(squeue -h -j "$A" -o '%T %N') $(record "$A")"; fi
expect_eq "rack001 is emptied of slice jobs" "rack002 rack002" "$(rack_of "$A") $(rack_of "$C")"
D=$(sbatch --parsable -N 16 --nvl-slice=16 -J sliceD --wrap 'sleep 300')
wait_for 15 bash -c "scontrol show job $D | grep -q 'AdminComment=nvlslice/1 waiting'" # the helper has seen it
expect_match "the degraded rack's nodes are held in the spare reservation, the failed one too: Slurm offers them to no new job" \
    "^$(scontrol show hostnames 'nvl[0001-0018]' | paste -sd' ')\$" \
    "$(scontrol show hostnames "$(resv_nodes)" | grep -E '^nvl00(0[1-9]|1[0-8])$' | paste -sd' ')"
expect_eq "no new slice goes to the degraded rack, though 17 of its nodes are free" "PENDING" "$(squeue -h -j "$D" -o %T)"
scontrol update nodename="$BAD" state=resume
if wait_for 20 runs_in "$D" rack001; then ok "resumed: the rack recovered, the waiting slice job runs there"; else not_ok "D after recovery: $(squeue -h -j "$D" -o '%T %N') $(record "$D")"; fi
expect_match "the log says it recovered" 'rack rack001 recovered: slices are placed there again' "$(cat "$LOG")"

echo "# helper: a rack beyond its spares (3 failed nodes, 2 spares) is emptied of slice jobs"
scancel "$D"
wait_for 20 bash -c "[ -z \"\$(squeue -h -j $D)\" ] && [ -z \"\$(sinfo -h -t completing -o %N)\" ]"
# rack002 runs A and C on 16 nodes; its 2 other nodes and one of C's fail
OTHERS=$(comm -23 <(scontrol show hostnames 'nvl[0019-0036]' | sort) \
    <(scontrol show hostnames "$(nodes_of "$A"),$(nodes_of "$C")" | sort) | paste -sd,)
C1=$(scontrol show hostnames "$(nodes_of "$C")" | head -1)
A_BEFORE=$(nodes_of "$A")
scontrol update nodename="$OTHERS,$C1" state=drain reason="gpu xid 79"
both_in_rack001() { runs_in "$A" rack001 && runs_in "$C" rack001; }
if wait_for 30 both_in_rack001; then
    ok "both slice jobs left rack002 for rack001: A $(nodes_of "$A") (none of its nodes failed), C $(nodes_of "$C")"
else
    not_ok "rack002 emptied: A $(squeue -h -j "$A" -o '%T %N') $(record "$A"); C $(squeue -h -j "$C" -o '%T %N') $(record "$C")"
fi
expect_match "the log: rack002 degraded, 3 failed nodes beyond its 2 spares" \
    'rack rack002 degraded: 3 failed node\(s\) \(nvl\[[0-9,-]+\]\), more than its 2 spare\(s\)' "$(cat "$LOG")"
expect_match "A was moved for its rack, not for a node of its own" \
    "job $A: repair \(rack degraded\): slice 0: rack002 is degraded \(3 failed node\(s\)" "$(cat "$LOG")"
expect_eq "no slice job is left on rack002" "" \
    "$(squeue -h -t R -o '%i %N' | grep -E "^($A|$C) " | grep -E 'nvl00(19|2[0-9]|3[0-6])|nvl\[00(19|2|3)')"
scontrol update nodename="$OTHERS,$C1" state=resume

echo "# helper: defragmentation frees a rack only from checkpointable jobs"
cleanup; resume_all
settle
# 3 nodes: 2 of them count as rack001's spares (a repair could take them
# back), the third blocks a 16-node slice there. rack002 busy meanwhile, so
# that it lands on rack001 in either mode (no -w: a user's node list would
# hold a requeued native job to its old nodes)
X=$(sbatch --parsable -w 'nvl[0019-0034]' -J busy2 --wrap 'sleep 300')
wait_for 15 running_on "$X" 'nvl[0019-0034]'
C=$(sbatch --parsable -N 3 --nvl-slice=3 --nvl-checkpointable --requeue -J ckpt --wrap 'sleep 300')
wait_for 15 running_on "$C" 'nvl[0001-0003]' || not_ok "checkpointable job placed on rack001: $(nodes_of "$C")"
scancel "$X"
wait_for 20 bash -c "[ -z \"\$(squeue -h -j $X)\" ] && [ -z \"\$(sinfo -h -t completing -o %N)\" ]"
N=$(sbatch --parsable -w nvl0019 -J precious --wrap 'sleep 300')
wait_for 15 running_on "$N" nvl0019
B=$(sbatch --parsable -N 16 --nvl-slice=16 --wrap 'sleep 300')
in_rack001() { # running on 16 nodes of rack001, none of them a reserved spare
    [ "$(squeue -h -j "$1" -o %T)" = RUNNING ] || return 1
    local n spares
    spares=$(scontrol show hostnames "$(resv_nodes)")
    for n in $(scontrol show hostnames "$(nodes_of "$1")"); do
        [[ $n =~ ^nvl00(0[1-9]|1[0-8])$ ]] || return 1
        grep -qx "$n" <<< "$spares" && return 1
    done
    [ "$(scontrol show hostnames "$(nodes_of "$1")" | wc -l)" -eq 16 ]
}
if wait_for 30 in_rack001 "$B"; then ok "the blocked 16-node slice got rack001 ($(nodes_of "$B"))"; else not_ok "defrag: $(squeue -h -j "$B" -o '%T %N') $(record "$B")"; fi
expect_match "the checkpointable job was requeued" 'Restarts=1' "$(scontrol show job "$C")"
wait_for 10 bash -c "scontrol show job $C | grep -q 'AdminComment=nvlslice/1 placed'"
expect_match "and placed again on the other rack afterwards" '^nvlslice/1 placed slice=3 slices=nvl\[00(19|2[0-9]|3[0-6])' "$(record "$C")"
expect_eq "the non-checkpointable job still runs where it was" "RUNNING nvl0019" "$(squeue -h -j "$N" -o '%T %N')"
expect_match "the preemption was logged with its reason" "job $B: defragmentation: requeued checkpointable job\(s\) $C to free rack001" "$(cat "$LOG")"

echo "# nvl-topo on the live cluster"
TOPO="$NVL_TOPO"
MAPF=$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml
live=$("$TOPO" show --map "$MAPF")
expect_match "show: the slice of job $B with its index" "Slice JobId=$B Index=0 Nodes=nvl\[" "$live"
expect_match "show: the spares" 'RackName=rack002 Nodes=nvl\[0019-0036\] NodeCnt=18 GPUsPerNode=4 Spares=2' "$live"
expect_match "show: a cluster summary" '^Cluster Racks=2 Nodes=36 ' "$(tail -1 <<< "$live")"
"$TOPO" snapshot --map "$MAPF" > "$OUT/snap.txt"
# (live, the summary line also names the mode; a snapshot does not know it)
expect_eq "a snapshot file reproduces the live report" "$(sed 's/ Mode=.*//' <<< "$live")" "$("$TOPO" show --map "$MAPF" --snapshot "$OUT/snap.txt")"
expect_match "show --json" '"summary":\{"racks":2,"nodes":36' "$("$TOPO" show --map "$MAPF" --json)"
expect_match "map: one row per rack, slice cells" '^rack001 +S' "$("$TOPO" map --map "$MAPF" --no-color)"
"$TOPO" map --map "$MAPF" --svg "$OUT/map.svg" 2>/dev/null
expect_match "map --svg writes a picture" '^<svg' "$(head -c 4 "$OUT/map.svg")"

out=$("$TOPO" check --map "$MAPF"); rc=$?
expect_match "check: the map matches the live cluster" 'rc=0 .*check: 0 mismatch\(es\)' "rc=$rc $out"
sed 's/nvl\[0001-0018\]/nvl[0001-0017]/' "$MAPF" > "$OUT/short-map.yaml"
out=$("$TOPO" check --map "$OUT/short-map.yaml"); rc=$?
expect_match "check: a node missing from the map is reported, exit 1" 'rc=1 .*extra: 1 Slurm node\(s\) are in no rack of the map: nvl0018' "rc=$rc $out"
out=$("$TOPO" check --map "$MAPF" --host nvl0001 --hwloc-xml "$HERE/../data/hwloc/node-3gpu.xml"); rc=$?
expect_match "check: a host with a GPU missing, exit 1" 'rc=1 .*gpus: this host nvl0001 has 3 NVIDIA GPU\(s\), the map says 4' "rc=$rc $out"

echo "# helper: metrics"
m=$(exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3)
expect_match "placements counted" 'nvlslice_placements_total [1-9]' "$m"
expect_match "repairs from spares counted" 'nvlslice_repairs_from_spares_total [1-9]' "$m"
expect_match "cross-rack moves counted" 'nvlslice_cross_rack_moves_total [1-9]' "$m"
expect_match "defrag preemptions counted" 'nvlslice_defrag_preemptions_total [1-9]' "$m"
expect_match "cycle latency exported" 'nvlslice_cycle_seconds_count [1-9]' "$m"
cyc=$(printf '%s\n' "$m" | awk '/^nvlslice_cycle_seconds_sum/ {s=$2} /^nvlslice_cycle_seconds_count/ {c=$2} END { if (c) printf "%.2f", 1000*s/c }')
echo "# measured: helper cycle (load nodes+jobs+reservation, decide, apply): mean $cyc ms"
expect_match "per-rack gauges: free, spare, lent, slice nodes, failed, room, degraded" \
    'nvlslice_rack_free_nodes\{rack="rack001"\} [0-9]+.*nvlslice_rack_spare_nodes\{rack="rack002"\} [0-9]+.*nvlslice_rack_lent_nodes\{rack="rack001"\} [0-9]+.*nvlslice_rack_slice_nodes\{rack="rack002"\} [0-9]+.*nvlslice_rack_failed_nodes\{rack="rack001"\} [0-9]+.*nvlslice_rack_slice_room_nodes\{rack="rack002"\} [0-9]+.*nvlslice_rack_degraded\{rack="rack001"\} 0' \
    "$(tr '\n' ' ' <<< "$m")"
body=$(printf '%s\n' "$m" | sed '1,/^\r\?$/d')
missing=""
for name in $(grep -o 'nvlslice_[a-z_]*' "$HERE/../../contrib/grafana/nvlslice.json" | sort -u); do
    grep -qE "^$name(\{| )" <<< "$body" || missing+=" $name"
done
expect_eq "every metric the Grafana dashboard uses is exported" "" "$missing"
# A client that resets its connection (SO_LINGER 0) without a word, and one
# that resets after its request: the helper keeps running and serving.
hpid=$(cat "$NVL_CLUSTER_DIR/run/nvlsliced.pid" 2>/dev/null)
for send in "" 'GET /metrics HTTP/1.0\r\n\r\n'; do
    perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die; connect($s, sockaddr_in(9817, inet_aton("127.0.0.1"))) or die;
        syswrite($s, $ARGV[0]) if length $ARGV[0]; setsockopt($s, SOL_SOCKET, SO_LINGER, pack("ii", 1, 0)); close($s)' \
        "$(printf "$send")"
done
# served after the resets (the endpoint takes clients in order): then alive?
m=$(exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3 | tr '\n' ' ')
expect_match "a reset metrics client leaves the helper running and serving" 'alive .*nvlslice_cycle_seconds_count [1-9]' \
    "$(kill -0 "$hpid" 2>/dev/null && echo alive) $m"
if [ -n "${NVL_PROMTOOL:-}" ]; then
    out=$("$NVL_PROMTOOL" check metrics <<< "$body" 2>&1); rc=$?
    expect_eq "promtool check metrics: clean" "rc=0 " "rc=$rc $out"
else
    echo "# promtool check metrics: not run (NVL_PROMTOOL unset; contrib/quickstart.sh test sets it on Debian 12)"
fi

if grep -qE '^TopologyPlugin *= *topology/block' <<< "$(scontrol show config)"; then
    echo "# helper: weights: skipped on topology/block (Slurm's block plugin packs plain jobs into blocks itself)"
else
    echo "# helper: weights keep whole racks whole for Slurm's own placement of plain jobs"
    # rack002 is partly used (a 2-node job on nvl[0027-0028], 14 nodes free in
    # two runs); rack001 is whole. Plain jobs with and without the helper's weights.
    whole_racks() { # racks with no busy node
        local r n=0
        for r in "nvl[0001-0018]" "nvl[0019-0036]"; do
            [ "$(sinfo -h -n "$r" -t alloc,mix,comp -o %N | grep -c .)" -eq 0 ] && n=$((n + 1))
        done
        echo "$n"
    }
    weights_round() { # weights_round MODE CASE: prints the racks left whole
        cleanup; resume_all
        if [ "$1" = without ]; then
            "$CL" kill-helper
            scontrol update nodename=nvl[0001-0036] weight=1
        else
            "$CL" helper >/dev/null
            wait_for 10 bash -c '[ "$(sinfo -h -n nvl0001 -o %w)" = 19 ]'
        fi
        P=$(sbatch --parsable -w nvl[0027-0028] -J part --wrap 'sleep 300')
        wait_for 15 running_on "$P" 'nvl[0027-0028]'
        [ "$1" = with ] && wait_for 10 bash -c '[ "$(sinfo -h -n nvl0019 -o %w)" = 17 ]'
        if [ "$2" = twelve ]; then
            for i in $(seq 1 12); do sbatch --parsable -N 1 -J small --wrap "sleep $((60 + RANDOM % 60))" >/dev/null; done
            wait_for 20 bash -c '[ "$(squeue -h -n small -t R | wc -l)" -eq 12 ]'
        else
            sbatch --parsable -N 10 -J small --wrap 'sleep 300' >/dev/null
            wait_for 20 bash -c '[ "$(squeue -h -n small -t R | wc -l)" -eq 1 ]'
        fi
        echo "$(whole_racks) $(squeue -h -n small -o %N | sort -V | paste -sd' ')"
    }
    for c in twelve ten; do
        for mode in without with; do
            r=$(weights_round $mode $c)
            eval "whole_${c}_$mode=${r%% *}"
            echo "# measured: $([ $c = twelve ] && echo '12 random 1-node jobs' || echo 'one 10-node job') $mode the helper's weights: ${r%% *} of 2 racks stay whole (on ${r#* })"
        done
    done
    # Slurm's own best fit (the smallest run of consecutive free nodes) already
    # keeps 1-node jobs in rack002; a 10-node job fits no single run there and
    # breaks rack001, unless the weights point Slurm at rack002 first.
    expect_eq "12 one-node jobs with the weights: rack001 stays whole" "1" "$whole_twelve_with"
    check "the weights never leave fewer racks whole (12 one-node jobs: $whole_twelve_without without, $whole_twelve_with with)" [ "$whole_twelve_with" -ge "$whole_twelve_without" ]
    expect_eq "a 10-node plain job without the weights breaks the whole rack" "0" "$whole_ten_without"
    expect_eq "with the weights it fills rack002; rack001 stays whole" "1" "$whole_ten_with"
    "$CL" helper >/dev/null

fi
if grep -qE '^TopologyPlugin *= *topology/block' <<< "$(scontrol show config)"; then
    echo "# topology/block: Slurm's blocks are the racks of nvl-topo show"
    blocks=$(scontrol show topology | sed -n 's/.*BlockName=\([^ ]*\).*Nodes=\([^ ]*\).*/\1 \2/p' | sort)
    racks=$("$NVL_TOPO" show --map "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml" |
        sed -n 's/^RackName=\([^ ]*\) Nodes=\([^ ]*\).*/\1 \2/p' | sort)
    expect_eq "scontrol show topology lists the racks as blocks" "$racks" "$blocks"
fi

echo "# helper: a second instance refuses to start"
err=$(timeout 10 "$NVL_HELPER" --config "$NVL_CLUSTER_DIR/etc/nvlslice.yaml" 2>&1); rc=$?
expect_match "second nvlsliced exits with the lock and its holder named" \
    "rc=1 .*another nvlsliced is running: process $(cat "$NVL_CLUSTER_DIR/run/nvlsliced.pid") holds $NVL_CLUSTER_DIR/run/nvlsliced.lock" "rc=$rc $err"

cleanup; resume_all
echo "# helper: --check-config, and SIGHUP re-reads the configuration without losing state"
HCONF=$NVL_CLUSTER_DIR/etc/nvlslice.yaml
cp "$HCONF" "$OUT/nvlslice.yaml.good"
expect_match "--check-config: a valid configuration" "is valid: map $NVL_CLUSTER_DIR/etc/nvlslice-map.yaml \\(2 racks, 36 nodes\\)" \
    "$("$NVL_HELPER" --check-config --config "$HCONF" 2>&1)"
printf 'map: %s\ncycle_ms: fast\n' "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml" > "$OUT/bad.yaml"
out=$("$NVL_HELPER" --check-config --config "$OUT/bad.yaml" 2>&1); rc=$?
expect_match "--check-config: a bad one is refused with file:line (exit $rc)" "rc=1 .*bad.yaml:2:11: .*cycle_ms" "rc=$rc $out"
# The log as journald takes it: standard error is the journal's stream
# (JOURNAL_STREAM names it), so each line carries its level, no timestamp.
sed -e "s|^lock_file: .*|lock_file: $OUT/once.lock|" -e 's|^metrics_listen: .*|metrics_listen: ""|' "$HCONF" > "$OUT/once.yaml"
: > "$OUT/journal"
JOURNAL_STREAM=$(stat -c '%d:%i' "$OUT/journal") "$NVL_HELPER" --once --dry-run --config "$OUT/once.yaml" 2>> "$OUT/journal"
expect_match "under journald each line carries its level: <6> for info" '^<6>started: map ' \
    "$(grep -m1 '^<6>started' "$OUT/journal" || head -3 "$OUT/journal")"
expect_eq "and no timestamp of its own" "" "$(grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T.* nvlsliced: ' "$OUT/journal")"
HPID=$(cat "$NVL_CLUSTER_DIR/run/nvlsliced.pid")
J=$(sbatch --parsable -N 16 --nvl-slice=16 --requeue --wrap 'sleep 300')
wait_for 15 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]" || not_ok "slice job before the reload: $(record "$J")"
sed -i 's/^cycle_ms: .*/cycle_ms: 400/' "$HCONF"
kill -HUP "$HPID"
wait_for 10 bash -c "grep -q 'reloaded $HCONF: map .* cycle 400 ms' '$LOG'"
expect_match "SIGHUP: the new configuration is read" "reloaded $HCONF: map .*\\(2 racks, 36 nodes\\), mode $MODE, cycle 400 ms" "$(cat "$LOG")"
cp "$OUT/bad.yaml" "$HCONF"
kill -HUP "$HPID"
wait_for 10 bash -c "grep -q 'reload refused' '$LOG'"
expect_match "a bad new configuration is refused, the running one kept" \
    "error: reload refused, the running configuration is kept: .*nvlslice.yaml:2:11: .*cycle_ms" "$(cat "$LOG")"
check "the helper still runs (pid $HPID)" kill -0 "$HPID"
# reservations renamed (the spares', and the gate's in gate mode): the old
# ones go, the new ones are made
{ grep -Ev '^(reservation|gate_reservation):' "$OUT/nvlslice.yaml.good"
  echo "reservation: nvlslice_spares_b"; echo "gate_reservation: nvlslice_gate_b"; } > "$HCONF"
kill -HUP "$HPID"
renamed() { ! scontrol show reservation nvlslice_spares >/dev/null 2>&1 &&
    scontrol show reservation nvlslice_spares_b 2>/dev/null | grep -q 'Nodes=nvl' &&
    if [ "$MODE" = gate ]; then ! scontrol show reservation nvlslice_gate >/dev/null 2>&1 &&
        scontrol show reservation nvlslice_gate_b 2>/dev/null | grep -q 'Licenses=nvlslice_gate'; fi; }
if wait_for 20 renamed; then ok "reload: the spare reservation$([ "$MODE" = gate ] && echo " and the gate") renamed, the old deleted"
else not_ok "reload: renamed reservations: $(scontrol -o show reservation | cut -c1-300)"; fi
cp "$OUT/nvlslice.yaml.good" "$HCONF"
kill -HUP "$HPID"
back() { ! scontrol show reservation nvlslice_spares_b >/dev/null 2>&1 && [ -n "$(resv_nodes)" ] &&
    ! scontrol show reservation nvlslice_gate_b >/dev/null 2>&1; }
wait_for 20 back || not_ok "reload: the reservations back under their names: $(scontrol -o show reservation | cut -c1-300)"
# each reservation of the helper's ends within its lease (an hour), not in 2100
for r in nvlslice_spares $([ "$MODE" = gate ] && echo nvlslice_gate); do
    end=$(scontrol -o show reservation "$r" 2>/dev/null | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p')
    left=$(( $(date -d "$end" +%s 2>/dev/null || echo 0) - $(date +%s) ))
    check "reservation $r ends within its lease ($end: in $left s)" test "$left" -gt 0 -a "$left" -le 3600
done
N1=$(scontrol show hostnames "$(nodes_of "$J")" | sed -n 3p)
scontrol update nodename="$N1" state=drain reason="gpu xid 79"
moved_off() { running_without "$J" "$N1"; }
if wait_for 60 moved_off; then ok "after the reloads the job placed before them is still repaired ($(nodes_of "$J"))"; else not_ok "repair after reload: $(squeue -h -j "$J" -o '%T %N') $(record "$J")"; fi
expect_match "its record kept its history" 'repairs=1 ' "$(record "$J")"
scontrol update nodename="$N1" state=resume
cleanup; resume_all

echo "# helper: repair_not_responding_after: 5 -> the same repair before Slurm marks the node DOWN"
# The same job and the same kill as the probe's path above, with the helper
# restarted on the opt-in setting and its probe off (silent_after: 0; its
# state lives in Slurm). SlurmdTimeout is 10 s here.
NR_CONF="${NVL_HELPER_CONF:-}"$'\n'"repair_not_responding_after: 5"$'\n'"silent_after: 0"
"$CL" kill-helper
NVL_HELPER_CONF="$NR_CONF" "$CL" helper || not_ok "nvlsliced restarted with repair_not_responding_after"
num() { echo $((10#${1#nvl})); }
# A blip: slurmd gone just long enough for slurmctld to flag it, then back.
# How long it stays flagged depends on slurmd's start on a loaded machine; a
# flag the test saw for 4 s or more may have lasted the 5 s (the helper looks
# once a cycle, the test every few tenths): that is no blip, and its repair
# is right, so the case runs again on a fresh job (3 tries). A repair after a
# flag seen for less is a failure.
blip_try() {
    cleanup; resume_all
    wait_for 60 all_up || not_ok "all nodes up before the case: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"
    settle
    J=$(sbatch --parsable -N 16 --nvl-slice=16 -w 'nvl[0001-0016]' --requeue --wrap 'sleep 600')
    wait_for 15 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]" || not_ok "16-node job placed: $(nodes_of "$J")"
    local before t1 seen
    before=$(nodes_of "$J")
    mapfile -t JN < <(scontrol show hostnames "$before")
    BLIP=${JN[8]}
    "$CL" kill-node "$(num "$BLIP")"
    if ! wait_for 20 bash -c "[[ \"\$(sinfo -h -n $BLIP -o %T)\" == *'*' ]]"; then
        not_ok "slurmctld flagged the killed slurmd NOT_RESPONDING: $(sinfo -h -n "$BLIP" -o %T)"
        "$CL" start-node "$(num "$BLIP")"; return 0
    fi
    t1=$(now)
    "$CL" start-node "$(num "$BLIP")"
    wait_for 20 bash -c "[[ \"\$(sinfo -h -n $BLIP -o %T)\" != *'*' ]]"
    seen=$(secs "$t1" "$(now)")
    sleep 6 # past the threshold: it must have been forgotten
    if [ "$(squeue -h -j "$J" -o '%T %N')" != "RUNNING $before" ] &&
        awk -v s="$seen" 'BEGIN { exit !(s >= 4) }'; then
        echo "# blip try $1: $BLIP seen flagged for $seen s (its slurmd slow to start): no blip under the 5-s threshold, its repair is right; again"
        return 1
    fi
    expect_eq "a blip ($BLIP seen NOT_RESPONDING for $seen s, under the 5-s threshold) is left alone" "RUNNING $before" \
        "$(squeue -h -j "$J" -o '%T %N')"
    expect_eq "and its node is not marked down" "" "$(sinfo -h -n "$BLIP" -t down -o %N)"
}
for try in 1 2 3; do
    blip_try "$try" && break
    [ "$try" = 3 ] && not_ok "3 tries, none a blip: the killed slurmd took 4 s or more to start each time"
done
# the victim: another node of the job where it runs now
mapfile -t JN < <(scontrol show hostnames "$(nodes_of "$J")")
VICTIM=${JN[6]}
t0=$(now)
"$CL" kill-node "$(num "$VICTIM")"
moved() { running_without "$J" "$VICTIM"; }
if wait_for 150 moved; then
    t1=$(now); T_NR=$(secs "$t0" "$t1")
    ok "running again without $VICTIM $T_NR s after the kill (the probe's path above: ${T_DOWN:-?} s), on $(nodes_of "$J")"
    echo "# measured: slurmd killed -> running again: $T_NR s with repair_not_responding_after=5 (probe off) vs ${T_DOWN:-?} s with the probe (silent_after=5)"
    # Not compared as a check: each total depends on where in slurmctld's
    # ping cycle the kill fell (one sample each, 22-44 s over runs). That
    # the helper acted before Slurm's own DOWN is what the reason below
    # shows: Slurm's would read "Not responding".
else
    not_ok "repair after NOT_RESPONDING: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J") $(sinfo -h -n "$VICTIM" -o '%T %E')"
fi
expect_match "the helper drained it and marked it down, with the reason, for Slurm and the admin" \
    '^nvlsliced: not responding to slurmctld for [0-9]+ s \(repair_not_responding_after=5\); slice job '"$J"' repaired on a spare' \
    "$(sinfo -h -n "$VICTIM" -o %E)"
expect_match "its state: drained (DOWN with the drain flag: it stays out until resumed)" 'drain' "$(sinfo -h -n "$VICTIM" -o %T)"
expect_match "and logged it" "node $VICTIM: drained and marked DOWN: nvlsliced: not responding to slurmctld for [0-9]+ s" "$(cat "$LOG")"
"$CL" start-node "$(num "$VICTIM")"
scontrol update nodename="$VICTIM" state=resume 2>/dev/null
cleanup; resume_all
"$CL" kill-helper
"$CL" helper || not_ok "nvlsliced restarted with the tests' configuration"

if [ -n "${NVL_PROMTOOL:-}" ]; then
    echo "# helper: the shipped alert rules on this run's metrics (promtool test rules)"
    out=$("$HERE/../prometheus/alerts.sh" "$NVL_PROMTOOL" "$SCRAPES" 2>&1); rc=$?
    printf '%s\n' "$out" | sed 's/^/# /' | tail -20
    expect_eq "every alert fires where it should and nowhere else" "0" "$rc"
else
    echo "# alert rules: not tested (NVL_PROMTOOL unset; contrib/quickstart.sh test sets it on Debian 12)"
fi
rm -rf "$OUT"
summary "helper"
