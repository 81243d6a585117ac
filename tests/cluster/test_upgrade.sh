#!/bin/bash
# Upgrading Slurm with nvlslice installed, in doc/operations.txt's order
# ("Upgrading"), from the 24.11 root to the 26.05 root (tests/cluster/
# upgrade.sh runs both phases; each root has nvlslice built against its own
# libslurm: step 1).
#
# NVL_UPGRADE=before, on the older Slurm: a running slice job with an srun
# step on its 16 nodes, a plain job holding the other rack, a slice job
# waiting with its record; then step 2 (nvlsliced stopped), step 3
# (slurmctld stopped, its state saved). The slurmds keep running, with the
# steps.
# NVL_UPGRADE=after, on the newer Slurm started on that saved state: the
# jobs and the helper's records are there; step 4, each older slurmd
# stopped and the newer one started in its place (cluster.sh's NVL_ADOPT)
# while the job's steps run on: they are still the job's, and end well
# when told to, reporting to the newer daemons; step 5 (nvlsliced
# --check-config, then started) finds the records; the waiting slice job is
# placed inside a rack once the plain job ends, and a new slice job too.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
CL="$HERE/cluster.sh"
DIR=$NVL_CLUSTER_DIR
ENVF=$DIR/state/nvlslice-upgrade.env # carried with the state
v=$(scontrol --version | awk '{ print $2 }')

case "${NVL_UPGRADE:-}" in
before)
    wait_for 20 mode_is
    echo "# upgrade, before: Slurm $v, the helper in $(nvl_mode) mode"
    wait_for 60 all_up; settle
    # its step waits on every node for a file the newer Slurm's side makes
    # (DIR/spool, the slurmds' spool that both sides share)
    rm -f "$DIR/spool/upgrade.go"
    R=$(sbatch --parsable -N 16 --nvl-slice=16 -J running --wrap "srun bash -c 'until [ -e $DIR/spool/upgrade.go ]; do sleep 1; done'")
    wait_for 30 bash -c "[ \"\$(squeue -h -j $R -o %T)\" = RUNNING ]" || not_ok "job $R runs: $(squeue -h -j "$R" -o '%T %r')"
    wait_for 30 bash -c "squeue -h -s -j $R -o %i | grep -qx '$R.0'" || not_ok "job $R's srun step runs: $(squeue -h -s -j "$R" -o '%i %N')"
    B=$(sbatch --parsable -N 16 -J plain --wrap 'sleep 3000')
    wait_for 30 bash -c "[ \"\$(squeue -h -j $B -o %T)\" = RUNNING ]" || not_ok "plain job $B runs: $(squeue -h -j "$B" -o '%T %r')"
    W=$(sbatch --parsable -N 16 --nvl-slice=16 -J waiting --wrap 'sleep 3000')
    wait_for 20 bash -c "[ -n \"\$(record $W)\" ]"
    expect_match "a running slice job inside one rack ($(nodes_of "$R"))" "^rack00[12]$" "$(racks_of "$(nodes_of "$R")")"
    expect_match "a slice job waits, with the helper's record" "^nvlslice/" "$(record "$W")"
    RS=$(scontrol show job "$R" | grep -oE '(StartTime|Restarts)=[^ ]*' | paste -sd' ')
    echo "R=$R B=$B W=$W V=$v RN=$(nodes_of "$R") RS='$RS' RSTEPS='$(squeue -h -s -j "$R" -o %i | sort | paste -sd' ')' WREC='$(record "$W")'" > "$ENVF"
    echo "# step 2: nvlsliced stopped"
    "$CL" kill-helper
    echo "# step 3: slurmctld stopped (its state saved in $DIR/state)"
    "$CL" stop-ctld # SIGTERM, as systemctl stop: slurmctld saves its state and exits
    wait_for 30 bash -c '! scontrol ping 2>/dev/null | grep -q UP'
    ok "slurmctld $v stopped, its state saved ($(ls "$DIR/state" | wc -l) files)"
    echo "# step 4 on the newer Slurm's side: the slurmds keep running here, job $R's steps with them"
    ;;
after)
    [ -f "$ENVF" ] || { echo "test_upgrade.sh: no $ENVF: run the before phase first (upgrade.sh)" >&2; exit 1; }
    . "$ENVF"
    echo "# upgrade, after: Slurm $V -> $v on the saved state; jobs $R (was running), $B (plain), $W (waiting)"
    wait_for 60 bash -c '[ -n "$(squeue -h -o %i)" ]'
    expect_eq "slurmctld $v knows the jobs $V saved" "$(printf '%s\n' "$R" "$B" "$W" | sort -n | paste -sd' ')" "$(squeue -h -j "$R,$B,$W" -o %i | sort -n | paste -sd' ')"
    expect_eq "the waiting slice job's record is as the old helper wrote it" "$WREC" "$(record "$W")"
    expect_match "nvlslice's reservations are kept" "nvlslice_spares" "$(scontrol show reservation 2>/dev/null | grep -o 'ReservationName=[^ ]*' | paste -sd' ')"
    echo "# step 4: each 24.11 slurmd was stopped and a $v slurmd started in its place (cluster.sh up, NVL_ADOPT)"
    expect_eq "every slurmd is $v's" "$v" "$(scontrol show node | sed -n 's/.*Version=\([^ ]*\).*/\1/p' | sort -u | paste -sd' ')"
    expect_eq "job $R kept running on its nodes, from the same start, not requeued" \
        "RUNNING $RN $RS" "$(squeue -h -j "$R" -o '%T %N') $(scontrol show job "$R" | grep -oE '(StartTime|Restarts)=[^ ]*' | paste -sd' ')"
    expect_match "job $R had not been requeued on $V" "Restarts=0" "$RS"
    expect_eq "its steps started on $V ($RSTEPS) are still there under $v" "$RSTEPS" "$(squeue -h -s -j "$R" -o %i | sort | paste -sd' ')"
    touch "$DIR/spool/upgrade.go"
    if wait_for 60 bash -c "[ \"\$(squeue -h -j $R -t all -o %T)\" = COMPLETED ]"; then
        expect_eq "the steps $V started ended well under $v, told so through the shared spool" "ExitCode=0:0" "$(scontrol show job "$R" | grep -o ' ExitCode=[^ ]*' | tr -d ' ')"
    else
        not_ok "job $R's steps end once told to: $(squeue -h -j "$R" -t all -o '%T %r'); $(squeue -h -s -j "$R" -o '%i %N' | paste -sd' ')"
        grep -E "$R" "$DIR"/log/slurmctld.log | tail -10 | sed 's/^/# /'
    fi
    echo "# step 5: nvlsliced --check-config, then started"
    out=$("$NVL_HELPER" --check-config --config "$DIR/etc/nvlslice.yaml" 2>&1); rc=$?
    expect_eq "nvlsliced --check-config passes on Slurm $v ($(tail -1 <<< "$out"))" "0" "$rc"
    "$CL" helper || not_ok "the helper starts"
    wait_for 20 mode_is
    expect_eq "the new helper runs in native mode" "native" "$(nvl_mode)"
    echo "# the plain job ends: the waiting slice job is placed"
    scancel "$B"
    if wait_for 90 bash -c "[ \"\$(squeue -h -j $W -o %T)\" = RUNNING ]"; then
        expect_match "the slice job that waited across the upgrade runs inside one rack ($(nodes_of "$W"))" "^rack00[12]$" "$(racks_of "$(nodes_of "$W")")"
    else
        not_ok "the slice job that waited across the upgrade runs: $(squeue -h -j "$W" -o '%T %r'); $(record "$W")"
        tail -20 "$DIR/log/nvlsliced.log" | sed 's/^/# /'
    fi
    scancel "$W"
    wait_for 60 bash -c '[ -z "$(squeue -h -o %i)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
    scontrol update nodename=nvl[0001-0036] state=resume 2>/dev/null
    N=$(sbatch --parsable -N 16 --nvl-slice=16 -J new --wrap 'sleep 60')
    if wait_for 60 bash -c "[ \"\$(squeue -h -j $N -o %T)\" = RUNNING ]"; then
        expect_match "a new slice job runs inside one rack ($(nodes_of "$N"))" "^rack00[12]$" "$(racks_of "$(nodes_of "$N")")"
    else
        not_ok "a new slice job runs: $(squeue -h -j "$N" -o '%T %r'); $(record "$N")"
    fi
    scancel "$N"
    ;;
*) echo "test_upgrade.sh: NVL_UPGRADE=before or after (tests/cluster/upgrade.sh runs both)" >&2; exit 2 ;;
esac
summary phase
