#!/bin/bash
# Native mode on the real test cluster (see run.sh): on Slurm with
# topology/block and --segment, a slice job is Slurm's own segment job.
# Runs with nvlsliced up, in the mode it chose from the running Slurm.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
OUT=$(mktemp -d)
cd "$OUT"
LOG=$NVL_CLUSTER_DIR/log/nvlsliced.log

echo "# native: nvlsliced chose native mode from the running Slurm"
expect_match "its log names the mode and why" 'mode native \(chosen from the running Slurm; Slurm [0-9.]+, topology/block\)' "$(grep 'started:' "$LOG" | tail -1)"

echo "# native: bad values are refused before submission, no job created"
before=$(job_count)
refuse "non-numeric slice" 'nvlslice: --nvl-slice=sixteen: expected a slice size in nodes' -N 32 --nvl-slice=sixteen
refuse "not a multiple" 'nvlslice: --nvl-slice=16: -N 20 is not a multiple of the slice size' -N 20 --nvl-slice=16
refuse "slice larger than a rack" 'nvlslice: --nvl-slice=17: larger than any rack can hold' -N 17 --nvl-slice=17
refuse "a --segment of the user's that differs" 'nvlslice: --segment=8 conflicts with --nvl-slice \(slices of 16 nodes\)' -N 16 --segment=8 --nvl-slice=16
refuse "checkpointable without requeue" 'nvlslice: --nvl-checkpointable needs --requeue' -N 16 --nvl-slice=16 --nvl-checkpointable
expect_eq "no job was created by refused submissions" "$before" "$(job_count)"

echo "# native: 16 + 16 as Slurm's own segments, one per rack, the spares left free"
cleanup
J=$(sbatch --parsable -N 32 --nvl-slice=16 -o "$OUT/n-%j.out" \
    --wrap 'srun bash -c "echo \$SLURMD_NODENAME \$NVL_SLICE_INDEX \$NVL_DOMAIN \$NVL_SLICE_SIZE"; sleep 30')
expect_match "tagged native" 'handoff=native' "$(job_comment "$J")"
expect_eq "no gate license" "(null)" "$(job_field "$J" Licenses)"
expect_eq "whole nodes (--exclusive)" "NO" "$(job_field "$J" OverSubscribe)"
if wait_state "$J" RUNNING 20; then ok "Slurm started it by itself"; else not_ok "native start: $(squeue -h -j "$J" -o '%T %r')"; fi
expect_eq "one 16-node segment per rack, spares untouched" "nvl[0001-0016,0019-0034]" "$(job_field "$J" NodeList)"
expect_eq "the spares stay reserved" "nvl[0017-0018,0035-0036]" "$(resv_nodes)"
expect_eq "Slurm placed it: nvlsliced never pinned it" "(null)" "$(job_field "$J" ReqNodeList)"
wait_for 10 bash -c "scontrol show job $J | grep -q 'AdminComment=nvlslice/1 placed'"
expect_match "nvlsliced recorded its slices" '^nvlslice/1 placed slice=16 slices=nvl\[0001-0016\];nvl\[0019-0034\]' "$(record "$J")"
wait_for 10 bash -c "[ \"\$(wc -l < $OUT/n-$J.out 2>/dev/null)\" -ge 32 ]"
expect_eq "tasks see slice 0 on rack001 and slice 1 on rack002 (the same NVL_* as in gate mode)" "16 0 rack001 16,16 1 rack002 16" \
    "$(awk '{print $2, $3, $4}' "$OUT/n-$J.out" | sort | uniq -c | awk '{print $1, $2, $3, $4}' | paste -sd,)"

echo "# native: a prefer job takes the gate (a segment cannot run split after its wait)"
P=$(sbatch --parsable -N 16 --nvl-slice=16 --nvl-placement=prefer --wrap 'sleep 5')
expect_match "tagged gate" 'placement=prefer checkpointable=0 handoff=gate' "$(job_comment "$P")"
expect_match "behind the gate license" 'nvlslice_gate:1' "$(job_field "$P" Licenses)"

cleanup
rm -rf "$OUT"
summary "native"
