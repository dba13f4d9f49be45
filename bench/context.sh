#!/bin/sh
# Issue 17's figure (run by bench/run with $1 = bench binaries, $2 = mpsim):
# Llama 3 405B at 131,072 tokens on 16,384 H100s, TP 8 x CP 16 x PP 16 x DP 8
# with the stages Meta ran (7, 8 x 14, 7 decoders), interleaved over 2
# chunks, every ring step and TP collective an op. Target <= 1 s, <= 300 MB.
dir=$1
echo "== Llama 3 405B, 131K tokens, TP8 x CP16 x PP16 x DP8 on 16,384 H100s (target <= 1 s, <= 300 MB)"
"$dir/bench_step" scenarios/llama3-405b-131k.ini
echo "== the same at fidelity = detailed (each ring step's 16 transfers, each collective's)"
"$dir/bench_step" scenarios/llama3-405b-131k.ini run.fidelity=detailed
