#!/bin/sh
# compare-hardware.sh — "comparing before buying": Llama 3 70B training
# (global batch 1024 × 4096 tokens) on H100, B200, MI300X, TPU v5p and Cerebras
# wafers, each in the layout `mpsim search` found best for it
# (scenarios/compare-*.ini), plus one layout that does not fit, as one
# Markdown table (docs/sweeps.md, "Comparing hardware before buying").
#
#   sh bench/compare-hardware.sh [MPSIM]     (default bin/mpsim)
#   sh bench/compare-hardware.sh BENCH_DIR MPSIM   (as bench/run calls every bench/*.sh)
#
# Each row is a one-point `mpsim sweep` (its CSV has the exact figures and
# the cost columns for a 1T-token budget); the layout and chip come from
# `mpsim run`'s summary of the same scenario.
MPSIM=${1:-bin/mpsim}
[ $# -ge 2 ] && MPSIM=$2
T=$(mktemp -d /tmp/mpsim-compare-XXXXXX)
trap 'rm -rf "$T"' EXIT
cd "$(dirname "$0")/.." || exit 2

echo "| hardware | chips | layout | step (s) | tokens/s | MFU | \$/chip-hour | \$/step | \$/Mtok | chip-hours per 1T tokens | feasible / why not |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
# row LABEL SCENARIO [--set k=v]...
row() {
    label=$1; scn=$2; shift 2
    "$MPSIM" sweep "$scn" "$@" --vary run.seed=1 --tokens 1T --out "$T/row.csv" --quiet 2>"$T/err" ||
        { echo "compare-hardware: $scn failed:" >&2; cat "$T/err" >&2; exit 1; }
    layout=$("$MPSIM" run "$scn" "$@" 2>/dev/null | sed -n 's/^layout *//p' |
        sed 's/, [0-9]* microbatches of \([0-9]*\)/, micro_batch \1/; s/recompute //; s/schedule //')
    # Columns by the header's names (run.seed, step_time_s, ...; the step
    # accounting's; feasible, reason: the rest of the line, which may hold
    # commas).
    awk -F, -v label="$label" -v layout="$layout" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
    NR == 2 {
        r = col["reason"]; reason = $r; for (i = r + 1; i <= NF; i++) reason = reason "," $i
        gsub(/^"|"$/, "", reason); sub(/ \(weights.*/, "", reason)
        st = $col["step_time_s"]; chips = $col["chips"]; usd = $col["usd_per_step"]
        # A chip without a price (chips.csv) has empty cost columns: a dash.
        if (usd == "") { per_hour = "—"; usd_s = "—"; mtok = "—" }
        else {
            per_hour = sprintf("%.2f", usd / (chips * st / 3600)); usd_s = sprintf("%.3f", usd)
            mtok = sprintf("%.4f", $col["usd_per_mtok"])
        }
        printf "| %s | %d | %s | %.3f | %.0f | %.1f%% | %s | %s | %s | %.0f | %s |\n",
               label, chips, layout, st, $col["tokens_per_s"], 100 * $col["mfu"], per_hour, usd_s,
               mtok, $col["budget_chip_hours"],
               $col["feasible"] == "true" ? "yes" : "no: " reason
    }' "$T/row.csv"
}
row "H100 SXM (dgx-h100)" scenarios/compare-h100.ini
row "B200 (p6-b200)" scenarios/compare-b200.ini
row "MI300X (mi300x-node)" scenarios/compare-mi300x.ini
row "TPU v5p (tpu-v5p)" scenarios/compare-tpu-v5p.ini
row "Cerebras CS-3 (cerebras-cs3)" scenarios/compare-cerebras.ini
row "H100, MI300X's layout" scenarios/compare-h100.ini --set parallel.tp=1 --set parallel.pp=1 \
    --set parallel.dp=512 --set parallel.vpp=1 --set parallel.tp_overlap=false \
    --set training.schedule=1f1b --set training.recompute=none --set training.zero=3
