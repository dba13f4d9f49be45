#!/bin/sh
# `make screenshots`: the committed pictures of the README and docs, drawn by
# mpsim-view without a display (SDL's dummy driver, the plain-C rasteriser).
#   docs/img/teach-*.png   one per teaching scenario, the whole step
#   docs/img/compare-gpipe-1f1b-zbh2.png   GPipe over 1F1B over ZB-H2 on one time axis
#   docs/img/kimi-k3-wafers.png   serving on 59 wafers: 2 ms of prefill passes
#                                 walking down the pipeline
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
    if "$view" "$@" --size "$size" --screenshot "$out/$name.png"; then
        echo "  PNG     $out/$name.png"
    else
        echo "screenshots: $name failed"; fail=1
    fi
}
for s in scenarios/teach-*.ini; do
    shot "$(basename "$s" .ini)" "$s"
done
if [ -f scenarios/teach-gpipe.ini ] && [ -f scenarios/teach-1f1b.ini ] && [ -f scenarios/teach-zb-h2.ini ]; then
    shot compare-gpipe-1f1b-zbh2 scenarios/teach-gpipe.ini \
        --compare scenarios/teach-1f1b.ini --compare scenarios/teach-zb-h2.ini
fi
# The whole 0.5 s run is 99.5 % bubble at this scale (a pass takes well
# under a microsecond per wafer, a hop 2 us); 2 ms show the passes moving.
shot kimi-k3-wafers scenarios/kimi-k3-wafers.ini --set inference.requests=50 --view 9ms..11ms
exit $fail
