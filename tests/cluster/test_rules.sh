#!/bin/bash
# Slurm's rules keep working for slice jobs (see run.sh): priority order,
# no starvation, holds, and jobs that must not jam the helper. Each case
# runs against plain Slurm doing the same job where the two can be compared.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
OUT=$(mktemp -d)
cd "$OUT"
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log

"$CL" helper >/dev/null
MODE=$(nvl_mode)
# the previous script's last case killed a slurmd: every node registered
# again (24.11 takes a few seconds) and the cluster settled before the first case
resume_all
wait_for 60 all_up || not_ok "all nodes up before the rules: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"

echo "# rules: a later slice job with a higher priority starts first, as a plain job does"
order_case() { # order_case plain|slice: prints the job that started first (A or B)
    local opts="" a b first
    [ "$1" = slice ] && opts="--nvl-slice=16"
    cleanup
    # rack002 busy for the whole case; rack001 busy until B has been raised:
    # then room for one job (ended by hand, so that a slow submission cannot
    # let A start before the raise)
    local busy1
    sbatch --parsable -w nvl[0019-0034] -J busy2 --wrap 'sleep 120' >/dev/null
    busy1=$(sbatch --parsable -w nvl[0001-0016] -J busy1 -t 1 --wrap 'sleep 120')
    wait_for 10 bash -c '[ "$(squeue -h -n busy1,busy2 -t R | wc -l)" -eq 2 ]'
    a=$(sbatch --parsable -N 16 $opts -J A --wrap 'sleep 60')
    sleep 1
    b=$(sbatch --parsable -N 16 $opts -J B --wrap 'sleep 60')
    sleep 1
    local err
    err=$(scontrol update jobid="$b" priority=1000000 2>&1) || echo "# $1: the priority update was refused: $err" >&2
    sleep 1
    scancel "$busy1"
    wait_for 30 bash -c "[ -n \"\$(squeue -h -j $a,$b -t R -o %j)\" ]"
    first=$(squeue -h -j "$a,$b" -t R -o %j | head -1)
    echo "${first:-none} $(job_field "$b" Priority)"
}
plain=$(order_case plain); slice=$(order_case slice)
echo "# measured: started first: plain Slurm ${plain%% *}, slice jobs ${slice%% *} (B raised to priority ${slice#* })"
expect_eq "plain Slurm: the raised later job B starts first" "B" "${plain%% *}"
expect_eq "slice jobs: the same order" "B" "${slice%% *}"
check "the admin's priority update of a waiting slice job was accepted" [ "${slice#* }" = 1000000 ]

echo "# rules: the top-priority job starts during a stream of small jobs (plain Slurm's backfill, nvlslice's protection)"
stream_case() { # stream_case plain|slice: prints the seconds until the 32-node job ran
    local opts="" big t0 t1 i
    [ "$1" = slice ] && opts="--nvl-slice=16"
    cleanup
    # a stream: a 1-node 20 s job (time limit 1 min) every 2 s for 60 s
    (for i in $(seq 1 30); do sbatch -N 1 -t 1 -J small --wrap 'sleep 20' >/dev/null; sleep 2; done) &
    local stream=$!
    sleep 10
    t0=$(date +%s.%N)
    big=$(sbatch --parsable -N 32 $opts -t 5 -J big --wrap 'sleep 30')
    scontrol update jobid="$big" priority=1000000 >/dev/null 2>&1
    : > "$OUT/protect-$1.txt"
    # while it waits: is the protection there (sinfo -T, nvl-topo show)?
    started() {
        sinfo -T -h | grep nvlslice_protect >> "$OUT/protect-$1.txt"
        "$NVL_TOPO" show --map "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml" 2>/dev/null |
            grep 'Protected Nodes=' >> "$OUT/protect-$1.txt"
        [ "$(squeue -h -j "$big" -o %T)" = RUNNING ]
    }
    if wait_for 120 started "$1"; then
        t1=$(date +%s.%N)
        echo "$(secs "$t0" "$t1")"
    else
        echo "never"
    fi
    kill "$stream" 2>/dev/null; wait "$stream" 2>/dev/null
}
d_plain=$(stream_case plain)
d_slice=$(stream_case slice)
echo "# measured: start delay of the top-priority 32-node job during the stream: plain Slurm ${d_plain} s, slice job ${d_slice} s"
check "the plain job started (Slurm's backfill reserved nodes for it)" [ "$d_plain" != never ]
check "the slice job started within 90 s (the small jobs' 60 s limit + a cycle)" awk -v d="$d_slice" 'BEGIN { exit !(d != "never" && d + 0 <= 90) }'
if [ "$MODE" = native ]; then
    # Slurm's own backfill reservation protected the segment job, as it does the plain one
    expect_eq "native: nvlsliced kept no racks (Slurm's backfill did)" "" "$(grep nvlslice_protect "$OUT/protect-slice.txt")"
else
    expect_match "while it waited, racks were kept for it (log)" 'racks kept for it' "$(grep 'top priority, waits' "$LOG" | tail -1)"
    expect_match "shown by sinfo -T" 'nvlslice_protect' "$(cat "$OUT/protect-slice.txt")"
    expect_match "and by nvl-topo show" 'Protected Nodes=nvl' "$(cat "$OUT/protect-slice.txt")"
    check "the protection is dropped once the job runs" wait_for 10 bash -c '! scontrol show reservation nvlslice_protect >/dev/null 2>&1'
fi

echo "# rules: holds are Slurm's"
cleanup; resume_all
wait_for 60 all_up; settle
H=$(sbatch --parsable --hold -N 16 --nvl-slice=16 --comment 'run 7; lr=3e-4 | "quoted"' --wrap 'sleep 60')
sleep 4
expect_eq "sbatch --hold: the slice job stays held while room is free" "PENDING JobHeldUser" "$(state "$H") $(job_field "$H" Reason)"
scontrol release "$H"
wait_for 15 bash -c "[ \"\$(squeue -h -j $H -o %T)\" = RUNNING ]"
expect_eq "released by its owner, it is placed" "RUNNING" "$(state "$H")"
scontrol requeuehold "$H"
# the requeue completes (seconds on 24.11): then held, at priority 0.
# squeue can show PENDING before the epilogs finish and COMPLETING again
# after (22.05, under load): await the whole end state
held_again() { [[ "$(state "$H") $(job_field "$H" Reason) $(job_field "$H" Priority)" =~ ^PENDING\ (JobHeldAdmin|job_requeued_in_held_state)\ 0$ ]]; }
wait_for 40 held_again
expect_match "an admin's requeuehold of a running slice job stays held" '^PENDING (JobHeldAdmin|job_requeued_in_held_state) 0$' "$(state "$H") $(job_field "$H" Reason) $(job_field "$H" Priority)"
scontrol release "$H"
wait_for 40 bash -c "[ \"\$(squeue -h -j $H -o %T)\" = RUNNING ]"
expect_eq "released by the admin, it runs again" "RUNNING" "$(state "$H")"
# placed, requeued, placed again: the user's own comment is still theirs
expect_match "scontrol show job: the user's comment intact after the hand-offs" '^nvlslice/1 nodes=16 .*\| run 7; lr=3e-4 \| "quoted"$' "$(job_comment "$H")"
expect_match "squeue %k: the same" '\| run 7; lr=3e-4 \| "quoted"$' "$(squeue -h -j "$H" -o %k)"
cleanup; resume_all
wait_for 60 all_up; settle
B2=$(sbatch --parsable -w "$(outside_spares 'nvl[0001-0018]' 16),$(outside_spares 'nvl[0019-0036]' 16)" -J busy -t 1 --wrap 'sleep 12')
wait_for 10 bash -c "[ \"\$(squeue -h -j $B2 -o %T)\" = RUNNING ]" || not_ok "busy job on both racks: $(squeue -h -j "$B2" -o '%T %r')"
W=$(sbatch --parsable -N 16 --nvl-slice=16 --wrap 'sleep 60')
wait_for 10 bash -c "[ -n \"\$(squeue -h -j $W -t PD -o %r)\" ]" # waiting, with Slurm's reason
scontrol hold "$W"
wait_for 20 bash -c "[ -z \"\$(squeue -h -j $B2 -o %T)\" ]" # the room is free
sleep 3
expect_eq "an admin's hold on a waiting slice job survives free room" "PENDING JobHeldAdmin" "$(state "$W") $(job_field "$W" Reason)"
scontrol release "$W"
wait_for 15 bash -c "[ \"\$(squeue -h -j $W -o %T)\" = RUNNING ]"
expect_eq "and the job is placed once the admin releases it" "RUNNING" "$(state "$W")"

echo "# rules: jobs Slurm holds back (a dependency, the user's --begin) are left alone, as plain Slurm leaves them"
cleanup; resume_all
wait_for 60 all_up; settle
R=$(sbatch --parsable -N 1 -w "$(outside_spares 'nvl[0019-0036]' 1)" -J runner --wrap 'sleep 300')
wait_for 15 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ]"
declare -A DEP LATER
# one absolute --begin for both: 'now+3600' is read at each submission, and
# two submissions can fall on either side of a second
begin_at=$(date -d 'now + 3600 seconds' +%Y-%m-%dT%H:%M:%S)
for kind in plain slice; do
    opts=""; [ "$kind" = slice ] && opts="--nvl-slice=16"
    DEP[$kind]=$(sbatch --parsable -N 16 $opts --dependency=afterok:"$R" -J dep --wrap 'sleep 30')
    LATER[$kind]=$(sbatch --parsable -N 16 $opts --begin="$begin_at" -J later --wrap 'sleep 30')
done
begin_of() { job_field "$1" StartTime; }
want_begin=$(begin_of "${LATER[plain]}")
if [ "$MODE" = gate ]; then
    wait_for 15 bash -c "scontrol show job ${DEP[slice]} | grep -q 'held back by Slurm: Dependency' && scontrol show job ${LATER[slice]} | grep -q 'held back by Slurm: BeginTime'"
    expect_match "the slice job with a dependency: its record names Slurm's reason" 'reason=held back by Slurm: Dependency$' "$(record "${DEP[slice]}")"
    expect_match "the slice job with --begin: its record names Slurm's reason" 'reason=held back by Slurm: BeginTime \(eligible at ' "$(record "${LATER[slice]}")"
    expect_eq "both stay behind the gate, not pinned" "nvlslice_gate:1 nvlslice_gate:1 (null) (null)" \
        "$(squeue -h -j "${DEP[slice]}" -o %W) $(squeue -h -j "${LATER[slice]}" -o %W) $(job_field "${DEP[slice]}" ReqNodeList) $(job_field "${LATER[slice]}" ReqNodeList)"
    expect_eq "no racks protected for them" "" "$(scontrol show reservation nvlslice_protect 2>/dev/null | grep -o 'Nodes=[^ ]*')"
else
    sleep 3 # native: nothing to wait for; give the helper a few cycles
fi
expect_eq "plain Slurm: both pending with Slurm's reasons" "PENDING Dependency PENDING BeginTime" \
    "$(squeue -h -j "${DEP[plain]}" -o '%T %r') $(squeue -h -j "${LATER[plain]}" -o '%T %r')"
# Slurm resets a pending job's reason to None on every update (the record
# the helper wrote) until its next scheduling pass
slice_reasons() { echo "$(squeue -h -j "${DEP[slice]}" -o '%T %r') $(squeue -h -j "${LATER[slice]}" -o '%T %r')"; }
wait_for 20 bash -c "[ \"\$(squeue -h -j ${DEP[slice]} -o %r) \$(squeue -h -j ${LATER[slice]} -o %r)\" = 'Dependency BeginTime' ]"
expect_eq "slice jobs: the same (once Slurm looked at them again)" "PENDING Dependency PENDING BeginTime" "$(slice_reasons)"
expect_eq "the user's --begin is kept, as plain Slurm keeps it" "$want_begin" "$(begin_of "${LATER[slice]}")"
# others start meanwhile: a plain 8-node job beside the runner, a slice job on the other rack
P=$(sbatch --parsable -N 8 -w "$(outside_spares 'nvl[0020-0036]' 8)" -J other --wrap 'sleep 30')
S=$(sbatch --parsable -N 16 --nvl-slice=16 -J other --wrap 'sleep 30')
if wait_for 30 bash -c "[ \"\$(squeue -h -j $P,$S -t R | wc -l)\" = 2 ]"; then ok "other jobs start meanwhile (plain and slice)"
else not_ok "other jobs start meanwhile: $(squeue -h -j "$P,$S" -o '%i %T %r') $(record "$S")"; fi

echo "# rules: a top-priority job Slurm holds back (a dependency, --begin) keeps no racks from others, as with plain Slurm"
# both racks busy; the top job (32 nodes, priority raised) waits on a
# dependency or its begin time; one rack frees: a lower-priority 16-node job
# starts there. Before, the helper protected both racks for the top job.
top_held_case() { # top_held_case plain|slice dependency|begin: prints the seconds until the other job ran
    local opts="" b1 b2 t o hold t0
    [ "$1" = slice ] && opts="--nvl-slice=16"
    cleanup; resume_all
    wait_for 60 all_up; settle
    b1=$(sbatch --parsable -w "$(outside_spares 'nvl[0001-0018]' 16)" -J busy --wrap 'sleep 300')
    b2=$(sbatch --parsable -w "$(outside_spares 'nvl[0019-0036]' 16)" -J busy --wrap 'sleep 300')
    wait_for 15 bash -c "[ \"\$(squeue -h -j $b1,$b2 -t R | wc -l)\" = 2 ]"
    if [ "$2" = dependency ]; then hold="--dependency=afterok:$b2"; else hold="--begin=now+3600"; fi
    t=$(sbatch --parsable -N 32 $opts $hold -J top --wrap 'sleep 30')
    scontrol update jobid="$t" priority=1000000 >/dev/null 2>&1
    if [ "$1" = slice ] && [ "$MODE" = gate ]; then
        wait_for 15 bash -c "scontrol show job $t | grep -q 'held back by Slurm'" ||
            echo "# top job $t ($2): no 'held back' record: $(record "$t")" >&2
    else
        sleep 3 # Slurm's scheduler and the helper's cycles look at it
    fi
    o=$(sbatch --parsable -N 16 $opts -J other --wrap 'sleep 30')
    scancel "$b1"
    t0=$(now)
    if wait_for 40 bash -c "[ \"\$(squeue -h -j $o -o %T)\" = RUNNING ]"; then echo "$(secs "$t0" "$(now)")"; else echo never; fi
    echo "$(state "$t") $(squeue -h -j "$t" -o %r) $(scontrol show reservation nvlslice_protect 2>/dev/null | grep -o 'Nodes=[^ ]*')" > "$OUT/top-$1-$2.txt"
    # not even for one cycle (the helper's first look at it included)
    grep -c "job $t: top priority, waits: racks kept" "$LOG" > "$OUT/top-$1-$2.kept"
}
for variant in dependency begin; do
    d_plain=$(top_held_case plain "$variant"); d_slice=$(top_held_case slice "$variant")
    want=Dependency; [ "$variant" = begin ] && want=BeginTime
    echo "# measured: top job held back by its $variant; the other 16-node job started after: plain Slurm ${d_plain} s, slice jobs ${d_slice} s"
    check "plain Slurm ($variant): the other job starts while the top job waits" [ "$d_plain" != never ]
    check "slice jobs ($variant): the same (${d_slice} s)" [ "$d_slice" != never ]
    expect_match "the top slice job still waits with Slurm's reason, no racks protected for it" "^PENDING ($want|None|Licenses) *\$" "$(cat "$OUT/top-slice-$variant.txt")"
    expect_eq "no cycle kept racks for it, not even the first that saw it (log)" "0" "$(cat "$OUT/top-slice-$variant.kept")"
done

echo "# rules: jobs Slurm holds back for what a gated or new job's reason hides (licenses in use, a DOWN or INACTIVE partition, its MaxNodes or MaxTime, a reservation not started) get nothing, as with plain Slurm"
# Both racks busy (the second rack's job holds every lic_a); one
# top-priority 16-node job of each kind held back, a plain one beside each
# slice one. The first rack frees: a lower-priority plain job starts there,
# then a lower-priority slice job; nothing is pinned, ungated, lent or
# protected for a held job. Then each hold clears in turn: the plain and the
# slice job of that kind start together. (An INACTIVE partition takes no
# submission, and Slurm refuses every update of its jobs, the helper's
# record too: it is made INACTIVE once its jobs are in and released.)
cleanup; resume_all
wait_for 60 all_up; settle
for p in "hold_down State=DOWN" "hold_small MaxNodes=8" "hold_short MaxTime=5" "hold_inactive State=UP"; do
    scontrol delete partitionname="${p%% *}" 2>/dev/null
    scontrol create partitionname="${p%% *}" nodes=ALL OverSubscribe=EXCLUSIVE ${p#* } ||
        not_ok "create partition ${p%% *}"
done
scontrol delete reservationname=hold_later 2>/dev/null
scontrol create reservationname=hold_later starttime="$(date -d 'now + 3600 seconds' +%Y-%m-%dT%H:%M:%S)" duration=60 \
    nodes=ALL users=root flags=ignore_jobs,overlap >/dev/null || not_ok "create reservation hold_later"
B1=$(sbatch --parsable -w "$(outside_spares 'nvl[0001-0018]' 16)" -t 10 -J busy --wrap 'sleep 600')
B2=$(sbatch --parsable -w "$(outside_spares 'nvl[0019-0036]' 16)" -t 10 -L lic_a:4 -J busy --wrap 'sleep 600')
wait_for 15 bash -c "[ \"\$(squeue -h -j $B1,$B2 -t R | wc -l)\" = 2 ]"
declare -A HELD
kinds="licenses down inactive small short resv"
for k in $kinds; do
    case $k in
        licenses) a=(-L lic_a:1) ;; down) a=(-p hold_down) ;; inactive) a=(-p hold_inactive) ;;
        small) a=(-p hold_small) ;; short) a=(-p hold_short) ;; resv) a=(--reservation=hold_later) ;;
    esac
    for side in plain slice; do
        opts=(-N 16 -H -t 10 -J "held_$k"); [ "$side" = slice ] && opts+=(--nvl-slice=16)
        HELD[$k.$side]=$(sbatch --parsable "${opts[@]}" "${a[@]}" --wrap 'sleep 20') || not_ok "submit held_$k $side"
    done
done
for id in "${HELD[@]}"; do scontrol release "$id"; scontrol update jobid="$id" priority=1000000; done
scontrol update partitionname=hold_inactive state=INACTIVE || not_ok "make partition hold_inactive INACTIVE"
# the helper's cycles and Slurm's passes look at them
declare -A WANT=([down]=PartitionDown [inactive]=PartitionInactive [small]=PartitionNodeLimit
    [short]=PartitionTimeLimit [licenses]=Licenses [resv]=Reservation)
plain_reasons_right() { for k in $kinds; do [ "$(squeue -h -j "${HELD[$k.plain]}" -o %r)" = "${WANT[$k]}" ] || return 1; done; }
wait_for 60 plain_reasons_right
for k in $kinds; do
    expect_eq "plain Slurm: the job held by $k pends with Slurm's reason" "PENDING ${WANT[$k]}" \
        "$(squeue -h -j "${HELD[$k.plain]}" -o '%T %r')"
done
if [ "$MODE" = gate ]; then
    # (the INACTIVE partition's job keeps the record it had: Slurm refuses
    # its updates; the log says why it waits)
    records_held() { for k in ${kinds/inactive /}; do record "${HELD[$k.slice]}" | grep -q 'held back by Slurm: ' || return 1; done; }
    wait_for 20 records_held
    # (its first cycles may have seen it before the partition went
    # INACTIVE: a refused record, then the helper's backoff, before the
    # line comes)
    inactive_said() { grep -q "job ${HELD[inactive.slice]}: not placed: held back by Slurm: PartitionInactive" "$LOG"; }
    wait_for 30 inactive_said
    expect_match "slice job held by inactive: the log names Slurm's reason" \
        "job ${HELD[inactive.slice]}: not placed: held back by Slurm: PartitionInactive" "$(cat "$LOG")"
    expect_eq "slice job held by inactive: its record refused once at most, not every cycle" "yes" \
        "$([ "$(grep -c "job ${HELD[inactive.slice]}: .*left alone for" "$LOG")" -le 1 ] && echo yes || grep "job ${HELD[inactive.slice]}: .*left alone for" "$LOG")"
    for k in ${kinds/inactive /}; do
        expect_match "slice job held by $k: its record names Slurm's reason" "held back by Slurm: ${WANT[$k]}" \
            "$(record "${HELD[$k.slice]}")"
    done
else
    sleep 3 # native: the helper writes nothing for them; a few cycles
fi
O1=$(sbatch --parsable -N 16 -t 10 -J other --wrap 'sleep 300')
O2=$(sbatch --parsable -N 16 -t 10 --nvl-slice=16 -J other --wrap 'sleep 300')
scancel "$B1"
t0=$(now)
if wait_for 40 bash -c "[ \"\$(squeue -h -j $O1 -o %T)\" = RUNNING ]"; then
    ok "plain Slurm: the lower-priority plain job starts on the freed rack ($(secs "$t0" "$(now)") s)"
else
    not_ok "plain Slurm: the lower-priority plain job starts: $(squeue -h -j "$O1" -o '%T %r')"
fi
scancel "$O1"
t0=$(now)
if wait_for 40 bash -c "[ \"\$(squeue -h -j $O2 -o %T)\" = RUNNING ]"; then
    ok "the lower-priority slice job starts there too ($(secs "$t0" "$(now)") s)"
else
    not_ok "the lower-priority slice job starts: $(squeue -h -j "$O2" -o '%T %r') $(record "$O2")"
fi
for k in $kinds; do
    j=${HELD[$k.slice]}
    expect_eq "slice job held by $k: pending, never pinned or excluded" "PENDING (null) (null)" \
        "$(state "$j") $(job_field "$j" ReqNodeList) $(job_field "$j" ExcNodeList)"
    [ "$MODE" = gate ] && expect_match "slice job held by $k: still behind its gate" "nvlslice_gate" "$(squeue -h -j "$j" -o %W)"
done
expect_eq "no racks protected, no spare lent for them" "" \
    "$(scontrol -o show reservation 2>/dev/null | grep -oE 'ReservationName=nvlslice_(protect|lend)[^ ]*')"
expect_eq "no held job was placed (log)" "0" "$(for k in $kinds; do grep -cE "job ${HELD[$k.slice]}: (placed|pinned|lent)" "$LOG"; done | awk '{ s += $1 } END { print s + 0 }')"
# each hold clears in turn (licenses first: the job that held them had the
# second rack): its plain and slice jobs start together
scancel "$O2" "${HELD[resv.plain]}" "${HELD[resv.slice]}"
for k in ${kinds% resv}; do
    case $k in
        licenses) scancel "$B2" ;;
        down) scontrol update partitionname=hold_down state=UP ;;
        inactive) scontrol update partitionname=hold_inactive state=UP ;;
        small) scontrol update partitionname=hold_small maxnodes=UNLIMITED ;;
        short) scontrol update partitionname=hold_short maxtime=INFINITE ;;
    esac
    t0=$(now)
    # both started (running, or already done with their 20 s: on a loaded
    # machine the second may start after the first ended)
    if wait_for 60 bash -c "[ -z \"\$(squeue -h -j ${HELD[$k.plain]},${HELD[$k.slice]} -t PD,CF -o %i)\" ]"; then
        ok "$k cleared: the plain and the slice job start ($(secs "$t0" "$(now)") s)"
    else
        not_ok "$k cleared: the plain and the slice job start: $(squeue -h -j "${HELD[$k.plain]},${HELD[$k.slice]}" -o '%i %T %r') $(record "${HELD[$k.slice]}")"
    fi
    scancel "${HELD[$k.plain]}" "${HELD[$k.slice]}"
    wait_for 30 bash -c '[ -z "$(squeue -h -j '"${HELD[$k.plain]},${HELD[$k.slice]}"' -o %i 2>/dev/null)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
done
cleanup
for p in hold_down hold_small hold_short hold_inactive; do scontrol delete partitionname="$p"; done
scontrol delete reservationname=hold_later 2>/dev/null

echo "# rules: an array throttled with %1: its waiting task gets nothing while one task runs, a rack free beside it, as with plain Slurm"
# The plain array first, then the slice array, each alone on the cluster:
# task 0 runs, task 1 waits for the throttle while a whole rack is free;
# task 0 cancelled, task 1 starts (the slice one in one rack).
cleanup; resume_all
wait_for 60 all_up; settle
for side in plain slice; do
    opts=(-N 16 -t 10 --array=0-1%1 -J "throttled_$side"); [ "$side" = slice ] && opts+=(--nvl-slice=16)
    A=$(sbatch --parsable "${opts[@]}" --wrap 'sleep 600') || not_ok "submit the $side array"
    if wait_for 30 bash -c "[ \"\$(squeue -h -j ${A}_0 -t R -o %i)\" = ${A}_0 ]"; then
        ok "$side: task 0 runs on $(nodes_of "${A}_0")"
        mark=$(wc -l < "$LOG") # (the array was placed as one job until then)
    else
        not_ok "$side: task 0 runs: $(squeue -h -j "$A" -o '%i %T %r %N')"
    fi
    sleep 6 # the helper's cycles and Slurm's passes, a rack free all along
    t1=$(squeue -h -r -j "${A}_1" -o %A)
    if [ "$side" = plain ] || [ "$MODE" = native ]; then
        expect_eq "$side: task 1 waits for the throttle, a rack free beside it" "PENDING JobArrayTaskLimit" "$(squeue -h -r -j "${A}_1" -o '%T %r')"
    else
        expect_match "$side: task 1 waits behind its gate (Slurm's throttle hidden by it)" "^PENDING (Licenses|JobArrayTaskLimit)\$" "$(squeue -h -r -j "${A}_1" -o '%T %r')"
        expect_match "$side: its record names the throttle" "held back by Slurm: JobArrayTaskLimit" "$(record "${A}_1")"
        expect_match "$side: still behind its gate" "nvlslice_gate" "$(squeue -h -r -j "${A}_1" -o %W)"
    fi
    if [ "$side" = slice ]; then
        expect_eq "slice: task 1 never pinned or excluded" "(null) (null)" "$(job_field "${A}_1" ReqNodeList) $(job_field "${A}_1" ExcNodeList)"
        expect_eq "slice: no racks protected, no spare lent for it" "" \
            "$(scontrol -o show reservation 2>/dev/null | grep -oE 'ReservationName=nvlslice_(protect|lend)[^ ]*')"
        expect_eq "slice: task 1 not placed (log)" "0" "$(tail -n +"$((${mark:-0} + 1))" "$LOG" | grep -cE "job $t1: (placed|pinned|lent)")"
    fi
    scancel "${A}_0"
    t0=$(now)
    if wait_for 60 bash -c "[ \"\$(squeue -h -r -j ${A}_1 -t R -o %i)\" = ${A}_1 ]"; then
        n=$(nodes_of "${A}_1")
        ok "$side: task 0 cancelled, task 1 starts ($(secs "$t0" "$(now)") s, on $n)"
        [ "$side" = slice ] && expect_eq "slice: task 1 in one rack" "1" "$(racks_of "$n" | wc -w)"
    else
        not_ok "$side: task 1 starts once task 0 ends: $(squeue -h -r -j "${A}_1" -o '%T %r') $(record "${A}_1")"
    fi
    scancel "$A"
    wait_for 30 bash -c '[ -z "$(squeue -h -j '"$A"' -o %i 2>/dev/null)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
done

if [ "$MODE" = gate ]; then
echo "# rules: scancel of a waiting slice job leaves no pin and no protection"
cleanup; resume_all
wait_for 60 all_up; settle
B1=$(sbatch --parsable -w "$(outside_spares 'nvl[0001-0018]' 16)" -t 2 -J busy --wrap 'sleep 100')
B2=$(sbatch --parsable -w "$(outside_spares 'nvl[0019-0036]' 16)" -t 3 -J busy --wrap 'sleep 100')
wait_for 15 bash -c "[ \"\$(squeue -h -j $B1,$B2 -t R | wc -l)\" = 2 ]"
T=$(sbatch --parsable -N 32 --nvl-slice=16 -t 5 -J top --wrap 'sleep 30')
scontrol update jobid="$T" priority=1000000 >/dev/null 2>&1
if wait_for 20 bash -c 'scontrol show reservation nvlslice_protect 2>/dev/null | grep -q "Nodes=nvl"'; then
    ok "the waiting top job had racks protected"
else
    not_ok "the waiting top job had racks protected: $(record "$T")"
fi
scancel "$T"
if wait_for 10 bash -c '! scontrol show reservation nvlslice_protect 2>/dev/null | grep -q "Nodes=nvl"'; then
    ok "scancel: the protection is gone"
else
    not_ok "scancel: the protection is gone: $(scontrol show reservation nvlslice_protect 2>&1 | head -2)"
fi
fi

echo "# rules: an interactive slice job loses a node: reported, no loop, other jobs unharmed"
cleanup; resume_all
wait_for 60 all_up; settle
salloc -N 16 --nvl-slice=16 -J inter srun sleep 45 > "$OUT/salloc.log" 2>&1 &
SALLOC=$!
wait_for 20 bash -c '[ "$(squeue -h -n inter -t R | wc -l)" -eq 1 ]'
I=$(squeue -h -n inter -o %i)
n=$(scontrol show hostnames "$(squeue -h -j "$I" -o %N)" | sed -n 3p)
scontrol update nodename="$n" state=drain reason="gpu xid 79"
wait_for 10 bash -c "scontrol show job $I | grep -q 'interactive allocation'"
expect_match "its record says why it is not repaired" 'not repaired: .* an interactive allocation \(salloc/srun\) cannot be requeued' "$(record "$I")"
O=$(sbatch --parsable -N 16 --nvl-slice=16 --wrap 'sleep 30')
wait_for 15 bash -c "[ \"\$(squeue -h -j $O -o %T)\" = RUNNING ]"
expect_eq "another slice job is placed on the other rack meanwhile" "RUNNING" "$(state "$O")"
sleep 3
expect_match "the interactive job still runs, with no repair counted" 'repairs=0' "$(record "$I")"
expect_eq "no loop: no requeue was tried" "0" "$(grep -c "requeue-hold job $I" "$LOG")"
expect_eq "it was said once" "1" "$(grep -c "job $I: node(s) .* failed; an interactive allocation" "$LOG")"
kill "$SALLOC" 2>/dev/null; wait "$SALLOC" 2>/dev/null
scontrol update nodename="$n" state=resume

echo "# rules: a hand-written tag takes nothing from real slice jobs"
cleanup; resume_all
wait_for 60 all_up; settle
F=$(sbatch --parsable -N 2 --begin=now+30 --comment 'nvlslice/1 nodes=16 slice=16 count=1' --wrap 'sleep 300')
U=$(sbatch --parsable -N 1 --begin=now+30 --comment 'nvlslice/1 nodes=abc' --wrap 'sleep 300')
# both records: the helper writes them one after the other
wait_for 10 bash -c "scontrol show job $F | grep -q 'AdminComment=nvlslice/1 ignored' && scontrol show job $U | grep -q 'AdminComment=nvlslice/1 ignored'"
expect_match "the mismatched tag is named in its record" 'ignored .*left to Slurm: its tag asks for 16 nodes, the job for 2' "$(record "$F")"
expect_match "the unreadable one too" 'ignored .*left to Slurm: its nvlslice tag is unreadable' "$(record "$U")"
R=$(sbatch --parsable -N 32 --nvl-slice=16 --wrap 'sleep 30')
wait_for 15 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ]"
expect_eq "a real 32-node slice job gets both racks" "RUNNING" "$(state "$R")"
expect_eq "the hand-written job was never pinned to 16 nodes" "(null)" "$(job_field "$F" ReqNodeList)"
sleep 3
expect_eq "each was logged once" "1 1" "$(grep -c "job $F: not a slice job" "$LOG") $(grep -c "job $U: not a slice job" "$LOG")"

if [ "$MODE" = native ]; then
    echo "# rules: no gate to take off in native mode (Slurm's --segment keeps each slice in one block)"
else
echo "# rules: a slice job whose owner takes its gate off never runs rack-blind unnoticed"
cleanup; resume_all
wait_for 60 all_up; settle
B1=$(sbatch --parsable -w nvl[0001-0016] -J busy --wrap 'sleep 300')
wait_for 10 bash -c "[ \"\$(squeue -h -j $B1 -o %T)\" = RUNNING ]"
B3=$(sbatch --parsable -w nvl[0019-0034] -J busy --wrap 'sleep 10')
wait_for 10 bash -c "[ \"\$(squeue -h -j $B3 -o %T)\" = RUNNING ]"
E=$(sbatch --parsable -N 16 --nvl-slice=16 --requeue --wrap 'sleep 300')
sleep 2
scontrol update jobid="$E" Licenses= 2>/dev/null
wait_for 20 bash -c "[ \"\$(squeue -h -j $E -o %T)\" = RUNNING ]"
nodes=$(squeue -h -j "$E" -o %N)
expect_eq "it runs on whole slices of one rack" "nvl[0019-0034]" "$nodes"
expect_match "its escape was logged" "job $E: pending without its gate and without a placement .*gated again" "$(cat "$LOG")"
expect_match "in a placement of the helper's" '^nvlslice/1 placed' "$(record "$E")"
fi

echo "# rules: a job array of slice jobs: each task gets its own placement and record"
cleanup; resume_all
wait_for 60 all_up; settle
A=$(sbatch --parsable --array=0-1 -N 16 --nvl-slice=16 --wrap 'sleep 120')
wait_for 30 bash -c "[ \"\$(squeue -h -r -j $A -t R -o %i | wc -l)\" = 2 ]"
T0=$(squeue -h -j "${A}_0" -o %N) T1=$(squeue -h -j "${A}_1" -o %N)
expect_eq "both tasks run at once, one per rack ($T0, $T1)" "1 1 rack001 rack002" \
    "$(racks_of "$T0" | wc -w) $(racks_of "$T1" | wc -w) $(racks_of "$T0,$T1")"
if [ "$MODE" = gate ]; then
    # Slurm starts the first task on the array's placement and splits it off
    # under a new job id; the rest keeps the array's id and a copy of its
    # pin: placed again at once, not after replace_after
    expect_match "the rest of the array was placed afresh (log)" "job $A: its array's task job [0-9]+ started on its placement" "$(cat "$LOG")"
fi
for t in 0 1; do
    id=$(job_field "${A}_$t" JobId)
    wait_for 10 bash -c "scontrol show job ${A}_$t | grep -q 'AdminComment=nvlslice/1 placed.* job=$id'"
    expect_match "task $t's record is its own (job=$id) and lists its nodes" \
        "^nvlslice/1 placed slice=16 slices=$(squeue -h -j "${A}_$t" -o %N | sed 's/[][]/\\&/g') .*job=$id( |\$)" \
        "$(record "${A}_$t")"
done

cleanup; resume_all
wait_for 60 all_up; settle
# every job update above went through the call this Slurm wants (26.05
# logs "error: Use slurm_update_job2() rather than slurm_update_job()")
expect_eq "the helper's job updates use the call this Slurm wants (no deprecation error)" "0" \
    "$(grep -c 'slurm_update_job2' "$LOG")"
rm -rf "$OUT"
summary "rules"
