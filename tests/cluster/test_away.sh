#!/bin/bash
# The helper away (doc/operations.txt, "The helper away"): a running slice
# job and a waiting one, the helper stopped. Meanwhile the running job
# keeps running, a node that drains under it is not repaired, and the
# waiting one waits behind its gate (gate mode) or is placed by Slurm
# inside one rack (native mode). Then the reservations' lease ends (here
# by deleting them, as their end time would): in gate mode the gate opens
# and Slurm starts the waiting job where it can, across racks, where the
# plugin fails it at its first task, naming why. The helper comes back: it
# makes its reservations again and repairs the running job from its rack's
# spare; nothing is left held. Restarts the helper at its end in any case.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log
# this cluster's helper, by its pid file (another cluster's may run beside it)
helper_up() { local p; p=$(cat "$NVL_CLUSTER_DIR/run/nvlsliced.pid" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
restart_helper() { helper_up || "$CL" helper >/dev/null 2>&1 || true; }
trap restart_helper EXIT
# the jobs' output files go to a directory of their own
WORK=$(mktemp -d)
cd "$WORK" || exit 1
MODE=$(nvl_mode)
reason_of() { squeue -h -j "$1" -o %r 2>/dev/null; }

cleanup; resume_all
wait_for 60 all_up; settle

echo "# away ($MODE mode): a running slice job, then the helper stops"
R=$(sbatch --parsable -N 16 --nvl-slice=16 -J running --wrap 'sleep 600')
wait_state "$R" RUNNING 30 || not_ok "job $R runs: $(squeue -h -j "$R" -o '%T %r')"
wait_for 10 bash -c "scontrol show job $R | grep -q 'nvlslice/1 placed'"
R_NODES=$(nodes_of "$R")
"$CL" kill-helper
expect_eq "the helper is stopped" "stopped" "$(helper_up && echo running || echo stopped)"

echo "# away: a slice job submitted meanwhile, and a node that drains under the running one"
W=$(sbatch --parsable -N 16 --nvl-slice=16 -J waiting --wrap 'sleep 600')
if [ "$MODE" = gate ]; then
    # the gate's reservation outlives the helper: Slurm does not start it
    # (a negative: given Slurm's scheduling passes the time to act)
    wait_for 10 bash -c "[ \"\$(squeue -h -j $W -o %r)\" = Licenses ]"
    sleep 5
    expect_eq "gate mode: it waits behind its gate" "PENDING Licenses" "$(state "$W") $(reason_of "$W")"
else
    if wait_state "$W" RUNNING 30; then
        expect_eq "native mode: Slurm places it itself, inside one rack" "1" "$(racks_of "$(nodes_of "$W")" | wc -w)"
    else
        not_ok "native mode: Slurm places it itself: $(squeue -h -j "$W" -o '%T %r')"
    fi
fi
BAD=$(scontrol show hostnames "$R_NODES" | sed -n 5p)
scontrol update nodename="$BAD" state=drain reason="gpu xid 79"
sleep 5 # (a negative again: the cycles the helper would have made)
expect_eq "the running job keeps running on its nodes, the drained one too" "RUNNING $R_NODES" "$(state "$R") $(nodes_of "$R")"
expect_match "its record is as the helper left it" '^nvlslice/1 placed .*repairs=0' "$(record "$R")"
expect_match "users see the waiting job's reason in its record, or none yet" '^(nvlslice/1 waiting .*|)$' "$(record "$W")"

if [ "$MODE" = gate ]; then
    echo "# away: the reservations' lease ends (deleted here, as their end time would): the gate opens"
    # a plain job on 4 nodes of the other rack: no rack has 16 free
    # outside R's, so Slurm's placement of W is across racks
    other=$(comm -23 <(scontrol show hostnames 'nvl[0019-0034]') <(scontrol show hostnames "$R_NODES") | head -4 | paste -sd,)
    P=$(sbatch --parsable -w "$other" -J plain --wrap 'sleep 600')
    wait_state "$P" RUNNING 30 || not_ok "plain job $P runs: $(squeue -h -j "$P" -o '%T %r')"
    for r in nvlslice_spares nvlslice_gate nvlslice_protect; do scontrol delete reservationname=$r 2>/dev/null; done
    # started across racks, the plugin fails it at its first task
    if wait_state "$W" FAILED 60; then
        ok "Slurm started the waiting job without a placement, on $(job_field "$W" NodeList), and it failed at its first task"
    else
        not_ok "the gate opened: $(scontrol show job "$W" | grep -o 'JobState=[A-Z]*') $(squeue -h -j "$W" -o '%T %N %r')"
    fi
    expect_match "the job's output says why" 'nvlslice: job [0-9]+: the job has [0-9]+ nodes in rack00[12], not a multiple of its slice size 16; and no nvlsliced placement record' \
        "$(cat "$WORK"/slurm-"$W".out 2>/dev/null)"

    echo "# away: the helper comes back"
    "$CL" helper >/dev/null || not_ok "the helper restarted"
    wait_for 20 bash -c "scontrol show reservation nvlslice_gate >/dev/null 2>&1 && scontrol show reservation nvlslice_spares >/dev/null 2>&1"
    check "it makes the gate and spare reservations again" bash -c "scontrol show reservation nvlslice_gate >/dev/null 2>&1 && scontrol show reservation nvlslice_spares >/dev/null 2>&1"
    if wait_for 60 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ] && ! scontrol show hostnames \"\$(squeue -h -j $R -o %N)\" | grep -qx $BAD"; then
        ok "the running job is repaired off $BAD, inside its rack ($(nodes_of "$R"): $(racks_of "$(nodes_of "$R")"))"
    else
        not_ok "the repair after the helper's return: $(squeue -h -j "$R" -o '%T %N %r') $(record "$R")"
    fi
    expect_match "its record counts the repair" 'repairs=1' "$(record "$R")"
else
    echo "# away: native mode: the helper comes back"
    "$CL" helper >/dev/null || not_ok "the helper restarted"
    if wait_for 60 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ] && ! scontrol show hostnames \"\$(squeue -h -j $R -o %N)\" | grep -qx $BAD"; then
        ok "the running job is repaired off $BAD, inside its rack ($(nodes_of "$R"): $(racks_of "$(nodes_of "$R")"))"
    else
        not_ok "the repair after the helper's return: $(squeue -h -j "$R" -o '%T %N %r') $(record "$R")"
    fi
fi
expect_eq "no job left held" "" "$(squeue -h -t PD -o '%i %r' | grep -i held)"
cleanup; resume_all
cd / && rm -rf "$WORK"
summary "away"
