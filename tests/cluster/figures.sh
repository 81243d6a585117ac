#!/bin/bash
# The figures in README and doc/figures.txt that the tests measure, made from
# the outputs kept in the tree, never typed:
#   tests/cluster/figures.sh                  print both blocks
#   tests/cluster/figures.sh --update         write them into README and
#                                             doc/figures.txt
#   tests/cluster/figures.sh --check          exit 1 when either differs
#   tests/cluster/figures.sh --cells          the bench's chosen summary
#                                             lines, "SIDE KIND TRIALS P50
#                                             P90 MAX", one a line
#   tests/cluster/figures.sh --record LOG COMMIT [NOTE]
#                                             keep the "# measured:" lines
#                                             of a test command's log (LOG,
#                                             run on COMMIT) in
#                                             tests/cluster/measured.out
# README's block: for each kind of failure and each side (nvlslice; Slurm
# alone with its expedited requeue; Slurm alone with its plain requeue) the
# summary line of the newest run in tests/cluster/bench_busy.out with the
# most trials of that kind and side, and that run named (its number, the
# commit of the binaries or "Slurm alone", its date); a kind or side never
# measured reads "not run". doc/figures.txt's block: the test command's
# measured lines, tier by tier, with the commit and date of that run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${NVL_BENCH_OUT:-$HERE/bench_busy.out}
SIMOUT=${NVL_SIM_CHECK_OUT:-$HERE/sim_check.out}
MEASURED=${NVL_MEASURED_OUT:-$HERE/measured.out}
README=${NVL_README:-$TOP/README}
FIGURES=${NVL_FIGURES:-$TOP/doc/figures.txt}
BEGIN='  (made by tests/cluster/figures.sh from tests/cluster/bench_busy.out and sim_check.out)'
END='  (end of the bench'"'"'s figures)'
MBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/measured.out)'
MEND='  (end of the measured lines)'

block() {
    awk -v begin="$BEGIN" -v end="$END" -v cells="${CELLS:-0}" '
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
            if (cells) {
                for (key in best) { split(key, sk, "/"); print sk[1], sk[2], best[key], p50[key], p90[key], mx[key] }
                exit
            }
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
        }' "$OUT"
    [ "${CELLS:-0}" = 1 ] && return
    # the simulator on the bench's cluster and load (tests/cluster/sim_check.sh)
    [ -r "$SIMOUT" ] && awk '
        $1 == "#" && $2 ~ /^(drain|slurmd|silent|rack)$/ && $3 ~ /^(nvlslice|expedite|plain)$/ {
            n = split($0, f, /  +/)   # the columns are two blanks apart: "P50 / P90 (N)"
            split(f[4], c, " "); gsub(/[()]/, "", c[4])
            v[$2 "/" $3] = sprintf("%6.1f / %5.1f s (%2d)  ", c[1], c[3], c[4])
        }
        END {
            print "  nvl-sim, a model of this bench (tests/cluster/sim_check.sh: its cluster,"
            print "  load and failures; the simulator has one kind for a killed slurmd and a"
            print "  silent node), p50 / p90 (failures):"
            split("drain slurmd rack", kinds, " ")
            label["drain"] = "a drained node"; label["slurmd"] = "a dead node"; label["rack"] = "its whole rack"
            for (i = 1; i <= 3; i++) {
                k = kinds[i]
                row = sprintf("  %-18s %s %s %s", label[k], v[k "/nvlslice"], v[k "/expedite"], v[k "/plain"])
                sub(/ +$/, "", row)
                print row
            }
        }' "$SIMOUT"
    echo "$END"
}

measured_block() {
    echo "$MBEGIN"
    awk '
        # wrap(TEXT, FIRST, REST): words to 78 columns, FIRST indents the
        # first line, REST the others
        function wrap(t, first, rest,   n, w, i, line) {
            n = split(t, w, " "); line = first
            for (i = 1; i <= n; i++) {
                if (line != first && length(line) + 1 + length(w[i]) > 78) { print line; line = rest }
                line = line (line == first || line == rest ? "" : " ") w[i]
            }
            print line
        }
        /^# run: / { sub(/^# run: /, ""); wrap("measured by the test command on " $0, "  ", "    "); next }
        /^## / { sub(/^## /, ""); printf "\n  %s\n", $0; next }
        /^# measured: / { sub(/^# measured: /, ""); wrap($0, "    ", "      ") }' "$MEASURED"
    echo "$MEND"
}

# replace FILE BEGIN END BLOCKFILE: FILE with the lines from BEGIN to END
# replaced by BLOCKFILE (to stdout); exit 3 when FILE has no BEGIN line
replace() {
    awk -v begin="$2" -v end="$3" -v blockfile="$4" '
        $0 == begin { while ((getline l < blockfile) > 0) print l; skip = 1; found = 1; next }
        skip && $0 == end { skip = 0; next }
        !skip { print }
        END { if (!found) exit 3 }' "$1"
}

case "${1:-}" in
"") block; echo; measured_block ;;
--cells) CELLS=1 block | sort ;;
--record)
    log=${2:?usage: figures.sh --record LOG COMMIT}
    commit=${3:?usage: figures.sh --record LOG COMMIT}
    {
        echo "# The test command's \"# measured:\" lines, kept as printed (doc/figures.txt is made from them)."
        echo "# run: $commit, $(date -u +%Y-%m-%d), contrib/quickstart.sh test on 2 cores${4:+; $4}"
        awk '/^==> cluster tests on Slurm / { sub(/^==> cluster tests on /, ""); sub(/ \(.*/, ""); print "## " $0 " tier"; next }
             /^# measured: / { print }' "$log"
    } > "$MEASURED"
    echo "figures: $(grep -c '^# measured: ' "$MEASURED") measured lines kept in $MEASURED"
    ;;
--update | --check)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    block > "$work/bench"
    measured_block > "$work/measured"
    replace "$README" "$BEGIN" "$END" "$work/bench" > "$work/README" ||
        { echo "figures.sh: README has no line \"$BEGIN\"" >&2; exit 1; }
    replace "$FIGURES" "$MBEGIN" "$MEND" "$work/measured" > "$work/figures" ||
        { echo "figures.sh: doc/figures.txt has no line \"$MBEGIN\"" >&2; exit 1; }
    if [ "$1" = --check ]; then
        rc=0
        cmp -s "$work/README" "$README" || { echo "figures.sh: README's bench figures differ from tests/cluster/bench_busy.out (tests/cluster/figures.sh --update):" >&2; diff "$README" "$work/README" >&2; rc=1; }
        cmp -s "$work/figures" "$FIGURES" || { echo "figures.sh: doc/figures.txt's measured lines differ from tests/cluster/measured.out (tests/cluster/figures.sh --update):" >&2; diff "$FIGURES" "$work/figures" >&2; rc=1; }
        [ "$rc" = 0 ] && echo "figures: README's bench figures are bench_busy.out's, doc/figures.txt's measured lines measured.out's"
        exit "$rc"
    fi
    cp "$work/README" "$README"
    cp "$work/figures" "$FIGURES"
    ;;
*) echo "usage: figures.sh [--update|--check|--record LOG COMMIT]" >&2; exit 2 ;;
esac
