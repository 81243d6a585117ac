#!/bin/bash
# Slurm upgraded under nvlslice, from the 24.11 root to the 26.05 root
# (test_upgrade.sh says what each phase does and checks):
#   tests/cluster/upgrade.sh
# Both roots must have their build (the test command makes them, or
# NVL_SLURM=24.11 and 26.05 with NVL_ROOT_STEP=build tests/cluster/run.sh).
# slurmctld's saved state is carried from the one root's cluster directory
# to the other's, as the same StateSaveLocation is after a package upgrade.
# The older root's slurmds, their running steps, munged and the nodes'
# network namespaces outlive its phase: the newer root's cluster takes them
# over (cluster.sh's NVL_ADOPT), one slurmd after the other as a rolling
# upgrade of slurmd does, over the same slurmd spool (bound into the newer
# root), with munged's key carried too, so that the older steps' messages
# reach the newer daemons. What is left of the older root's processes is
# stopped on exit.
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
nets="" # the older slurmds' network namespaces (net:[inode])
leftovers() { # what the older root left running: its munged, slurmds and steps
    local p n
    [ -f "$old$d/run/munged.pid" ] && kill "$(cat "$old$d/run/munged.pid")" 2>/dev/null
    [ -n "$nets" ] || return 0
    for p in /proc/[0-9]*; do
        n=$(readlink "$p/ns/net" 2>/dev/null) || continue
        case " $nets " in *" $n "*) kill -9 "${p#/proc/}" 2>/dev/null ;; esac
    done
    return 0
}
trap 'leftovers; rm -rf "$log"' EXIT
echo "# upgrade: the cluster on Slurm 24.11 (the older root)"
NVL_SLURM=24.11 NVL_ROOT_STEP=test NVL_UPGRADE=before "$HERE/run.sh" 2>&1 | tee "$log/before"
count "$log/before"
adopt=""
for f in "$old$d"/run/slurmd-*.pid; do
    case $f in *.wrapper.pid) continue ;; esac # slurmd's own pid files only
    [ -f "$f" ] || continue
    pid=$(cat "$f"); name=$(basename "$f" .pid); name=${name#slurmd-}
    kill -0 "$pid" 2>/dev/null || continue
    adopt+=" $name:$pid"
    nets+=" $(readlink "/proc/$pid/ns/net")"
done
adopt=${adopt# }
if [ -f "$old$d/state/nvlslice-upgrade.env" ] && [ -n "$adopt" ]; then
    echo "# upgrade: slurmctld's state carried to the 26.05 root ($(ls "$old$d/state" | wc -l) files), munged's key too"
    rm -rf "${new:?}$d/state" && mkdir -p "$new$d/munge" "$new$d/spool" && cp -a "$old$d/state" "$new$d/state"
    chmod 700 "$new$d/munge" && cp -a "$old$d/munge/munge.key" "$new$d/munge/munge.key"
    echo "# upgrade: the same cluster on Slurm 26.05 (the newer root), on that state; its slurmds replace the $(wc -w <<< "$adopt") running 24.11 slurmds one by one"
    NVL_SLURM=26.05 NVL_ROOT_STEP=test NVL_UPGRADE=after NVL_KEEP_STATE=1 NVL_ADOPT="$adopt" \
        NVL_ROOT_BINDS="$old$d/spool:$d/spool" "$HERE/run.sh" 2>&1 | tee "$log/after"
    count "$log/after"
elif [ -f "$old$d/state/nvlslice-upgrade.env" ]; then
    echo "not ok - no slurmd of the 24.11 cluster is left running to upgrade"
    fail=$((fail + 1))
else
    echo "not ok - the before phase left no state to carry"
    fail=$((fail + 1))
fi
echo "upgrade: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
