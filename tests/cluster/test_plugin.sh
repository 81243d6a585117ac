#!/bin/bash
# Cluster tests of the SPANK plugin on the real test cluster (see run.sh).
# Expects SLURM_CONF and NVL_CLUSTER_DIR of a cluster started with the plugin,
# check_gpus=fail and per-node hwloc fixtures (nvl0036 has 3 GPUs).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
OUT=$(mktemp -d)
cd "$OUT"

echo "# plugin: options in --help"
for cmd in sbatch salloc srun; do
    h=$($cmd --help 2>&1)
    expect_match "$cmd --help lists --nvl-slice" '--nvl-slice=SIZE\|auto +\[nvlslice\]' "$h"
    expect_match "$cmd --help lists --nvl-placement" '--nvl-placement=strict\|prefer' "$h"
    expect_match "$cmd --help lists --nvl-checkpointable" '--nvl-checkpointable +\[nvlslice\]' "$h"
done

echo "# plugin: bad values are refused before submission, no job created"
before=$(job_count)
refuse "non-numeric slice" 'nvlslice: --nvl-slice=sixteen: expected a slice size in nodes' -N 32 --nvl-slice=sixteen
refuse "not a multiple" 'nvlslice: --nvl-slice=16: -N 20 is not a multiple of the slice size \(use -N 16 or -N 32' -N 20 --nvl-slice=16
refuse "slice larger than a rack" 'nvlslice: --nvl-slice=17: larger than any rack can hold \(16' -N 17 --nvl-slice=17
refuse "no node count" 'nvlslice: --nvl-slice needs a node count: add -N/--nodes' --nvl-slice=16
refuse "node range" 'nvlslice: --nvl-slice needs a fixed node count, not the range -N 16-32' -N 16-32 --nvl-slice=16
refuse "checkpointable without requeue" 'nvlslice: --nvl-checkpointable needs --requeue' -N 16 --nvl-slice=16 --nvl-checkpointable
refuse "bad placement" 'nvlslice: --nvl-placement=loose: expected "strict"' -N 16 --nvl-slice=16 --nvl-placement=loose
refuse "placement without slice" 'nvlslice: --nvl-placement and --nvl-checkpointable need --nvl-slice' -N 16 --nvl-placement=prefer
err=$(salloc -N 16 --nvl-slice=16 --nvl-checkpointable true 2>&1); rc=$?
expect_match "salloc: checkpointable is for batch jobs" 'nvl-checkpointable is for batch jobs' "rc=$rc $err"
err=$(srun -N 20 --nvl-slice=16 true 2>&1); rc=$?
expect_match "srun: not a multiple refused" 'rc=[1-9].*-N 20 is not a multiple' "rc=$rc $err"
expect_eq "no job was created by refused submissions" "$before" "$(job_count)"

echo "# plugin: a slice job is submitted tagged and behind the gate"
J=$(sbatch --parsable -N 32 --nvl-slice=16 --comment "run 7" -o "$OUT/slice-%j.out" \
    --wrap 'srun -l bash -c "echo \$SLURMD_NODENAME \$NVL_SLICE_INDEX \$NVL_SLICE_COUNT \$NVL_SLICE_SIZE \$NVL_SLICE_RANK \$NVL_DOMAIN \$NVL_SLICE_NODELIST \$NVL_SLICE_LEADER"')
expect_eq "gated: pending with the gate license" "PENDING nvlslice_gate:1" "$(job_field "$J" JobState) $(job_field "$J" Licenses)"
check "not held: Slurm computes its priority ($(job_field "$J" Priority))" [ "$(job_field "$J" Priority)" -gt 0 ]
expect_eq "whole nodes (--exclusive): no other job shares a slice's nodes" "NO" "$(job_field "$J" OverSubscribe)"
expect_eq "tagged, user comment kept" "nvlslice/1 nodes=32 slice=16 count=2 auto=0 placement=strict checkpointable=0 handoff=gate | run 7" \
    "$(job_comment "$J")"
sleep 1
wait_for 10 bash -c "[ \"\$(squeue -h -j $J -o %r)\" = Licenses ]"
expect_eq "stays pending on the gate (Slurm does not start it)" "PENDING Licenses" "$(job_field "$J" JobState) $(job_field "$J" Reason)"
expect_match "sprio lists it" "^ *$J " "$(sprio -h 2>/dev/null)"
H=$(sbatch --parsable --hold -N 16 --nvl-slice=16 --wrap 'true')
expect_eq "a user's --hold is kept (held and gated)" "PENDING JobHeldUser nvlslice_gate:1" "$(job_field "$H" JobState) $(job_field "$H" Reason) $(job_field "$H" Licenses)"
scancel "$H"
L=$(sbatch --parsable -L lic_a:1 -N 16 --nvl-slice=16 --wrap 'true' 2>&1)
expect_match "the user's own licenses are kept beside the gate" 'lic_a:1,nvlslice_gate:1' "$(job_field "$L" Licenses)"
scancel "$L" 2>/dev/null

echo "# plugin: pinned 2 x 16 by hand, every task sees its slice"
scontrol update jobid="$J" ReqNodeList='nvl[0001-0016,0019-0034]' StartTime=now Licenses=
wait_done "$J" 30
expect_eq "pinned job completed" "COMPLETED" "$(job_field "$J" JobState)"
lines=$(sed 's/^ *[0-9]*: //' "$OUT/slice-$J.out" | sort)
expected=$(for i in $(seq 1 16); do n=$(printf nvl%04d "$i"); echo "$n 0 2 16 $((i - 1)) rack001 nvl[0001-0016] nvl0001"; done
           for i in $(seq 19 34); do n=$(printf nvl%04d "$i"); echo "$n 1 2 16 $((i - 19)) rack002 nvl[0019-0034] nvl0019"; done)
expected=$(echo "$expected" | sort)
expect_eq "32 tasks, each with the right NVL_* values" "$expected" "$lines"
expect_eq "the inner srun did not re-tag the job" "nvlslice/1 nodes=32 slice=16 count=2 auto=0 placement=strict checkpointable=0 handoff=gate | run 7" \
    "$(job_comment "$J")"

echo "# plugin: auto sizing, 24 nodes -> 2 x 12"
J=$(sbatch --parsable -N 24 --nvl-slice=auto -o "$OUT/auto-%j.out" --wrap 'srun bash -c "echo \$NVL_SLICE_INDEX/\$NVL_SLICE_SIZE/\$NVL_DOMAIN"')
expect_match "auto tag" 'nodes=24 slice=12 count=2 auto=1' "$(job_comment "$J")"
scontrol update jobid="$J" ReqNodeList='nvl[0003-0014,0021-0032]' StartTime=now Licenses=
wait_done "$J" 30
expect_eq "auto: 12 tasks per slice, one slice per rack" "12 0/12/rack001
     12 1/12/rack002" "$(sort "$OUT/auto-$J.out" | uniq -c | sed 's/^ *//' | sed '2s/^/     /')"

echo "# plugin: jobs without the options are untouched"
J=$(sbatch --parsable -N 2 -o "$OUT/plain-%j.out" --wrap 'srun bash -c "echo x\${NVL_SLICE_INDEX:-none}"')
wait_done "$J" 30
expect_eq "plain job ran without hold" "COMPLETED" "$(job_field "$J" JobState)"
expect_eq "plain job has no NVL_* variables" "xnone xnone" "$(sort "$OUT/plain-$J.out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "plain job has no tag" "" "$(job_comment "$J")"

echo "# plugin: srun creating an allocation is gated and tagged too"
srun -N 16 --nvl-slice=16 -o "$OUT/srun-%t.out" bash -c 'echo $NVL_SLICE_RANK' > "$OUT/srun.log" 2>&1 &
SRUN=$!
for _ in $(seq 1 50); do J=$(squeue -h -o %i -n bash | head -1); [ -n "$J" ] && break; sleep 0.1; done
expect_eq "srun's job is gated" "PENDING nvlslice_gate:1" "$(job_field "$J" JobState) $(job_field "$J" Licenses)"
expect_match "srun's job is tagged" '^nvlslice/1 nodes=16 slice=16 count=1' "$(job_comment "$J")"
scontrol update jobid="$J" ReqNodeList='nvl[0019-0034]' StartTime=now Licenses=
wait "$SRUN"; rc=$?
expect_eq "srun ran once the gate came off" "0" "$rc"
expect_eq "srun tasks got ranks 0..15" "$(seq 0 15 | tr '\n' ' ')" "$(cat "$OUT"/srun-*.out | sort -n | tr '\n' ' ')"

echo "# plugin: salloc is gated and tagged, and a cancelled gated job leaves nothing behind"
salloc -N 16 --nvl-slice=16 --no-shell -J nvl-salloc > "$OUT/salloc.log" 2>&1 &
SALLOC=$!
for _ in $(seq 1 50); do J=$(squeue -h -o %i -n nvl-salloc | head -1); [ -n "$J" ] && break; sleep 0.1; done
expect_eq "salloc's job is gated" "PENDING nvlslice_gate:1" "$(job_field "$J" JobState) $(job_field "$J" Licenses)"
expect_match "salloc's job is tagged" '^nvlslice/1 nodes=16 slice=16 count=1' "$(job_comment "$J")"
scancel "$J"
wait "$SALLOC" 2>/dev/null
expect_eq "no job left in the queue" "" "$(squeue -h -o %i -n nvl-salloc)"

echo "# plugin: node-side GPU check (check_gpus=fail; nvl0036 has 3 GPUs in its hwloc fixture)"
J=$(sbatch --parsable -N 16 --nvl-slice=16 -o "$OUT/gpu-%j.out" --wrap 'srun hostname')
scontrol update jobid="$J" ReqNodeList='nvl[0021-0036]' StartTime=now Licenses=
wait_done "$J" 30
st=$(job_field "$J" JobState)
expect_eq "a step on the node with a missing GPU fails the job" "FAILED" "$st"
expect_match "the user is told which node, what and the fix" 'nvlslice: node nvl0036 has 3 NVIDIA GPU\(s\), the rack map says 4: a GPU is missing or failed \(check nvidia-smi' "$(cat "$OUT"/gpu-"$J".out)"
J=$(sbatch --parsable -N 16 --nvl-slice=16 -o "$OUT/gpu2-%j.out" --wrap 'srun hostname')
scontrol update jobid="$J" ReqNodeList='nvl[0001-0016]' StartTime=now Licenses=
wait_done "$J" 30
expect_eq "nodes with all 4 GPUs pass the check" "COMPLETED" "$(job_field "$J" JobState)"

rm -rf "$OUT"
summary "plugin"
