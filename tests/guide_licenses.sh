#!/bin/bash
# The admin guide's step 3 (doc/admin-guide.txt, "Installing, in an order
# that works"): the commands that add the gate and lease licenses to
# slurm.conf, taken from the guide as written and run on slurm.conf files
# as sites have them: no Licenses= line, one, one with a comment after
# it, two (Slurm keeps the last: "specified more than once, latest value
# used"), one that has a license of nvlslice's already, a name that only
# begins like one, a commented-out line. Each file run twice: the same
# result (nothing added twice), the site's copy kept; then the guide's
# Removal step 4 takes them out again.
#   tests/guide_licenses.sh     (no cluster; last line "guide licenses: N passed, M failed")
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
GUIDE=$HERE/../doc/admin-guide.txt
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# step 3's lines up to its topology part, their two blanks of indent off
awk '/^  # 3\. slurm.conf/ { f = 1 } /^  #    native mode/ { f = 0 } f { print substr($0, 3) }' "$GUIDE" > "$W/step3.guide"
grep -q 'nvlslice_gate:1' "$W/step3.guide" || { not_ok "step 3 of the guide's install block is found"; echo "guide licenses: $PASS passed, $FAIL failed"; exit 1; }
sed "s|/etc/slurm/slurm.conf|\$CONF|" "$W/step3.guide" > "$W/step3.sh"
# and Removal's step 4, which takes them out again
awk '/^  # 4\. slurm.conf on every host: nvlslice_gate/ { f = 1 } /^  scontrol reconfigure/ { f = 0 } f { print substr($0, 3) }' \
    "$GUIDE" > "$W/remove.guide"
grep -q 'nvlslice_(gate|lease)' "$W/remove.guide" || { not_ok "Removal's step 4 is found"; echo "guide licenses: $PASS passed, $FAIL failed"; exit 1; }
sed "s|/etc/slurm/slurm.conf|\$CONF|" "$W/remove.guide" > "$W/remove.sh"

case_() { # case_ NAME INPUT EXPECTED [REMOVED: what Removal's step 4 leaves, default INPUT]
    local f=$W/$1/slurm.conf
    mkdir -p "$W/$1"
    printf '%s' "$2" > "$f"
    if ! CONF=$f bash -e "$W/step3.sh" 2> "$W/$1/err"; then not_ok "$1: the guide's step 3 fails: $(cat "$W/$1/err")"; return; fi
    if [ "$(cat "$f")" = "$(printf '%s' "$3")" ]; then ok "$1"; else not_ok "$1: got [$(cat "$f")], expected [$(printf '%s' "$3")]"; fi
    cp "$f" "$W/$1/once"
    CONF=$f bash -e "$W/step3.sh" 2>> "$W/$1/err"
    if cmp -s "$f" "$W/$1/once"; then ok "$1: run again, nothing added twice"; else not_ok "$1: run again: $(diff "$W/$1/once" "$f" | tr '\n' ' ')"; fi
    if [ "$(cat "$f.before-nvlslice" 2>/dev/null)" = "$(printf '%s' "$2")" ]; then ok "$1: the site's file kept as slurm.conf.before-nvlslice"
    else not_ok "$1: slurm.conf.before-nvlslice is not the site's file"; fi
    CONF=$f bash -e "$W/remove.sh" 2>> "$W/$1/err"
    local want=${4-$2}
    if [ "$(cat "$f")" = "$(printf '%s' "$want")" ]; then ok "$1: Removal's step 4 takes them out again"
    else not_ok "$1: after Removal's step 4: got [$(cat "$f")], expected [$(printf '%s' "$want")]"; fi
}

T=$'ClusterName=c\nSlurmctldHost=h\n'
case_ "no Licenses= line" "$T" "${T}Licenses=nvlslice_gate:1,nvlslice_lease:1"
case_ "one Licenses= line" "${T}Licenses=lic_a:4"$'\n'"NodeName=n1"$'\n' \
    "${T}Licenses=lic_a:4,nvlslice_gate:1,nvlslice_lease:1"$'\n'"NodeName=n1"
case_ "a comment after it stays after it" "${T}Licenses=lic_a:4   # the site's licenses"$'\n' \
    "${T}Licenses=lic_a:4,nvlslice_gate:1,nvlslice_lease:1 # the site's licenses" \
    "${T}Licenses=lic_a:4 # the site's licenses"
case_ "two lines: the last, the one Slurm keeps" "${T}Licenses=old:1"$'\n'"  licenses = lic_a:4"$'\n' \
    "${T}Licenses=old:1"$'\n'"  licenses = lic_a:4,nvlslice_gate:1,nvlslice_lease:1"
case_ "one of nvlslice's there already" "${T}Licenses=NVLSLICE_GATE:1,lic_a:4"$'\n' \
    "${T}Licenses=NVLSLICE_GATE:1,lic_a:4,nvlslice_lease:1" "${T}Licenses=lic_a:4"
case_ "a name that only begins like one" "${T}Licenses=nvlslice_gate_old:2"$'\n' \
    "${T}Licenses=nvlslice_gate_old:2,nvlslice_gate:1,nvlslice_lease:1"
case_ "a commented-out line is not the site's" "${T}#Licenses=foo:1"$'\n' \
    "${T}#Licenses=foo:1"$'\n'"Licenses=nvlslice_gate:1,nvlslice_lease:1"
echo "guide licenses: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
