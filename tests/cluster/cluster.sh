#!/bin/bash
# A real multi-host Slurm cluster on this one machine, for nvlslice's tests
# and demo: stock Debian slurmctld/slurmd 22.05, one network namespace,
# hostname and slurmd per compute node on a private bridge, an own munged.
#
#   tests/cluster/cluster.sh up       start (idempotent: a healthy cluster of
#                                     the same geometry is left running)
#   tests/cluster/cluster.sh down     stop what this script started, by PID
#   tests/cluster/cluster.sh status   sinfo of the cluster
#   tests/cluster/cluster.sh env      the export line clients need
#
# Settings (environment):
#   NVL_CLUSTER_DIR    all state: configs, keys, logs, spool (/tmp/nvlslice-cluster)
#   NVL_RACKS          racks (2)          NVL_NODES_PER_RACK  nodes per rack (18)
#   NVL_SPARES         spares per rack in the generated map (2)
#   NVL_SUBNET         first three octets of the private /24 (10.77.0)
#   NVL_SLURMD_TIMEOUT slurm.conf's SlurmdTimeout (10; sites run 60 or more)
#   NVL_TREE_WIDTH     slurm.conf's TreeWidth (64)
#   NVL_TCP_TIMEOUT    slurm.conf's TCPTimeout (unset: Slurm's 2 s)
#   NVL_SLURMD_DEBUG   slurm.conf's SlurmdDebug (unset: info), e.g. debug2 to
#                      see what each slurmd and slurmstepd did in a bench run
#   NVL_PLUGIN         spank_nvlslice.so to load through PlugStackConfig (none)
#   NVL_PLUGIN_ARGS    extra plugstack.conf arguments for it
#   NVL_HELPER         nvlsliced binary to run on the controller host (none)
#   NVL_HELPER_CONF    extra lines for its configuration DIR/etc/nvlslice.yaml
#   NVL_HELPER_CYCLE_MS  its cycle_ms (500: the tests'; the shipped default is 1000)
#   NVL_TOPO           nvl-topo binary (BUILD_DIR/src/tools/nvl-topo): on a
#                      Slurm with topology/block (23.11+: the 24.11 tier, see
#                      run.sh) it writes topology.conf from the rack map
#   NVL_ACCOUNTING     1: real accounting: MariaDB and slurmdbd (Debian's
#                      packages, started and stopped here by PID, never as
#                      system services), AccountingStorageEnforce=
#                      associations,limits,qos, fair-share weights, and two
#                      accounts acct_a and acct_b that root may use
#   NVL_FABRIC_REPORT  a recorded NVLink fabric report (nvl-topo discover's
#                      input): the rack map is discovered from it (racks
#                      rack001.., each with the domain its GPUs report) and
#                      it is copied to DIR/fabric.txt for the plugin's
#                      fabric_report= (none: contrib/gen-map.sh writes the map)
#   NVL_SITE           bare: a site before nvlslice, for the install guide's
#                      test (test_guide.sh): no nvlslice license (the site's
#                      own Licenses=lic_a:4 line), no topology plugin, no
#                      helper, and a plugstack.conf that includes
#                      DIR/etc/plugstack.conf.d/*.conf, where the package's
#                      nvlslice.conf (commented out) is copied once the
#                      install guide's step 1 has installed it;
#                      tree: the same with an InfiniBand tree of its own
#                      (topology/tree, a leaf switch per rack under a core)
#   NVL_KEEP_STATE     1: `up` keeps DIR/state, slurmctld's saved state (by
#                      default a new cluster starts with none)
#   NVL_ADOPT          "nvl0001:PID ...": the running slurmds of another
#                      Slurm's cluster, taken over as a rolling upgrade of
#                      slurmd does (test_upgrade.sh): `up` keeps DIR/spool
#                      (their steps' sockets, bound there by the caller) and
#                      the network, joins each node's network namespace
#                      through its slurmd's PID, and stops that slurmd just
#                      before starting its own; the steps keep running
#   NVL_BACKUP_CTLD    1: a backup slurmctld: slurm.conf lists two
#                      SlurmctldHost (nvlctl, nvlctl2), each slurmctld runs in
#                      a network and host-name namespace of its own (the
#                      controller hosts, 10.x.y.2 and .3; the bridge's .1 is
#                      the clients'), both share StateSaveLocation,
#                      SlurmctldTimeout is short; the backup logs to
#                      DIR/log/slurmctld-nvlctl2.log. The helper runs beside
#                      the primary (in its namespaces, host name nvlctl),
#                      helper-b beside the backup.
# Must run as root (network namespaces). Nodes are nvl0001.. with Slurm
# feature rack001.. naming their rack; the rack map is DIR/etc/nvlslice-map.yaml.
#   tests/cluster/cluster.sh helper   (re)start nvlsliced if it is not running
#   tests/cluster/cluster.sh helper-b | kill-helper-b
#                                     a second nvlsliced (DIR/etc/nvlslice-b.yaml,
#                                     its own lock file, log nvlsliced-b.log),
#                                     beside the backup with NVL_BACKUP_CTLD=1;
#                                     NVLSLICED_TEST_* reach both helpers
#   tests/cluster/cluster.sh stop-ctld [2] | kill-ctld [2] | start-ctld [2]
#                                     a slurmctld stopped, killed (-9), started
#                                     (2: the backup)
#   tests/cluster/cluster.sh restart-daemons
#                                     slurmctld and every slurmd restarted
#   tests/cluster/cluster.sh kill-node N | silence-node N | revive-node N
#                                     node N's slurmd killed; the node silent
#                                     (its processes killed, its link down);
#                                     back (link up, slurmd started)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cluster/host_apt.sh
. "$HERE/host_apt.sh"
SRC=$(cd "$HERE/../.." && pwd)
DIR=${NVL_CLUSTER_DIR:-/tmp/nvlslice-cluster}
RACKS=${NVL_RACKS:-2}
PER=${NVL_NODES_PER_RACK:-18}
SPARES=${NVL_SPARES:-2}
SUBNET=${NVL_SUBNET:-10.77.0}
PLUGIN=${NVL_PLUGIN:-}
PLUGIN_ARGS=${NVL_PLUGIN_ARGS:-}
HELPER=${NVL_HELPER:-}
HELPER_CONF=${NVL_HELPER_CONF:-}
ACCOUNTING=${NVL_ACCOUNTING:-0}
BACKUP=${NVL_BACKUP_CTLD:-0}
SITE=${NVL_SITE:-}
DB_PORT=3317     # MariaDB, on 127.0.0.1 only
DBD_PORT=16819   # slurmdbd
BRIDGE=nvlbr0
BRIDGE_IP=$SUBNET.1
CTL_NAME=nvlctl
CTL_IP=$SUBNET.1
# With a backup: each controller host in namespaces of its own
CTL2_NAME=nvlctl2
CTL2_IP=$SUBNET.3
[ "$BACKUP" = 1 ] && CTL_IP=$SUBNET.2
FIRST_IP=11
NODES=$((RACKS * PER))
CONF=$DIR/etc/slurm.conf
export SLURM_CONF=$CONF

die() { echo "cluster: $*" >&2; exit 1; }
log() { echo "cluster: $*"; }

node_name() { printf 'nvl%04d' "$1"; }
node_ns() { printf 'nvlns%04d' "$1"; }
node_veth() { printf 'nvlv%04d' "$1"; }
# controller N's (1: primary, 2: backup) namespace, name and address
ctl_ns() { echo "nvlnsc$1"; }
ctl_name() { if [ "$1" = 2 ]; then echo "$CTL2_NAME"; else echo "$CTL_NAME"; fi; }
ctl_ip() { if [ "$1" = 2 ]; then echo "$CTL2_IP"; else echo "$CTL_IP"; fi; }
# its pid file: the backup's in DIR/run/ctl2 (its mount namespace has that
# directory over DIR/run: both read SlurmctldPidFile, and a slurmctld
# starting kills the process its pid file names)
ctl_pidfile() { if [ "$1" = 2 ]; then echo "$DIR/run/ctl2/slurmctld.pid"; else echo "$DIR/run/slurmctld.pid"; fi; }

[ "$NODES" -ge 1 ] && [ "$NODES" -le 200 ] || die "NVL_RACKS x NVL_NODES_PER_RACK must be 1..200 (one /24), got $NODES"

install_packages() {
    local missing=()
    local want=(slurmctld slurmd slurm-client munge iproute2 util-linux)
    [ "$ACCOUNTING" = 1 ] && want+=(slurmdbd mariadb-server)
    for p in "${want[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "installing ${missing[*]}"
        host_apt update -qq
        # no system service starts from the install: this script starts
        # and stops its own daemons by PID
        local rcd=/usr/sbin/policy-rc.d had_rcd=0
        [ -e "$rcd" ] && had_rcd=1
        [ "$had_rcd" = 1 ] || printf '#!/bin/sh\nexit 101\n' > "$rcd"
        chmod +x "$rcd"
        host_apt install -y -qq --no-install-recommends "${missing[@]}"
        [ "$had_rcd" = 1 ] || rm -f "$rcd"
    fi
    if [ -e /usr/sbin/slurmstepd-wlm ] && [ "$(readlink -f /usr/sbin/slurmstepd)" != /usr/sbin/slurmstepd-wlm ]; then
        update-alternatives --set slurmstepd /usr/sbin/slurmstepd-wlm >/dev/null 2>&1 || true
    fi
}

# slurm-wlm-emulator, if present, takes over the daemons through
# update-alternatives: use the real ones.
# Through the usual name when it leads to the real daemon: Slurm 24.11
# checks its own program name.
SLURMCTLD=/usr/sbin/slurmctld
SLURMD=/usr/sbin/slurmd
[ -x /usr/sbin/slurmctld-wlm ] && [ "$(readlink -f /usr/sbin/slurmctld)" != /usr/sbin/slurmctld-wlm ] &&
    SLURMCTLD=/usr/sbin/slurmctld-wlm
[ -x /usr/sbin/slurmd-wlm ] && [ "$(readlink -f /usr/sbin/slurmd)" != /usr/sbin/slurmd-wlm ] && SLURMD=/usr/sbin/slurmd-wlm

# A live process (a zombie left unreaped by init counts as dead).
alive() {
    local pid
    [ -f "$1" ] || return 1
    pid=$(cat "$1")
    kill -0 "$pid" 2>/dev/null || return 1
    ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$pid/stat" 2>/dev/null
}

write_map() {
    if [ -n "${NVL_FABRIC_REPORT:-}" ] && [ -n "$SITE" ]; then
        # a site before nvlslice has no nvl-topo yet (the install guide
        # discovers the map from the same report): the same racks written
        # from the geometry, for the nodes' rack features
        cp "$NVL_FABRIC_REPORT" "$DIR/fabric.txt"
        "$SRC/contrib/gen-map.sh" "$RACKS" "$PER" nvl rack "$SPARES" > "$DIR/etc/nvlslice-map.yaml"
    elif [ -n "${NVL_FABRIC_REPORT:-}" ]; then
        local topo=${NVL_TOPO:-${BUILD_DIR:-}/src/tools/nvl-topo}
        [ -x "$topo" ] || die "NVL_FABRIC_REPORT: set NVL_TOPO (or BUILD_DIR) to nvl-topo to discover the map"
        cp "$NVL_FABRIC_REPORT" "$DIR/fabric.txt"
        "$topo" discover --fabric "$DIR/fabric.txt" --rename 'rack{index:03}' > "$DIR/etc/nvlslice-map.yaml" ||
            die "nvl-topo discover --fabric $NVL_FABRIC_REPORT failed"
    else
        "$SRC/contrib/gen-map.sh" "$RACKS" "$PER" nvl rack "$SPARES" > "$DIR/etc/nvlslice-map.yaml"
    fi
}

# slurmctld's version is MAJOR.MINOR or later
slurm_at_least() {
    local v
    v=$("$SLURMCTLD" -V 2>/dev/null | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
    [ -n "$v" ] || return 1
    set -- $v "$1" "$2"
    [ "$1" -gt "$3" ] || { [ "$1" -eq "$3" ] && [ "$2" -ge "$4" ]; }
}
# Slurm 23.11 and later have topology/block: the racks become Slurm blocks,
# as on an NVL72 cluster (the 24.11 and 26.05 tiers). 22.05 has none.
slurm_has_block() { slurm_at_least 23 11; }
# Slurm 25.11 and later can requeue a job at once after a node failure
# (--requeue=expedite, allowed by SlurmctldParameters=enable_expedited_requeue):
# on, so that the tests run slice jobs with it as sites will.
slurm_has_expedite() { slurm_at_least 25 11; }

# Lines slurm.conf needs on this Slurm: topology/block with topology.conf
# written by nvl-topo from the rack map, and (slurmd 24.11 without a cgroup
# file system here) no cgroup plugin.
write_topology() {
    TOPOLOGY_LINES=""
    # what an earlier run's install guide left (test_guide.sh: topology.yaml
    # beside a tree, the site's copy) would be read over topology.conf
    rm -f "$DIR/etc/topology.yaml" "$DIR"/etc/*.before-nvlslice
    if [ "$SITE" = tree ]; then
        # a site with an InfiniBand tree of its own: a leaf switch per rack
        # under one core switch
        local r lo hi
        {
            echo "# the site's InfiniBand tree (tests/cluster/cluster.sh NVL_SITE=tree)"
            for ((r = 1; r <= RACKS; r++)); do
                lo=$(( (r - 1) * PER + 1 )); hi=$(( r * PER ))
                printf 'SwitchName=leaf%02d Nodes=nvl[%04d-%04d] LinkSpeed=400\n' "$r" "$lo" "$hi"
            done
            printf 'SwitchName=core Switches=leaf[01-%02d]\n' "$RACKS"
        } > "$DIR/etc/topology.conf"
        TOPOLOGY_LINES="TopologyPlugin=topology/tree"
        if slurm_has_block; then echo "CgroupPlugin=disabled" > "$DIR/etc/cgroup.conf"; fi
        if slurm_has_expedite; then TOPOLOGY_LINES+=$'\n'"SlurmctldParameters=enable_expedited_requeue"; fi
        return 0
    fi
    slurm_has_block || return 0
    if [ "$SITE" = bare ]; then
        # a site without a topology of its own: the install guide adds the blocks
        rm -f "$DIR/etc/topology.conf"
        echo "CgroupPlugin=disabled" > "$DIR/etc/cgroup.conf"
        if slurm_has_expedite; then TOPOLOGY_LINES="SlurmctldParameters=enable_expedited_requeue"; fi
        return 0
    fi
    local topo=${NVL_TOPO:-${BUILD_DIR:-}/src/tools/nvl-topo}
    [ -x "$topo" ] || die "this Slurm has topology/block: set NVL_TOPO (or BUILD_DIR) to nvl-topo to write topology.conf"
    "$topo" export --map "$DIR/etc/nvlslice-map.yaml" --format block > "$DIR/etc/topology.conf" ||
        die "nvl-topo export --format block failed"
    echo "CgroupPlugin=disabled" > "$DIR/etc/cgroup.conf"
    TOPOLOGY_LINES="TopologyPlugin=topology/block"
    if slurm_has_expedite; then TOPOLOGY_LINES+=$'\n'"SlurmctldParameters=enable_expedited_requeue"; fi
}

# The daemons' /etc/hosts (bind-mounted in their own mount namespace): every
# cluster name and address, as a real cluster resolves them. slurmctld 24.11
# looks up the name of every peer that connects; without an answer from
# files the lookup waits out the resolver (5 s), and a burst of RPCs (32
# epilog messages, parallel sbatch) stalls behind it.
write_hosts() {
    local i
    {
        echo "127.0.0.1 localhost"
        echo "$CTL_IP $CTL_NAME"
        [ "$BACKUP" = 1 ] && echo "$CTL2_IP $CTL2_NAME"
        for ((i = 1; i <= NODES; i++)); do echo "$SUBNET.$((FIRST_IP + i - 1)) $(node_name "$i")"; done
    } > "$DIR/etc/hosts"
}

write_conf() {
    local nodes_line="" r lo hi feat ACCOUNTING_LINES CTL_LINES GRES_ATTR="" i
    local LICENSES="Licenses=nvlslice_gate:1,lic_a:4,nvlslice_lease:1"
    [ -n "$SITE" ] && LICENSES="Licenses=lic_a:4"
    # the settings doc/admin-guide.txt recommends for nvlslice (a site
    # before it has Slurm's defaults: TreeWidth 16, batch_sched_delay 3);
    # its TCPTimeout=1, for a network that drops no SYN, only with
    # NVL_TCP_TIMEOUT=1 (the busy bench's nvlslice runs): the test
    # command's three tiers share two cores, where a full listen queue
    # may drop one
    local TREE_LINE="TreeWidth=${NVL_TREE_WIDTH:-64}" SCHED_DELAY=",batch_sched_delay=0"
    [ -n "$SITE" ] && TREE_LINE="# TreeWidth: Slurm's default (a site before nvlslice)" && SCHED_DELAY=""
    write_hosts
    if [ "$ACCOUNTING" = 1 ]; then
        # slurmdbd over munge: with a munged of its own, the connection
        # names the socket in AccountingStoragePass (AuthInfo is not used
        # for it). Fair-share decays fast, so that usage counts within a test.
        ACCOUNTING_LINES="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$DIR/munge/munge.socket.2
AccountingStorageEnforce=associations,limits,qos
PriorityWeightFairshare=100000
PriorityWeightQOS=10000
PriorityDecayHalfLife=0-0:10:00
PriorityCalcPeriod=1
GresTypes=gpu
AccountingStorageTRES=gres/gpu"
        # 4 GPUs a node, so that GrpTRES=gres/gpu limits apply to jobs that
        # ask for them (--gres=gpu:4). slurmd counts a GPU only by its
        # device file, and takes only character or block devices: stand-ins
        # of /dev/null's kind, in the cluster's own directory
        mkdir -p "$DIR/dev"
        for i in 0 1 2 3; do
            [ -e "$DIR/dev/nvidia$i" ] || mknod "$DIR/dev/nvidia$i" c 1 3 2>/dev/null || : > "$DIR/dev/nvidia$i"
        done
        echo "Name=gpu File=$DIR/dev/nvidia[0-3]" > "$DIR/etc/gres.conf"
        GRES_ATTR=" Gres=gpu:4"
    else
        rm -f "$DIR/etc/gres.conf"
        ACCOUNTING_LINES="AccountingStorageType=accounting_storage/none"
    fi
    CTL_LINES="SlurmctldHost=$CTL_NAME($CTL_IP)"
    if [ "$BACKUP" = 1 ]; then
        # the backup takes over 5 s after the primary stopped answering
        # (Slurm's default: 120 s)
        CTL_LINES+=$'\n'"SlurmctldHost=$CTL2_NAME($CTL2_IP)"$'\n'"SlurmctldTimeout=5"
    fi
    for ((r = 1; r <= RACKS; r++)); do
        lo=$(( (r - 1) * PER + 1 )); hi=$(( r * PER ))
        # its rack
        feat=$(printf 'rack%03d' "$r")
        nodes_line+="NodeName=$(printf 'nvl[%04d-%04d]' "$lo" "$hi") NodeAddr=$SUBNET.[$((FIRST_IP + lo - 1))-$((FIRST_IP + hi - 1))] CPUs=1 RealMemory=500 Features=$feat${GRES_ATTR} State=UNKNOWN"$'\n'
    done
    cat > "$CONF" <<CONF
# Written by tests/cluster/cluster.sh: nvlslice's local test cluster.
ClusterName=nvltest
$CTL_LINES
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket.2,cred_expire=30
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=${NVL_SLURMD_DEBUG:-info}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$ACCOUNTING_LINES
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=${NVL_SLURMD_TIMEOUT:-10}
# TreeWidth above every job's node count: slurmctld sends a job's messages
# to each of its nodes itself, so that a silent node heads no branch of the
# fan-out (its branch would wait MessageTimeout for it), as
# doc/admin-guide.txt ("silent") tells sites (Slurm's default: 16)
$TREE_LINE
${NVL_TCP_TIMEOUT:+TCPTimeout=$NVL_TCP_TIMEOUT}
JobRequeue=1
UnkillableStepTimeout=120
MinJobAge=600
# batch_sched_delay=0: as doc/admin-guide.txt tells sites to set it (a released job
# is scheduled at the next second, not up to 3 s later)
SchedulerParameters=sched_interval=5,bf_interval=5$SCHED_DELAY
# Slurm's own ordering, which slice jobs must keep: multifactor with
# non-zero weights (fair-share and QOS need accounting, which this cluster
# does not run).
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightJobSize=100
PriorityWeightPartition=10000
PriorityMaxAge=1-0
# The gate slice jobs wait behind until nvlsliced places them (nvlslice(8)).
$LICENSES
MailProg=/bin/true
PlugStackConfig=$DIR/etc/plugstack.conf
$TOPOLOGY_LINES
${NVL_SLURM_CONF_EXTRA:-}
$nodes_line
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE PriorityJobFactor=1
PartitionName=urgent Nodes=ALL MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE PriorityJobFactor=10
CONF
    if [ -n "$SITE" ]; then
        mkdir -p "$DIR/etc/plugstack.conf.d"
        echo "include $DIR/etc/plugstack.conf.d/*.conf" > "$DIR/etc/plugstack.conf"
        local pkg=/etc/slurm/plugstack.conf.d/nvlslice.conf
        if [ -f "$pkg" ]; then
            sed "s|/etc/slurm/|$DIR/etc/|g" "$pkg" > "$DIR/etc/plugstack.conf.d/nvlslice.conf"
        else
            rm -f "$DIR/etc/plugstack.conf.d/nvlslice.conf"
        fi
    elif [ -n "$PLUGIN" ]; then
        echo "required $PLUGIN map=$DIR/etc/nvlslice-map.yaml $PLUGIN_ARGS" > "$DIR/etc/plugstack.conf"
    else
        : > "$DIR/etc/plugstack.conf"
    fi
    geometry > "$DIR/etc/geometry"
    # (a bare site's helper configuration is the package's, test_guide.sh)
    [ -n "$SITE" ] || write_helper_conf
}

# The helper's files: nvlsliced.* for the first, nvlsliced-b.* for the second
helper_base() { if [ "${1:-}" = b ]; then echo nvlsliced-b; else echo nvlsliced; fi; }
helper_yaml() { if [ "${1:-}" = b ]; then echo "$DIR/etc/nvlslice-b.yaml"; else echo "$DIR/etc/nvlslice.yaml"; fi; }

write_helper_conf() { # [b]
    local base port=9817
    base=$(helper_base "${1:-}")
    # beside the backup (its own network namespace) the same port is free
    [ "${1:-}" = b ] && [ "$BACKUP" != 1 ] && port=9818
    cat > "$(helper_yaml "${1:-}")" <<HCONF
# nvlsliced configuration for the test cluster (see etc/nvlslice.yaml)
map: $DIR/etc/nvlslice-map.yaml
cycle_ms: ${NVL_HELPER_CYCLE_MS:-500}
lock_file: $DIR/run/$base.lock
metrics_listen: 127.0.0.1:$port
reservation: nvlslice_spares
$HELPER_CONF
HCONF
}

start_helper() { # [b]: the second helper (beside the backup slurmctld)
    [ -n "$HELPER" ] || return 0
    local base log pid before=0 wrap=() which=${1:-}
    base=$(helper_base "$which"); log=$DIR/log/$base.log; pid=$DIR/run/$base.pid
    alive "$pid" && return 0
    write_helper_conf "$which"
    [ -f "$log" ] && before=$(wc -l < "$log")
    if [ "$BACKUP" = 1 ]; then
        # on its controller's host: that network namespace and host name
        local n=1
        [ "$which" = b ] && n=2
        wrap=(nsenter --net="/run/netns/$(ctl_ns $n)" unshare --uts sh -c "hostname $(ctl_name $n) && exec \"\$0\" \"\$@\"")
    fi
    (cd / && exec setsid "${wrap[@]}" "$HELPER" --config "$(helper_yaml "$which")") >>"$log" 2>&1 < /dev/null &
    echo $! > "$pid"
    for _ in $(seq 1 50); do
        tail -n +"$((before + 1))" "$log" 2>/dev/null | grep -q "nvlsliced: started" && return 0
        alive "$pid" || break
        sleep 0.1
    done
    tail -5 "$log" >&2
    die "nvlsliced${which:+ ($which)} did not start"
}

start_mariadb() {
    alive "$DIR/run/mariadbd.pid" && return 0
    if [ ! -d "$DIR/mysql/mysql" ]; then
        mkdir -p "$DIR/mysql"
        mariadb-install-db --no-defaults --user=root --datadir="$DIR/mysql" --auth-root-authentication-method=socket \
            >"$DIR/log/mariadb-install.log" 2>&1 || { tail -5 "$DIR/log/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
    fi
    (cd / && exec setsid mariadbd --no-defaults --user=root --datadir="$DIR/mysql" --socket="$DIR/run/mysqld.sock" \
        --pid-file="$DIR/run/mariadbd.pid" --port=$DB_PORT --bind-address=127.0.0.1 --log-error="$DIR/log/mariadbd.log" \
        --innodb-buffer-pool-size=64M --innodb-lock-wait-timeout=900 --skip-log-bin) >/dev/null 2>&1 < /dev/null &
    local _
    for _ in $(seq 1 150); do
        mariadb --no-defaults -S "$DIR/run/mysqld.sock" -e 'select 1' >/dev/null 2>&1 && break
        sleep 0.2
    done
    mariadb --no-defaults -S "$DIR/run/mysqld.sock" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'nvltest';
        GRANT ALL ON nvltest_acct.* TO 'slurm'@'127.0.0.1';" || die "MariaDB did not start (see $DIR/log/mariadbd.log)"
}

start_slurmdbd() {
    alive "$DIR/run/slurmdbd.pid" && return 0
    cat > "$DIR/etc/slurmdbd.conf" <<DBD
# Written by tests/cluster/cluster.sh
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=nvltest
StorageLoc=nvltest_acct
DBD
    chmod 600 "$DIR/etc/slurmdbd.conf"
    # slurmdbd reads slurmdbd.conf beside SLURM_CONF
    # NVL_SLURMDBD_LIBDIR: a MariaDB client library for slurmdbd (run.sh)
    local libdir=${NVL_SLURMDBD_LIBDIR:-}
    [ -n "$libdir" ] && [ -f "$libdir/libmariadb.so.3" ] || libdir=
    (cd / && exec env ${libdir:+LD_LIBRARY_PATH=$libdir} setsid /usr/sbin/slurmdbd -D) >"$DIR/log/slurmdbd.stdout" 2>&1 < /dev/null &
    local _
    for _ in $(seq 1 150); do
        sacctmgr -n show cluster >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    tail -5 "$DIR/log/slurmdbd.log" >&2
    die "slurmdbd did not answer"
}

# The associations the tests use: the cluster, two accounts, root in both.
add_associations() {
    sacctmgr -i add cluster nvltest >/dev/null 2>&1 || true
    sacctmgr -i add account acct_a,acct_b cluster=nvltest fairshare=1 >/dev/null 2>&1 || true
    sacctmgr -i add user root account=acct_a,acct_b cluster=nvltest >/dev/null 2>&1 || true
    sacctmgr -n -p show assoc cluster=nvltest user=root format=account | grep -q acct_b ||
        die "the test associations were not created: $(sacctmgr -n -p show assoc 2>&1 | head -3)"
}

start_munge() {
    alive "$DIR/run/munged.pid" && return 0
    [ -f "$DIR/munge/munge.key" ] || { dd if=/dev/urandom bs=1024 count=1 of="$DIR/munge/munge.key" 2>/dev/null; chmod 400 "$DIR/munge/munge.key"; }
    munged -f --socket="$DIR/munge/munge.socket.2" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
}

# The PID NVL_ADOPT gives for node NAME's older slurmd (empty: none)
adopted_pid() {
    local a
    for a in ${NVL_ADOPT:-}; do [ "${a%%:*}" = "$1" ] && { echo "${a#*:}"; return; }; done
}

setup_network() {
    local i ns veth pid
    # NVL_ADOPT: each node's namespace is the one its older slurmd runs in
    # (a name left in /run/netns by an earlier cluster is dropped first)
    for ((i = 1; i <= NODES; i++)); do
        pid=$(adopted_pid "$(node_name "$i")")
        [ -n "$pid" ] || continue
        ns=$(node_ns "$i")
        ip netns del "$ns" 2>/dev/null || true
        ip netns attach "$ns" "$pid" || die "cannot join the network namespace of $(node_name "$i")'s slurmd (PID $pid)"
    done
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link add "$BRIDGE" type bridge
        ip addr add "$BRIDGE_IP/24" dev "$BRIDGE"
    fi
    ip link set "$BRIDGE" up
    if [ "$BACKUP" = 1 ]; then
        for i in 1 2; do
            ns=$(ctl_ns $i); veth=nvlvc$i
            [ -e "/run/netns/$ns" ] || ip netns add "$ns"
            if ! ip link show "$veth" >/dev/null 2>&1; then
                ip link add "$veth" type veth peer name eth0 netns "$ns"
                ip -n "$ns" addr add "$(ctl_ip $i)/24" dev eth0
                ip -n "$ns" link set lo up
                ip -n "$ns" link set eth0 up
                ip link set "$veth" master "$BRIDGE" up
            fi
        done
    fi
    for ((i = 1; i <= NODES; i++)); do
        ns=$(node_ns "$i"); veth=$(node_veth "$i")
        [ -e "/run/netns/$ns" ] || ip netns add "$ns"
        if ! ip link show "$veth" >/dev/null 2>&1; then
            ip link add "$veth" type veth peer name eth0 netns "$ns"
            ip -n "$ns" addr add "$SUBNET.$((FIRST_IP + i - 1))/24" dev eth0
            ip -n "$ns" link set lo up
            ip -n "$ns" link set eth0 up
            ip link set "$veth" master "$BRIDGE" up
        fi
    done
}

start_slurmctld() { # [2]: the backup
    local n=${1:-1}
    alive "$(ctl_pidfile "$n")" && return 0
    # slurmctld checks its own hostname against SlurmctldHost
    # Daemons start from / so that no test's working directory (which may be
    # removed later) becomes theirs or their job steps'.
    if [ "$BACKUP" != 1 ]; then
        (cd / && exec setsid unshare --uts --mount --propagation private \
            sh -c "mount --bind $DIR/etc/hosts /etc/hosts && hostname $CTL_NAME && exec $SLURMCTLD -D -i -f $CONF") \
            >"$DIR/log/slurmctld.stdout" 2>&1 < /dev/null &
        echo $! > "$DIR/run/slurmctld.wrapper.pid"
        return 0
    fi
    local name binds="mount --bind $DIR/etc/hosts /etc/hosts" logopt=""
    name=$(ctl_name "$n")
    if [ "$n" = 2 ]; then
        mkdir -p "$DIR/run/ctl2"
        binds+=" && mount --bind $DIR/run/ctl2 $DIR/run"
        logopt="-L $DIR/log/slurmctld-$name.log"
    fi
    (cd / && exec setsid nsenter --net="/run/netns/$(ctl_ns "$n")" unshare --uts --mount --propagation private \
        sh -c "$binds && hostname $name && exec $SLURMCTLD -D -i -f $CONF $logopt") \
        >"$DIR/log/slurmctld-$name.stdout" 2>&1 < /dev/null &
    echo $! > "$DIR/run/slurmctld-$n.wrapper.pid"
}

# Until `scontrol ping` says controller N (1, 2) is UP (60 s)
wait_ctld() {
    local role=primary
    [ "${1:-1}" = 2 ] && role=backup
    for _ in $(seq 1 300); do
        scontrol ping 2>/dev/null | grep -q "($role) at .* is UP" && return 0
        sleep 0.2
    done
    return 1
}

start_slurmd() {
    local i=$1 name ns
    name=$(node_name "$i"); ns=$(node_ns "$i")
    alive "$DIR/run/slurmd-$name.pid" && return 0
    mkdir -p "$DIR/spool/$name"
    # NVL_ADOPT: the older slurmd of this node stops first (its steps stay)
    local pid
    pid=$(adopted_pid "$name")
    if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
        for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && die "the older slurmd of $name (PID $pid) did not stop within 30 s"
    fi
    # Not `ip netns exec`: it remounts /sys and hides the cgroup tree slurmd needs.
    (cd / && exec setsid nsenter --net="/run/netns/$ns" unshare --uts --mount --propagation private \
        sh -c "mount --bind $DIR/etc/hosts /etc/hosts && hostname $name && exec $SLURMD -D -N $name -f $CONF") \
        >"$DIR/log/slurmd-$name.stdout" 2>&1 < /dev/null &
    echo $! > "$DIR/run/slurmd-$name.wrapper.pid"
}

wait_ready() {
    local deadline=$(( $(date +%s) + ${1:-90} )) idle
    while [ "$(date +%s)" -lt "$deadline" ]; do
        # exact per-node states: "idle" alone, not idle+drain or idle*
        # (or idle in a reservation; on a kept state, NVL_KEEP_STATE=1, a
        # node may run a job it had)
        idle=$(sinfo -h -N -o '%N %T' 2>/dev/null | awk -v keep="${NVL_KEEP_STATE:-0}" \
            '$2 == "idle" || $2 == "reserved" || (keep == 1 && ($2 == "allocated" || $2 == "mixed" || $2 == "completing"))' |
            sort -u | wc -l)
        if [ "$idle" -eq "$NODES" ]; then
            local extra=""
            if [ "$BACKUP" = 1 ]; then wait_ctld 2 || break; extra=", a backup slurmctld"; fi
            log "ready: $NODES nodes idle ($RACKS racks x $PER)$extra, SLURM_CONF=$CONF"
            return 0
        fi
        sleep 0.5
    done
    sinfo -N -o '%N %T %E' 2>&1 | head -20 >&2 || true
    tail -20 "$DIR/log/slurmctld.log" >&2 || true
    die "not ready after ${1:-90} s"
}

# What the cluster was made with: a running one whose file says otherwise
# is made again
geometry() {
    echo "$RACKS $PER $SPARES $PLUGIN $PLUGIN_ARGS acct=$ACCOUNTING t=${NVL_SLURMD_TIMEOUT:-10} backup=$BACKUP site=$SITE tcp=${NVL_TCP_TIMEOUT:-} sd=${NVL_SLURMD_DEBUG:-}"
}

healthy() {
    [ -f "$DIR/etc/geometry" ] || return 1
    [ "$(cat "$DIR/etc/geometry")" = "$(geometry)" ] || return 1
    alive "$DIR/run/slurmctld.pid" && alive "$DIR/run/munged.pid" || return 1
    if [ "$BACKUP" = 1 ]; then alive "$(ctl_pidfile 2)" || return 1; fi
    if [ "$ACCOUNTING" = 1 ]; then alive "$DIR/run/slurmdbd.pid" && alive "$DIR/run/mariadbd.pid" || return 1; fi
    local i
    for ((i = 1; i <= NODES; i++)); do alive "$DIR/run/slurmd-$(node_name "$i").pid" || return 1; done
    [ "$(sinfo -h -N -o '%N %T' 2>/dev/null | awk '$2 == "idle" || $2 == "allocated" || $2 == "mixed" || $2 == "reserved"' | sort -u | wc -l)" -eq "$NODES" ]
}

# Stops the processes named by these pid files: SIGTERM to all at once,
# up to 5 s for them to exit, then SIGKILL.
stop_pidfiles() {
    local f pid pids=()
    for f in "$@"; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill -0 "$pid" 2>/dev/null && pids+=("$pid")
        rm -f "$f"
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    kill "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "${pids[@]}" 2>/dev/null || return 0
        local alive_any=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive_any=1; done
        [ $alive_any -eq 0 ] && return 0
        sleep 0.1
    done
    kill -9 "${pids[@]}" 2>/dev/null || true
}

# Processes left inside our namespaces (job steps, slurmstepd): only ours.
kill_ns_procs() {
    local ns=$1 pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
}

down() {
    down_daemons
    down_network
    log "down"
}

down_daemons() {
    # the helper writes its pid into its lock file too: that one is never stale
    stop_pidfiles "$DIR"/run/nvlsliced*.pid "$DIR/run/nvlsliced.lock" "$DIR/run/nvlsliced-b.lock"
    stop_pidfiles "$DIR"/run/slurmd-*.pid "$DIR"/run/slurmd-*.wrapper.pid
    stop_pidfiles "$DIR/run/slurmctld.pid" "$DIR"/run/slurmctld*.wrapper.pid "$DIR/run/ctl2/slurmctld.pid"
    stop_pidfiles "$DIR/run/slurmdbd.pid"
    stop_pidfiles "$DIR/run/mariadbd.pid"
    stop_pidfiles "$DIR/run/munged.pid"
}

# The namespaces (what still runs in them killed), their links, the bridge
down_network() {
    local ns veth
    for ns in $(ip netns list 2>/dev/null | awk '/^nvlns(c)?[0-9]+/ {print $1}'); do
        kill_ns_procs "$ns"
        ip netns del "$ns" 2>/dev/null || true
    done
    for veth in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^nvlvc?[0-9]+$' || true); do
        ip link del "$veth" 2>/dev/null || true
    done
    if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE" || true; fi
}

up() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (it creates network namespaces)"
    install_packages
    if healthy; then
        log "already up: $NODES nodes, SLURM_CONF=$CONF"
        start_helper
        return 0
    fi
    # NVL_ADOPT: the older Slurm's nodes, network and steps' spool kept
    if [ -n "${NVL_ADOPT:-}" ]; then down_daemons >/dev/null 2>&1 || true; else down >/dev/null 2>&1 || true; fi
    # NVL_KEEP_STATE=1: slurmctld's saved state kept (an upgrade: the jobs
    # and reservations another Slurm saved there, test_upgrade.sh)
    if [ -n "${NVL_ADOPT:-}" ]; then rm -rf "$DIR/log" "$DIR/mysql"
    elif [ "${NVL_KEEP_STATE:-0}" = 1 ]; then rm -rf "$DIR/spool" "$DIR/log" "$DIR/mysql"
    else rm -rf "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/mysql"; fi
    mkdir -p "$DIR"/{etc,munge,state,spool,log,run}
    chmod 700 "$DIR/munge"
    write_map
    write_topology
    write_conf
    start_munge
    setup_network
    if [ "$ACCOUNTING" = 1 ]; then
        start_mariadb
        start_slurmdbd
        add_associations
    fi
    start_slurmctld
    if [ "$BACKUP" = 1 ]; then
        # the backup once the primary answers: it would take over otherwise
        wait_ctld 1 || die "the primary slurmctld did not answer within 60 s"
        start_slurmctld 2
    fi
    for ((i = 1; i <= NODES; i++)); do start_slurmd "$i"; done
    wait_ready 90
    start_helper
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) sinfo -N -o '%N %T %f %E' ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    helper) start_helper ;;
    kill-helper) stop_pidfiles "$DIR/run/nvlsliced.pid" "$DIR/run/nvlsliced.lock" ;;
    helper-b) start_helper b ;;
    kill-helper-b) stop_pidfiles "$DIR/run/nvlsliced-b.pid" "$DIR/run/nvlsliced-b.lock" ;;
    start-node) i=${2:?node number}; start_slurmd "$((10#$i))" ;;
    # slurmctld and every slurmd stopped and started again, their state
    # kept: as `systemctl restart` on each host after a slurm.conf change
    # they read at their start only (a topology plugin)
    restart-daemons)
        stop_pidfiles "$(ctl_pidfile 1)" "$DIR"/run/slurmctld*.wrapper.pid
        stop_pidfiles "$DIR"/run/slurmd-*.pid "$DIR"/run/slurmd-*.wrapper.pid
        start_slurmctld
        for ((i = 1; i <= NODES; i++)); do start_slurmd "$i"; done
        wait_ready 90 ;;
    # slurmctld alone, its state kept: an outage, as an admin's maintenance
    stop-ctld) stop_pidfiles "$(ctl_pidfile "${2:-1}")" ;;
    # a crash: kill -9 (the state it saved is what the other controller reads)
    kill-ctld)
        f=$(ctl_pidfile "${2:-1}")
        [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f" ;;
    start-ctld)
        start_slurmctld "${2:-1}"
        if [ "$BACKUP" = 1 ]; then wait_ctld "${2:-1}" && exit 0; else
            for _ in $(seq 1 300); do scontrol ping 2>/dev/null | grep -q 'is UP' && exit 0; sleep 0.2; done
        fi
        die "slurmctld did not answer within 60 s" ;;
    kill-node) # kill -9 a node's slurmd, as a crash would
        f="$DIR/run/slurmd-$(node_name "$((10#${2:?node number}))").pid"
        [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; rm -f "$f" ;;
    silence-node) # a kernel panic or power loss: every process of the node
        # gone and its link down, so that packets to it time out and
        # nothing refuses a connection
        i=$((10#${2:?node number}))
        ip link set "$(node_veth "$i")" down
        for _ in 1 2 3; do
            pids=$(ip netns pids "$(node_ns "$i")" 2>/dev/null)
            [ -n "$pids" ] || break
            kill -9 $pids 2>/dev/null || true
            sleep 0.1
        done
        rm -f "$DIR/run/slurmd-$(node_name "$i").pid" ;;
    revive-node) # back from silence-node: its link up, slurmd started
        i=$((10#${2:?node number}))
        ip link set "$(node_veth "$i")" up
        start_slurmd "$i" ;;
    *) echo "usage: $0 up|down|status|env|helper|kill-helper|start-node N|kill-node N|silence-node N|revive-node N|stop-ctld [2]|kill-ctld [2]|start-ctld [2]|restart-daemons|helper-b|kill-helper-b" >&2; exit 2 ;;
esac
