#!/bin/bash
# The lease (nvlsliced(8), LEASE): two nvlsliced on one slurmctld, as two
# controller hosts run them (here one host, two lock files): one acts, the
# other stands by; a clean stop hands over at once; a helper killed in the
# middle of a repair leaves the lease until it ends, then the other takes
# over and finishes the repair, each action taken once.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
[ -n "${NVL_HELPER:-}" ] || { echo "test_lease.sh: NVL_HELPER (the nvlsliced binary) must be set" >&2; exit 1; }
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log
LOG2=$NVL_CLUSTER_DIR/log/nvlsliced-b.log
CTLD=$NVL_CLUSTER_DIR/log/slurmctld.log
LEASE_S=30

running_on_spare() { # running_on_spare JOB NODE: running, NODE not among its nodes
    local s
    s=$(squeue -h -j "$1" -o '%T %N' 2>/dev/null)
    [[ "$s" == "RUNNING "?* ]] && ! grep -qx "$2" <<< "$(scontrol show hostnames "${s#RUNNING }")"
}
lease_line() { scontrol show reservation nvlslice_lease -o 2>/dev/null; }
stop_b() { "$CL" kill-helper-b >/dev/null 2>&1; }
trap stop_b EXIT

cleanup; resume_all
wait_for 60 all_up; settle

echo "# lease: the running helper holds it; a second one stands by"
wait_for 10 bash -c "scontrol show reservation nvlslice_lease -o 2>/dev/null | grep -q 'nvlsliced.lock'"
expect_match "the lease reservation names the running helper (host and lock file)" \
    "Features=[^ ]*:$NVL_CLUSTER_DIR/run/nvlsliced.lock" "$(lease_line)"
expect_match "it holds its license and no node" "Nodes= .*Licenses=nvlslice_lease:1|Licenses=nvlslice_lease:1.*Nodes= " \
    "$(lease_line | sed 's/Nodes=(null)/Nodes= /')"
stop_b; : > "$LOG2"
# the second one (its own lock file) dies right after its first
# requeue-hold (below)
NVLSLICED_TEST_KILL_AFTER=requeue-hold "$CL" helper-b || not_ok "a second helper starts"
if wait_for 15 grep -q "standby: the lease is held by" "$LOG2"; then
    ok "a second helper stands by ($(grep -o 'standby: .*' "$LOG2" | head -1))"
else
    not_ok "a second helper stands by: $(tail -3 "$LOG2")"
fi

echo "# lease: a standby's reload that renames the reservations deletes none of the active helper's"
HB=$NVL_CLUSTER_DIR/etc/nvlslice-b.yaml
MODE=$(nvl_mode)
HB_GOOD=$(mktemp)
reload_b() { # reload_b WHAT: SIGHUP to the second helper, awaited in its log
    local n0
    n0=$(grep -c "reloaded $HB" "$LOG2")
    kill -HUP "$(cat "$NVL_CLUSTER_DIR/run/nvlsliced-b.pid")"
    wait_for 10 bash -c "[ \$(grep -c 'reloaded $HB' '$LOG2') -gt $n0 ]" || not_ok "$1: $(tail -2 "$LOG2")"
}
cp "$HB" "$HB_GOOD"
{ grep -Ev '^(reservation|gate_reservation):' "$HB_GOOD"
  echo "reservation: nvlslice_spares_b"; echo "gate_reservation: nvlslice_gate_b"; } > "$HB"
# each reservation with its start: one deleted and made again by the
# active helper starts later
starts() { for r in nvlslice_spares $([ "$MODE" = gate ] && echo nvlslice_gate); do
    echo "$r $(scontrol -o show reservation "$r" 2>/dev/null | grep -o 'StartTime=[^ ]*')"; done | xargs; }
before=$(starts)
reload_b "the standby reloads"
# a standby's cycle comes every second: three of them, and the active
# helper's reservations are the same ones, never deleted
sleep 3
expect_eq "the active helper's reservations kept, never made again" "$before" "$(starts)"
expect_eq "the standby said it deleted none" "0" "$(grep -c 'renamed: deleted' "$LOG2")"
cp "$HB_GOOD" "$HB"; rm -f "$HB_GOOD"
reload_b "the standby reloads its own names again"

echo "# lease: a repair is the active helper's alone"
J=$(sbatch --parsable -N 16 --nvl-slice=16 --requeue -J leased --wrap 'sleep 600')
wait_for 20 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]" || not_ok "job $J runs: $(squeue -h -j "$J" -o '%T %r')"
n1=$(scontrol show hostnames "$(nodes_of "$J")" | sed -n 5p)
scontrol update nodename="$n1" state=drain reason="gpu xid 48"
if wait_for 60 running_on_spare "$J" "$n1"; then ok "repaired without $n1: $(nodes_of "$J")"; else not_ok "repair: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J")"; fi
expect_match "one repair" "repairs=1 " "$(record "$J")"
expect_eq "the standby took no action on it" "0" "$(grep -c "job $J" "$LOG2")"

echo "# lease: a clean stop hands the lease over at the other's next cycle"
t0=$(now)
"$CL" kill-helper
if wait_for 15 grep -q "active: " "$LOG2"; then
    ok "the second helper is active $(secs "$t0" "$(now)") s after the first stopped"
else
    not_ok "handover after a clean stop: $(tail -3 "$LOG2"); $(lease_line)"
fi
expect_match "the lease names it now" "Features=[^ ]*:$NVL_CLUSTER_DIR/run/nvlsliced-b.lock" "$(lease_line)"

echo "# lease: the active helper killed in the middle of a repair; the other takes over once the lease ends"
n2=$(scontrol show hostnames "$(nodes_of "$J")" | sed -n 9p)
c0=$(wc -l < "$CTLD")
t0=$(now)
scontrol update nodename="$n2" state=drain reason="gpu xid 48"
wait_for 15 grep -q "test hook: killed after requeue-hold of job $J" "$LOG2" ||
    not_ok "the second helper died after the requeue-hold: $(tail -3 "$LOG2")"
rm -f "$NVL_CLUSTER_DIR/run/nvlsliced-b.pid"
wait_for 60 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = PENDING ]"
expect_match "the job is left held mid-repair" "^PENDING" "$(squeue -h -j "$J" -o %T)"
mark=$(wc -l < "$LOG")
"$CL" helper
if wait_for 15 bash -c "tail -n +$((mark + 1)) '$LOG' | grep -q 'standby: the lease is held by'"; then
    ok "restarted, the first helper stands by while the dead one's lease lasts"
else
    not_ok "the first helper stands by: $(tail -n +"$((mark + 1))" "$LOG" | head -5)"
fi
# the lease's length, then slurmctld's purge (every 30 s), then a cycle
if wait_for $((LEASE_S + 60)) running_on_spare "$J" "$n2"; then
    t=$(secs "$t0" "$(now)")
    ok "the repair finished under the first helper ($t s after the drain; the lease is ${LEASE_S} s)"
    echo "# measured: failover of the helper in the middle of a repair: running again after $t s (lease ${LEASE_S} s, purge up to 30 s)"
else
    not_ok "the repair finished after the failover: $(squeue -h -j "$J" -o '%T %N %r') $(record "$J"); $(lease_line)"
fi
expect_match "repairs counted once each" "repairs=2 " "$(record "$J")"
expect_eq "no job left held" "" "$(squeue -h -t PD -o '%i %r' | grep -i held)"
# each step once, in slurmctld's own log: the requeue by the helper that
# died, the pin and the release by the one that took over
steps() { tail -n +"$((c0 + 1))" "$CTLD" | grep -cE -- "$1"; }
expect_eq "requeued once" "1" "$(steps "Requeuing JobId=$J\$")"
# the pin: a begin time with the node list (gate mode), or the move into
# the lend reservation that holds the target (native mode); each at most
# once, one of them at least
pins=$(steps "setting begin to .* for JobId=$J\$"); lends=$(steps "setting reservation to nvlslice_lend_$J for JobId=$J\$")
expect_eq "pinned once after the requeue (begin time: $pins, lend reservation: $lends)" "ok" \
    "$([ "$pins" -le 1 ] && [ "$lends" -le 1 ] && [ $((pins + lends)) -ge 1 ] && echo ok)"
expect_eq "released once" "1" "$(steps "release hold on JobId=$J ")"
expect_eq "the repair decided once, by the helper that died" "1" \
    "$(( $(grep -c "job $J: repair:" "$LOG2") + $(tail -n +"$((mark + 1))" "$LOG" | grep -c "job $J: repair:") ))"
active_at=$(tail -n +"$((mark + 1))" "$LOG" | grep -n "active: " | head -1 | cut -d: -f1)
expect_eq "the first helper took no action on the job before it held the lease" "0" \
    "$(tail -n +"$((mark + 1))" "$LOG" | head -n "$((${active_at:-1} - 1))" | grep -c "job $J")"
cleanup
scontrol update nodename="$n1,$n2" state=resume 2>/dev/null

echo "# lease: a slurm.conf without the lease's license (a site upgrading) is named with its fix"
conf=$NVL_CLUSTER_DIR/etc/nvlslice.yaml
sed -e 's/^metrics_listen:.*//' -e 's/^lease_license:.*//' -e 's/^lease_reservation:.*//' -e 's/^lock_file:.*//' "$conf" > "$NVL_CLUSTER_DIR/etc/nolicense.yaml"
printf 'metrics_listen: ""\nlease_license: nvlslice_nosuch\nlease_reservation: nvlslice_lease_nosuch\nlock_file: %s\n' \
    "$NVL_CLUSTER_DIR/run/nolicense.lock" >> "$NVL_CLUSTER_DIR/etc/nolicense.yaml"
out=$("$NVL_HELPER" --once --config "$NVL_CLUSTER_DIR/etc/nolicense.yaml" 2>&1)
expect_match "the missing license is named with the slurm.conf line to add" \
    'needs the license nvlslice_nosuch.*add "Licenses=nvlslice_nosuch:1" to slurm.conf' "$out"
expect_eq "no lease reservation is left for it" "" "$(scontrol show reservation nvlslice_lease_nosuch -o 2>/dev/null | grep -o Name=)"
summary lease
