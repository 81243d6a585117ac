#!/bin/bash
# The shipped alert rules (contrib/prometheus/nvlslice-alerts.yml) under
# promtool's rule tests, on metrics scraped from a running nvlsliced:
#   tests/prometheus/alerts.sh PROMTOOL SCRAPES
# SCRAPES holds pairs NAME.1.prom / NAME.2.prom, each a scrape of
# /metrics with "# at EPOCH" first, taken a few seconds apart in one state
# of a test cluster: healthy (every spare idle), spares_used (rack001's
# spares both used by repairs), degraded (rack001 degraded). Each pair
# becomes 40 minutes of series at 1-minute steps (a gauge as scraped, a
# counter growing at the rate between the two scrapes), and
# alerts.test.yml.in says which alerts each one fires. Variants of the
# healthy pair stand for what a test cluster does not show on its own,
# each changing one figure: the counters flat (no cycle finishes), cycles
# of 3 s, refused actions, a --no-requeue job that lost a node, a repair
# requeued to wait; and no metrics at all (no helper).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROMTOOL=${1:?usage: alerts.sh PROMTOOL SCRAPES}
SCRAPES=$(cd "${2:?usage: alerts.sh PROMTOOL SCRAPES}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# series NAME [VARIANT]: the input_series of one pair, YAML, 6 spaces in
series() {
    local a=$SCRAPES/$1.1.prom b=$SCRAPES/$1.2.prom
    [ -s "$a" ] && [ -s "$b" ] || { echo "alerts.sh: $a or $b missing" >&2; exit 1; }
    awk -v variant="${2:-}" '
        { file = (FNR == NR) ? 1 : 2 }
        FNR == 1 && /^# at / { at[file] = $3; next }
        /^#/ || NF < 2 { next }
        { key = $1; for (i = 2; i < NF; i++) key = key " " $i; v = $NF
          if (file == 1) { first[key] = v; order[++n] = key } else second[key] = v }
        END {
            dt = at[2] - at[1]; if (dt <= 0) dt = 1
            for (i = 1; i <= n; i++) {
                k = order[i]; name = k; sub(/\{.*/, "", name)
                v1 = first[k]; v2 = (k in second) ? second[k] : v1
                counter = name ~ /(_total|_count|_sum)$/
                inc = counter ? (v2 - v1) * 60 / dt : 0
                if (counter && inc < 0) inc = 0
                val = counter ? v1 : v2
                if (variant == "stalled" && counter) inc = 0
                if (variant == "slow" && name == "nvlslice_cycle_seconds_sum") inc = 3 * cycles_per_min()
                if (variant == "errors" && name == "nvlslice_cycle_errors_total") inc = 1
                if (variant == "unrepairable" && name == "nvlslice_unrepairable_jobs") val = 1
                if (variant == "requeued" && name == "nvlslice_repairs_requeued_to_wait_total") {
                    printf "      - series: %s\n        values: \"%.6f+0x19 %.6f+0x20\"\n", q(k), val, val + 1
                    continue
                }
                printf "      - series: %s\n        values: \"%.6f+%.6fx40\"\n", q(k), val, inc
            }
        }
        function q(s) { gsub(/\047/, "\047\047", s); return "\047" s "\047" }
        function cycles_per_min(   k) {
            for (k in first) if (k == "nvlslice_cycle_seconds_count")
                return (second[k] - first[k]) * 60 / (at[2] - at[1] > 0 ? at[2] - at[1] : 1)
            return 60
        }
    ' "$a" "$b"
}

cp "$HERE/../../contrib/prometheus/nvlslice-alerts.yml" "$work/rules.yml"
{
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*@([a-z_]+)(:([a-z]+))?@$ ]]; then
            series "${BASH_REMATCH[1]}" "${BASH_REMATCH[3]}"
        else
            printf '%s\n' "$line"
        fi
    done < "$HERE/alerts.test.yml.in"
} > "$work/alerts.test.yml"
cd "$work"
"$PROMTOOL" check rules rules.yml
"$PROMTOOL" test rules alerts.test.yml
