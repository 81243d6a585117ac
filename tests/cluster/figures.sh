#!/bin/bash
# The figures in README and doc/figures.txt that the tests and the tools
# measure, made from the outputs kept in the tree, never typed:
#   tests/cluster/figures.sh                  print every block
#   tests/cluster/figures.sh --update         write them into README and
#                                             doc/figures.txt
#   tests/cluster/figures.sh --check          exit 1 when any differs
#   tests/cluster/figures.sh --cells          the bench's chosen summary
#                                             lines, "SIDE KIND TRIALS P50
#                                             P90 MAX", one a line
#   tests/cluster/figures.sh --record LOG COMMIT [NOTE]
#                                             keep the "# measured:" lines
#                                             of a test command's log (LOG,
#                                             run on COMMIT) in
#                                             tests/cluster/measured.out
# Each block sits between its own first and last line (the "(made by
# tests/cluster/figures.sh from ...)" line names its kept output) and says
# the commit and date of what it shows:
#   README, the bench: for each kind of failure and each side (nvlslice;
#     Slurm alone with its expedited requeue; Slurm alone with its plain
#     requeue) the summary line of the newest run in bench_busy.out with the
#     most trials of that kind and side, and that run named (its number, the
#     commit of the binaries or "Slurm alone", its date); a kind or side
#     never measured reads "not run". Then the failure-free phases (the
#     backlog's node-hours an hour beside the measured job, and alone on
#     the whole cluster): each side pooled over the runs that ran nvlslice
#     and Slurm alone in one invocation (from run POOL_FROM on), each
#     run's figure beside it; a side no such run has, its newest window.
#     Then the goals against those lines, and the simulator's rows from
#     sim_check.out.
#   doc/figures.txt, the test command: its measured lines, tier by tier,
#     from measured.out, with the commit and date of that run.
#   doc/figures.txt, the busy bench: the same runs as README's, with p50,
#     p90 and the slowest trial, the steady phases and the goals.
#   doc/figures.txt, the simulator beside the bench: sim_check.out's table.
#   doc/figures.txt, the replay: replay.out's summary.
#   doc/figures.txt, nvl-sim capacity, nvl-sim trace and nvl-bench: the
#     kept outputs sim_capacity.out, sim_trace.out and nvl_bench.out (a
#     "# run: COMMIT, DATE, ..." line, the command, its output as printed),
#     with the goals the trace and the benchmark are held to.
# The goals are the project's, written here once; whether each is met is
# computed from the kept figures.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${NVL_BENCH_OUT:-$HERE/bench_busy.out}
SIMOUT=${NVL_SIM_CHECK_OUT:-$HERE/sim_check.out}
MEASURED=${NVL_MEASURED_OUT:-$HERE/measured.out}
REPLAY=${NVL_REPLAY_OUT:-$HERE/replay.out}
CAPACITY=${NVL_SIM_CAPACITY_OUT:-$HERE/sim_capacity.out}
TRACE=${NVL_SIM_TRACE_OUT:-$HERE/sim_trace.out}
NVLBENCH=${NVL_NVL_BENCH_OUT:-$HERE/nvl_bench.out}
README=${NVL_README:-$TOP/README}
FIGURES=${NVL_FIGURES:-$TOP/doc/figures.txt}
BEGIN='  (made by tests/cluster/figures.sh from tests/cluster/bench_busy.out and sim_check.out)'
END='  (end of the bench'"'"'s figures)'
MBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/measured.out)'
MEND='  (end of the measured lines)'
BBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/bench_busy.out)'
BEND='  (end of the busy bench'"'"'s figures)'
SBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/sim_check.out)'
SEND='  (end of the simulator beside the bench)'
RBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/replay.out)'
REND='  (end of the replay'"'"'s figures)'
CBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/sim_capacity.out)'
CEND='  (end of the capacity figures)'
TBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/sim_trace.out)'
TEND='  (end of the trace figures)'
NBEGIN='  (made by tests/cluster/figures.sh from tests/cluster/nvl_bench.out)'
NEND='  (end of the benchmark'"'"'s figures)'

# wrap(TEXT, FIRST, REST): words to 78 columns, FIRST indents the first
# line, REST the others (awk, put before the programs that use it)
WRAP='
function wrap(t, first, rest,   n, w, i, line) {
    n = split(t, w, " "); line = first
    for (i = 1; i <= n; i++) {
        if (line != first && length(line) + 1 + length(w[i]) > 78) { print line; line = rest }
        line = line (line == first || line == rest ? "" : " ") w[i]
    }
    print line
}'

# bench MODE: from bench_busy.out, MODE readme (README's rows and sources),
# busy (doc/figures.txt's table), cells (--cells); readme and busy end with
# the steady phases and the goals
bench() {
    # POOL_FROM: the first run whose steady windows are priced (pool())
    awk -v mode="$1" -v POOL_FROM=18 "$WRAP"'
        /^# [0-9]+\. / {
            run = $2; sub(/\.$/, "", run)
            what = "Slurm alone"
            if (match($0, /binaries of [0-9a-f]+/)) what = substr($0, RSTART + 12, RLENGTH - 12)
            date = ""
            if (match($0, /20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]/)) date = substr($0, RSTART, RLENGTH)
            phase = ""; tree = 0
            next
        }
        # a run that fails only nodes with children in the srun step'"'"'s
        # reverse tree (NVL_BENCH_AT of places 2, 10, 18 and 26 of 32: where
        # a silent node holds its children'"'"'s reports): goal lines of its own
        /^#    NVL_/ && match($0, /NVL_BENCH_AT="?[0-9 ]+/) {
            n = split(substr($0, RSTART + 13, RLENGTH - 13), pl, /[" ]+/); tree = 0
            for (i = 1; i <= n; i++) if (pl[i] != "") { if (pl[i] !~ /^(2|10|18|26)$/) { tree = 0; break } tree = 1 }
        }
        # the run SlurmdTimeout: the table and the goals are the runs at
        # 60 s, a value sites use; Slurm default 300 s gets a line of its own
        # and its Slurm: the table is 26.05'"'"'s (Slurm alone'"'"'s expedited
        # requeue is 25.11+); a 24.11 run gets goal lines of its own
        /^# bench_busy: slurm-wlm / {
            sto = 0
            if (match($0, /SlurmdTimeout [0-9]+/)) sto = substr($0, RSTART + 14, RLENGTH - 14) + 0
            ver = $4; sub(/,$/, "", ver); split(ver, vv, "."); ver = vv[1] "." vv[2]
            tcp = 2   # slurm.conf TCPTimeout (Slurm'"'"'s default when the run did not say)
            if (match($0, /TCPTimeout [0-9]+/)) tcp = substr($0, RSTART + 11, RLENGTH - 11) + 0
        }
        # (a run at 300 s keyed apart: "300/SIDE/KIND"; on 24.11: "24.11/SIDE/KIND")
        $1 == "#" && $4 ~ /^[0-9]+$/ && $5 == "runs" && $6 == "p50" {
            n = $4 + 0; key = (ver == "24.11" ? "24.11/" : sto == 300 ? "300/" : "") $2 "/" $3
            # (the reverse tree'"'"'s places: "tree/TCP/[24.11/]SIDE/KIND")
            if (tree) key = "tree/" tcp "/" (ver == "24.11" ? "24.11/" : "") $2 "/" $3
            if (!(key in best) || n >= best[key]) {
                best[key] = n; p50[key] = $7; p90[key] = $9; mx[key] = $11; whole[key] = $17
                src[key] = "run " run ", " what (date != "" ? ", " date : "") (tcp != 2 ? ", TCPTimeout " tcp " s" : "")
                # a whole rack: the trials whose new rack had room at the
                # fault, and the slowest of them (runs from 38 on say so)
                delete roomt[key]
                if (match($0, /room free now [0-9]+\/[0-9]+(, max [0-9.]+ s)?/)) {
                    split(substr($0, RSTART + 14, RLENGTH - 14), rw, /[\/, ]+/)
                    roomn[key] = rw[1] + 0; roomt[key] = rw[2] + 0; roommx[key] = (rw[3] == "max") ? rw[4] + 0 : 0
                }
            }
        }
        # the phases without failures, keyed "PHASE/SIDE": steady, the
        # backlog beside the measured job; alone, the backlog alone on the
        # whole cluster
        /^# bench_busy: / {
            phase = ""
            if ($0 ~ /the backlog beside the measured job, no failure/) phase = "steady"
            if ($0 ~ /the backlog alone on the whole cluster/) phase = "alone"
        }
        # every window by run ("RUN/PHASE/SIDE"), and the newest run of
        # each "PHASE/SIDE": shown where no run paired it (below)
        phase != "" && $1 == "#" && $2 ~ /^(nvlslice|expedite|plain)$/ && $4 == "s" && $8 == "node-h/h" {
            k = phase "/" $2; newest[k] = run; wnodes[phase] = $10 + 0
            rsec[run "/" k] = $3; rnh[run "/" k] = $7; rbusy[run "/" k] = ""
            if (match($0, /[0-9]+ % of the cluster/)) { rbusy[run "/" k] = substr($0, RSTART, RLENGTH); sub(/ of the cluster/, "", rbusy[run "/" k]) }
            if (!((phase "/" run) in listed)) { listed[phase "/" run] = 1; runs[phase, ++nruns[phase]] = run }
        }
        function cell(key) {
            if (!(key in best)) return sprintf("%-22s", "not run")
            return sprintf("%6.1f / %5.1f s (%2d)  ", p50[key], p90[key], best[key])
        }
        # one run'"'"'s window of a side
        function windowline(r, phase, s,   k) {
            k = r "/" phase "/" s
            return sprintf("%s %.1f (run %s, %d s%s)", name[s], rnh[k], r, rsec[k], rbusy[k] == "" ? "" : "; the cluster " rbusy[k] " busy")
        }
        # "A, B": a list grown an item at a time
        function join(a, b) { return a == "" ? b : a ", " b }
        # pool(PHASE): the windows of the runs that ran nvlslice and Slurm
        # alone side by side in one invocation, from run POOL_FROM on (the
        # helper'"'"'s lending as it is since: small checkpointable work placed
        # on idle spares first, 94794a1), pooled a side: node-hours over
        # seconds, pnh["PHASE/SIDE"]; the runs in plist[PHASE], each run'"'"'s
        # figure in pvals["PHASE/SIDE"], each run'"'"'s price (against its
        # own best Slurm alone side) from plo[PHASE] to phi[PHASE]
        function pool(phase,   i, r, j, k, b, l) {
            plist[phase] = ""; pn[phase] = 0
            for (i = 1; i <= nruns[phase]; i++) {
                r = runs[phase, i]
                if (r + 0 < POOL_FROM || !((r "/" phase "/nvlslice") in rnh)) continue
                b = ""
                if ((r "/" phase "/expedite") in rnh) b = "expedite"
                if (((r "/" phase "/plain") in rnh) && (b == "" || rnh[r "/" phase "/plain"] > rnh[r "/" phase "/expedite"])) b = "plain"
                if (b == "") continue
                pn[phase]++
                plist[phase] = join(plist[phase], r)
                l = 100 * (rnh[r "/" phase "/" b] - rnh[r "/" phase "/nvlslice"]) / rnh[r "/" phase "/" b]
                if (pn[phase] == 1 || l < plo[phase]) plo[phase] = l
                if (pn[phase] == 1 || l > phi[phase]) phi[phase] = l
                for (j = 1; j <= 3; j++) {
                    k = phase "/" sides[j]
                    if (!((r "/" k) in rnh)) continue
                    psum[k] += rnh[r "/" k] * rsec[r "/" k]; psec[k] += rsec[r "/" k]
                    pvals[k] = join(pvals[k], sprintf("%.1f", rnh[r "/" k]))
                }
            }
            for (j = 1; j <= 3; j++) {
                k = phase "/" sides[j]
                if (psec[k] > 0) pnh[k] = psum[k] / psec[k]
            }
        }
        # "18, 30 and 31"
        function andlist(t,   i) {
            for (i = length(t) - 1; i > 0; i--)
                if (substr(t, i, 2) == ", ") return substr(t, 1, i - 1) " and " substr(t, i + 2)
            return t
        }
        # "; where ...": the rack goal over the trials whose new rack had
        # room at the fault (the goal says "where room exists"), when the
        # run recorded it
        function roomgoal(key, lim) {
            if (!(key in roomt)) return ""
            if (!roomn[key]) return sprintf("; where room was free at the fault: no trial of %d", roomt[key])
            return sprintf("; where room was free at the fault (%d of %d trials): %s (the slowest %.1f s)", roomn[key],
                roomt[key], roommx[key] <= lim ? "met" : "not met", roommx[key])
        }
        # each kind'"'"'s goal in seconds: its p99 (a rack: every trial)
        function limit(k) { return (k == "drain") ? 5 : (k == "slurmd" || k == "silent") ? 20 : 60 }
        # the goals, nvlslice against its own and Slurm alone'"'"'s lines
        function goals(first, rest,   i, k, key, e, lim) {
            wrap("the goals, met or not by the lines above (p99 of fewer than 100 trials: the slowest):", first, first)
            for (i = 1; i <= 4; i++) {
                k = kinds[i]; key = "nvlslice/" k; e = "expedite/" k
                if (!(key in best)) { wrap(label[k] ": not run", first, rest); continue }
                lim = limit(k)
                if (k != "rack")
                    wrap(sprintf("%s, p99 <= %d s: %s (%.1f s)", label[k], lim,
                        mx[key] <= lim ? "met" : "not met", mx[key]), first, rest)
                if (e in best)
                    wrap(sprintf("%s, p50 at most a third of the expedited requeue'"'"'s: %s (%.1f s against %.1f s)",
                        label[k], 3 * p50[key] <= p50[e] ? "met" : "not met", p50[key], p50[e]), first, rest)
                if (k == "rack")
                    wrap(sprintf("%s, every trial within %d s: %s (the slowest %.1f s)%s", label[k], lim,
                        mx[key] <= lim ? "met" : "not met", mx[key], roomgoal(key, lim)), first, rest)
            }
            for (i = 1; i <= 4; i++) {
                key = "24.11/nvlslice/" kinds[i]; k = kinds[i]; lim = limit(k)
                if (key in best)
                    wrap(sprintf("%s on Slurm 24.11 (nvlslice alone: no expedited requeue there), %s %d s: %s (p50 %.1f s, the slowest %.1f s of %d; %s)%s",
                        label[k], k == "rack" ? "every trial within" : "p99 <=", lim, mx[key] <= lim ? "met" : "not met",
                        p50[key], mx[key], best[key], src[key], k == "rack" ? roomgoal(key, lim) : ""), first, rest)
                else
                    wrap(label[k] " on Slurm 24.11: not run", first, rest)
            }
            for (i = 2; i <= 3; i++) {
                key = "300/nvlslice/" kinds[i]; lim = limit(kinds[i])
                if (key in best)
                    wrap(sprintf("%s under Slurm'"'"'s default SlurmdTimeout (300 s), p99 <= %d s: %s (p50 %.1f s, the slowest %.1f s of %d; %s)",
                        label[kinds[i]], lim, mx[key] <= lim ? "met" : "not met", p50[key], mx[key], best[key], src[key]), first, rest)
                else
                    wrap(label[kinds[i]] " under Slurm'"'"'s default SlurmdTimeout (300 s): not run", first, rest)
            }
            treegoal("", "", first, rest)
            treegoal("24.11/", " on Slurm 24.11", first, rest)
            price("steady", "beside the measured job", 32, first, rest)
            price("alone", "alone on the whole cluster", 0, first, rest)
        }
        # a silent node at the places with children in the step'"'"'s reverse
        # tree, p99 <= 20 s: at TCPTimeout 1 (the admin guide'"'"'s setting for
        # it) and at Slurm'"'"'s default 2 s, each from its own runs
        function treegoal(v, on, first, rest,   t, key, s, from) {
            s = ""
            for (t = 1; t <= 2; t++) {
                key = "tree/" t "/" v "nvlslice/silent"
                if (!(key in best)) continue
                from = src[key]; sub(/, TCPTimeout [0-9]+ s$/, "", from)
                s = s (s == "" ? "" : "; ") sprintf("at TCPTimeout %d s: %s (p50 %.1f s, the slowest %.1f s of %d; %s)", t,
                    mx[key] <= 20 ? "met" : "not met", p50[key], mx[key], best[key], from)
            }
            if (s != "")
                wrap(sprintf("a silent node%s with children in the srun step'"'"'s reverse tree (places 2, 10, 18 and 26 of 32), p99 <= 20 s: %s", on, s), first, rest)
        }
        # the spares'"'"' price in one phase: the backlog'"'"'s node-hours an
        # hour below Slurm alone'"'"'s best side'"'"'s, against the spares'"'"' share
        # of the nodes the backlog may use there (2 of each rack'"'"'s 18; the
        # measured job'"'"'s MEASURED nodes are not the backlog'"'"'s)
        function price(phase, what, measured, first, rest,   e, p, b, loss, nodes, spares, share, each) {
            e = phase "/expedite"; p = phase "/plain"
            if (!((phase "/nvlslice") in pnh) || (!(e in pnh) && !(p in pnh))) {
                wrap("the spares'"'"' price, the backlog " what ": not measured", first, rest); return
            }
            b = e
            if (!(b in pnh) || ((p in pnh) && pnh[p] > pnh[b])) b = p
            loss = 100 * (pnh[b] - pnh[phase "/nvlslice"]) / pnh[b]
            nodes = wnodes[phase]; spares = 2 * nodes / 18
            share = 100 * spares / (nodes - measured)
            each = (pn[phase] > 1) ? sprintf("; a run: %.0f to %.0f %%", plo[phase], phi[phase]) : ""
            wrap(sprintf("the spares'"'"' price, the backlog %s: its node-hours an hour at most the spares'"'"' share of the nodes it may use (%d of %d, %.0f %%) below Slurm alone'"'"'s best: %s (%.0f %% %s the %s'"'"'s, %s %s%s)",
                what, spares, nodes - measured, share, loss <= share ? "met" : "not met", loss < 0 ? -loss : loss,
                loss < 0 ? "above" : "below", name[substr(b, length(phase) + 2)],
                pn[phase] > 1 ? "runs" : "run", andlist(plist[phase]) (pn[phase] > 1 ? " pooled" : ""), each), first, rest)
        }
        function steadies(first, rest) {
            windows("steady", "the backlog beside the measured job", first, rest)
            windows("alone", "the backlog alone on the whole cluster", first, rest)
        }
        # the pooled runs a side (each run in brackets), then the newest
        # window of a side no pooled run has
        function windows(phase, what, first, rest,   j, t, k) {
            t = ""
            for (j = 1; j <= 3; j++) {
                k = phase "/" sides[j]
                if (!(k in pnh)) continue
                if (pn[phase] > 1)
                    t = join(t, sprintf("%s %.1f (runs %s pooled: %s)", name[sides[j]], pnh[k],
                        andlist(plist[phase]), andlist(pvals[k])))
                else
                    t = join(t, windowline(plist[phase], phase, sides[j]))
            }
            for (j = 1; j <= 3; j++) {
                k = phase "/" sides[j]
                if ((k in newest) && !(k in pnh)) t = join(t, windowline(newest[k], phase, sides[j]))
            }
            if (t != "") wrap(what ", no failure, node-hours an hour: " t, first, rest)
        }
        END {
            if (mode == "cells") {
                for (key in best) { if (key ~ /^(300|24\.11)\//) continue; split(key, sk, "/"); print sk[1], sk[2], best[key], p50[key], p90[key], mx[key] }
                exit
            }
            split("drain slurmd silent rack", kinds, " ")
            label["drain"] = "a drained node"; label["slurmd"] = "a killed slurmd"
            label["silent"] = "a silent node"; label["rack"] = "its whole rack"
            split("nvlslice expedite plain", sides, " ")
            pool("steady"); pool("alone")
            name["nvlslice"] = "nvlslice"; name["expedite"] = "expedited requeue"; name["plain"] = "plain requeue"
            if (mode == "busy") {
                print "  seconds from the failure to the job running again, p50 / p90 / slowest"
                print "  (trials; trials with each slice in one rack), measured in:"
                sources()
                for (i = 1; i <= 4; i++) {
                    k = kinds[i]
                    printf "\n  %s\n", label[k]
                    for (j = 1; j <= 3; j++) {
                        key = sides[j] "/" k
                        if (!(key in best)) { printf "    %-18s not run\n", name[sides[j]]; continue }
                        printf "    %-18s %5.1f / %5.1f / %5.1f (%d; %s)\n", name[sides[j]],
                            p50[key], p90[key], mx[key], best[key], whole[key]
                    }
                }
                print ""
                steadies("  ", "    ")
                print ""
                goals("  ", "    ")
                exit
            }
            print "  p50 / p90 (trials) nvlslice               expedited requeue      plain requeue"
            for (i = 1; i <= 4; i++) {
                k = kinds[i]
                row = sprintf("  %-18s %s %s %s", label[k], cell("nvlslice/" k), cell("expedite/" k), cell("plain/" k))
                sub(/ +$/, "", row)
                print row
            }
            sources()
            print ""
            steadies("  ", "    ")
            print ""
            goals("  ", "    ")
        }
        # where each side was measured: one line a side when every kind
        # comes from the same run, else a line a kind
        function sources(   i, j, s, same, differ, any, key) {
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
}

block() {
    echo "$BEGIN"
    bench readme
    # the simulator on the bench's cluster and load (tests/cluster/sim_check.sh)
    [ -r "$SIMOUT" ] && awk '
        $1 == "#" && $2 ~ /^(drain|slurmd|silent|rack)$/ && $3 ~ /^(nvlslice|expedite|plain)$/ {
            n = split($0, f, /  +/)   # the columns are two blanks apart: "P50 / P90 (N)"
            split(f[4], c, " "); gsub(/[()]/, "", c[4])
            v[$2 "/" $3] = sprintf("%6.1f / %5.1f s (%2d)  ", c[1], c[3], c[4])
        }
        END {
            print ""
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
    awk "$WRAP"'
        /^# run: / { sub(/^# run: /, ""); wrap("measured by the test command on " $0, "  ", "    "); next }
        /^## / { sub(/^## /, ""); printf "\n  %s\n", $0; next }
        /^# measured: / { sub(/^# measured: /, ""); wrap($0, "    ", "      ") }' "$MEASURED"
    echo "$MEND"
}

busy_block() {
    echo "$BBEGIN"
    bench busy
    echo "$BEND"
}

# sim_check.out's table as it is kept: nvl-sim is deterministic, and the
# test command checks on every run that the tree's nvl-sim prints it
simcheck_block() {
    echo "$SBEGIN"
    echo "  nvl-sim of the tree (the test command checks on every run that it prints"
    echo "  this), beside the bench's runs of the block above; seconds, p50 / p90"
    echo "  (failures); a cell agrees within a factor of 3 or 20 s, p50 and p90:"
    echo
    awk '$1 == "#" && $2 ~ /^(kind|drain|slurmd|silent|rack)$/ { sub(/^# /, "  "); print }' "$SIMOUT"
    echo "$SEND"
}

# replay.out: its first line (date, commit of the binaries, settings), the
# trace, and the table of real against simulated
replay_block() {
    echo "$RBEGIN"
    awk "$WRAP"'
        NR == 1 { sub(/^# tests\/cluster\/replay.sh /, ""); wrap("measured by tests/cluster/replay.sh " $0, "  ", "    "); next }
        /^# replay: slurm-wlm / { sub(/^# replay: /, ""); wrap($0, "  ", "    "); next }
        /^# time from a node failure/ { sub(/^# /, ""); wrap($0 ":", "  ", "    "); print ""; next }
        $1 == "#" && ($2 == "policy" || (($2 == "nvlslice" || $2 == "expedite") && ($3 == "real" || $3 == "sim"))) {
            sub(/^# /, "  "); print }' "$REPLAY"
    echo "$REND"
}

# a kept tool output (sim_capacity.out, nvl_bench.out): its run line, then
# the command and what it printed
kept_block() { # FILE
    awk "$WRAP"'
        /^# run: / { sub(/^# run: /, ""); wrap("measured on " $0 ":", "  ", "    "); print ""; next }
        /^# / { next }
        { print ($0 == "" ? "" : "  " $0) }' "$1"
}

capacity_block() {
    echo "$CBEGIN"
    kept_block "$CAPACITY"
    echo "$CEND"
}

# sim_trace.out, per MTBF: each policy's goodput and the seconds from a
# failure to its job running again; nvlslice's goodput against expedited
# block seed by seed; and the goal, at least 1.00x at every MTBF
trace_block() {
    echo "$TBEGIN"
    awk "$WRAP"'
        /^# run: / { sub(/^# run: /, ""); wrap("measured on " $0 ":", "  ", "    "); print ""; next }
        /^# / { next }
        /^\$ / { print "  " $0; next }
        /^trace: / { wrap($0, "  ", "    "); next }
        /^MTBF [0-9]+ days per node/ {
            m = $2; ms[++nm] = m; t = 0
            printf "\n  MTBF %s days per node, means over the seeds\n", m
            printf "  %-15s %7s %9s   %s\n", "policy", "goodput", "failures", "p50 / p90 / p99 s, failure -> running again"
            next
        }
        /^policy +goodput/ { t = 1; next }
        /^What a failed job loses/ { t = 2; next }
        /^Jobs of a slice or more/ { t = 3; next }
        /^nvlslice goodput, seed by seed/ {
            if (match($0, /[0-9.]+x \([0-9.]+-[0-9.]+\) block_expedite/)) {
                vs[m] = substr($0, RSTART, RLENGTH); sub(/ block_expedite$/, "", vs[m])
                r[m] = vs[m]; sub(/x .*/, "", r[m])
            }
            next
        }
        t == 1 && NF > 5 && $2 ~ /^[0-9.]+$/ { gp[$1] = $2; order[++np] = $1; next }
        t == 2 && $1 == "policy" { next }
        t == 2 && NF > 5 && $2 ~ /^[0-9]+$/ {
            printf "  %-15s %7s %9s   %s / %s / %s\n", $1, gp[$1], $2, $3, $4, $5
            next
        }
        t == 2 && NF == 0 && m != "" && !(m in done) {
            done[m] = 1
            if (m in vs) wrap("nvlslice'"'"'s goodput against block_expedite, seed by seed (mean, min-max): " vs[m], "  ", "    ")
        }
        END {
            miss = ""
            for (i = 1; i <= nm; i++) if (ms[i] in r && r[ms[i]] + 0 < 1) miss = miss (miss == "" ? "" : ", ") ms[i] " days (" r[ms[i]] "x)"
            print ""
            wrap("the goal, nvlslice'"'"'s goodput at least 1.00x expedited block'"'"'s at every MTBF: " (miss == "" ? "met" : "not met at " miss), "  ", "    ")
        }' "$TRACE"
    echo "$TEND"
}

# nvl_bench.out, and its targets (the tool prints them) met or not
nvlbench_block() {
    echo "$NBEGIN"
    kept_block "$NVLBENCH"
    awk "$WRAP"'
        /^engine / { ep99 = $6 }
        /^speedup / { s99 = $2; s50 = $5; sub(/x.*/, "", s99); sub(/x.*/, "", s50)
            if (match($0, /p99 < [0-9]+ us/)) { t = substr($0, RSTART + 6, RLENGTH - 6); sub(/ us/, "", t); tp99 = t + 0 }
            if (match($0, /speedup >= [0-9]+/)) tsp = substr($0, RSTART + 11, RLENGTH - 11) + 0 }
        /^steady cycle / { c50 = $4; cmax = $7 }
        /^ratio of p50s/ {
            if (match($0, /: [0-9.]+x median/)) { ratio = substr($0, RSTART + 2, RLENGTH - 2); sub(/x median/, "", ratio) }
            if (match($0, /cycle <= [0-9]+ ms/)) { t = substr($0, RSTART + 9, RLENGTH - 9); sub(/ ms/, "", t); tcyc = t + 0 }
            if (match($0, />= [0-9]+x\)/)) { t = substr($0, RSTART + 3, RLENGTH - 3); sub(/x\)/, "", t); tratio = t + 0 } }
        END {
            print ""
            print "  its targets:"
            wrap(sprintf("placement p99 < %d us: %s (%s us)", tp99, ep99 + 0 < tp99 ? "met" : "not met", ep99), "  ", "    ")
            wrap(sprintf("placement speedup >= %dx: %s (%sx at p99, %sx at p50)", tsp,
                s99 + 0 >= tsp && s50 + 0 >= tsp ? "met" : "not met", s99, s50), "  ", "    ")
            wrap(sprintf("steady cycle <= %d ms: %s (p50 %s ms, max %s ms)", tcyc,
                cmax + 0 <= tcyc ? "met" : "not met", c50, cmax), "  ", "    ")
            wrap(sprintf("cycle >= %dx faster than its baseline: %s (%sx, the median of the runs)", tratio,
                ratio + 0 >= tratio ? "met" : "not met", ratio), "  ", "    ")
        }' "$NVLBENCH"
    echo "$NEND"
}

# every block: FILE-NAME BEGIN END FUNCTION KEPT-OUTPUT
BLOCKS=(
    "README|$BEGIN|$END|block|bench_busy.out and sim_check.out"
    "doc/figures.txt|$MBEGIN|$MEND|measured_block|measured.out"
    "doc/figures.txt|$BBEGIN|$BEND|busy_block|bench_busy.out"
    "doc/figures.txt|$SBEGIN|$SEND|simcheck_block|sim_check.out"
    "doc/figures.txt|$RBEGIN|$REND|replay_block|replay.out"
    "doc/figures.txt|$CBEGIN|$CEND|capacity_block|sim_capacity.out"
    "doc/figures.txt|$TBEGIN|$TEND|trace_block|sim_trace.out"
    "doc/figures.txt|$NBEGIN|$NEND|nvlbench_block|nvl_bench.out"
)

# replace FILE BEGIN END BLOCKFILE: FILE with the lines from BEGIN to END
# replaced by BLOCKFILE (to stdout); exit 3 when FILE has no BEGIN line
replace() {
    awk -v begin="$2" -v end="$3" -v blockfile="$4" '
        $0 == begin { while ((getline l < blockfile) > 0) print l; close(blockfile); skip = 1; found = 1; next }
        skip && $0 == end { skip = 0; next }
        !skip { print }
        END { if (!found) exit 3 }' "$1"
}

path_of() { case $1 in README) echo "$README" ;; doc/figures.txt) echo "$FIGURES" ;; esac; }

case "${1:-}" in
"")
    for b in "${BLOCKS[@]}"; do IFS='|' read -r _ _ _ fn _ <<< "$b"; "$fn"; echo; done
    ;;
--cells) bench cells | sort ;;
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
    cp "$README" "$work/README"
    cp "$FIGURES" "$work/doc-figures.txt"
    rc=0
    for b in "${BLOCKS[@]}"; do
        IFS='|' read -r file begin end fn kept <<< "$b"
        new=$work/${file//\//-}
        "$fn" > "$work/block"
        replace "$new" "$begin" "$end" "$work/block" > "$work/next" ||
            { echo "figures.sh: $file has no line \"$begin\"" >&2; exit 1; }
        if [ "$1" = --check ] && ! cmp -s "$work/next" "$new"; then
            echo "figures.sh: $file's block \"${begin#  }\" differs from tests/cluster/$kept (tests/cluster/figures.sh --update):" >&2
            diff "$new" "$work/next" >&2 || true
            rc=1
        fi
        mv "$work/next" "$new"
    done
    if [ "$1" = --check ]; then
        [ "$rc" = 0 ] && echo "figures: README's and doc/figures.txt's ${#BLOCKS[@]} blocks of figures are the kept outputs' (tests/cluster/*.out)"
        exit "$rc"
    fi
    cp "$work/README" "$README"
    cp "$work/doc-figures.txt" "$FIGURES"
    ;;
*) echo "usage: figures.sh [--update|--check|--cells|--record LOG COMMIT [NOTE]]" >&2; exit 2 ;;
esac
