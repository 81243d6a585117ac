#!/bin/bash
# Lending from deep in the queue: a checkpointable job behind N waiting jobs
# that may not borrow spares, at a lower priority than all of them. The
# helper lends it a spare wherever it waits, in a reservation of its own
# (nvlslice_lend_<job>): no job ahead may take the spare, and Slurm sorts a
# job in a reservation first and tests it apart from its partition's queue
# (without it, backfill reaches the first bf_max_job_test jobs, 500 by
# default, and the main scheduler stops in a partition at the first job
# that does not fit). doc/figures.txt reports what it found.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
N=${NVL_DEPTH_N:-600}
echo "# lend_depth: mode $(nvl_mode), $N jobs ahead"
cleanup
sbatch -Q -N 16 --nvl-slice=16 -J fillA --wrap 'sleep 1200' >/dev/null
sbatch -Q -N 16 --nvl-slice=16 -J fillB --wrap 'sleep 1200' >/dev/null
wait_for 30 bash -c '[ "$(squeue -h -t R -o %i | wc -l)" = 2 ]'
check "two 16-node slice jobs run, one per rack: only the spares are free" \
    [ "$(squeue -h -t R -o %N | sort | paste -sd' ')" = "nvl[0001-0016] nvl[0019-0034]" ]
t0=$(now)
for _ in $(seq "$N"); do sbatch -Q -N 1 --nvl-slice=1 -J ahead --wrap 'sleep 60' >/dev/null; done
echo "# lend_depth: $N jobs submitted in $(secs "$t0" "$(now)") s"
wait_for 30 bash -c "[ \"\$(squeue -h -t PD -o %i | wc -l)\" = $N ]"
echo "# lend_depth: the jobs ahead: priority $(squeue -h -t PD -o %Q | sort -n | uniq -c | paste -sd' '), reason $(squeue -h -t PD -o %r | sort | uniq -c | paste -sd' ')"
L=$(sbatch --parsable -N 1 --nvl-slice=1 --nvl-checkpointable --requeue --nice=500 -J deep --wrap 'sleep 300')
t0=$(now)
if wait_for 180 bash -c "[ \"\$(squeue -h -j $L -o %T)\" = RUNNING ]"; then
    echo "# measured: a borrower behind $N jobs, priority $(job_field "$L" Priority): running after $(secs "$t0" "$(now)") s on $(nodes_of "$L")"
    ok "the borrower runs on a lent spare: $(nodes_of "$L") $(record "$L" | grep -o 'lent=1')"
else
    not_ok "the borrower behind $N jobs did not start in 180 s: $(squeue -h -j "$L" -o '%T %r') record: $(record "$L")"
fi
check "none of the jobs ahead took a spare" [ "$(squeue -h -t R -n ahead -o %i | wc -l)" = 0 ]
# the spare waited for it in nvlslice_lend_<job>; once it runs there, the job
# leaves that reservation and the reservation goes (the job keeps the node)
if wait_for 30 bash -c "! scontrol -o show reservation nvlslice_lend_$L >/dev/null 2>&1 && [ -z \"\$(squeue -h -j $L -o %v | grep -v '(null)')\" ]"; then
    ok "the lend reservation nvlslice_lend_$L ended once the borrower ran; the borrower runs on"
else
    not_ok "the lend reservation: $(scontrol -o show reservation nvlslice_lend_$L 2>&1); the job's reservation: $(squeue -h -j "$L" -o %v)"
fi
check "the borrower still runs, on its lent spare" [ "$(squeue -h -j "$L" -o %T)" = RUNNING ]
cleanup
summary lending
