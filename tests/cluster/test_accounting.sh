#!/bin/bash
# Slurm's accounting rules keep working for slice jobs, on a cluster with
# real accounting (cluster.sh with NVL_ACCOUNTING=1: slurmdbd, MariaDB,
# AccountingStorageEnforce=associations,limits,qos, accounts acct_a and
# acct_b). Each case runs the same jobs as plain jobs, then as slice jobs,
# and compares: a job Slurm holds back by a limit waits untouched (no pin,
# no gate taken off, no racks kept) and another account's job starts
# meanwhile; lifted, the limit lets it start.
#   NVL_ACCOUNTING=1 NVL_TESTS=test_accounting tests/cluster/run.sh BUILD_DIR
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
OUT=$(mktemp -d)
cd "$OUT"
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log

if ! sacctmgr -n show cluster >/dev/null 2>&1; then
    echo "# accounting: this cluster runs no slurmdbd (NVL_ACCOUNTING=1): skipped"
    summary "accounting"
    exit 0
fi
"$CL" helper >/dev/null
MODE=$(nvl_mode)
resume_all
wait_for 60 all_up || not_ok "all nodes up: $(sinfo -h -N -t down,drain,drained,draining,fail,unk,no_respond -o '%N %T')"
running() { [ "$(state "$1")" = RUNNING ]; }

# limit_case NAME SET CLEAR X-ARGS Y-ARGS REASON KIND [RUNNER-ARGS]
#   SET / CLEAR: sacctmgr arguments that set and lift the limit; X: the
#   job the limit holds back (16 nodes), submitted first with a higher
#   priority; Y: another account's job, which must start meanwhile (on the
#   rack the runner leaves free). KIND: plain or slice.
limit_case() {
    local name=$1 set=$2 clear=$3 xargs=$4 yargs=$5 reason=$6 kind=$7 rargs=${8:--A acct_a} opts="" r x y t0 ty
    [ "$kind" = slice ] && opts="--nvl-slice=16"
    cleanup; resume_all; wait_for 60 all_up; settle
    # shellcheck disable=SC2086
    sacctmgr -i $set >/dev/null || not_ok "$name: sacctmgr $set"
    # the runner: 16 nodes of rack002 in acct_a
    # shellcheck disable=SC2086
    r=$(sbatch --parsable $rargs -w "$(outside_spares 'nvl[0019-0036]' 16)" -J runner --wrap 'sleep 300')
    wait_for 20 running "$r" || not_ok "$name ($kind): the runner did not start: $(squeue -h -j "$r" -o '%T %r')"
    # shellcheck disable=SC2086
    x=$(sbatch --parsable -N 16 $opts $xargs -J held --wrap 'sleep 30')
    sleep 1
    t0=$(now)
    # shellcheck disable=SC2086
    y=$(sbatch --parsable -N 16 $opts $yargs --nice=1000 -J other --wrap 'sleep 30')
    if wait_for 30 running "$y"; then ty=$(secs "$t0" "$(now)"); else ty=never; fi
    echo "# measured: $name, $kind: the other account's job started after ${ty} s"
    [ "$ty" != never ] && ok "$name ($kind): another account's lower-priority job starts meanwhile (${ty} s)" ||
        not_ok "$name ($kind): another account's job starts meanwhile: $(squeue -h -j "$y" -o '%T %r') $(record "$y")"
    if [ "$kind" = slice ] && [ "$MODE" = gate ]; then
        # squeue: Slurm's reason, or Licenses where the gate hides it (Slurm
        # 22.05 tests licenses before these limits); the record names it
        expect_match "$name ($kind): the held job waits (squeue: Slurm's reason or the gate's)" "^PENDING ($reason|Licenses)" \
            "$(squeue -h -j "$x" -o '%T %r')"
        expect_eq "$name ($kind): untouched: behind the gate, not pinned" "nvlslice_gate:1 (null)" \
            "$(squeue -h -j "$x" -o %W) $(job_field "$x" ReqNodeList)"
        expect_match "$name ($kind): its record names Slurm's reason" "held back by Slurm: $reason" "$(record "$x")"
    else
        # Slurm shows None until a scheduling pass gives the job a reason
        # (24.11 between its passes, plain jobs too; 22.05 once kept a plain
        # job at None over 10 s, two passes of sched_interval=5): awaited
        # over many passes, its time is not what is asserted
        wait_for 65 bash -c "squeue -h -j $x -o '%T %r' | grep -Eq '^PENDING $reason'"
        expect_match "$name ($kind): the held job waits with Slurm's reason" "^PENDING $reason" "$(squeue -h -j "$x" -o '%T %r')"
    fi
    # shellcheck disable=SC2086
    sacctmgr -i $clear >/dev/null || not_ok "$name: sacctmgr $clear"
    scancel "$r" "$y"
    if wait_for 60 running "$x"; then ok "$name ($kind): limit lifted, the held job starts"
    else not_ok "$name ($kind): limit lifted, the held job starts: $(squeue -h -j "$x" -o '%T %r') $(record "$x")"; fi
}

echo "# accounting: fair-share: the account with less usage starts first"
# acct_a gets usage (32 nodes for 20 s); Slurm's decay thread adds it within
# PriorityCalcPeriod (a minute); then both racks are busy, acct_a's job is
# submitted first, acct_b's a second later, and one rack frees
cleanup; resume_all; wait_for 60 all_up; settle
# root's fair-share factor in an account (Fair Tree gives it per user)
fs_of() { sshare -n -P -A "$1" -o Account,User,FairShare 2>/dev/null | awk -F'|' -v a="$1" '$1 ~ a && $2 == "root" { print $3; exit }'; }
u=$(sbatch --parsable -N 32 -A acct_a -J usage --wrap 'sleep 20')
wait_for 20 running "$u" || not_ok "fair-share: the usage job did not start: $(squeue -h -j "$u" -o '%T %r')"
fs_lower() { awk -v a="$(fs_of acct_a)" -v b="$(fs_of acct_b)" 'BEGIN { exit !(a != "" && b != "" && a + 0 < b + 0) }'; }
wait_for 120 fs_lower
echo "# measured: fair-share factors after the usage: acct_a $(fs_of acct_a), acct_b $(fs_of acct_b)"
check "acct_a's fair-share factor fell below acct_b's" fs_lower
fairshare_case() { # fairshare_case plain|slice: prints the account whose job started first, and the two priorities
    local opts="" b1 b2 x y first
    [ "$1" = slice ] && opts="--nvl-slice=16"
    cleanup; resume_all; wait_for 60 all_up; settle
    b1=$(sbatch --parsable -w "$(outside_spares 'nvl[0001-0018]' 16)" -J busy --wrap 'sleep 300')
    b2=$(sbatch --parsable -w "$(outside_spares 'nvl[0019-0036]' 16)" -J busy --wrap 'sleep 300')
    wait_for 15 bash -c "[ \"\$(squeue -h -j $b1,$b2 -t R | wc -l)\" = 2 ]"
    x=$(sbatch --parsable -N 16 $opts -A acct_a -J fs_a --wrap 'sleep 30')
    sleep 1
    y=$(sbatch --parsable -N 16 $opts -A acct_b -J fs_b --wrap 'sleep 30')
    sleep 1
    scancel "$b1"
    wait_for 30 bash -c "[ -n \"\$(squeue -h -j $x,$y -t R -o %a)\" ]"
    first=$(squeue -h -j "$x,$y" -t R -o %a | head -1)
    echo "${first:-none} $(squeue -h -j "$x" -o %Q) $(squeue -h -j "$y" -o %Q)"
}
plain=$(fairshare_case plain); slice=$(fairshare_case slice)
echo "# measured: fair-share, started first: plain Slurm ${plain%% *}, slice jobs ${slice%% *} (priorities acct_a, acct_b: plain ${plain#* }, slice ${slice#* })"
expect_eq "plain Slurm: acct_b's later job starts first (less usage)" "acct_b" "${plain%% *}"
expect_eq "slice jobs: the same order" "acct_b" "${slice%% *}"

echo "# accounting: association GrpTRES=node=16 reached"
for kind in plain slice; do
    limit_case "GrpTRES=node=16" "modify account acct_a set GrpTRES=node=16" "modify account acct_a set GrpTRES=node=-1" \
        "-A acct_a" "-A acct_b" "AssocGrpNodeLimit" "$kind"
done
echo "# accounting: association GrpTRES=cpu=16 reached (a TRES besides nodes)"
for kind in plain slice; do
    limit_case "GrpTRES=cpu=16" "modify account acct_a set GrpTRES=cpu=16" "modify account acct_a set GrpTRES=cpu=-1" \
        "-A acct_a" "-A acct_b" "AssocGrpCpuLimit" "$kind"
done
echo "# accounting: association GrpTRES=gres/gpu=64 reached (4 GPUs a node, the runner holds 64)"
for kind in plain slice; do
    limit_case "GrpTRES=gres/gpu=64" "modify account acct_a set GrpTRES=gres/gpu=64" \
        "modify account acct_a set GrpTRES=gres/gpu=-1" "-A acct_a --gres=gpu:4" "-A acct_b --gres=gpu:4" \
        "AssocGrpGRES" "$kind" "-A acct_a --gres=gpu:4"
done
echo "# accounting: a held account (GrpJobs=0)"
for kind in plain slice; do
    limit_case "GrpJobs=0" "modify account acct_b set GrpJobs=0" "modify account acct_b set GrpJobs=-1" \
        "-A acct_b" "-A acct_a" "AssocGrpJobsLimit" "$kind"
done
echo "# accounting: QOS MaxTRESPerUser=node=16"
sacctmgr -i add qos capped >/dev/null 2>&1
sacctmgr -i modify user root set qos+=capped >/dev/null 2>&1
for kind in plain slice; do
    limit_case "QOS MaxTRESPerUser=node=16" "modify qos capped set MaxTRESPerUser=node=16" \
        "modify qos capped set MaxTRESPerUser=node=-1" "-A acct_a --qos=capped" "-A acct_b" \
        "QOSMaxNodePerUserLimit" "$kind" "-A acct_a --qos=capped"
done
echo "# accounting: QOS MaxWall=5 (a job asking for 10 minutes)"
for kind in plain slice; do
    limit_case "QOS MaxWall=5" "modify qos capped set MaxWall=5" "modify qos capped set MaxWall=-1" \
        "-A acct_a --qos=capped -t 10" "-A acct_b" "QOSMaxWallDurationPerJobLimit" "$kind"
done

echo "# accounting: sacct's record of a repaired slice job has the shape of a requeue"
cleanup; resume_all; wait_for 60 all_up; settle
J=$(sbatch --parsable -N 16 --nvl-slice=16 -A acct_a --requeue --wrap 'sleep 300')
wait_for 20 running "$J"
n=$(scontrol show hostnames "$(squeue -h -j "$J" -o %N)" | sed -n 5p)
scontrol update nodename="$n" state=drain reason="gpu xid 79"
wait_for 30 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ] && scontrol show job $J | grep -q 'Restarts=1'"
expect_eq "scontrol: Restarts=1" "1" "$(job_field "$J" Restarts)"
wait_for 10 bash -c "sacct -n -D -X -j $J -o JobID,State -P | grep -q RUNNING"
expect_match "sacct: a requeued first run, the second running" "^$J REQUEUED $J RUNNING" \
    "$(sacct -n -D -X -j "$J" -o JobID,State -P | tr '|\n' '  ')"
scontrol update nodename="$n" state=resume

cleanup; resume_all
rm -rf "$OUT"
summary "accounting"
