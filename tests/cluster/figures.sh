#!/bin/bash
# The README's figures, made from the busy bench's kept output, never typed:
#   tests/cluster/figures.sh              print the block
#   tests/cluster/figures.sh --update     write it into README
#   tests/cluster/figures.sh --check      exit 1 when README's block differs
# For each kind of failure and each side (nvlslice; Slurm alone with its
# expedited requeue; Slurm alone with its plain requeue) the block takes the
# summary line of the newest run in tests/cluster/bench_busy.out with the
# most trials of that kind and side, and names that run (its number, the
# commit of the binaries or "Slurm alone", its date). A kind or side never
# measured reads "not run".
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${NVL_BENCH_OUT:-$HERE/bench_busy.out}
README=${NVL_README:-$TOP/README}
BEGIN='  (made by tests/cluster/figures.sh from tests/cluster/bench_busy.out)'
END='  (end of the bench'"'"'s figures)'

block() {
    awk -v begin="$BEGIN" -v end="$END" '
        /^# [0-9]+\. / {
            run = $2; sub(/\.$/, "", run)
            what = "Slurm alone"
            if (match($0, /binaries of [0-9a-f]+/)) what = substr($0, RSTART + 12, RLENGTH - 12)
            date = ""
            if (match($0, /20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]/)) date = substr($0, RSTART, RLENGTH)
            next
        }
        $1 == "#" && $4 ~ /^[0-9]+$/ && $5 == "runs" && $6 == "p50" {
            side = $2; kind = $3; n = $4 + 0; key = side "/" kind
            if (!(key in best) || n >= best[key]) {
                best[key] = n; p50[key] = $7; p90[key] = $9; mx[key] = $11
                src[key] = "run " run ", " what (date != "" ? ", " date : "")
            }
        }
        function cell(key) {
            if (!(key in best)) return sprintf("%-22s", "not run")
            return sprintf("%6.1f / %5.1f s (%2d)  ", p50[key], p90[key], best[key])
        }
        END {
            print begin
            printf "  %-18s %-22s %-22s %s\n", "p50 / p90 (trials)", "nvlslice", "expedited requeue", "plain requeue"
            split("drain slurmd silent rack", kinds, " ")
            label["drain"] = "a drained node"; label["slurmd"] = "a killed slurmd"
            label["silent"] = "a silent node"; label["rack"] = "its whole rack"
            for (i = 1; i <= 4; i++) {
                k = kinds[i]
                row = sprintf("  %-18s %s %s %s", label[k], cell("nvlslice/" k), cell("expedite/" k), cell("plain/" k))
                sub(/ +$/, "", row)
                print row
            }
            # where each side was measured: one line a side when every kind
            # comes from the same run, else a line a kind
            split("nvlslice expedite plain", sides, " ")
            name["nvlslice"] = "nvlslice"; name["expedite"] = "expedited requeue"; name["plain"] = "plain requeue"
            for (j = 1; j <= 3; j++) {
                s = sides[j]; same = ""; differ = 0; any = 0
                for (i = 1; i <= 4; i++) {
                    key = s "/" kinds[i]
                    if (!(key in src)) continue
                    if (any && src[key] != same) differ = 1
                    same = src[key]; any = 1
                }
                if (!any) continue
                if (!differ) { printf "  %s: %s\n", name[s], same; continue }
                for (i = 1; i <= 4; i++)
                    if ((s "/" kinds[i]) in src) printf "  %s, %s: %s\n", name[s], label[kinds[i]], src[s "/" kinds[i]]
            }
            print end
        }' "$OUT"
}

case "${1:-}" in
"") block ;;
--update | --check)
    new=$(mktemp)
    trap 'rm -f "$new"' EXIT
    awk -v begin="$BEGIN" -v end="$END" -v blockfile=<(block) '
        $0 == begin { while ((getline l < blockfile) > 0) print l; skip = 1; found = 1; next }
        skip && $0 == end { skip = 0; next }
        !skip { print }
        END { if (!found) exit 3 }' "$README" > "$new" || { echo "figures.sh: README has no line \"$BEGIN\"" >&2; exit 1; }
    if [ "$1" = --check ]; then
        if cmp -s "$new" "$README"; then echo "figures: README's bench figures are bench_busy.out's"; exit 0; fi
        echo "figures.sh: README's bench figures differ from tests/cluster/bench_busy.out (run tests/cluster/figures.sh --update):" >&2
        diff "$README" "$new" >&2 || true
        exit 1
    fi
    cp "$new" "$README"
    ;;
*) echo "usage: figures.sh [--update|--check]" >&2; exit 2 ;;
esac
