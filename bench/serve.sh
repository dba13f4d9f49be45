#!/bin/sh
# Serving on clusters (issue 19), run by bench/run with $1 = bench binaries,
# $2 = mpsim. Targets: 100,000 requests on 8 replicas <= 2 s; 1,000,000
# requests on one replica <= 20 s; peak memory <= 500 MB (bench/README.md).
mpsim=$2
rss() { # peak RSS of the command, in MB, where GNU time is there
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1 | awk '{ printf "%.0f MB", $1 / 1024 }'
    else
        printf 'n/a'
    fi
}
line() { # events and wall from --json
    tr -d '\t' | tr ',' '\n' | awk -F: '/"events"/ { e = $2 } /"sim_wall_s"/ { w = $2 }
        /"requests_completed"/ { if (!r) r = $2 }
        END { printf "%d completed, %d events, wall %.3f s, %.2f M events/s", r, e, w, e / w / 1e6 }'
}
s=bench/serve-llama3-8b-8x.ini
echo "== serving: 100,000 requests on 8 Llama-3-8B replicas, paged KV (target <= 2 s, <= 500 MB)"
printf '  '; "$mpsim" run $s --json | line; printf ', peak RSS %s\n' "$(rss "$mpsim" run $s)"
one="--set inference.replicas=1 --set inference.rate=25 --set inference.requests=1000000"
echo "== serving: 1,000,000 requests on one replica (target <= 20 s, <= 500 MB)"
printf '  '; "$mpsim" run $s $one --json | line; printf ', peak RSS %s\n' "$(rss "$mpsim" run $s $one)"
echo "== serve-plan: Llama-3-70B at 20 requests/s, tp 1,2,4,8 x replicas 1..16 (64 layouts)"
T=$(mktemp -d /tmp/mpsim-bench-XXXXXX)
start=$(date +%s.%N)
"$mpsim" serve-plan scenarios/serve-llama3-70b-tp4.ini --rate 20 --slo ttft=1s,tpot=60ms \
    --out "$T/plan.csv" --quiet >/dev/null 2>&1
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN { printf "  64 layouts in %.2f s\n", b - a }'
rm -rf "$T"
