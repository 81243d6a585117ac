#!/bin/bash
# Hardened builds: every program and the SPANK plugin of a build (or of an
# installed tree) passes hardening-check (from Debian's devscripts):
# _FORTIFY_SOURCE, stack protector, PIE (programs), RELRO, BIND_NOW. And the
# plugin exports nothing but what Slurm's plugin loader looks up.
#   tests/hardening.sh HARDENING_CHECK BUILD_DIR
# Control-flow protection is built where the compiler has it but not
# required: Debian 12's C runtime objects lack the IBT note, so no binary
# linked there can carry it.
set -uo pipefail
HC=${1:?usage: hardening.sh HARDENING_CHECK BUILD_DIR}
B=$(cd "${2:?usage: hardening.sh HARDENING_CHECK BUILD_DIR}" && pwd)
PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok - $*"; }
not_ok() { FAIL=$((FAIL + 1)); echo "not ok - $*"; }
for f in src/nvlsliced/nvlsliced src/tools/nvl-topo src/tools/nvl-sim src/tools/nvl-place src/tools/nvl-bench \
    plugins/spank/.libs/spank_nvlslice.so; do
    if out=$("$HC" --nocfprotection "$B/$f" 2>&1); then
        ok "hardening-check $(basename "$f"): $(grep -c ': yes' <<< "$out") protections found"
    else
        not_ok "hardening-check $f: $(grep -E ': no' <<< "$out" | tr '\n' ' ')"
    fi
done
exported=$(nm -D --defined-only "$B/plugins/spank/.libs/spank_nvlslice.so" | awk '{print $3}' | sort | tr '\n' ' ')
# Slurm 25.05+ also reads the plugin's slurm_spank_init_failure_mode
want="plugin_name plugin_type plugin_version slurm_spank_exit slurm_spank_init "
grep -q '^#define HAVE_DECL_ESPANK_JOB_FAILURE 1' "$B/config.h" && want+="slurm_spank_init_failure_mode "
want+="slurm_spank_init_post_opt slurm_spank_job_epilog slurm_spank_task_exit slurm_spank_task_init spank_plugin_version "
if [ "$exported" = "$want" ]; then
    ok "the plugin exports only the plugin symbols"
else
    not_ok "the plugin exports more than the plugin symbols: $exported"
fi
# The systemd unit, pointed at this build's nvlsliced and man page.
if command -v systemd-analyze >/dev/null; then
    SRC=$(cd "$(dirname "$0")/.." && pwd)
    T=$(mktemp -d)
    mkdir -p "$T/man/man8"
    cp "$SRC/src/nvlsliced/nvlsliced.8" "$T/man/man8/"
    sed "s|/usr/sbin/nvlsliced|$B/src/nvlsliced/nvlsliced|g" "$SRC/contrib/systemd/nvlsliced.service" > "$T/nvlsliced.service"
    if out=$(MANPATH="$T/man" systemd-analyze verify "$T/nvlsliced.service" 2>&1) && [ -z "$out" ]; then
        ok "systemd-analyze verify nvlsliced.service: clean"
    else
        not_ok "systemd-analyze verify nvlsliced.service: $out"
    fi
    for key in NoNewPrivileges=true ProtectSystem=strict ProtectHome=true PrivateTmp=true RuntimeDirectory=nvlsliced; do
        grep -qx "$key" "$T/nvlsliced.service" && ok "the unit has $key" || not_ok "the unit lacks $key"
    done
    rm -rf "$T"
else
    not_ok "systemd-analyze (systemd) is not installed"
fi
echo "hardening: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
