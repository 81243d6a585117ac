#!/bin/bash
# Removal (nvlsliced --remove, doc/admin-guide.txt REMOVAL): a queue of
# waiting slice and plain jobs and a running slice job; in the admin
# guide's order, the plugin line commented out, the helper stopped, --remove
# run, then scontrol reconfigure: nothing named nvlslice is left
# in the reservations, the node weights or the jobs, and once the nodes
# free, plain Slurm starts every waiting job, the slice jobs as the plain
# one. Then the same queue submitted without nvlslice on the same cluster:
# what Slurm does with them (state and reason of each once its backfill
# has looked at them), and the order they start in, are the same as after
# the removal. Restarts the helper at its end.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
[ -n "${NVL_HELPER:-}" ] || { echo "test_remove.sh: NVL_HELPER (the nvlsliced binary) must be set" >&2; exit 1; }
CONF=$NVL_CLUSTER_DIR/etc/nvlslice.yaml
PLUGSTACK=$NVL_CLUSTER_DIR/etc/plugstack.conf
cp "$PLUGSTACK" "$NVL_CLUSTER_DIR/plugstack.before-remove"
restart_helper() {
    cp "$NVL_CLUSTER_DIR/plugstack.before-remove" "$PLUGSTACK"
    "$CL" helper >/dev/null 2>&1 || true
}
trap restart_helper EXIT

cleanup; resume_all
wait_for 60 all_up; settle

echo "# removal: a running slice job, a plain job on the rest, slice and plain jobs waiting"
R=$(sbatch --parsable -N 16 --nvl-slice=16 -J running --wrap 'sleep 600')
wait_for 30 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ]" || not_ok "job $R runs: $(squeue -h -j "$R" -o '%T %r')"
B=$(sbatch --parsable -N 16 -J blocker --wrap 'sleep 600')
wait_for 30 bash -c "[ \"\$(squeue -h -j $B -o %T)\" = RUNNING ]" || not_ok "blocker $B runs: $(squeue -h -j "$B" -o '%T %r')"
A1=$(sbatch --parsable -N 16 --nvl-slice=16 -J waiting1 --wrap 'sleep 60')
A2=$(sbatch --parsable -N 16 --nvl-slice=16 --nice=100 -J waiting2 --wrap 'sleep 60')
# (2 nodes: on topology/block a plain job fits inside one rack, which has 2
# nodes left beside a 16-node slice)
P=$(sbatch --parsable -N 2 --nice=200 -J plain --wrap 'sleep 60')
# the helper has written its records on the waiting slice jobs
wait_for 20 bash -c "scontrol show job $A1 | grep -q 'AdminComment=nvlslice' && scontrol show job $A2 | grep -q 'AdminComment=nvlslice'" ||
    not_ok "records on the waiting jobs: $(record "$A1") / $(record "$A2")"
# a site's accounting tag beside the record of the running job
scontrol update jobid="$R" AdminComment="$(admin_comment "$R") | acct: proj-a"
ours_resv() { scontrol show reservation 2>/dev/null | grep -o 'ReservationName=nvlslice[^ ]*' | paste -sd' '; }
echo "# before removal: reservations $(ours_resv); licenses $(squeue -h -o '%i:%W' | paste -sd' ')"
expect_match "the helper keeps its spares before removal" "nvlslice_spares" "$(ours_resv)"

weights=$(scontrol show node -o | grep -o 'Weight=[0-9]*' | sort -u | paste -sd' ')
echo "# node weights before removal: $weights"
[ "$(nvl_mode)" = gate ] && expect_match "gate mode: the helper steers node weights before removal" "Weight=([02-9]|1[0-9])" "$weights"
echo "# removal, in the admin guide's order: 1. the plugin line commented out (new steps load no plugin)"
sed -i 's/^required /#required /' "$PLUGSTACK"
expect_match "the plugin line is commented out" "^#required " "$(cat "$PLUGSTACK")"
echo "# removal: refused while a helper runs"
out=$("$NVL_HELPER" --remove --config "$CONF" 2>&1); rc=$?
if [ "$rc" -ne 0 ] && grep -qE "another nvlsliced is running|lease .* is held by" <<< "$out"; then
    ok "--remove refuses while a helper runs"
else
    not_ok "--remove refuses while a helper runs: rc=$rc $out"
fi
"$CL" kill-helper
out=$("$NVL_HELPER" --remove --dry-run --config "$CONF" 2>&1)
expect_match "a dry run says what it would do" "would: delete reservation nvlslice_spares" "$out"
expect_match "a dry run changes nothing" "nvlslice_spares" "$(ours_resv)"
out=$("$NVL_HELPER" --remove --config "$CONF" 2>&1); rc=$?
echo "$out" | sed 's/^/# /'
expect_eq "--remove succeeds" "0" "$rc"
expect_eq "no reservation named nvlslice is left" "" "$(ours_resv)"
expect_eq "no job carries the gate license" "" "$(squeue -h -o '%i %W' | grep nvlslice_gate)"
expect_eq "no job carries a record" "" "$(for j in $R $B $A1 $A2 $P; do admin_comment "$j" | grep -o 'nvlslice/[^ ]*'; done)"
expect_eq "the site's text is left as it was" "acct: proj-a" "$(admin_comment "$R")"
expect_eq "no job pinned to nodes" "" "$(for j in $A1 $A2 $P; do job_field "$j" ReqNodeList; job_field "$j" ExcNodeList; done | grep -v '^(null)$')"
expect_eq "no job held" "" "$(squeue -h -t PD -o '%i %r' | grep -i held)"
scontrol reconfigure
wait_for 60 bash -c 'scontrol ping 2>/dev/null | grep -q UP' && wait_for 60 all_up
expect_eq "node weights back to slurm.conf's (1)" "Weight=1" "$(scontrol show node -o | grep -o 'Weight=[0-9]*' | sort -u | paste -sd' ')"
expect_match "the running slice job keeps running" "^RUNNING" "$(squeue -h -j "$R" -o %T)"

echo "# removal: plain Slurm starts every waiting job once the nodes free"
# What Slurm does with the waiting jobs (state and reason of each, in its
# priority order) once its backfill has looked at them twice, and the order
# they start in: set beside the same queue submitted without nvlslice below.
queue_view() { squeue -h --sort=-p,i -o '%j:%T:%r' -j "$(IFS=,; echo "$*")" | paste -sd' '; }
start_order() { for j in "$@"; do echo "$(job_field "$j" StartTime) $(squeue -h -j "$j" -o %Q) $(squeue -h -j "$j" -o %j)"; done | sort -k1,1 -k2,2nr | awk '{ print $3 }' | paste -sd' '; }
bf_cycles() { sdiag 2>/dev/null | awk '/^Backfilling stats/ { f = 1 } f && /Total cycles:/ { print $3; exit }'; }
bf_past() { [ "$(bf_cycles)" -ge "$1" ]; }
backfilled_twice() { local c0; c0=$(bf_cycles); wait_for 60 bf_past $((c0 + 2)) || echo "# backfill did not run twice in 60 s: $(bf_cycles) cycles since $c0"; }
backfilled_twice
VIEW_REMOVED=$(queue_view "$A1" "$A2" "$P")
echo "# after removal: $VIEW_REMOVED"
t0=$(now)
scancel "$R" "$B"
all_running() { for j in "$@"; do [ "$(squeue -h -j "$j" -o %T)" = RUNNING ] || return 1; done; }
if wait_for 60 all_running "$A1" "$A2" "$P"; then
    ok "every waiting job runs $(secs "$t0" "$(now)") s after the nodes were freed (slice and plain alike)"
    echo "# where Slurm alone put them: $A1 on $(job_field "$A1" NodeList), $A2 on $(job_field "$A2" NodeList), $P on $(job_field "$P" NodeList)"
else
    not_ok "every waiting job runs: $(squeue -h -o '%i %T %r' | paste -sd' ')"
fi
ORDER_REMOVED=$(start_order "$A1" "$A2" "$P")
expect_eq "still no reservation named nvlslice" "" "$(ours_resv)"

echo "# removal: the same queue submitted without nvlslice (no plugin, no helper), side by side"
cleanup
R=$(sbatch --parsable -N 16 -J running --wrap 'sleep 600')
wait_for 30 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ]"
B=$(sbatch --parsable -N 16 -J blocker --wrap 'sleep 600')
wait_for 30 bash -c "[ \"\$(squeue -h -j $B -o %T)\" = RUNNING ]"
A1=$(sbatch --parsable -N 16 -J waiting1 --wrap 'sleep 60')
A2=$(sbatch --parsable -N 16 --nice=100 -J waiting2 --wrap 'sleep 60')
P=$(sbatch --parsable -N 2 --nice=200 -J plain --wrap 'sleep 60')
backfilled_twice
expect_eq "what Slurm does with the waiting jobs (state, reason): after removal as without nvlslice" "$(queue_view "$A1" "$A2" "$P")" "$VIEW_REMOVED"
t0=$(now)
scancel "$R" "$B"
if wait_for 60 all_running "$A1" "$A2" "$P"; then
    echo "# Slurm alone: every waiting job runs $(secs "$t0" "$(now)") s after the nodes were freed"
else
    not_ok "Slurm alone runs every waiting job: $(squeue -h -o '%i %T %r' | paste -sd' ')"
fi
expect_eq "they start in the order Slurm alone starts them" "$(start_order "$A1" "$A2" "$P")" "$ORDER_REMOVED"
cleanup
# the plugin line and the helper back (trap): it makes its reservations again
summary remove
