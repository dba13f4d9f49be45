#!/bin/sh
# Sweep figures (run by bench/run with $1 = bench binaries, $2 = mpsim):
# points/s of a 1,000-point sweep of GPT-3 175B layouts on the cores of this
# machine.
mpsim=$2
out=$(mktemp -d /tmp/mpsim-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "== sweep: 1,000 GPT-3 175B layouts (pp x micro_batch x schedule x recompute x zero)"
"$mpsim" sweep bench/sweep-gpt3-175b.ini --quiet --out "$out/sweep.csv" \
    --vary parallel.pp=4,8,12,16,24 --vary training.micro_batch=1,2,3,4,6 \
    --vary training.schedule=1f1b,zb-h1,zb-h2,gpipe,zb-v \
    --vary training.recompute=selective,full --vary training.zero=0..3 --set parallel.vpp=1 \
    --best tokens_per_s --top 3 2>&1 | grep -v '^  [a-z]'
# The layout search is timed by bench/run (bench_search, issue 22's figures).
