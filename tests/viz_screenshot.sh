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
grep -q "bad_time.csv:3: column start_s" "$tmp/err" && ok || fail "bad_time.csv: no line 3 in: $(cat "$tmp/err")"

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
    # and the viewer draws it: 4 wafer-pipeline requests, a 1 ms window.
    "$mpsim" run scenarios/kimi-k3-wafers.ini --set inference.requests=4 \
        --timeline "$tmp/kimi.csv" --trace "$tmp/kimi.json" >/dev/null 2>"$tmp/err"
    if [ $? -eq 0 ] && grep -q ',compute,prefill,' "$tmp/kimi.csv" && grep -q ',comm,send,' "$tmp/kimi.csv" &&
        grep -q '"traceEvents"' "$tmp/kimi.json"; then ok
    else fail "serving --timeline/--trace: $(cat "$tmp/err")"; fi
    "$mpsim" run scenarios/kimi-k3-wafers.ini --set inference.requests=4 --timeline "$tmp/kimi2.csv" >/dev/null
    cmp -s "$tmp/kimi.csv" "$tmp/kimi2.csv" && ok || fail "serving timeline differs between runs"
    run_nodisplay "$tmp/kimi.csv" --view 5ms..6ms --screenshot "$tmp/kimi.png" --size 800x400
    [ $? -eq 0 ] && [ "$(png_size "$tmp/kimi.png")" = "800x400" ] && ok || fail "serving screenshot: $(cat "$tmp/err")"
fi
run_nodisplay "$data/gpipe_p4_m8.csv" --view 5ms..2ms --screenshot "$tmp/x.png"
[ $? -eq 2 ] && grep -q -- "--view 5ms..2ms" "$tmp/err" && ok || fail "--view 5ms..2ms: $(cat "$tmp/err")"
run_nodisplay scenarios/teach-bubbles.ini --set parallel.ppp=2
[ $? -eq 2 ] && grep -q "did you mean 'parallel.pp'" "$tmp/err" && ok || fail "bad --set: $(cat "$tmp/err")"

echo "viz_screenshot: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
