#!/bin/bash
# nvlslice quick start on Debian 12. Run from the source tree, as root or
# with sudo available:
#   contrib/quickstart.sh demo   install, build, and run the demo
#   contrib/quickstart.sh test   install, build, and run the tests
# Installs only Debian packages, builds out of tree in ./build.
set -euo pipefail

cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=${NVL_BUILD_DIR:-$SRC/build}
JOBS=${NVL_JOBS:-$(nproc)}

PACKAGES=(g++ make autoconf automake libtool pkg-config
          libslurm-dev libhwloc-dev libyaml-dev libfmt-dev catch2)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "==> installing Debian packages: ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

build() {
    if [ ! -x "$SRC/configure" ] || [ "$SRC/configure.ac" -nt "$SRC/configure" ]; then
        echo "==> autoreconf"
        (cd "$SRC" && autoreconf -fi >/dev/null 2>&1) || (cd "$SRC" && autoreconf -fi)
    fi
    mkdir -p "$BUILD"
    if [ ! -f "$BUILD/Makefile" ] || [ "$SRC/configure" -nt "$BUILD/Makefile" ]; then
        echo "==> configure"
        (cd "$BUILD" && "$SRC/configure" -q)
    fi
    echo "==> make -j$JOBS"
    make -C "$BUILD" -s -j"$JOBS"
}

demo() {
    local place="$BUILD/src/tools/nvl-place" map="$SRC/etc/nvlslice-map.yaml"
    echo
    echo "== nvlslice demo: 128 NVL72 racks x 18 nodes ($map)"
    echo
    echo "-- a 64-node job as 4 slices of 16 on a cluster 30% busy with scattered small jobs:"
    "$place" --map "$map" --fill 0.30 --seed 7 --nodes 64 --nvl-slice 16
    echo
    echo "-- 24 nodes with --nvl-slice=auto: balanced 12 + 12, never 16 + 8:"
    "$place" --map "$map" --fill 0.30 --seed 7 --nodes 24 --nvl-slice auto
    echo
    echo "-- the same 64-node job when the cluster is 50% busy: no rack has 16 free besides its spares:"
    "$place" --map "$map" --fill 0.50 --seed 7 --nodes 64 --nvl-slice 16 || true
    echo
    echo "-- with --nvl-placement=prefer once its wait has passed: the fewest racks, marked split:"
    "$place" --map "$map" --fill 0.50 --seed 7 --nodes 64 --nvl-slice 16 --nvl-placement prefer --split
    echo
    echo "-- the placement engine against a naive scan, 1,400 racks x 18 nodes:"
    "$BUILD/src/tools/nvl-bench" --decisions 5000 --baseline-decisions 500
}

test_suite() {
    echo "==> unit tests (make check)"
    make -C "$BUILD" -s -j"$JOBS" check || { cat "$BUILD"/tests/unit/*.log 2>/dev/null | tail -50; exit 1; }
    local n
    n=$(sed -n 's/^All tests passed ([0-9]* assertions* in \([0-9]*\) test cases*).*/\1/p' "$BUILD"/tests/unit/nvl-unit.log)
    echo "unit: ${n:-0} passed, 0 failed"
    echo "==> cluster tests (real slurmctld + slurmd in network namespaces)"
    local out
    out=$(mktemp)
    set +e
    { as_root "$SRC/tests/cluster/run.sh" "$BUILD"; echo $? > "$out.rc"; } 2>&1 | tee "$out"
    local rc
    rc=$(cat "$out.rc"); rm -f "$out.rc"
    set -e
    # One closing line for the whole run: test cases and cluster checks.
    local cp cf
    cp=$(sed -nE 's/^cluster: ([0-9]+) passed, ([0-9]+) failed$/\1/p' "$out" | tail -1)
    cf=$(sed -nE 's/^cluster: ([0-9]+) passed, ([0-9]+) failed$/\2/p' "$out" | tail -1)
    rm -f "$out"
    echo "tests: $(( ${n:-0} + ${cp:-0} )) passed, ${cf:-1} failed"
    return "$rc"
}

case "${1:-}" in
    demo) install_packages; build; demo ;;
    test) install_packages; build; test_suite ;;
    *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
