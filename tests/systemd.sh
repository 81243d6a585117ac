#!/bin/bash
# The installed packages under a real systemd: the Debian 12 root of the
# packages' tier (the debs installed with apt; run.sh with
# NVL_SLURM=installed made it) boots systemd with systemd-nspawn, sharing
# this host's network, and its nvlsliced unit, with the shipped conffile,
# drives a test cluster (Slurm 22.05) started here:
#   systemctl start -> active and placing; reload with a good and a bad
#   file; kill -9 and a death by SIGPIPE -> restarted by systemd;
#   slurmctld away for a minute -> the helper waits and goes on without a
#   restart; systemctl stop -> clean.
#   tests/systemd.sh BUILD_DIR
# BUILD_DIR gives the plugin the host's sbatch loads. Must run as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:?usage: tests/systemd.sh BUILD_DIR}" && pwd)
ROOT=${NVL_SYSTEMD_ROOT:-/var/cache/nvlslice/debian12-root}
# Outside /tmp: the unit has PrivateTmp=true, and the helper must reach the
# cluster's munge socket.
export NVL_CLUSTER_DIR=/srv/nvlslice-systemd
export SLURM_CONF=$NVL_CLUSTER_DIR/etc/slurm.conf
export BUILD_DIR=$B
. "$HERE/cluster/lib.sh"

die() { echo "systemd: $*" >&2; echo "systemd: $PASS passed, $((FAIL + 1)) failed"; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root"
[ -x "$ROOT/usr/sbin/nvlsliced" ] || die "$ROOT has no nvlsliced: run NVL_SLURM=installed tests/cluster/run.sh first"
if [ ! -x "$ROOT/lib/systemd/systemd" ]; then
    chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q systemd systemd-sysv dbus >/dev/null 2>&1 ||
        die "cannot install systemd in $ROOT"
fi
if ! command -v systemd-nspawn >/dev/null; then
    apt-get install -y -qq systemd-container >/dev/null 2>&1 || die "cannot install systemd-container"
fi

# The test cluster, with the build tree's plugin for the host's clients.
export NVL_PLUGIN=$B/plugins/spank/.libs/spank_nvlslice.so NVL_PLUGIN_ARGS="check_gpus=off mode=gate"
"$HERE/cluster/cluster.sh" up >/dev/null || die "the test cluster did not start"
MAPF=$NVL_CLUSTER_DIR/etc/nvlslice-map.yaml
scontrol delete ReservationName=nvlslice_gate 2>/dev/null

# The root's Slurm client configuration: the cluster's; the map the shipped
# conffile names: the cluster's. The conffile itself stays as shipped.
mkdir -p "$ROOT/etc/slurm"
cp "$SLURM_CONF" "$ROOT/etc/slurm/slurm.conf"
cp "$MAPF" "$ROOT/etc/slurm/nvlslice-map.yaml"
# The root runs no Slurm or munge daemon of its own (the cluster's are
# used), and nvlsliced is started by the test, not at boot.
for u in slurmctld slurmd munge; do ln -sf /dev/null "$ROOT/etc/systemd/system/$u.service"; done
rm -f "$ROOT/etc/systemd/system/multi-user.target.wants/nvlsliced.service"
CONFFILE=$ROOT/etc/slurm/nvlslice.yaml
cp "$CONFFILE" "$NVL_CLUSTER_DIR/conffile.orig"

nspawn_log=$NVL_CLUSTER_DIR/log/nspawn.log
systemd-nspawn -D "$ROOT" --boot --keep-unit --register=no --console=pipe --machine=nvlsd \
    --bind="$NVL_CLUSTER_DIR" >"$nspawn_log" 2>&1 &
NSPAWN=$!
CPID=""
shutdown() {
    [ -n "$CPID" ] && nsenter -t "$CPID" -a systemctl poweroff >/dev/null 2>&1
    for _ in $(seq 1 100); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.1; done
    kill "$NSPAWN" 2>/dev/null
    wait "$NSPAWN" 2>/dev/null
    cp "$NVL_CLUSTER_DIR/conffile.orig" "$CONFFILE" 2>/dev/null
    rm -f "$ROOT"/etc/systemd/system/{slurmctld,slurmd,munge}.service
    "$HERE/cluster/cluster.sh" down >/dev/null 2>&1
}
trap shutdown EXIT
in_c() { nsenter -t "$CPID" -a "$@"; }
booted() {
    CPID=$(ps --ppid "$NSPAWN" -o pid= 2>/dev/null | head -1 | tr -d ' ')
    [ -n "$CPID" ] || return 1
    case "$(in_c systemctl is-system-running 2>/dev/null)" in running | degraded) return 0 ;; esac
    return 1
}
wait_for 60 booted || { tail -20 "$nspawn_log" >&2; die "systemd did not boot in $ROOT"; }
echo "# systemd $(in_c systemctl --version | head -1 | awk '{print $2}') booted in the packages' root"

prop() { in_c systemctl show -p "$1" --value nvlsliced; }
# this boot only: the root keeps the journals of earlier runs
journal() { in_c journalctl -b -u nvlsliced --no-pager -o cat 2>/dev/null; }
main_pid() { prop MainPID; }
# wait until the unit is active with a MainPID other than $1
restarted_from() {
    local p
    [ "$(in_c systemctl is-active nvlsliced)" = active ] || return 1
    p=$(main_pid)
    [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$1" ]
}

echo "# systemd: start with the shipped configuration"
in_c systemctl start nvlsliced
wait_for 20 bash -c "nsenter -t $CPID -a journalctl -b -u nvlsliced --no-pager -o cat | grep -q 'nvlsliced: started\|started: map'"
expect_eq "systemctl start: active" "active" "$(in_c systemctl is-active nvlsliced)"
expect_match "it chose gate mode from the running Slurm 22.05" 'started: map /etc/slurm/nvlslice-map.yaml .*mode gate' "$(journal)"
wait_for 15 bash -c "scontrol show reservation nvlslice_gate >/dev/null 2>&1"
check "it made the gate reservation" scontrol show reservation nvlslice_gate
J=$(sbatch --parsable -N 16 --nvl-slice=16 --wrap 'sleep 600')
if wait_for 30 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]"; then ok "placing: a slice job runs"; else not_ok "placing: $(squeue -h -j "$J" -o '%T %r') $(record "$J")"; fi
expect_match "placed in one rack by the unit's helper" '^nvlslice/1 placed slice=16 slices=nvl\[00(0[1-9]|1[0-8])' "$(record "$J")"

echo "# systemd: reload, with a good and a bad configuration"
pid=$(main_pid)
sed -i 's/^cycle_ms:.*/cycle_ms: 800/' "$CONFFILE"
grep -q '^cycle_ms:' "$CONFFILE" || echo "cycle_ms: 800" >> "$CONFFILE"
in_c systemctl reload nvlsliced
wait_for 10 bash -c "nsenter -t $CPID -a journalctl -b -u nvlsliced --no-pager -o cat | grep -q 'reloaded /etc/slurm/nvlslice.yaml: .*cycle 800 ms'"
expect_match "a good file: reloaded, same process" "reloaded /etc/slurm/nvlslice.yaml: .*cycle 800 ms .*pid=$pid\$" "$(journal | tail -20 | tr '\n' ' ') pid=$(main_pid)"
echo "no_such_key: 1" >> "$CONFFILE"
out=$(in_c systemctl reload nvlsliced 2>&1); rc=$?
expect_match "a bad file: the reload fails, naming the key" "rc=[1-9]" "rc=$rc"
expect_match "the check said why" 'no_such_key' "$(in_c journalctl -b --no-pager -o cat -n 30 2>/dev/null)"
expect_eq "and the running helper goes on, same process" "active $pid" "$(in_c systemctl is-active nvlsliced) $(main_pid)"
cp "$NVL_CLUSTER_DIR/conffile.orig" "$CONFFILE"

echo "# systemd: deaths are restarted"
pid=$(main_pid)
in_c kill -9 "$pid" # the container's own PID
if wait_for 20 restarted_from "$pid"; then ok "kill -9: restarted by systemd"; else not_ok "kill -9: $(in_c systemctl status nvlsliced --no-pager 2>&1 | head -5)"; fi
# SIGPIPE no longer kills it (ignored for the process); a death systemd
# counts as clean (SIGPIPE by its default SuccessExitStatus, or exit 0 on
# a SIGTERM that did not come from systemctl) is restarted all the same:
# Restart=always, where on-failure left the cluster without a helper
pid=$(main_pid)
in_c kill -PIPE "$pid"
wait_for 3 bash -c "[ \"\$(nsenter -t $CPID -a systemctl show -p MainPID --value nvlsliced)\" != $pid ]"
expect_eq "SIGPIPE: ignored, same process, still active" "active $pid" "$(in_c systemctl is-active nvlsliced) $(main_pid)"
expect_eq "the unit restarts whatever the exit status" "always" "$(prop Restart)"
in_c kill -TERM "$pid"
if wait_for 20 restarted_from "$pid"; then ok "a clean exit not asked for by systemctl: restarted"; else not_ok "clean exit: $(in_c systemctl status nvlsliced --no-pager 2>&1 | head -5)"; fi
wait_for 10 bash -c "nsenter -t $CPID -a journalctl -b -u nvlsliced --no-pager -o cat | tail -5 | grep -q 'started: map'"
# a reset metrics client (before the fix: SIGPIPE, and no restart)
pid=$(main_pid)
perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die; connect($s, sockaddr_in(9817, inet_aton("127.0.0.1"))) or die;
    setsockopt($s, SOL_SOCKET, SO_LINGER, pack("ii", 1, 0)); close($s)' 2>/dev/null
m=$(exec 3<>/dev/tcp/127.0.0.1/9817; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3)
expect_match "a reset metrics client: same process, still serving" "pid=$pid .*nvlslice_cycle_seconds_count" "pid=$(main_pid) $(tr '\n' ' ' <<< "$m")"

echo "# systemd: slurmctld away for a minute"
pid=$(main_pid)
restarts=$(prop NRestarts)
"$HERE/cluster/cluster.sh" stop-ctld
wait_for 20 bash -c "! scontrol ping 2>&1 | grep -q 'is UP'"
sleep 60 # the outage itself: a minute, as an admin's maintenance would take
"$HERE/cluster/cluster.sh" start-ctld >/dev/null || not_ok "slurmctld came back"
wait_for 60 bash -c "nsenter -t $CPID -a journalctl -b -u nvlsliced --no-pager -o cat | grep -q 'slurmctld answers again'"
expect_eq "the helper waited: same process, no restart" "active $pid $restarts" \
    "$(in_c systemctl is-active nvlsliced) $(main_pid) $(prop NRestarts)"
expect_match "said once when slurmctld went, once when it came back" \
    "^1 1$" "$(journal | grep -c 'slurmctld does not answer') $(journal | grep -c 'slurmctld answers again')"
expect_eq "the slice job still runs" "RUNNING" "$(squeue -h -j "$J" -o %T)"

echo "# systemd: stop"
in_c systemctl stop nvlsliced
expect_eq "systemctl stop: inactive, result success" "inactive success" "$(in_c systemctl is-active nvlsliced) $(prop Result)"
expect_match "it said it stopped" 'stopped$' "$(journal | tail -3)"
scancel "$J" 2>/dev/null
summary "systemd"
