#!/bin/bash
# A backup slurmctld (cluster.sh with NVL_BACKUP_CTLD=1; run.sh starts the
# cluster again that way for this test): nvlsliced on each controller
# host, in that host's namespaces (host names nvlctl and nvlctl2), one
# lease. A planned switch (scontrol takeover, then the primary back) leaves
# the lease and the running slice job where they are; the primary's host
# failing in the middle of a repair (its helper dies after the requeue-hold,
# then its slurmctld) leaves the repair to the backup's helper once the
# backup is in control and the lease has ended: the job runs again in one
# rack, each step of the repair taken once, none lost.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
[ -n "${NVL_HELPER:-}" ] || { echo "test_failover.sh: NVL_HELPER (the nvlsliced binary) must be set" >&2; exit 1; }
LOGA=$NVL_CLUSTER_DIR/log/nvlsliced.log
LOGB=$NVL_CLUSTER_DIR/log/nvlsliced-b.log
CTLD1=$NVL_CLUSTER_DIR/log/slurmctld.log
CTLD2=$NVL_CLUSTER_DIR/log/slurmctld-nvlctl2.log
# short, so that the failover is quick (a site keeps the default, 30 s)
LEASE_S=10
export NVL_BACKUP_CTLD=1 NVL_HELPER_CONF="${NVL_HELPER_CONF:-}
lease_length: $LEASE_S"

if ! scontrol ping 2>/dev/null | grep -q '(backup) at nvlctl2 is UP'; then
    not_ok "the cluster has a backup slurmctld (cluster.sh with NVL_BACKUP_CTLD=1): $(scontrol ping 2>&1 | head -2 | paste -sd' ')"
    summary failover
    exit 1
fi
# controller N (1, 2) in control since its log's line MARK: a standby
# answers pings too, so its log says it
in_control() { # in_control N MARK
    local f=$CTLD1
    [ "$1" = 2 ] && f=$CTLD2
    [ "$(count_after "$f" "$2" "Running as primary controller")" -ge 1 ]
}
lease_line() { scontrol show reservation nvlslice_lease -o 2>/dev/null; }
lease_end() { lease_line | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p'; }
# until the lease's end has moved on twice from what it is now: the holder
# ran cycles since (it renews every third of the lease)
renewed_twice() {
    local e0 e1
    e0=$(lease_end)
    wait_for $((LEASE_S + 10)) bash -c "e=\$(scontrol show reservation nvlslice_lease -o 2>/dev/null | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p'); [ -n \"\$e\" ] && [ \"\$e\" != '$e0' ]" || return 1
    e1=$(lease_end)
    wait_for $((LEASE_S + 10)) bash -c "e=\$(scontrol show reservation nvlslice_lease -o 2>/dev/null | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p'); [ -n \"\$e\" ] && [ \"\$e\" != '$e1' ]"
}
# running JOB without NODE, in one rack
running_in_one_rack_without() {
    local s
    s=$(squeue -h -j "$1" -o '%T %N' 2>/dev/null)
    [[ "$s" == "RUNNING "?* ]] || return 1
    ! grep -qx "$2" <<< "$(scontrol show hostnames "${s#RUNNING }")" && [ "$(racks_of "${s#RUNNING }" | wc -w)" = 1 ]
}
# lines of FILE after line N that match REGEX
count_after() { tail -n +"$(($2 + 1))" "$1" 2>/dev/null | grep -cE -- "$3"; }
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
stop_b() { "$CL" kill-helper-b >/dev/null 2>&1; }
trap stop_b EXIT

cleanup; resume_all
wait_for 60 all_up; settle

echo "# failover: a helper beside each slurmctld, one holds the lease"
"$CL" kill-helper; "$CL" kill-helper-b
a0=$(lines "$LOGA")
# the primary's helper dies right after its first requeue-hold (below), as
# its host would fail
NVLSLICED_TEST_KILL_AFTER=requeue-hold "$CL" helper || not_ok "the primary's helper starts"
wait_for 15 bash -c "scontrol show reservation nvlslice_lease -o 2>/dev/null | grep -q 'Features=nvlctl:'"
expect_match "the primary's helper holds the lease, by its host name" \
    "Features=nvlctl:$NVL_CLUSTER_DIR/run/nvlsliced.lock" "$(lease_line)"
b0=$(lines "$LOGB")
"$CL" helper-b || not_ok "the backup's helper starts"
if wait_for 15 bash -c "tail -n +$((b0 + 1)) '$LOGB' | grep -q 'standby: the lease is held by nvlctl:'"; then
    ok "the backup's helper stands by"
else
    not_ok "the backup's helper stands by: $(tail -n +"$((b0 + 1))" "$LOGB" | head -3)"
fi
J=$(sbatch --parsable -N 16 --nvl-slice=16 --requeue -J failover --wrap 'sleep 600')
if wait_for 20 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]"; then
    ok "slice job $J runs in $(racks_of "$(nodes_of "$J")")"
else
    not_ok "slice job $J runs: $(squeue -h -j "$J" -o '%T %r')"
fi

echo "# failover: a planned switch (scontrol takeover, the primary back) moves no lease and no job"
c1=$(lines "$CTLD1"); c2=$(lines "$CTLD2")
t0=$(now)
scontrol takeover >/dev/null 2>&1
if wait_for 30 in_control 2 "$c2"; then
    ok "the backup is in control $(secs "$t0" "$(now)") s after scontrol takeover (the primary saved its state and exited)"
else
    not_ok "the backup takes over: $(scontrol ping 2>&1 | paste -sd' ')"
fi
renewed_twice || not_ok "the lease is renewed through the backup: $(lease_line)"
expect_match "the holder renews the lease through the backup" "Features=nvlctl:" "$(lease_line)"
check "the backup's log shows the renewals" [ "$(count_after "$CTLD2" "$c2" "Updated reservation=nvlslice_lease ")" -ge 1 ]
t0=$(now); c1=$(lines "$CTLD1")
"$CL" start-ctld 1 >/dev/null || not_ok "the primary starts again"
if wait_for 60 in_control 1 "$c1"; then
    ok "the primary is back in control $(secs "$t0" "$(now)") s after its start"
else
    not_ok "the primary back in control: $(scontrol ping 2>&1 | paste -sd' ')"
fi
# after its restart slurmctld has every node UNKNOWN until its slurmd
# registers again; then a few of the helper's cycles
wait_for 30 bash -c '[ -z "$(sinfo -h -N -t unk -o %N 2>/dev/null)" ]' || not_ok "every node registered again"
renewed_twice || not_ok "the lease is renewed after the primary's return: $(lease_line)"
expect_match "the lease stays with the primary's helper" "Features=nvlctl:$NVL_CLUSTER_DIR/run/nvlsliced.lock" "$(lease_line)"
expect_eq "the backup's helper stayed standing by" "0" "$(count_after "$LOGB" "$b0" "active: ")"
expect_match "the job keeps running where it was" "^RUNNING" "$(squeue -h -j "$J" -o %T)"
expect_eq "the switch requeued nothing" "0" \
    "$(( $(count_after "$CTLD1" 0 "Requeuing JobId=$J\$") + $(count_after "$CTLD2" 0 "Requeuing JobId=$J\$") ))"
expect_eq "the switch made no repair" "0" "$(grep -c "job $J: repair" "$LOGA" "$LOGB" | awk -F: '{ s += $NF } END { print s }')"
expect_eq "no rack taken for degraded while nodes registered again" "0" "$(count_after "$LOGA" "$a0" "degraded")"

echo "# failover: the primary's host fails in the middle of a repair"
n1=$(scontrol show hostnames "$(nodes_of "$J")" | sed -n 5p)
c1=$(lines "$CTLD1"); c2=$(lines "$CTLD2"); b1=$(lines "$LOGB")
t0=$(now)
scontrol update nodename="$n1" state=drain reason="gpu xid 48"
if wait_for 15 grep -q "test hook: killed after requeue-hold of job $J" "$LOGA"; then
    ok "the primary's helper died after the requeue-hold of job $J"
else
    not_ok "the primary's helper died after the requeue-hold: $(tail -3 "$LOGA")"
fi
rm -f "$NVL_CLUSTER_DIR/run/nvlsliced.pid"
# the primary's state save (within 5 s of a change) holds the requeue: a
# slurmctld crash loses the changes it had not saved yet, whatever made them
mark=$(mktemp)
wait_for 15 bash -c "[ '$NVL_CLUSTER_DIR/state/job_state' -nt '$mark' ]" || not_ok "the primary saved the job state"
rm -f "$mark"
"$CL" kill-ctld 1
tk=$(now)
if wait_for 60 in_control 2 "$c2"; then
    ok "the backup is in control $(secs "$tk" "$(now)") s after the primary's kill -9 (SlurmctldTimeout=5)"
else
    not_ok "the backup takes over: $(scontrol ping 2>&1 | paste -sd' ')"
fi
if wait_for 15 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = PENDING ]"; then
    ok "the backup has the job requeued and held, as the primary left it"
else
    not_ok "the job requeued in the backup's state: $(squeue -h -j "$J" -o '%T %r')"
fi
# the lease ends LEASE_S after its last renewal, the backup purges it (every
# 30 s), the backup's helper takes it at its next cycle
if wait_for $((LEASE_S + 60)) running_in_one_rack_without "$J" "$n1"; then
    t=$(secs "$t0" "$(now)")
    ok "the backup's helper finished the repair: the job runs in $(racks_of "$(nodes_of "$J")") without $n1, $t s after the drain"
    echo "# measured: the primary's host failed mid-repair: the job running again after $t s (SlurmctldTimeout 5 s, lease $LEASE_S s, purge up to 30 s)"
else
    not_ok "the repair finished after the failover: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J"); $(lease_line); $(tail -3 "$LOGB")"
fi
expect_match "the lease names the backup's helper, by its host name" \
    "Features=nvlctl2:$NVL_CLUSTER_DIR/run/nvlsliced-b.lock" "$(lease_line)"
expect_match "one repair in the job's record" "repairs=1 " "$(record "$J")"
# each step in the slurmctld logs (both controllers: the primary's until
# its death, the backup's since it took over)
steps() { echo $(( $(count_after "$CTLD1" "$c1" "$1") + $(count_after "$CTLD2" "$c2" "$1") )); }
expect_eq "requeued once (by the primary's helper, not again by the backup's)" "1" "$(steps "Requeuing JobId=$J\$")"
expect_eq "released once (by the backup's helper)" "1" "$(steps "release hold on JobId=$J ")"
# the pin: a begin time with the node list (gate mode), or the move into
# the lend reservation that holds the target (native mode); each at most
# once, one of them at least
pins=$(steps "setting begin to .* for JobId=$J\$"); lends=$(steps "setting reservation to nvlslice_lend_$J for JobId=$J\$")
expect_eq "pinned to the new nodes once after the requeue (begin time: $pins, lend reservation: $lends)" "ok" \
    "$([ "$pins" -le 1 ] && [ "$lends" -le 1 ] && [ $((pins + lends)) -ge 1 ] && echo ok)"
expect_eq "the repair decided once, in the primary's helper" "1" \
    "$(grep -c "job $J: repair:" "$LOGA" "$LOGB" | awk -F: '{ s += $NF } END { print s }')"
activeb=$(tail -n +"$((b1 + 1))" "$LOGB" | grep -n "active: " | head -1 | cut -d: -f1)
check "the backup's helper became active" [ -n "$activeb" ]
expect_eq "the backup's helper took no action on the job before it held the lease" "0" \
    "$(tail -n +"$((b1 + 1))" "$LOGB" | head -n "$((${activeb:-1} - 1))" | grep -c "job $J")"
expect_eq "no job left held" "" "$(squeue -h -t PD -o '%i %r' | grep -i held)"

echo "# failover: the primary back: it takes control again, the lease stays"
t0=$(now); c1b=$(lines "$CTLD1")
"$CL" start-ctld 1 >/dev/null || not_ok "the primary starts again"
if wait_for 60 in_control 1 "$c1b"; then
    ok "the primary is back in control $(secs "$t0" "$(now)") s after its start"
else
    not_ok "the primary back in control: $(scontrol ping 2>&1 | paste -sd' ')"
fi
wait_for 30 bash -c '[ -z "$(sinfo -h -N -t unk -o %N 2>/dev/null)" ]' || not_ok "every node registered again"
renewed_twice || not_ok "the lease is renewed after the primary's return: $(lease_line)"
expect_match "the lease stays with the backup's helper" "Features=nvlctl2:" "$(lease_line)"
expect_match "the job keeps running" "^RUNNING" "$(squeue -h -j "$J" -o %T)"
expect_eq "still requeued once" "1" "$(steps "Requeuing JobId=$J\$")"
cleanup
stop_b
scontrol update nodename="$n1" state=resume 2>/dev/null
summary failover
