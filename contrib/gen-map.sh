#!/bin/sh
# Writes an nvlslice rack map for a regular cluster to stdout:
#   contrib/gen-map.sh RACKS NODES_PER_RACK [NODE_PREFIX] [RACK_PREFIX] [SPARES]
# Node names run on across racks: rack001 = nvl[0001-0018], rack002 = nvl[0019-0036], ...
set -eu
racks=${1:?usage: gen-map.sh RACKS NODES_PER_RACK [NODE_PREFIX] [RACK_PREFIX] [SPARES]}
per=${2:?usage: gen-map.sh RACKS NODES_PER_RACK [NODE_PREFIX] [RACK_PREFIX] [SPARES]}
nprefix=${3:-nvl}
rprefix=${4:-rack}
spares=${5:-2}
total=$((racks * per))
nw=${#total}; [ "$nw" -lt 4 ] && nw=4
rw=${#racks}; [ "$rw" -lt 3 ] && rw=3
slice=$((per - spares))
cat <<HDR
# nvlslice rack map: $racks racks (NVLink domains) x $per nodes.
#
# version        always 1
# defaults       values every domain inherits unless it sets its own:
#   gpus_per_node  GPUs per node (GB200/GB300 NVL72 compute tray: 4)
#   spares         nodes per domain kept free to repair slices (default 2)
#   default_slice  slice size for --nvl-slice without a size (default 16)
#   slice_sizes    optional list of the slice sizes jobs may ask for
# domains        one entry per rack / NVLink domain, in cabling order:
#   name           the rack's name (also its Slurm node feature unless
#                  "feature" says otherwise)
#   nodes          a Slurm hostlist, in the order slices are cut
#   gpus_per_node, spares, slice_sizes, feature: per-domain overrides
#   fabric         optional: the NVLink domain its GPUs report,
#                  <ClusterUUID>.<CliqueId> (nvl-topo discover writes it); the
#                  plugin's check_fabric compares each node's GPUs with it
version: 1
defaults:
  gpus_per_node: 4
  spares: $spares
  default_slice: $slice
domains:
HDR
r=1
while [ "$r" -le "$racks" ]; do
    lo=$(( (r - 1) * per + 1 ))
    hi=$(( r * per ))
    printf '  - name: %s%0*d\n    nodes: %s[%0*d-%0*d]\n' "$rprefix" "$rw" "$r" "$nprefix" "$nw" "$lo" "$nw" "$hi"
    r=$((r + 1))
done
