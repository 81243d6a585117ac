#!/bin/bash
# The packages: builds the Debian packages (make deb) and the rpm (make
# rpm) from the release tarball, checks them with lintian (no error) and
# hardening-check (every installed binary), and lists their contents.
#   tests/packages.sh BUILD_DIR HARDENING_CHECK
# Installs debhelper, dpkg-dev, fakeroot, lintian and rpm when missing.
set -uo pipefail
B=$(cd "${1:?usage: packages.sh BUILD_DIR HARDENING_CHECK}" && pwd)
HC=${2:?usage: packages.sh BUILD_DIR HARDENING_CHECK}
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
missing=()
for p in debhelper dpkg-dev fakeroot lintian rpm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
LOG=$(mktemp -d)
# The unit tests are not run a second time in the package build: the test
# command ran them on this tree's hardened build (the same compiler flags
# tests/hardening.sh checks, the same libslurm). NVL_DEB_CHECK=1 runs them.
deb_opts="parallel=$(nproc)"
[ "${NVL_DEB_CHECK:-0}" = 1 ] || deb_opts+=" nocheck"
if DEB_BUILD_OPTIONS="$deb_opts" make -C "$B" deb > "$LOG/deb.log" 2>&1; then
    ok "make deb: $(cd "$B/deb" && ls -1 ./*.deb | grep -v dbgsym | xargs -n1 basename | tr '\n' ' ')"
else
    not_ok "make deb: $(tail -5 "$LOG/deb.log" | tr '\n' ' ')"
fi
for p in nvlslice-spank nvlsliced nvlslice-tools; do
    deb=$(ls "$B"/deb/"${p}"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || { not_ok "$p: no package"; continue; }
    echo "# $p: $(dpkg-deb -f "$deb" Depends)"
    dpkg-deb -c "$deb" | awk '$6 !~ /\/$/ {print "#   " $6}'
done
errors=$(cd "$B/deb" && lintian --tag-display-limit 0 ./*.changes 2>/dev/null | grep '^E:')
[ -z "$errors" ] && ok "lintian: no error ($(cd "$B/deb" && lintian ./*.changes 2>/dev/null | grep -c '^W:') warnings)" ||
    not_ok "lintian: $errors"
# hardening-check on the binaries as installed from the packages
X="$LOG/root"
mkdir -p "$X"
for deb in "$B"/deb/nvlslice-spank_*.deb "$B"/deb/nvlsliced_*.deb "$B"/deb/nvlslice-tools_*.deb; do
    [ -f "$deb" ] && dpkg-deb -x "$deb" "$X"
done
for f in "$X"/usr/sbin/nvlsliced "$X"/usr/bin/nvl-* "$X"/usr/lib/*/nvlslice/spank_nvlslice.so; do
    [ -f "$f" ] || { not_ok "installed binary missing: $f"; continue; }
    if out=$("$HC" --nocfprotection "$f" 2>&1); then ok "hardening-check ${f#"$X"}"; else not_ok "hardening-check ${f#"$X"}: $(grep ': no' <<< "$out" | tr '\n' ' ')"; fi
done
grep -q '^#required ' "$X/etc/slurm/plugstack.conf.d/nvlslice.conf" &&
    ok "the plugstack.conf.d snippet is commented out until map= is set" || not_ok "the plugstack.conf.d snippet is active"
so=$(awk '$1 == "#required" { print $2 }' "$X/etc/slurm/plugstack.conf.d/nvlslice.conf")
[ -n "$so" ] && [ -f "$X$so" ] && ok "the snippet names the plugin where the package installs it ($so)" ||
    not_ok "the snippet names [$so], which the package does not install"
dpkg-deb -f "$B"/deb/nvlsliced_*.deb Conffiles 2>/dev/null | grep -q . || true
if dpkg-deb --ctrl-tarfile "$B"/deb/nvlsliced_*.deb | tar -xO ./conffiles 2>/dev/null | grep -qx /etc/slurm/nvlslice.yaml; then
    ok "nvlsliced: /etc/slurm/nvlslice.yaml is a conffile"
else
    not_ok "nvlsliced: /etc/slurm/nvlslice.yaml is not a conffile"
fi
# --nocheck: the deb build just ran the same tarball's unit tests
# (dh_auto_test); the spec's %check would only repeat them
if make -C "$B" rpm RPMBUILD_FLAGS="--nodeps --nocheck" > "$LOG/rpm.log" 2>&1; then
    ok "make rpm (rpmbuild -ba): $(cd "$B" && find rpm/RPMS rpm/SRPMS -name '*.rpm' -printf '%f ')"
    for r in "$B"/rpm/RPMS/*/*.rpm; do echo "# $(basename "$r"): requires $(rpm -qp --requires "$r" 2>/dev/null | grep -i slurm | tr '\n' ' ')"; done
else
    not_ok "make rpm: $(tail -5 "$LOG/rpm.log" | tr '\n' ' ')"
fi
rm -rf "$LOG"
echo "packages: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
