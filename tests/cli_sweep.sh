#!/bin/sh
# cli_sweep.sh — end-to-end cases of `mpsim sweep`, `search` and `plot`:
# bad --vary exits 2 before any point runs (no output, no progress); --jobs
# 1 and 2 write the same bytes; kill -9 part-way then --resume gives the
# uninterrupted file; plot writes a PNG. Run from the project root with
# MPSIM=path/to/mpsim (tests/run_suites does).
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

echo "cli_sweep: $pass passed, $fail failed"
[ $fail -eq 0 ]
