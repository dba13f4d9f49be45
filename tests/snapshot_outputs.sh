#!/bin/sh
# Write every shipped scenario's outputs (JSON without sim_wall_s, text summary
# without wall times, timeline CSV, Chrome trace, plan) into DIR, so that two
# builds can be compared byte for byte:
#
#   sh tests/snapshot_outputs.sh OLD/mpsim /tmp/before
#   sh tests/snapshot_outputs.sh bin/mpsim /tmp/after
#   diff -r /tmp/before /tmp/after && echo identical
#
# A refactor that claims "no behaviour change" shows it with this script.
# Exit statuses are recorded too (an infeasible scenario exits 3).
set -u
mpsim=$1; out=$2
mkdir -p "$out"
for s in scenarios/*.ini; do
    n=$(basename "$s" .ini)
    "$mpsim" run "$s" --json --timeline "$out/$n.timeline.csv" --trace "$out/$n.trace.json" \
        >"$out/$n.json.raw" 2>"$out/$n.stderr"
    echo "exit $?" >>"$out/$n.stderr"
    # sim_wall_s (and wall figures in text) are the simulator's own speed.
    sed -e '/"sim_wall_s"/d' "$out/$n.json.raw" >"$out/$n.json"
    rm -f "$out/$n.json.raw"
    "$mpsim" plan "$s" --json >"$out/$n.plan.json" 2>&1
    echo "exit $?" >>"$out/$n.plan.json"
done
