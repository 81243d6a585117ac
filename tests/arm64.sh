#!/bin/bash
# arm64 (aarch64, the Grace CPUs of GB200/GB300 compute trays): the Debian
# packages cross-built with Debian's multiarch toolchain (dpkg-buildpackage
# -a arm64, the :arm64 -dev packages, crossbuild-essential-arm64) from the
# release tarball, in a Debian 12 root of their own under /var/cache/nvlslice
# (the host's packages stay as they are), checked with lintian; then, under
# qemu user emulation (qemu-aarch64-static, no binfmt_misc needed):
#   - every ELF file in the packages is AArch64;
#   - the unit tests of that build (the same cases as make check);
#   - Slurm's own arm64 sbatch (Debian's slurm-client:arm64 and
#     slurm-wlm-basic-plugins:arm64 with its libslurmfull, unpacked) loads
#     the arm64 plugin from a plugstack.conf and lists its options, and
#     refuses a bad --nvl-slice before any request to slurmctld;
#   - nvl-topo of arm64 exports the example rack map as a block topology.
#   tests/arm64.sh BUILD_DIR     (a configured tree: `make dist` there is
#                                 the source)
# Last line: "arm64: N passed, M failed". Must run as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:?usage: tests/arm64.sh BUILD_DIR}" && pwd)
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
summary() { echo "arm64: $PASS passed, $FAIL failed"; [ "$FAIL" -eq 0 ]; }
[ "$(id -u)" = 0 ] || { not_ok "must run as root"; summary; exit 1; }

export NVL_DEBIAN13_ROOT=${NVL_ARM64_ROOT:-/var/cache/nvlslice/arm64-root}
export NVL_ROOT_SUITE=bookworm NVL_ROOT_ARCHES=arm64
# Build tools of the build machine, libraries of the host machine (arm64);
# catch2 is headers only. slurm-client:arm64 is not installed (its munge
# dependency runs arm64 programs from its maintainer scripts): it is
# unpacked below instead.
packages=(crossbuild-essential-arm64 build-essential make autoconf automake libtool pkg-config debhelper
    dpkg-dev fakeroot lintian file qemu-user-static ca-certificates catch2
    pkg-config:arm64 libslurm-dev:arm64 libhwloc-dev:arm64 libyaml-dev:arm64 libfmt-dev:arm64)
export NVL_ROOT_PACKAGES="${packages[*]}" # one line: the root script reads one
ROOTSH=$HERE/cluster/debian13-root.sh
LOG=$(mktemp -d)
trap '[ -n "${NVL_ARM64_KEEP_LOGS:-}" ] || rm -rf "$LOG"' EXIT
R=$NVL_DEBIAN13_ROOT
in_root() { "$ROOTSH" shell env LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

if ! "$ROOTSH" ensure > "$LOG/root.log" 2>&1; then
    not_ok "the arm64 build root: $(tail -5 "$LOG/root.log" | tr '\n' ' ')"
    summary; exit 1
fi
ok "the arm64 build root ($R): Debian 12, libslurm-dev:arm64 $(chroot "$R" dpkg-query -W -f='${Version}' libslurm-dev:arm64)"

# The source: the release tarball, as make deb builds from it
if ! make -C "$B" -s dist > "$LOG/dist.log" 2>&1; then
    not_ok "make dist: $(tail -5 "$LOG/dist.log" | tr '\n' ' ')"; summary; exit 1
fi
tarball=$(ls -t "$B"/nvlslice-*.tar.gz | head -1)
W=$R/var/tmp/nvlslice-arm64
rm -rf "$W" && mkdir -p "$W"
tar -C "$W" -xzf "$tarball"
src=$(basename "$tarball" .tar.gz)
cp -r "$W/$src/contrib/debian" "$W/$src/debian"
cp "$W/$src/contrib/systemd/nvlsliced.service" "$W/$src/debian/nvlsliced.service"

# The packages, cross-built (dh_auto_test runs no arm64 program: the unit
# tests run under qemu below)
if in_root sh -c "cd /var/tmp/nvlslice-arm64/$src && DEB_BUILD_OPTIONS='nocheck parallel=$(nproc)' \
        dpkg-buildpackage -a arm64 -us -uc -b" > "$LOG/deb.log" 2>&1; then
    ok "dpkg-buildpackage -a arm64: $(cd "$W" && ls -1 ./*_arm64.deb | grep -v dbgsym | xargs -n1 basename | tr '\n' ' ')"
else
    not_ok "dpkg-buildpackage -a arm64: $(tail -8 "$LOG/deb.log" | tr '\n' ' ')"; summary; exit 1
fi
errors=$(in_root sh -c 'cd /var/tmp/nvlslice-arm64 && lintian --tag-display-limit 0 ./*_arm64.changes' 2>/dev/null | grep '^E:')
if [ -z "$errors" ]; then ok "lintian on the arm64 packages: no error"; else not_ok "lintian: $errors"; fi

# Every ELF file in the packages is AArch64; the plugstack.conf line names
# the arm64 multiarch directory
X=$W/unpacked
mkdir -p "$X"
for deb in "$W"/nvlslice-spank_*_arm64.deb "$W"/nvlsliced_*_arm64.deb "$W"/nvlslice-tools_*_arm64.deb; do
    dpkg-deb -x "$deb" "$X"
done
elves=$(cd "$X" && find . -type f -exec file {} + | grep ELF)
if [ -n "$elves" ] && ! grep -qv 'ARM aarch64' <<< "$elves"; then
    ok "every ELF file is AArch64: $(wc -l <<< "$elves") ($(awk -F: '{print $1}' <<< "$elves" | sed 's|^\./||' | tr '\n' ' '))"
else
    not_ok "ELF files not AArch64: $(grep -v 'ARM aarch64' <<< "$elves")"
fi
line=$(grep '^#required' "$X/etc/slurm/plugstack.conf.d/nvlslice.conf")
if grep -q '/usr/lib/aarch64-linux-gnu/nvlslice/spank_nvlslice.so' <<< "$line"; then
    ok "the shipped plugstack.conf line names /usr/lib/aarch64-linux-gnu"
else
    not_ok "the shipped plugstack.conf line: $line"
fi

# The unit tests of the arm64 build, under qemu. The tree dpkg-buildpackage
# configured for arm64 builds them (make check would also run them, on the
# build machine's kernel: no binfmt_misc here, so qemu runs them by name)
if in_root sh -c "cd /var/tmp/nvlslice-arm64/$src && make -s -j$(nproc) tests/unit/nvl-unit tests/unit/libfakenvml.la" \
        > "$LOG/unit-build.log" 2>&1; then
    out=$(in_root sh -c "cd /var/tmp/nvlslice-arm64/$src && qemu-aarch64-static tests/unit/nvl-unit" 2>&1 | tail -3)
    if grep -q '^All tests passed' <<< "$out"; then
        ok "the unit tests of the arm64 build under qemu: $(grep '^All tests passed' <<< "$out")"
    else
        not_ok "the unit tests under qemu: $out"
    fi
else
    not_ok "building the arm64 unit tests: $(tail -5 "$LOG/unit-build.log" | tr '\n' ' ')"
fi

# Slurm's arm64 sbatch, unpacked from Debian's slurm-client:arm64 (its
# libslurm is the one libslurm-dev:arm64 installed), loads the arm64
# plugin: its options are listed, and a bad one is refused before any
# request to slurmctld (there is none)
C=$R/var/tmp/nvlslice-arm64/client
mkdir -p "$C/etc"
# sbatch links libslurmfull.so, which slurm-wlm-basic-plugins holds (with
# the plugins), in its own directory: both are unpacked, and the loader
# under qemu is told where (sbatch's RUNPATH names the installed place)
SLIB=/var/tmp/nvlslice-arm64/client/usr/lib/aarch64-linux-gnu/slurm-wlm
if in_root sh -c 'cd /var/tmp/nvlslice-arm64 && apt-get download -q slurm-client:arm64 slurm-wlm-basic-plugins:arm64' > "$LOG/client.log" 2>&1 &&
    dpkg-deb -x "$(ls "$W"/slurm-client_*_arm64.deb | head -1)" "$C" &&
    dpkg-deb -x "$(ls "$W"/slurm-wlm-basic-plugins_*_arm64.deb | head -1)" "$C" &&
    [ -f "$R$SLIB/libslurmfull.so" ]; then
    map=/var/tmp/nvlslice-arm64/unpacked/usr/share/doc/nvlsliced/examples/nvlslice-map.yaml
    [ -f "$R$map" ] || map=$(cd "$R" && find var/tmp/nvlslice-arm64/unpacked -name 'nvlslice-map*.yaml*' | head -1 | sed 's|^|/|')
    case $map in *.gz) gunzip -kf "$R$map"; map=${map%.gz} ;; esac
    cat > "$C/etc/slurm.conf" <<EOF
ClusterName=arm64
SlurmctldHost=localhost
PlugStackConfig=/var/tmp/nvlslice-arm64/client/etc/plugstack.conf
PluginDir=$SLIB
NodeName=nvl[0001-0036] CPUs=1 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES
EOF
    echo "required /var/tmp/nvlslice-arm64/unpacked/usr/lib/aarch64-linux-gnu/nvlslice/spank_nvlslice.so map=$map check_gpus=off mode=gate" \
        > "$C/etc/plugstack.conf"
    help=$(in_root env SLURM_CONF=/var/tmp/nvlslice-arm64/client/etc/slurm.conf \
        qemu-aarch64-static -E LD_LIBRARY_PATH="$SLIB" /var/tmp/nvlslice-arm64/client/usr/bin/sbatch --help 2>&1)
    if grep -q -- '--nvl-slice' <<< "$help"; then
        ok "arm64 sbatch (slurm-client $(dpkg-deb -f "$(ls "$W"/slurm-client_*_arm64.deb | head -1)" Version)) loads the arm64 plugin: $(grep -c -- '--nvl-' <<< "$help") --nvl-* options listed"
    else
        not_ok "arm64 sbatch --help lists no --nvl-slice: $(tail -5 <<< "$help" | tr '\n' ' ')"
    fi
    bad=$(in_root env SLURM_CONF=/var/tmp/nvlslice-arm64/client/etc/slurm.conf \
        qemu-aarch64-static -E LD_LIBRARY_PATH="$SLIB" /var/tmp/nvlslice-arm64/client/usr/bin/sbatch -N 20 --nvl-slice=16 --wrap true 2>&1)
    if grep -q 'nvlslice: --nvl-slice=16: -N 20 is not a multiple of the slice size' <<< "$bad"; then
        ok "arm64 sbatch refuses -N 20 --nvl-slice=16 in the plugin, naming the fix"
    else
        not_ok "arm64 sbatch -N 20 --nvl-slice=16: $(tail -3 <<< "$bad" | tr '\n' ' ')"
    fi
else
    not_ok "slurm-client:arm64 and slurm-wlm-basic-plugins:arm64 (libslurmfull.so) for its sbatch: $(tail -3 "$LOG/client.log" | tr '\n' ' ')"
fi

# nvl-topo of arm64 exports the example map as Slurm's block topology
out=$(in_root qemu-aarch64-static /var/tmp/nvlslice-arm64/unpacked/usr/bin/nvl-topo export --map "${map:-/nonexistent}" --format block 2>&1)
if grep -q '^BlockName=' <<< "$out"; then
    ok "arm64 nvl-topo exports the example map: $(grep -c '^BlockName=' <<< "$out") blocks, $(grep '^BlockSizes=' <<< "$out")"
else
    not_ok "arm64 nvl-topo export: $(tail -3 <<< "$out" | tr '\n' ' ')"
fi
summary
