#!/bin/bash
# The install guide as a test: doc/admin-guide.txt's block "Installing, in
# an order that works" run as written, on a site before nvlslice (cluster.sh
# with NVL_SITE=bare: its own Licenses= line, no topology plugin, no helper,
# no package of nvlslice installed: the guide's steps 1 and 4 install them
# from the .deb files), in the installed-package roots (run.sh:
# NVL_SLURM=installed NVL_SITE=bare, gate mode on 22.05;
# NVL_SLURM=installed-26.05 NVL_SITE=bare, native mode).
#
# What is not this one machine's is mapped, and only that: the test
# cluster's /etc/slurm is DIR/etc (the packages' files there copied in with
# their paths), the live NVLink fabric is the recorded report DIR/fabric.txt
# (--live HOSTLIST reads the same report from every node), nvlsliced reads
# DIR/etc/nvlslice.yaml, and systemctl starts the helper and restarts the
# daemons as the units would (slurmd too, as the guide's comment asks for on
# every node). Each line of the block runs as written otherwise, twice (the
# guide says each step may be run again).
#
# Then: the licenses merged into the site's line, the blocks only where
# Slurm has them, the dry run changed nothing, the helper runs in the mode
# of this Slurm, a slice job is placed inside a rack and a drained node of
# it repaired from its rack's spare.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
DIR=$NVL_CLUSTER_DIR
GUIDE=$HERE/../../doc/admin-guide.txt
DEBS=${NVL_GUIDE_DEBS:-/var/tmp/nvlslice-debs}
OUT=$DIR/guide
rm -rf "$OUT" && mkdir -p "$OUT"
SITE=$(sed -n 's/.* site=\([a-z]*\).*/\1/p' "$DIR/etc/geometry" 2>/dev/null)
case $SITE in bare | tree) ;; *) echo "test_guide.sh: needs a site before nvlslice (NVL_SITE=bare or tree, run.sh)" >&2; exit 1 ;; esac
ls "$DEBS"/nvlsliced_*.deb >/dev/null 2>&1 ||
    { echo "test_guide.sh: no packages in $DEBS (NVL_SLURM=installed run.sh copies them there)" >&2; exit 1; }

# The block: the guide's indented lines from its heading to the paragraph
# after it ("Until step 4 ..."), their two spaces of indent taken off
awk '/^Installing, in an order that works/ { f = 1; next } /^Until step 4/ { f = 0 } f && /^  / { print substr($0, 3) }' \
    "$GUIDE" > "$OUT/block.guide"
# the test cluster's /etc/slurm
sed "s|/etc/slurm\b|$DIR/etc|g" "$OUT/block.guide" > "$OUT/block.sh"
expect_match "the guide's install block is found" "systemctl enable --now nvlsliced" "$(cat "$OUT/block.guide")"
expect_eq "and /etc/slurm is the only path mapped in it" "" \
    "$(diff <(sed "s|$DIR/etc|/etc/slurm|g" "$OUT/block.sh") "$OUT/block.guide")"
echo "# the guide's block: $(wc -l < "$OUT/block.sh") lines, $(grep -c '^ *#' "$OUT/block.sh") of them comments"

# A site before nvlslice: none of its packages installed (run.sh purged
# them), none of their files in the site's /etc/slurm (DIR/etc here)
rm -f "$DIR/etc/nvlslice-map.yaml" "$DIR/etc/nvlslice.yaml" "$DIR/etc/plugstack.conf.d/nvlslice.conf"
installed() { dpkg-query -W -f='${Package}:${Status}\n' nvlslice-spank nvlsliced nvlslice-tools 2>/dev/null | sed -n 's/:install ok installed$//p' | LC_ALL=C sort | paste -sd' '; }
expect_eq "before the guide: no package of nvlslice installed" "" "$(installed)"
cp "$DIR/etc/slurm.conf" "$OUT/slurm.conf.before"
[ -f "$DIR/etc/topology.conf" ] && cp "$DIR/etc/topology.conf" "$OUT/topology.conf.before"

# What the block's commands mean on this machine
cat > "$OUT/prelude.sh" <<PRELUDE
set -e
export DEBIAN_FRONTEND=noninteractive
DIR=$DIR OUT=$OUT CL=$HERE/cluster.sh
nvl-topo() {
    # --live HOSTLIST asks every node for its GPUs' fabric; here the
    # recorded report of the same nodes answers
    local a=() live=0
    for x in "\$@"; do
        if [ "\$live" = 1 ]; then live=0; continue; fi
        if [ "\$x" = --live ]; then live=1; a+=(--fabric "\$DIR/fabric.txt"); continue; fi
        a+=("\$x")
    done
    /usr/bin/nvl-topo "\${a[@]}"
}
nvlsliced() {
    /usr/sbin/nvlsliced --config "\$DIR/etc/nvlslice.yaml" "\$@"
    local rc=\$?
    # what Slurm holds right after the dry run
    case " \$* " in *" --dry-run "*) scontrol show reservation > "\$OUT/after-dry-run.txt" 2>&1 || true ;; esac
    return \$rc
}
# apt installs the packages' files in /etc/slurm, the site's DIR/etc here:
# they are copied in (their paths with them), unless the admin has one
# there already (dpkg keeps an edited configuration file too)
apt() {
    command apt "\$@"
    local f
    for f in nvlslice.yaml plugstack.conf.d/nvlslice.conf; do
        if [ -e "/etc/slurm/\$f" ] && [ ! -e "\$DIR/etc/\$f" ]; then
            mkdir -p "\$(dirname "\$DIR/etc/\$f")"
            sed "s|/etc/slurm/|\$DIR/etc/|g" "/etc/slurm/\$f" > "\$DIR/etc/\$f"
        fi
    done
}
systemctl() {
    case "\$*" in
    "enable --now nvlsliced")
        # as the unit: its RuntimeDirectory, the daemon in the background
        mkdir -p /run/nvlsliced
        if [ -f "\$DIR/run/nvlsliced.pid" ] && kill -0 "\$(cat "\$DIR/run/nvlsliced.pid")" 2>/dev/null; then return 0; fi
        (cd / && exec setsid /usr/sbin/nvlsliced --config "\$DIR/etc/nvlslice.yaml") >> "\$DIR/log/nvlsliced.log" 2>&1 < /dev/null &
        echo \$! > "\$DIR/run/nvlsliced.pid" ;;
    "restart slurmctld")
        echo restart >> "\$OUT/restarts"
        "\$CL" restart-daemons ;;
    "restart nvlsliced")
        if [ -f "\$DIR/run/nvlsliced.pid" ]; then
            local p=\$(cat "\$DIR/run/nvlsliced.pid")
            kill "\$p" 2>/dev/null || true
            for _ in \$(seq 100); do kill -0 "\$p" 2>/dev/null || break; sleep 0.1; done
        fi
        rm -f "\$DIR/run/nvlsliced.pid"
        systemctl enable --now nvlsliced ;;
    *) echo "test_guide: systemctl \$* is not mapped" >&2; return 1 ;;
    esac
}
PRELUDE
run_block() { # N: the block's Nth run
    # from where the packages are, as an admin runs "apt install ./x.deb"
    (cd "$DEBS" && timeout 600 bash -c ". '$OUT/prelude.sh'; . '$OUT/block.sh'" < /dev/null) > "$OUT/run$1.log" 2>&1
}

echo "# the guide's block, first run"
t0=$(now)
run_block 1; rc=$?
sed 's/^/#   /' "$OUT/run1.log" | tail -25
expect_eq "the block runs to its end ($(secs "$t0" "$(now)") s)" "0" "$rc"
expect_eq "its steps 1 and 4 installed the packages" "nvlslice-spank nvlslice-tools nvlsliced" "$(installed)"
expect_match "the plugin line is live, the package's file with the site's paths" "^required .*map=$DIR/etc/nvlslice-map.yaml" \
    "$(cat "$DIR/etc/plugstack.conf.d/nvlslice.conf" 2>/dev/null)"

lic=$(grep -iE '^[[:space:]]*Licenses[[:space:]]*=' "$DIR/etc/slurm.conf")
expect_eq "the licenses join the site's own Licenses= line" "Licenses=lic_a:4,nvlslice_gate:1,nvlslice_lease:1" "$lic"
expect_eq "and nothing else in slurm.conf changed but the topology line" "" \
    "$(diff "$OUT/slurm.conf.before" "$DIR/etc/slurm.conf" | grep '^[<>]' | grep -viE 'Licenses=|TopologyPlugin=topology/block')"
v=$(scontrol --version | awk '{ print $2 }')
at_least() { [ "$(printf '%s\n' "$1" "$v" | sort -V | head -1)" = "$1" ]; }
if [ "$SITE" = tree ]; then
    want=gate
    expect_eq "a site with its tree: its topology.conf is left as it was" "" "$(diff "$OUT/topology.conf.before" "$DIR/etc/topology.conf")"
    expect_eq "and its TopologyPlugin line alone" "TopologyPlugin=topology/tree" "$(grep -iE '^TopologyPlugin=' "$DIR/etc/slurm.conf")"
    expect_eq "no restart" "" "$(cat "$OUT/restarts" 2>/dev/null)"
elif at_least 24.05; then
    want=native
    expect_eq "Slurm $v: TopologyPlugin=topology/block added once" "1" "$(grep -ciE '^TopologyPlugin=topology/block' "$DIR/etc/slurm.conf")"
    expect_match "its topology.conf has a block for each rack" "BlockName=rack001 .*BlockName=rack002 " "$(tr '\n' ' ' < "$DIR/etc/topology.conf")"
    expect_match "slurmctld and the slurmds were restarted for it" "restart" "$(cat "$OUT/restarts" 2>/dev/null)"
else
    want=gate
    expect_eq "Slurm $v: no topology plugin added (22.05 has no topology/block)" "0" "$(grep -ciE '^TopologyPlugin=' "$DIR/etc/slurm.conf")"
    expect_eq "and no slurmctld restart" "" "$(cat "$OUT/restarts" 2>/dev/null)"
fi
expect_match "the map is discovered from the fabric: 2 racks" "rack001.*rack002" "$(tr '\n' ' ' < "$DIR/etc/nvlslice-map.yaml")"
if [ -f "$OUT/after-dry-run.txt" ]; then
    expect_eq "the dry run made no reservation" "" "$(grep -o 'ReservationName=nvlslice[^ ]*' "$OUT/after-dry-run.txt")"
else
    not_ok "the dry run made no reservation: it did not run"
fi
expect_match "the dry run logged what it would do" "dry run|would" "$(cat "$OUT/run1.log")"
wait_for 20 mode_is
expect_eq "the helper runs in $want mode (mode=auto, Slurm $v)" "$want" "$(nvl_mode)"
expect_match "the gate and spare reservations are there" "nvlslice_gate.*nvlslice_spares|nvlslice_spares.*nvlslice_gate" \
    "$(scontrol show reservation 2>/dev/null | grep -o 'ReservationName=[^ ]*' | paste -sd' ')"
expect_match "the plugin line is live" "^required " "$(grep -v '^#' "$DIR/etc/plugstack.conf.d/nvlslice.conf")"

echo "# the guide's block, again: nothing added twice, nothing overwritten"
for f in slurm.conf topology.conf nvlslice-map.yaml plugstack.conf.d/nvlslice.conf; do
    [ -f "$DIR/etc/$f" ] && md5sum < "$DIR/etc/$f"
done > "$OUT/sums1"
helper_pid=$(cat "$DIR/run/nvlsliced.pid" 2>/dev/null)
run_block 2; rc=$?
expect_eq "the second run succeeds" "0" "$rc"
for f in slurm.conf topology.conf nvlslice-map.yaml plugstack.conf.d/nvlslice.conf; do
    [ -f "$DIR/etc/$f" ] && md5sum < "$DIR/etc/$f"
done > "$OUT/sums2"
expect_eq "slurm.conf, topology.conf, the map and the plugin line are as the first run left them" "" "$(diff "$OUT/sums1" "$OUT/sums2")"
expect_eq "the same helper runs on" "$helper_pid" "$(cat "$DIR/run/nvlsliced.pid" 2>/dev/null)"

echo "# the site at work: a slice job placed, a drained node repaired"
wait_for 60 all_up
J=$(sbatch --parsable -N 16 --nvl-slice=16 -J guide --wrap 'sleep 600' 2>&1)
expect_match "a slice job is accepted (the plugin loads from the packages' line)" "^[0-9]+$" "$J"
if wait_for 60 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]"; then
    n=$(nodes_of "$J")
    expect_eq "it runs inside one rack ($n)" "1" "$(racks_of "$n" | wc -w)"
    victim=$(scontrol show hostnames "$n" | sed -n 5p)
    t0=$(now)
    scontrol update nodename="$victim" state=drain reason="xid 79: guide test"
    # (state and nodes read at once: between two reads the job may leave
    # RUNNING for its requeue)
    repaired() {
        local st m
        read -r st m < <(squeue -h -j "$J" -o '%T %N')
        [ "$st" = RUNNING ] && [ -n "$m" ] && [ "$m" != "$n" ] && ! scontrol show hostnames "$m" | grep -qx "$victim" &&
            echo "$m" > "$OUT/repaired-on"
    }
    if wait_for 120 repaired; then
        m=$(cat "$OUT/repaired-on")
        ok "the drained node's job runs again $(secs "$t0" "$(now)") s later, without $victim: $m"
        expect_eq "in the same rack" "$(racks_of "$n")" "$(racks_of "$m")"
    else
        not_ok "the drained node's job is repaired: $(squeue -h -j "$J" -o '%T %r %N'); $(record "$J")"
    fi
else
    not_ok "the slice job runs: $(squeue -h -j "$J" -o '%T %r'); $(record "$J")"
    tail -20 "$DIR/log/nvlsliced.log" | sed 's/^/# /'
fi
scancel "$J" 2>/dev/null
scontrol update nodename=nvl[0001-0036] state=resume 2>/dev/null

if [ "$SITE" = tree ] && at_least 25.05; then
    echo "# beside the site's tree (Slurm $v reads topology.yaml): the guide's two blocks"
    wait_for 60 bash -c '[ -z "$(squeue -h -o %i)" ] && [ -z "$(sinfo -h -t completing -o %N)" ]'
    awk '/^Beside a topology the site already has/ { f = 1; next } /^The site.s topology stays/ { f = 0 } f && /^  / { print substr($0, 3) }' \
        "$GUIDE" > "$OUT/beside.guide"
    expect_match "the guide's block beside a topology is found" "--beside" "$(cat "$OUT/beside.guide")"
    sed "s|/etc/slurm\b|$DIR/etc|g" "$OUT/beside.guide" > "$OUT/beside.sh"
    (timeout 120 bash -c ". '$OUT/prelude.sh'; . '$OUT/beside.sh'" < /dev/null) > "$OUT/beside.log" 2>&1
    expect_eq "it runs to its end" "0" "$?"
    expect_eq "the site's topology.conf is kept beside it" "" "$(diff "$OUT/topology.conf.before" "$DIR/etc/topology.conf.before-nvlslice")"
    y=$(cat "$DIR/etc/topology.yaml" 2>/dev/null)
    expect_match "topology.yaml: the site's tree, the cluster default" "topology: site.*cluster_default: true.*tree:" "$(tr '\n' ' ' <<< "$y")"
    expect_match "and the racks as the block topology nvlslice" "topology: nvlslice.*cluster_default: false.*block:" "$(tr '\n' ' ' <<< "$y")"
    # the guide's second block: Topology=nvlslice on the slice jobs'
    # partition (batch, as the guide names it; urgent stays on the tree),
    # mode=native on the plugstack line and in nvlslice.yaml, slurmctld
    # and the helper restarted; run twice (it may be run again)
    awk '/each may be run again:$/ { f = 1; next } /^A slice job in a partition of the tree/ { f = 0 } f && /^  / { print substr($0, 3) }' \
        "$GUIDE" > "$OUT/native.guide"
    expect_match "the guide's block for native mode beside a topology is found" "Topology=nvlslice" "$(cat "$OUT/native.guide")"
    sed "s|/etc/slurm\b|$DIR/etc|g" "$OUT/native.guide" > "$OUT/native.sh"
    for run in 1 2; do
        (timeout 300 bash -c ". '$OUT/prelude.sh'; . '$OUT/native.sh'" < /dev/null) > "$OUT/native$run.log" 2>&1
        expect_eq "it runs to its end (run $run)" "0" "$?"
        [ "$run" = 1 ] && cp "$DIR/etc/slurm.conf" "$OUT/slurm.conf.native1"
    done
    expect_eq "run again, it changes nothing in slurm.conf" "" "$(diff "$OUT/slurm.conf.native1" "$DIR/etc/slurm.conf")"
    expect_eq "one Topology= on the batch partition, none on urgent" "1 0" \
        "$(grep -E '^PartitionName=batch ' "$DIR/etc/slurm.conf" | grep -o 'Topology=' | wc -l) $(grep -E '^PartitionName=urgent ' "$DIR/etc/slurm.conf" | grep -c 'Topology=')"
    wait_for 30 mode_is native
    expect_eq "the helper runs in native mode beside the tree" "native" "$(nvl_mode)"
    expect_eq "slurmctld gives the block partition the racks' topology" "Topology=nvlslice" \
        "$(scontrol show partition batch | grep -o 'Topology=[^ ]*')"
    wait_for 60 all_up
    J=$(sbatch --parsable -p batch -N 16 --nvl-slice=16 -J beside --wrap 'sleep 600' 2>&1)
    if wait_for 60 bash -c "[ \"\$(squeue -h -j $J -o %T)\" = RUNNING ]"; then
        expect_eq "a slice job in the block partition runs inside one rack ($(nodes_of "$J"))" "1" "$(racks_of "$(nodes_of "$J")" | wc -w)"
    else
        not_ok "a slice job in the block partition runs: $(squeue -h -j "$J" -o '%T %r'); $(record "$J")"
        tail -10 "$DIR/log/nvlsliced.log" | sed 's/^/# /'
    fi
    T=$(sbatch --parsable -p urgent -N 2 -J tree --wrap 'sleep 600' 2>&1)
    if wait_for 60 bash -c "[ \"\$(squeue -h -j $T -o %T)\" = RUNNING ]"; then
        expect_eq "a plain job in the tree's partition runs under one leaf switch ($(nodes_of "$T"))" "1" "$(racks_of "$(nodes_of "$T")" | wc -w)"
    else
        not_ok "a plain job in the tree's partition runs: $(squeue -h -j "$T" -o '%T %r')"
    fi
    scancel "$J" "$T" 2>/dev/null
fi
summary guide
