#!/bin/sh
# cli_sweep.sh — end-to-end cases of `mpsim sweep`, `search` and `plot`:
# bad --vary exits 2 before any point runs (no output, no progress); --jobs
# 1 and 2 write the same bytes; kill -9 part-way then --resume gives the
# uninterrupted file; plot writes a PNG; a serving sweep's columns and
# numbers; search --out. Run from the project root with MPSIM=path/to/mpsim
# (tests/run_suites does).
MPSIM=${MPSIM:-bin/mpsim}
T=$(mktemp -d /tmp/mpsim-sweep-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
S=scenarios/teach-bubbles.ini

# expect2 "needle" --vary ...: exit 2, the needle in stderr, nothing written.
expect2() {
    needle=$1; shift
    rm -f "$T/bad.csv" "$T/bad.csv.partial"
    "$MPSIM" sweep "$S" --out "$T/bad.csv" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    if [ $rc -eq 2 ] && grep -qF -- "$needle" "$T/err" && ! grep -q '^sweep:' "$T/err" &&
       [ ! -e "$T/bad.csv" ] && [ ! -e "$T/bad.csv.partial" ]; then ok
    else bad "sweep $* (rc $rc, want 2 and '$needle')"; sed 's/^/    /' "$T/err"; fi
}
expect2 "did you mean 'parallel.pp'" --vary parallel.ppp=1,2
expect2 "empty value list" --vary parallel.pp=
expect2 "bad range '8..1*2'" --vary parallel.pp=8..1*2
expect2 "--vary parallel.pp" --vary parallel.pp=1,two
expect2 "unknown pipeline schedule 'gpipee'" --vary training.schedule=gpipe,gpipee
expect2 "given twice" --vary parallel.pp=1 --vary parallel.pp=2
expect2 "both --set and --vary" --vary parallel.pp=1,2 --set parallel.pp=4
expect2 "--best: 'speed'" --vary parallel.pp=1,2 --best speed
expect2 "nothing varies"

# --jobs 1 and --jobs 2: the same bytes.
V="--vary parallel.pp=1..8*2 --vary training.schedule=gpipe,1f1b,zb-h1 --vary training.global_batch=8..64+8"
"$MPSIM" sweep $S $V --out "$T/j1.csv" --jobs 1 2>/dev/null &&
"$MPSIM" sweep $S $V --out "$T/j2.csv" --jobs 2 2>/dev/null &&
cmp -s "$T/j1.csv" "$T/j2.csv" && [ "$(wc -l <"$T/j1.csv")" -eq 97 ] && ok ||
    bad "--jobs 1 and --jobs 2 differ (or wrong row count)"

# kill -9 part-way, then --resume: equal to an uninterrupted run.
K="--set parallel.pp=8 --vary training.global_batch=512..4096*2 --vary training.schedule=gpipe,1f1b,zb-h1,interleaved --vary parallel.vpp=1,2 --vary synthetic.hop=0,1ms,2ms"
"$MPSIM" sweep $S $K --out "$T/whole.csv" --jobs 2 2>/dev/null || bad "whole sweep failed"
"$MPSIM" sweep $S $K --out "$T/cut.csv" --jobs 2 2>/dev/null &
pid=$!
i=0
while [ $i -lt 2000 ]; do
    n=$(cat "$T/cut.csv.partial" 2>/dev/null | wc -l)
    [ "$n" -ge 6 ] && break
    sleep 0.01; i=$((i + 1))
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
held=$(($(wc -l <"$T/cut.csv.partial") - 1))
if [ ! -e "$T/cut.csv" ] && [ $held -ge 5 ] && [ $held -lt 96 ]; then ok
else bad "kill -9 did not land part-way (held $held rows)"; fi
"$MPSIM" sweep $S $K --out "$T/cut.csv" --jobs 2 --resume 2>"$T/err"
grep -qF "($held resumed, $((96 - held)) simulated" "$T/err" && ok ||
    { bad "--resume did not carry on from row $held"; cat "$T/err"; }
cmp -s "$T/whole.csv" "$T/cut.csv" && ok || bad "--resume differs from the uninterrupted run"

# --best and --pareto print to stdout.
"$MPSIM" sweep $S --vary parallel.pp=1..8*2 --vary training.schedule=gpipe,1f1b --out "$T/b.csv" \
    --best step_time_s --pareto step_time_s,peak_mem_bytes --quiet >"$T/out" 2>&1
grep -q '^   1. step_time_s 0.024 ' "$T/out" && grep -q 'Pareto front' "$T/out" && ok ||
    { bad "--best / --pareto"; cat "$T/out"; }

# plot: a PNG, and an input error for a missing column.
"$MPSIM" plot "$T/j1.csv" --x pp --y bubble --by schedule --out "$T/p.png" &&
    [ "$(head -c 4 "$T/p.png" | tail -c 3)" = "PNG" ] && ok || bad "plot PNG"
"$MPSIM" plot "$T/j1.csv" --x pp --y bubbel --out "$T/q.png" 2>"$T/err"
[ $? -eq 2 ] && grep -qF "did you mean 'bubble'" "$T/err" && [ ! -e "$T/q.png" ] && ok ||
    bad "plot with a missing column"

# search needs --chips; a synthetic model is an input error.
"$MPSIM" search $S 2>/dev/null; [ $? -eq 2 ] && ok || bad "search without --chips"
"$MPSIM" search $S --chips 8 2>/dev/null; [ $? -eq 2 ] && ok || bad "search of a synthetic model"

# A serving sweep (serve_run, not sim_run): the wafer pipeline has 59
# stages, each a seat for one microbatch of micro_batch requests, so with
# arrivals far faster than service (1000/s) the most requests in flight is
# min(59 × micro_batch, requests) = 59, 118, 236, 300.
"$MPSIM" sweep scenarios/kimi-k3-wafers.ini --set inference.requests=300 --set inference.rate=1000 \
    --vary inference.micro_batch=1..8*2 --out "$T/serve.csv" --quiet 2>"$T/err" || cat "$T/err"
head -1 "$T/serve.csv" | grep -q '^inference.micro_batch,step_time_s,tokens_per_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,e2e_p50_s,requests_completed,requests_per_s,max_inflight,kv_peak_fraction,chips,usd_per_mtok,usd_per_hour,goodput_frac,goodput_rps,itl_p99_s,preemptions,replicas,feasible,reason$' &&
    [ "$(awk -F, 'NR > 1 { printf "%s:%s:%s:%s ", $1, $9, $11, $13 }' "$T/serve.csv")" = \
      "1:300:59:59 2:300:118:59 4:300:236:59 8:300:300:59 " ] && ok ||
    { bad "serving sweep columns / max_inflight"; cat "$T/serve.csv"; }
# The row holds what `mpsim run` says of the same point: output tokens/s.
want=$("$MPSIM" run scenarios/kimi-k3-wafers.ini --set inference.requests=300 \
    --set inference.rate=1000 --set inference.micro_batch=4 --json |
    sed -n 's/^[[:space:]]*"tokens_per_s":[[:space:]]*\([0-9.e+-]*\).*/\1/p' | head -1)
got=$(awk -F, 'NR == 4 { print $3 }' "$T/serve.csv")
awk -v a="$want" -v b="$got" 'BEGIN { exit !(a > 0 && (a - b) / a < 1e-6 && (b - a) / a < 1e-6) }' &&
    ok || bad "serving row tokens_per_s $got, mpsim run says $want"
# --best on a serving column; a training column is not one of a serving sweep.
"$MPSIM" sweep scenarios/kimi-k3-wafers.ini --set inference.requests=300 --set inference.rate=1000 \
    --vary inference.micro_batch=1..8*2 --out "$T/serve.csv" --best ttft_p50_s --top 1 --quiet \
    >"$T/out" 2>&1
grep -q '^   1. ttft_p50_s .*inference.micro_batch=8' "$T/out" && ok || { bad "--best ttft_p50_s"; cat "$T/out"; }
"$MPSIM" sweep scenarios/kimi-k3-wafers.ini --vary inference.micro_batch=1,2 --out "$T/x.csv" \
    --best mfu 2>"$T/err"
[ $? -eq 2 ] && grep -qF "ttft_p50_s" "$T/err" && ok || bad "--best mfu of a serving sweep"

# search --out: every simulated layout a row, in enumeration order, the same
# bytes for any --jobs, and as many rows as the summary's "simulated".
Q="scenarios/mi300x-llama3-70b.ini --chips 16 --max-micro-batch 2 --schedules 1f1b,gpipe --quiet"
"$MPSIM" search $Q --jobs 1 --out "$T/s1.csv" >"$T/out" 2>&1 &&
"$MPSIM" search $Q --jobs 2 --out "$T/s2.csv" >/dev/null 2>&1 || bad "search --out failed"
n=$(sed -n 's/.* s, \([0-9]*\) simulated.*/\1/p' "$T/out")
cmp -s "$T/s1.csv" "$T/s2.csv" && [ -n "$n" ] && [ "$(($(wc -l <"$T/s1.csv") - 1))" -eq "$n" ] &&
    head -1 "$T/s1.csv" | grep -q '^parallel.tp,parallel.cp,parallel.pp,parallel.dp,parallel.ep,parallel.vpp,parallel.sp,parallel.tp_overlap,training.micro_batch,training.schedule,training.recompute,training.zero,training.offload,training.global_batch,step_time_s,' &&
    [ ! -e "$T/s1.csv.partial" ] && ok || { bad "search --out ($n simulated)"; head -3 "$T/s1.csv"; }
# ... and `mpsim plot` reads it like a sweep.
"$MPSIM" plot "$T/s1.csv" --x pp --y tokens_per_s --by tp --out "$T/s.svg" 2>/dev/null &&
    grep -q '<svg' "$T/s.svg" && ok || bad "plot of a search CSV"
"$MPSIM" search $Q --out /nonexistent/dir/s.csv >/dev/null 2>"$T/err"
[ $? -eq 2 ] && grep -qF "cannot write" "$T/err" && ok || bad "search --out to a bad path"

# --chips: bad values and grids that cannot hold it exit 2, naming --chips.
expect2 "--chips 7: no point of the grid divides it" --vary parallel.pp=2,4 --chips 7
expect2 "--chips: expected a whole number" --vary parallel.pp=2,4 --chips lots
expect2 "parallel.dp is derived" --vary parallel.pp=2,4 --vary parallel.dp=1,2 --chips 8
expect2 "--chips derives parallel.dp" --vary parallel.pp=2,4 --set parallel.dp=2 --chips 8
# --best names the chip counts when the rows differ in them.
"$MPSIM" sweep $S --vary parallel.pp=1..4*2 --out "$T/nc.csv" --best step_time_s --quiet >"$T/out" 2>&1
grep -q '(4 chips)' "$T/out" && grep -q 'chips N. holds it fixed' "$T/out" && ok ||
    { bad "--best without naming chip counts"; cat "$T/out"; }

# Progress bars fit an 80-column terminal (a pseudo-terminal from script(1)):
# no bar drawn between carriage returns is wider than 79 columns.
if command -v script >/dev/null 2>&1; then
    for cmd in "sweep $S --vary parallel.pp=1..8 --vary training.global_batch=8..4096*2 --vary training.schedule=gpipe,1f1b,zb-h1,zb-h2 --vary synthetic.hop=0,1ms,2ms --out $T/tty.csv" \
               "search scenarios/mi300x-llama3-70b.ini --chips 16 --max-micro-batch 2 --schedules 1f1b,gpipe"; do
        COLUMNS=80 script -qec "stty cols 80 2>/dev/null; $MPSIM $cmd >/dev/null" /dev/null >"$T/tty" 2>&1
        esc=$(printf '\033')
        widest=$(tr '\r' '\n' <"$T/tty" | sed "s/$esc\[K//g" | grep '^\[' |
                 awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }')
        if grep -q '\[#*\.*\]' "$T/tty" && [ "$widest" -le 79 ]; then ok
        else bad "${cmd%% *} progress at 80 columns: widest line $widest"; fi
    done
fi

echo "cli_sweep: $pass passed, $fail failed"
[ $fail -eq 0 ]
