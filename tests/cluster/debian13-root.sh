#!/bin/bash
# A cached Debian 13 (trixie) root filesystem for building nvlslice against,
# and running, Slurm 24.11. The host stays on its own Slurm; this root gives
# the newer libslurm headers, slurmctld/slurmd, Catch2 3 and fmt 10 without
# touching the host's packages.
#
#   tests/cluster/debian13-root.sh [ensure]     build the root once (a quick
#                                               no-op when it is complete)
#   tests/cluster/debian13-root.sh path         print the root's path
#   tests/cluster/debian13-root.sh shell CMD..  run CMD chrooted in the root
#                                               (an interactive bash without CMD)
#
# Settings (environment):
#   NVL_DEBIAN13_ROOT   where the root lives (/var/cache/nvlslice/debian13-root)
#   NVL_ROOT_SUITE      the Debian release (trixie); the packages' tier uses a
#                       bookworm root of its own (run.sh, NVL_SLURM=installed)
#   NVL_ROOT_PACKAGES   the packages to install in it (default: Slurm 24.11's
#                       daemons, clients, slurmdbd and MariaDB, and what
#                       building nvlslice and its Debian packages needs)
#   NVL_ROOT_CGROUP     1: `shell` also binds the host's /sys/fs/cgroup tree
#   NVL_ROOT_ARCHES     foreign architectures dpkg takes in the root (e.g.
#                       arm64, for cross builds), before the packages'
#                       install ("name:arm64" then names their builds)
#   NVL_ROOT_BINDS      "HOST_DIR:DIR ..." more directories `shell` binds
#                       into the root (an upgrade's slurmd spool, which the
#                       newer root's slurmds share with the older root's
#                       running steps: tests/cluster/upgrade.sh)
#   NVL_DEBIAN_MIRROR   Debian mirror for debootstrap (default: the host's own
#                       apt sources, so the root uses whatever mirror the host can
#                       reach)
#
# `shell` mounts /proc, /sys, /dev, /dev/pts, /dev/shm and the source tree (at
# /src, read-write) in a private mount namespace, so the host's mount table
# never sees them and they vanish even if this script is killed. The mounts last
# as long as CMD runs: start daemons in the foreground through `shell` (e.g.
# `shell slurmctld -D &`), not as self-daemonizing commands, or they outlive
# their /proc. Must run as root (debootstrap, chroot, mounts).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cluster/host_apt.sh
. "$HERE/host_apt.sh"
SRC=$(cd "$HERE/../.." && pwd)
ROOT=${NVL_DEBIAN13_ROOT:-/var/cache/nvlslice/debian13-root}
SELF=$HERE/$(basename "$0")
SUITE=${NVL_ROOT_SUITE:-trixie}
PACKAGES=(
    slurmctld slurmd slurm-client munge libslurm-dev slurmdbd mariadb-server
    g++ make autoconf automake libtool pkg-config
    libhwloc-dev libyaml-dev libfmt-dev catch2 gawk
    build-essential debhelper dpkg-dev fakeroot lintian
    iproute2 procps ca-certificates
)
if [ -n "${NVL_ROOT_PACKAGES:-}" ]; then
    read -r -a PACKAGES <<< "$NVL_ROOT_PACKAGES"
fi
# A sane PATH inside the root whatever the caller's PATH is.
ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

die() { echo "debian13-root: $*" >&2; exit 1; }
log() { echo "debian13-root: $*" >&2; }

[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot and mounts need it); rerun with sudo"
case $ROOT in
    /) die "NVL_DEBIAN13_ROOT=/ would replace the host; point it at a directory of its own" ;;
    /*) ROOT=${ROOT%/} ;;
    *) die "NVL_DEBIAN13_ROOT must be an absolute path, got '$ROOT'" ;;
esac
# The stamp is written last and lists the packages, so an interrupted or
# outdated build is detected; the base stamp lets a changed package list reuse
# the debootstrapped base instead of starting over.
STAMP=$ROOT/.nvlslice-root-complete
BASE_STAMP=$ROOT/.nvlslice-base-complete

# The Debian mirror the host itself uses: the first non-security URI of the
# deb822 sources, else the first non-security deb line of sources.list.
host_mirror() {
    local m=
    if [ -r /etc/apt/sources.list.d/debian.sources ]; then
        m=$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
            /etc/apt/sources.list.d/debian.sources)
    fi
    if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
        # Skip an optional [options] block after "deb".
        m=$(awk '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                               if ($i !~ /security/) { print $i; exit } }' /etc/apt/sources.list)
    fi
    printf '%s' "$m"
}

packages_line() { printf '%s\n' "${PACKAGES[*]}"; }

root_complete() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(packages_line)" ]; }

# Unmount what `inside` mounted, innermost first.
MOUNTED=()
unmount_all() {
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTED[i]}" 2>/dev/null || umount -l "${MOUNTED[i]}" 2>/dev/null \
            || log "could not unmount ${MOUNTED[i]} (it goes with the mount namespace)"
    done
    MOUNTED=()
}

# inside MODE CMD...: (already in a private mount namespace) mount the kernel
# filesystems, plus /src when MODE is "src", chroot and run CMD; unmount on any
# exit. The namespace would drop the mounts anyway when its last process ends;
# the trap keeps that explicit and covers a namespace kept alive by a child.
inside() {
    local mode=$1; shift
    MOUNTED=() # global: the EXIT trap reads it
    trap unmount_all EXIT
    mnt() { # mnt TARGET MOUNT-ARGS...
        local target=$1; shift
        [ -e "$target" ] || mkdir -p "$target"
        mount "$@" "$target" || die "mounting $target failed (mount $*); is this a container without CAP_SYS_ADMIN?"
        MOUNTED+=("$target")
    }
    # The root on itself: "/" inside is then a mount point, which
    # `ip netns add` needs (it makes "/" a slave mount).
    mnt "$ROOT" --bind "$ROOT"
    mnt "$ROOT/proc" -t proc proc
    mnt "$ROOT/sys" -t sysfs sysfs
    # NVL_ROOT_CGROUP=1: the host's cgroup hierarchy, which Slurm 22.05's
    # slurmd needs (the packages' tier; 24.11 runs with CgroupPlugin=disabled)
    if [ -n "${NVL_ROOT_CGROUP:-}" ] && mountpoint -q /sys/fs/cgroup; then
        mnt "$ROOT/sys/fs/cgroup" --rbind /sys/fs/cgroup
    fi
    # /dev by bind (real device nodes, the host's ptys); its sub-mounts are
    # bound on their own so that they can be unmounted one by one.
    mnt "$ROOT/dev" --bind /dev
    mnt "$ROOT/dev/pts" --bind /dev/pts
    if mountpoint -q /dev/shm; then mnt "$ROOT/dev/shm" --bind /dev/shm; fi
    if [ "$mode" = src ]; then mnt "$ROOT/src" --bind "$SRC"; fi
    local b
    for b in ${NVL_ROOT_BINDS:-}; do
        [ -d "${b%%:*}" ] || die "NVL_ROOT_BINDS: ${b%%:*} is not a directory (HOST_DIR:DIR pairs)"
        mnt "$ROOT${b#*:}" --bind "${b%%:*}"
    done
    # The host's name resolution: munge and Slurm 24.11 look up the origin of
    # every credential, and an unknown host name costs each request a failed
    # lookup.
    local f
    for f in /etc/hosts /etc/resolv.conf; do
        [ -f "$f" ] || continue
        [ -e "$ROOT$f" ] || : > "$ROOT$f"
        mnt "$ROOT$f" --bind "$f"
    done
    # CMD runs in the background so that a TERM or HUP sent to this process
    # (e.g. `kill $!` on `shell slurmd -D &`) is passed on to it at once
    # instead of waiting for it to end; the explicit <&0 keeps the terminal as
    # its input, and trap - undoes the SIGINT/SIGQUIT ignoring bash gives
    # background commands. Ctrl-C reaches CMD directly (same process group);
    # we only wait for it.
    (trap - INT QUIT; PATH=$ROOT_PATH exec chroot "$ROOT" "$@") <&0 &
    CHILD=$!
    trap 'kill -TERM "$CHILD" 2>/dev/null' TERM HUP
    trap : INT QUIT
    local rc r
    # wait returns early (status > 128) when a trapped signal arrives: wait
    # again until CMD is really gone, then report its own exit status (a
    # further wait yields it if CMD ended just after the signal, else 127).
    while :; do
        rc=0
        wait "$CHILD" || rc=$?
        kill -0 "$CHILD" 2>/dev/null || break
    done
    if [ "$rc" -gt 128 ]; then
        r=0
        wait "$CHILD" 2>/dev/null || r=$?
        [ "$r" = 127 ] || rc=$r
    fi
    exit "$rc"
}

# in_root MODE CMD...: run `inside` in a fresh private mount namespace.
in_root() {
    command -v unshare >/dev/null || die "unshare not found; install util-linux"
    unshare --mount --propagation private bash "$SELF" __inside "$@"
}

build() {
    local mirror=${NVL_DEBIAN_MIRROR:-$(host_mirror)}
    [ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list; set NVL_DEBIAN_MIRROR=<mirror URL>"

    if [ ! -f "$BASE_STAMP" ]; then
        if ! command -v debootstrap >/dev/null; then
            log "installing debootstrap on the host"
            host_apt update -qq || true
            host_apt install -y --no-install-recommends debootstrap \
                || die "apt-get install debootstrap failed; run 'apt-get update' on the host and retry"
        fi
        [ -e /usr/share/debootstrap/scripts/$SUITE ] \
            || die "this debootstrap does not know $SUITE; upgrade debootstrap on the host"
        # Whatever is there is a half-built root: start over. --one-file-system
        # keeps rm from following a mount into the host (our own mounts live in
        # private namespaces and are never visible here).
        if [ -e "$ROOT" ]; then
            log "removing incomplete root $ROOT"
            rm -rf --one-file-system "$ROOT" || die "could not remove incomplete $ROOT; is something mounted in it? (grep '$ROOT' /proc/mounts)"
        fi
        mkdir -p "$ROOT"
        log "debootstrap $SUITE from $mirror into $ROOT"
        # debootstrap mounts /proc and /sys in the target itself; in a private
        # mount namespace an interrupted run cannot leave them in the host's.
        unshare --mount --propagation private debootstrap --variant=minbase "$SUITE" "$ROOT" "$mirror" >&2 \
            || die "debootstrap failed (log: $ROOT/debootstrap/debootstrap.log); check that $mirror serves $SUITE, then rerun"
        touch "$BASE_STAMP"
    fi

    # Name resolution for apt inside the root, and no service starts during
    # package installation: munged and the Slurm daemons are started by the
    # tests themselves, and a daemon started here would outlive the mounts.
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
    printf '#!/bin/sh\n# Daemons in this root are started explicitly, never by package scripts.\nexit 101\n' \
        >"$ROOT/usr/sbin/policy-rc.d"
    chmod 755 "$ROOT/usr/sbin/policy-rc.d"
    # A mirror's sid Release file can be past its Valid-Until date (measured:
    # apt refused it as expired); sid is a moving target anyway.
    case $SUITE in
        sid|unstable)
            echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99nvlslice-valid-until" ;;
    esac

    # foreign architectures for cross builds (NVL_ROOT_ARCHES="arm64":
    # tests/arm64.sh), known to dpkg before apt reads the indexes
    local arch
    for arch in ${NVL_ROOT_ARCHES:-}; do
        chroot "$ROOT" dpkg --add-architecture "$arch" || die "dpkg --add-architecture $arch failed in $ROOT"
    done
    log "installing ${#PACKAGES[@]} packages inside the root"
    in_root nosrc env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
        sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
        sh "${PACKAGES[@]}" >&2 \
        || die "installing packages inside $ROOT failed; see the apt output above, fix the mirror or the package list, then rerun (the base is kept)"

    packages_line >"$STAMP.tmp" && mv "$STAMP.tmp" "$STAMP"
    log "root ready: $ROOT"
    versions >&2
}

versions() {
    local slurm
    slurm=$(in_root nosrc slurmctld -V 2>&1) || slurm="slurmctld -V failed: $slurm"
    echo "  slurm:  $slurm"
    # shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
    in_root nosrc dpkg-query -W -f='  ${Package}: ${Version}\n' catch2 libfmt-dev libslurm-dev munge 2>/dev/null || true
}

ensure() {
    root_complete && return 0
    mkdir -p "$(dirname "$ROOT")"
    # One builder at a time; a second caller waits and then finds it complete.
    exec 9>"$ROOT.lock"
    flock 9 || die "could not lock $ROOT.lock"
    root_complete || build
    exec 9>&-
}

cmd=${1:-ensure}
[ $# -gt 0 ] && shift
case $cmd in
    ensure) ensure ;;
    path) echo "$ROOT" ;;
    shell)
        ensure
        [ $# -gt 0 ] || set -- bash -l
        # exec: the caller's PID is then the process that holds the mounts and
        # CMD, so killing it stops CMD and unmounts (see inside()).
        command -v unshare >/dev/null || die "unshare not found; install util-linux"
        exec unshare --mount --propagation private bash "$SELF" __inside src "$@"
        ;;
    __inside) inside "$@" ;;
    -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "unknown command '$cmd'; use ensure, path or shell CMD..." ;;
esac
