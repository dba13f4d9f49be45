#!/bin/sh
# `make screenshots`: every picture of the README and docs, drawn by
# mpsim-view without a display (SDL's dummy driver, the plain-C rasteriser).
#   docs/img/teach-*.png          one per teaching scenario, the whole step
#   docs/img/compare-gpipe-1f1b-zbh2.png   GPipe over 1F1B over ZB-H2: one time
#                                 axis, one memory scale
#   docs/img/teach-1f1b-bubble.png   the pointer on stage 0's bubble: what it
#                                 waits for, and how long
#   docs/img/megatron-gpt3-175b.png  16 stages of 1,024 chips: TP and DP peers
#                                 folded, each stage's DP all-reduce lane, the
#                                 pointer on exposed DP communication
#   docs/img/kimi-k3-wafers.png   500 requests served by 59 wafers, the whole
#                                 run as a heat map of busy share
#   docs/img/kimi-k3-wafers-zoom.png  1 ms of it: decode passes walking down
#                                 the wafers
#   docs/img/small-640x360.png    DualPipe in a small window: the header wraps
# Images are rewritten only when their pixels change (PNG output is
# deterministic, so an unchanged picture is byte-identical anyway).
#
# usage: sh viz/screenshots.sh [path/to/mpsim-view]   (from the project root)
view=${1:-bin/mpsim-view}
size=1400x700
out=docs/img
export SDL_VIDEODRIVER=dummy
[ -x "$view" ] || { echo "screenshots: $view is not built (make all)"; exit 1; }
mkdir -p "$out"
fail=0
shot() {
    name=$1; shift
    if "$view" "$@" --screenshot "$out/$name.png"; then
        echo "  PNG     $out/$name.png"
    else
        echo "screenshots: $name failed"; fail=1
    fi
}
for s in scenarios/teach-*.ini; do
    shot "$(basename "$s" .ini)" "$s" --size "$size"
done
shot compare-gpipe-1f1b-zbh2 scenarios/teach-gpipe.ini \
    --compare scenarios/teach-1f1b.ini --compare scenarios/teach-zb-h2.ini --size 1400x900
# Stage 0 of 1F1B idles from 4 to 10 ms waiting for BW0 to come back up.
shot teach-1f1b-bubble scenarios/teach-1f1b.ini --hover 7ms,0 --size "$size"
# The pointer on stage 0's wait for its own DP all-reduce before the optimizer.
shot megatron-gpt3-175b scenarios/megatron-gpt3-175b.ini --hover 25.7s,0 --size 1400x900
# The whole run: 5 s, a pass per wafer takes 1-30 us, so each pixel column
# holds thousands of them: a heat map of how busy each wafer is.
shot kimi-k3-wafers scenarios/kimi-k3-wafers.ini --size "$size"
# 1 ms at the run's busiest moment (most passes formed): passes walk down
# the chain, 2 us a hop.
shot kimi-k3-wafers-zoom scenarios/kimi-k3-wafers.ini --view 2986ms..2987ms --size "$size"
shot small-640x360 scenarios/teach-dualpipe.ini --size 640x360
exit $fail
