#!/bin/sh
# bench/viewer.sh — issue 18's viewer figures (run by bench/run after its own
# cases; nothing asserted): opening the 59-wafer serving run in process
# (target <= 3 s and <= 300 MB peak RSS) and drawing a 1,000,000-op
# timeline at 1920x1080 (target: median frame >= 60 frames/s).
# $1 = folder of bench binaries (unused), $2 = mpsim (mpsim-view beside it).
viewer="$(dirname "$2")/mpsim-view"
[ -x "$viewer" ] || { echo "viewer.sh: $viewer is not built"; exit 0; }
export SDL_VIDEODRIVER=${SDL_VIDEODRIVER:-dummy}
timed() {
    if [ -x /usr/bin/time ]; then /usr/bin/time -f "  whole process: %e s wall, peak RSS %M KB" "$@"
    else "$@"; fi
}
echo "== viewer: open scenarios/kimi-k3-wafers.ini (500 requests on 59 wafers, 9.2 M ops, in process) and draw 10 frames"
timed "$viewer" scenarios/kimi-k3-wafers.ini --bench-frames 10
echo "== viewer: 1,000,000-op timeline, 1920x1080, 300 frames (median frame is the figure)"
timed "$viewer" --demo synthetic:1000000 --bench-frames 300 --size 1920x1080
