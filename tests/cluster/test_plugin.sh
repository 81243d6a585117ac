#!/bin/bash
# Cluster tests of the SPANK plugin on the real test cluster (see run.sh).
# Expects SLURM_CONF and NVL_CLUSTER_DIR of a cluster started with the plugin,
# check_gpus=fail and per-node hwloc fixtures (nvl0036 has 3 GPUs), and
# check_fabric=fail fabric_drain=yes over DIR/fabric.txt, the recorded
# fabric report the rack map was discovered from.
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
    # (Slurm wraps a long option's help onto the next line)
    expect_match "$cmd --help lists --nvl-checkpoint-every" '--nvl-checkpoint-every=TIME( +\[nvlslice\])?$' "$h"
done

echo "# plugin: bad values are refused before submission, no job created"
before=$(job_count)
refuse "non-numeric slice" 'nvlslice: --nvl-slice=sixteen: expected a slice size in nodes' -N 32 --nvl-slice=sixteen
# a value with a newline and a backslash stays on the plugin's one line
err=$(sbatch -N 32 --nvl-slice=$'x\\y\nnvlslice: forged' --wrap true 2>&1)
expect_match "an option value is escaped in the plugin's message (newline, backslash)" \
    'nvlslice: --nvl-slice=x\\\\y\\nnvlslice: forged: expected a slice size' "$err"
# (Slurm's own message may echo the raw value: the plugin's line is the one tested)
expect_eq "no line of the plugin's own from it" "0" "$(grep -c '^nvlslice: forged: expected' <<< "$err")"
refuse "not a multiple" 'nvlslice: --nvl-slice=16: -N 20 is not a multiple of the slice size \(use -N 16 or -N 32' -N 20 --nvl-slice=16
refuse "slice larger than a rack" 'nvlslice: --nvl-slice=17: larger than any rack can hold \(16' -N 17 --nvl-slice=17
refuse "no node count" 'nvlslice: --nvl-slice needs a node count: add -N/--nodes' --nvl-slice=16
refuse "node range" 'nvlslice: --nvl-slice needs a fixed node count, not the range -N 16-32' -N 16-32 --nvl-slice=16
refuse "checkpointable without requeue" 'nvlslice: --nvl-checkpointable needs --requeue' -N 16 --nvl-slice=16 --nvl-checkpointable
refuse "bad placement" 'nvlslice: --nvl-placement=loose: expected "strict"' -N 16 --nvl-slice=16 --nvl-placement=loose
refuse "placement without slice" 'nvlslice: --nvl-placement, --nvl-checkpointable and --nvl-checkpoint-every need --nvl-slice' -N 16 --nvl-placement=prefer
refuse "a checkpoint interval without checkpointable" 'nvlslice: --nvl-checkpoint-every says how often a checkpointable job checkpoints: add --nvl-checkpointable' \
    -N 16 --nvl-slice=16 --requeue --nvl-checkpoint-every=60
refuse "a bad checkpoint interval" 'nvlslice: --nvl-checkpoint-every=2h: expected how often the job checkpoints, as --time takes it: minutes, minutes:seconds, hours:minutes:seconds' \
    -N 16 --nvl-slice=16 --requeue --nvl-checkpointable --nvl-checkpoint-every=2h
err=$(salloc -N 16 --nvl-slice=16 --nvl-checkpointable true 2>&1); rc=$?
expect_match "salloc: checkpointable is for batch jobs" 'nvl-checkpointable is for batch jobs' "rc=$rc $err"
err=$(srun -N 20 --nvl-slice=16 true 2>&1); rc=$?
expect_match "srun: not a multiple refused" 'rc=[1-9].*-N 20 is not a multiple' "rc=$rc $err"
long=$(printf 'c%.0s' $(seq 1 1000))
refuse "a comment too long for Slurm with the tag names --comment" 'nvlslice: --comment: with the slice tag .* more than Slurm.s limit of 1024; shorten --comment to at most [0-9]+ characters' \
    -N 16 --nvl-slice=16 --comment "$long"
expect_eq "no job was created by refused submissions" "$before" "$(job_count)"
H=$(sbatch --parsable -H -N 2 --nvl-slice=2 --requeue --nvl-checkpointable --nvl-checkpoint-every=1:30:00 --wrap true)
expect_match "the checkpoint interval is in the tag, in seconds" '^nvlslice/1 nodes=2 slice=2 count=1 auto=0 placement=strict checkpointable=1 ckpt_every=5400 handoff=(gate|native)$' \
    "$(job_comment "$H")"
scancel "$H"
wait_for 10 bash -c "[ -z \"\$(squeue -h -j $H 2>/dev/null)\" ]"
before=$(job_count)

echo "# plugin: the gate is open (no reservation holds its license): slice jobs are refused, not started rack-blind"
scontrol delete ReservationName=nvlslice_gate
refuse "a slice job is refused while the gate is open" 'nvlslice: the gate is open: no reservation holds the license nvlslice_gate \(0 of 1 reserved\)' \
    -N 32 --nvl-slice=16
expect_eq "no slice job was created" "$before" "$(job_count)"
P=$(sbatch --parsable -N 1 --wrap true)
check "a plain job is submitted as ever" [ -n "$P" ]
scancel "$P" 2>/dev/null
scontrol create reservation ReservationName=nvlslice_gate Users=root Licenses=nvlslice_gate:1 \
    Flags=LICENSE_ONLY StartTime=now EndTime=2099-12-31T00:00:00 >/dev/null

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

echo "# plugin: node-side NVLink fabric check (check_fabric=fail fabric_drain=yes, recorded fabric report)"
FAB=$NVL_CLUSTER_DIR/fabric.txt
U1=5d0e7c2a-8b41-4f63-a9d2-1c7b3e90f4a1 U2=b3a94f10-6e2d-4c87-8f15-9a0c2d7e6b34
check "the rack map was discovered from the fabric: rack002 carries its NVLink domain" \
    grep -qzP "name: rack002\n    nodes: nvl\\[0019-0036\\]\n    fabric: $U2\.32766" "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml"
cp "$FAB" "$OUT/fabric.good"
node_reason() { scontrol show node "$1" | sed -n 's/^ *Reason=\(.*\) \[.*/\1/p'; }
run_on_rack002() { # run_on_rack002 NAME: a 16-node job on nvl[0019-0034], to its end
    local j
    j=$(sbatch --parsable -N 16 "$@" --wrap 'srun hostname')
    scontrol update jobid="$j" ReqNodeList='nvl[0019-0034]' StartTime=now Licenses= 2>/dev/null
    wait_done "$j" 60
    echo "$j"
}
# nvl0020's GPU 3 reports a degraded NVLink bandwidth.
sed -i "/^nvl0020 /s/Healthy\$/Degraded Bandwidth/" "$FAB"
J=$(run_on_rack002 -o "$OUT/plain-fab-%j.out")
expect_eq "plain Slurm: a job without --nvl-slice runs on the node all the same" "COMPLETED" "$(job_field "$J" JobState)"
t0=$(now)
J=$(run_on_rack002 --nvl-slice=16 -o "$OUT/fab-%j.out")
expect_eq "a degraded fabric fails the slice job's step" "FAILED" "$(job_field "$J" JobState)"
echo "# fabric check: degraded node -> job FAILED in $(secs "$t0" "$(now)") s"
expect_match "the user is told the node, the GPU and the reason" \
    'nvlslice: NVLink fabric check: node nvl0020 GPU 3: fabric health Degraded Bandwidth \(expected Healthy\)' \
    "$(cat "$OUT"/fab-"$J".out)"
wait_for 10 bash -c '[ -n "$(scontrol show node nvl0020 | grep -o "Reason=nvlslice fabric check")" ]'
expect_match "fabric_drain=yes drained the node with the reason (the helper's repair matches it)" \
    '^nvlslice fabric check: node nvl0020 GPU 3: fabric health Degraded Bandwidth' "$(node_reason nvl0020)"
expect_match "nvl0020 is draining or drained" 'DRAIN' "$(scontrol show node nvl0020 | sed -n 's/^ *State=\([^ ]*\).*/\1/p')"
check "the other nodes of the job are not drained" bash -c '[ -z "$(sinfo -h -N -n nvl[0019,0021-0034] -t drain,drained,draining -o %N)" ]'
cp "$OUT/fabric.good" "$FAB"
scontrol update nodename=nvl0020 state=resume
# nvl0021 reports rack001's NVLink domain; nvl0022's GPU 0 is still joining.
sed -i -e "/^nvl0021 /s/$U2/$U1/g" -e "/^nvl0022 /s/Completed, Success, Healthy/In Progress, N\/A, N\/A/" "$FAB"
J=$(run_on_rack002 --nvl-slice=16 -o "$OUT/fab2-%j.out")
expect_eq "a node in another clique than the map's fails the step" "FAILED" "$(job_field "$J" JobState)"
expect_match "the wrong clique is named, with the rack the map expects" \
    "nvlslice: NVLink fabric check: node nvl0021 GPU 0: in NVLink domain $U1\.32766, but the rack map puts nvl0021 in rack002 \(domain $U2\.32766\)" \
    "$(cat "$OUT"/fab2-"$J".out)"
expect_match "a GPU still joining its domain is named" \
    'nvlslice: NVLink fabric check: node nvl0022 GPU 0: fabric state In Progress \(expected Completed' "$(cat "$OUT"/fab2-"$J".out)"
wait_for 10 bash -c '[ "$(sinfo -h -N -n nvl[0021-0022] -t drain,drained,draining -o %N | sort -u | wc -l)" = 2 ]'
expect_match "both nodes are drained, each with its reason" \
    'nvl0021: nvlslice fabric check: node nvl0021 GPU 0: in NVLink domain.*nvl0022: nvlslice fabric check: node nvl0022 GPU 0: fabric state In Progress' \
    "nvl0021: $(node_reason nvl0021) nvl0022: $(node_reason nvl0022)"
cp "$OUT/fabric.good" "$FAB"
scontrol update nodename=nvl[0021-0022] state=resume
J=$(run_on_rack002 --nvl-slice=16 -o "$OUT/fab3-%j.out")
expect_eq "with the fabric healthy again the same slice job completes" "COMPLETED" "$(job_field "$J" JobState)"
# A node the map does not know: its step fails, but no GPU said anything
# against the node, so it is not drained (before: drained as a fabric failure).
sed 's/nvl\[0019-0036\]/nvl[0019-0033,0035-0036]/' "$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml" > "$OUT/short-map.yaml"
cp "$NVL_CLUSTER_DIR/etc/plugstack.conf" "$OUT/plugstack.good"
sed -i "s| map=[^ ]*| map=$OUT/short-map.yaml|" "$NVL_CLUSTER_DIR/etc/plugstack.conf"
J=$(run_on_rack002 -N 16 --nvl-slice=1 -o "$OUT/fab4-%j.out")
cp "$OUT/plugstack.good" "$NVL_CLUSTER_DIR/etc/plugstack.conf"
expect_eq "a node missing from the map fails the slice job's step" "FAILED" "$(job_field "$J" JobState)"
expect_match "naming the node" 'nvl0034.* not in the rack map' "$(cat "$OUT"/fab4-"$J".out)"
check "and it is not drained: no GPU read said anything against it" \
    bash -c '[ -z "$(sinfo -h -N -n nvl[0019-0034] -t drain,drained,draining -o %N)" ]'
scontrol update nodename=nvl0034 state=resume 2>/dev/null

echo "# plugin: its own plugstack.conf line broken on the node: the job fails, the node stays in service (Slurm 25.05+)"
cleanup
F=$(sbatch --parsable --hold -w nvl0010 -J spankfail -o /dev/null --wrap true)
cp "$NVL_CLUSTER_DIR/etc/plugstack.conf" "$OUT/plugstack.good"
sed -i 's|$| bogus=1|' "$NVL_CLUSTER_DIR/etc/plugstack.conf" # slurmstepd reads it at the job's start
scontrol release "$F"
# ended, or sent back by Slurm (requeued after a launch failure)
ended_or_bounced() {
    case "$(job_field "$F" JobState)" in FAILED|COMPLETED|CANCELLED|NODE_FAIL|BOOT_FAIL) return 0 ;; esac
    [ "$(job_field "$F" Restarts)" -gt 0 ] 2>/dev/null
}
wait_for 30 ended_or_bounced
cp "$OUT/plugstack.good" "$NVL_CLUSTER_DIR/etc/plugstack.conf"
# a drain would follow the job's end within a second or two
sleep_until() { wait_for "$@" || true; }
sleep_until 3 bash -c "sinfo -h -N -n nvl0010 -o %T | grep -qi drain"
node_state=$(sinfo -h -N -n nvl0010 -o '%T %E' | head -1)
# the plugin exports it where its Slurm has it (no nm needed)
if grep -q slurm_spank_init_failure_mode "$NVL_PLUGIN"; then
    expect_eq "the job failed" "FAILED" "$(job_field "$F" JobState)"
    not_drained() { [[ ${node_state,,} != *drain* ]]; }
    check "the node was not drained ($node_state)" not_drained
    expect_match "slurmd's log names the argument" 'nvlslice: plugstack.conf: unknown argument "bogus"' \
        "$(cat "$NVL_CLUSTER_DIR"/log/slurmd-nvl0010.log)"
else
    # Slurm before 25.05 has no failure mode to choose: its own handling
    echo "# this Slurm reads no slurm_spank_init_failure_mode: job $(job_field "$F" JobState), node $node_state"
fi
scancel "$F" 2>/dev/null
scontrol update nodename=nvl0010 state=resume 2>/dev/null

rm -rf "$OUT"
summary "plugin"
