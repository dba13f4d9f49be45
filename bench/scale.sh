#!/bin/sh
# Issue 10's figures at full scale (run by bench/run with $1 = bench
# binaries, $2 = mpsim). Each line prints events, wall time, events/s and
# peak RSS; the targets are in bench/README.md.
dir=$1
mpsim=$2
wall() { sed -n 's/.*wall \([0-9.]*\) s.*/\1/p'; }

echo "== 1T GPT, TP8 x PP64 x DP6 on 3072 A100s, 1F1B, global batch 3072 (target <= 1 s, <= 500 MB)"
base=$("$dir/bench_step" scenarios/bench-gpt-1t-dp6.ini)
echo "$base"
echo "== growth: the same with DP doubled (6144 A100s), then with microbatches doubled"
dp2=$("$dir/bench_step" scenarios/bench-gpt-1t-dp6.ini parallel.dp=12 training.global_batch=6144)
mb2=$("$dir/bench_step" scenarios/bench-gpt-1t-dp6.ini training.global_batch=6144)
echo "$dp2"
echo "$mb2"
# The ratios from medians of 5 runs each, taken in turn (one run each
# swung them by a third on a shared machine: 2x DP once came to 1.33x).
w0=""; wd=""; wm=""
for i in 1 2 3 4 5; do
    w0="$w0 $("$dir/bench_step" scenarios/bench-gpt-1t-dp6.ini | wall)"
    wd="$wd $("$dir/bench_step" scenarios/bench-gpt-1t-dp6.ini parallel.dp=12 training.global_batch=6144 | wall)"
    wm="$wm $("$dir/bench_step" scenarios/bench-gpt-1t-dp6.ini training.global_batch=6144 | wall)"
done
med() { echo "$1" | tr ' ' '\n' | sed '/^$/d' | sort -g | sed -n 3p; }
awk -v a="$(med "$w0")" -v b="$(med "$wd")" -v c="$(med "$wm")" 'BEGIN {
    printf "growth (medians of 5 runs: %.3f, %.3f, %.3f s): 2x DP -> %.2fx wall (target <= 1.10), 2x microbatches -> %.2fx wall (target <= 2.00)\n", a, b, c, b / a, c / a }'

echo "== DeepSeek-V3 training step, 2048 H800s, PP16 DualPipe, EP64, ZeRO-1 (target <= 2 s)"
"$dir/bench_step" scenarios/deepseek-v3-2048xh800.ini

echo "== serving: 59 Cerebras wafers, kimi-k3 (target: 100,000 requests <= 2 s; see bench/README.md)"
for n in 500 2000 10000 100000; do
    printf '%6d requests: ' "$n"
    "$mpsim" run scenarios/kimi-k3-wafers.ini --set inference.requests=$n --json |
        tr -d '\t' | tr ',' '\n' | awk -F: '/"events"/ { e = $2 } /"sim_wall_s"/ { w = $2 }
            END { printf "%d events, wall %.3f s, %.2f M events/s\n", e, w, e / w / 1e6 }'
done

echo "== detailed ring all-reduce, 1 MiB in 4 chunks, 50 GB/s 500 ns links (targets: 1,024 chips <= 0.5 s; 4,096 <= 10 s, <= 500 MB)"
"$dir/bench_collective" 1024 4
"$dir/bench_collective" 4096 4
