#!/bin/bash
# Slurm upgraded under nvlslice, from the 24.11 root to the 26.05 root
# (test_upgrade.sh says what each phase does and checks):
#   tests/cluster/upgrade.sh
# Both roots must have their build (the test command makes them, or
# NVL_SLURM=24.11 and 26.05 with NVL_ROOT_STEP=build tests/cluster/run.sh).
# slurmctld's saved state is carried from the one root's cluster directory
# to the other's, as the same StateSaveLocation is after a package upgrade.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOTSH=$HERE/debian13-root.sh
old=$("$ROOTSH" path) || exit 1
new=$(NVL_ROOT_SUITE=sid NVL_DEBIAN13_ROOT=${NVL_SID_ROOT:-/var/cache/nvlslice/sid-root} "$ROOTSH" path) || exit 1
d=/tmp/nvlslice-cluster
pass=0 fail=0
count() { # the phase's log: its summary line
    local line
    line=$(grep -E '^cluster: [0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
    [ -n "$line" ] || { fail=$((fail + 1)); return; }
    pass=$((pass + $(sed -E 's/cluster: ([0-9]+) passed.*/\1/' <<< "$line")))
    fail=$((fail + $(sed -E 's/.* ([0-9]+) failed/\1/' <<< "$line")))
}
log=$(mktemp -d)
echo "# upgrade: the cluster on Slurm 24.11 (the older root)"
NVL_SLURM=24.11 NVL_ROOT_STEP=test NVL_UPGRADE=before "$HERE/run.sh" 2>&1 | tee "$log/before"
count "$log/before"
if [ -f "$old$d/state/nvlslice-upgrade.env" ]; then
    echo "# upgrade: slurmctld's state carried to the 26.05 root ($(ls "$old$d/state" | wc -l) files)"
    rm -rf "${new:?}$d/state" && mkdir -p "$new$d" && cp -a "$old$d/state" "$new$d/state"
    echo "# upgrade: the same cluster on Slurm 26.05 (the newer root), on that state"
    NVL_SLURM=26.05 NVL_ROOT_STEP=test NVL_UPGRADE=after NVL_KEEP_STATE=1 "$HERE/run.sh" 2>&1 | tee "$log/after"
    count "$log/after"
else
    echo "not ok - the before phase left no state to carry"
    fail=$((fail + 1))
fi
rm -rf "$log"
echo "upgrade: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
