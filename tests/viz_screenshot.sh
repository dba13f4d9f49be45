#!/bin/sh
# End-to-end checks of the mpsim-view binary, with no display:
#   - a malformed timeline CSV exits 2 with a line-numbered message and never
#     reaches SDL (DISPLAY is unset and SDL is pointed at x11, so any attempt
#     to open a window would fail with exit 1 instead);
#   - --screenshot writes a PNG of the asked size for the GPipe and 1F1B
#     fixtures, and the two images differ;
#   - a scenario .ini runs in-process through the library: the teach-bubbles
#     screenshot is written, --set reaches the scenario (1F1B draws a
#     different picture); a bad scenario key exits 2, no window.
# The pixel colours themselves are checked in tests/check_viz_layout.c, which
# paints through the same rasteriser that fills the screenshot.
#
# usage: sh tests/viz_screenshot.sh [path/to/mpsim-view]   (from the project root)
view=${1:-bin/mpsim-view}
data=tests/data/viz
tmp=$(mktemp -d /tmp/mpsim-viz-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0

ok()   { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

# Exit status and stderr of the viewer run with no display at all.
run_nodisplay() {
    env -u DISPLAY -u WAYLAND_DISPLAY SDL_VIDEODRIVER=x11 "$view" "$@" \
        >"$tmp/out" 2>"$tmp/err"
}

# Width and height from a PNG's IHDR chunk (bytes 16..23, big-endian).
png_size() {
    od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%dx%d\n", (($1*256+$2)*256+$3)*256+$4, (($5*256+$6)*256+$7)*256+$8 }'
}
is_png() {
    [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = "89504e470d0a1a0a" ]
}

[ -x "$view" ] || { echo "viz_screenshot: $view is not built"; echo "viz_screenshot: 0 passed, 1 failed"; exit 1; }

for bad in "$data"/bad_*.csv; do
    run_nodisplay "$bad" --compare "$data/gpipe_p4_m8.csv"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "^mpsim-view: $bad" "$tmp/err"; then ok
    else fail "$bad: exit $rc, stderr: $(cat "$tmp/err")"; fi
done
# The line number is in the message.
run_nodisplay "$data/bad_time.csv"
# "0,0,compute,F,1,0,0,3,soon,...": "soon" starts at character 23 of line 3.
grep -q "bad_time.csv:3:23: column start_s" "$tmp/err" && ok || fail "bad_time.csv: no line 3, column 23 in: $(cat "$tmp/err")"

for s in gpipe 1f1b; do
    run_nodisplay "$data/${s}_p4_m8.csv" --screenshot "$tmp/$s.png" --size 1200x500
    rc=$?
    if [ "$rc" -eq 0 ] && is_png "$tmp/$s.png" && [ "$(png_size "$tmp/$s.png")" = "1200x500" ]; then ok
    else fail "$s screenshot: exit $rc, $(cat "$tmp/err")"; fi
done
if [ -f "$tmp/gpipe.png" ] && [ -f "$tmp/1f1b.png" ] && ! cmp -s "$tmp/gpipe.png" "$tmp/1f1b.png"; then ok
else fail "the GPipe and 1F1B screenshots are identical"; fi

# --at and --compare make a different picture again; nothing half-written remains.
run_nodisplay "$data/gpipe_p4_m8.csv" --compare "$data/1f1b_p4_m8.csv" --at 14ms \
    --screenshot "$tmp/cmp.png" --size 1000x600
if [ $? -eq 0 ] && [ "$(png_size "$tmp/cmp.png")" = "1000x600" ] && [ -z "$(ls "$tmp" | grep tmp)" ]; then ok
else fail "compare screenshot: $(cat "$tmp/err")"; fi

run_nodisplay "$data/gpipe_p4_m8.csv" --at soon --screenshot "$tmp/x.png"
[ $? -eq 2 ] && grep -q -- "--at soon" "$tmp/err" && ok || fail "--at soon: $(cat "$tmp/err")"

mpsim="$(dirname "$view")/mpsim"
if [ -x "$mpsim" ]; then
    "$mpsim" run scenarios/teach-bubbles.ini --timeline "$tmp/tb.csv" >/dev/null
    run_nodisplay "$tmp/tb.csv" --screenshot "$tmp/tb-csv.png" --size 800x400
    run_nodisplay scenarios/teach-bubbles.ini --screenshot "$tmp/tb-ini.png" --size 800x400
    if [ $? -eq 0 ] && [ "$(png_size "$tmp/tb-ini.png")" = "800x400" ]; then ok
    else fail "scenario screenshot: $(cat "$tmp/err")"; fi
    run_nodisplay scenarios/teach-bubbles.ini --set training.schedule=1f1b \
        --screenshot "$tmp/tb-1f1b.png" --size 800x400
    if [ $? -eq 0 ] && ! cmp -s "$tmp/tb-ini.png" "$tmp/tb-1f1b.png"; then ok
    else fail "--set training.schedule=1f1b did not change the picture: $(cat "$tmp/err")"; fi
    # Serving writes a timeline and a trace when asked (same bytes each run),
    # and the viewer draws it: 4 wafer-pipeline requests, a 1 ms window. By
    # default one row per pass (a row per slot in the viewer); with
    # --timeline-detail every stage's copy and every hand-off.
    "$mpsim" run scenarios/kimi-k3-wafers.ini --set inference.requests=4 \
        --timeline "$tmp/kimi.csv" --trace "$tmp/kimi.json" >/dev/null 2>"$tmp/err"
    if [ $? -eq 0 ] && grep -q ',compute,prefill,' "$tmp/kimi.csv" && ! grep -q ',comm,send,' "$tmp/kimi.csv" &&
        grep -q 'rows=slots' "$tmp/kimi.csv" && grep -q '"traceEvents"' "$tmp/kimi.json"; then ok
    else fail "serving --timeline/--trace: $(cat "$tmp/err")"; fi
    "$mpsim" run scenarios/kimi-k3-wafers.ini --set inference.requests=4 --timeline-detail \
        --timeline "$tmp/kimi-detail.csv" >/dev/null 2>"$tmp/err"
    passes=$(grep -c ',compute,' "$tmp/kimi.csv"); copies=$(grep -c ',compute,' "$tmp/kimi-detail.csv")
    # 59 stages: every pass has a copy on each.
    if [ $? -eq 0 ] && grep -q ',comm,send,' "$tmp/kimi-detail.csv" && [ "$copies" -eq $((59 * passes)) ]; then ok
    else fail "--timeline-detail: $passes passes, $copies stage copies: $(cat "$tmp/err")"; fi
    run_nodisplay "$tmp/kimi-detail.csv" --view 5ms..6ms --screenshot "$tmp/kimi-d.png" --size 800x400
    [ $? -eq 0 ] && [ "$(png_size "$tmp/kimi-d.png")" = "800x400" ] && ok || fail "detail screenshot: $(cat "$tmp/err")"
    "$mpsim" run scenarios/kimi-k3-wafers.ini --timeline-detail >/dev/null 2>"$tmp/err"
    [ $? -eq 2 ] && grep -q -- "--timeline-detail says what --timeline" "$tmp/err" && ok || fail "--timeline-detail alone: $(cat "$tmp/err")"
    "$mpsim" run scenarios/kimi-k3-wafers.ini --set inference.requests=4 --timeline "$tmp/kimi2.csv" >/dev/null
    cmp -s "$tmp/kimi.csv" "$tmp/kimi2.csv" && ok || fail "serving timeline differs between runs"
    run_nodisplay "$tmp/kimi.csv" --view 5ms..6ms --screenshot "$tmp/kimi.png" --size 800x400
    [ $? -eq 0 ] && [ "$(png_size "$tmp/kimi.png")" = "800x400" ] && ok || fail "serving screenshot: $(cat "$tmp/err")"
fi
run_nodisplay "$data/gpipe_p4_m8.csv" --view 5ms..2ms --screenshot "$tmp/x.png"
[ $? -eq 2 ] && grep -q -- "--view 5ms..2ms" "$tmp/err" && ok || fail "--view 5ms..2ms: $(cat "$tmp/err")"
run_nodisplay scenarios/teach-bubbles.ini --set parallel.ppp=2
[ $? -eq 2 ] && grep -q "did you mean 'parallel.pp'" "$tmp/err" && ok || fail "bad --set: $(cat "$tmp/err")"

# Bad flags exit 2 before any window, saying what was expected.
for args in "--scale 0" "--scale -1" "--scale 9" "--size -100x200" "--size 100x50" "--size 800x600x3" \
            "--bench-frames 0" "--bench-frames 100001" "--bench-frames 5x" "--hover soon"; do
    # shellcheck disable=SC2086
    run_nodisplay "$data/gpipe_p4_m8.csv" $args --screenshot "$tmp/x.png"
    rc=$?
    flag=${args%% *}
    if [ "$rc" -eq 2 ] && grep -q -- "$flag" "$tmp/err" && grep -q "expected" "$tmp/err"; then ok
    else fail "$args: exit $rc, $(cat "$tmp/err")"; fi
done
# A timeline row with chip index 10^8 stops at the cap, in well under the
# memory a row per chip index would take (500 MB of address space here; a
# sanitizer build reserves terabytes of shadow memory up front, so there it
# runs without the limit).
limit=500000
( ulimit -v $limit; "$view" --help >/dev/null 2>&1 ) || limit=unlimited
printf 'chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,label\n100000000,0,compute,F,0,0,0,0,0,0.001,0,,x\n' >"$tmp/bigchip.csv"
( ulimit -v $limit; env -u DISPLAY SDL_VIDEODRIVER=x11 "$view" "$tmp/bigchip.csv" --screenshot "$tmp/x.png" >"$tmp/out" 2>"$tmp/err" )
rc=$?
if [ "$rc" -eq 2 ] && grep -q "bigchip.csv:2:1: column chip: expected a chip index in 0..1048575" "$tmp/err"; then ok
else fail "chip 10^8: exit $rc, $(cat "$tmp/err")"; fi
# A released_by that names no op: file, line and column.
printf 'chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,mem_bytes,label,op,released_by\n0,0,compute,F,0,0,0,0,0,0.001,0,,x,1,\n0,0,compute,F,1,0,0,0,0.001,0.002,0,,x,2,7\n' >"$tmp/dangling.csv"
run_nodisplay "$tmp/dangling.csv" --screenshot "$tmp/x.png"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "dangling.csv:3:42: column released_by: op 7 does not exist" "$tmp/err"; then ok
else fail "dangling released_by: exit $rc, $(cat "$tmp/err")"; fi
# The benchmark stops on SIGTERM (and SIGINT) within a frame or two: exit 128 + the signal.
for sig in TERM:15 INT:2; do
    num=${sig#*:}; sig=${sig%:*}
    SDL_VIDEODRIVER=dummy "$view" --demo synthetic:20000 --bench-frames 100000 --size 640x360 >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    sleep 1
    kill -s "$sig" "$pid"
    waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
    wait "$pid"
    rc=$?
    want=$((128 + num))
    if [ "$rc" -eq "$want" ] && grep -q "stopped by a signal" "$tmp/out"; then ok
    else kill -9 "$pid" 2>/dev/null; fail "SIG$sig: exit $rc (want $want) after $waited tenths: $(cat "$tmp/out" "$tmp/err")"; fi
done

echo "viz_screenshot: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
