#!/bin/sh
# cli_device_map.sh — `mpsim plan --device-map` and `mpsim run` with
# device_map.policy end to end: Accelerate's printed maps for the cases of
# shared/reference/device-map.md §7, and bad input exiting 2 with one line
# naming the flag (or file and key) and the value, a model that fits nowhere
# exiting 3 with the breakdown. Run from the project root with
# MPSIM=path/to/mpsim (make check does).
MPSIM=${MPSIM:-bin/mpsim}
T=$(mktemp -d /tmp/mpsim-devmap-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0

# expect STATUS "needle1|needle2|..." -- mpsim args...: every needle in stderr
# (status 2: one line, at most); expect_out the same for stdout.
run_case() {
    stream=$1; want=$2; needles=$3; shift 4
    "$MPSIM" "$@" >"$T/stdout" 2>"$T/stderr"
    got=$?
    ok=1
    [ "$got" -eq "$want" ] || ok=0
    IFS='|'
    for n in $needles; do grep -qF -- "$n" "$T/$stream" || ok=0; done
    unset IFS
    if [ "$want" -eq 2 ] && [ "$(wc -l <"$T/stderr")" -gt 2 ]; then ok=0; fi
    if [ $ok -eq 1 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1))
        echo "FAIL: mpsim $* (want $want, got $got; want $stream to contain: $needles)"
        sed 's/^/    /' "$T/stderr"
    fi
}
expect() { run_case stderr "$@"; }
expect_out() { run_case stdout "$@"; }

P="plan --device-map"
# --- the reference's printed maps (device-map.md §7)
expect_out 0 "{'': 0}" -- $P qwen2.5-1.5b-instruct --max-memory 0=24GB
expect_out 0 "'model.layers.13': 0, 'model.layers.14': 1|'model.norm': 1, 'model.rotary_emb': 1, 'lm_head': 1}" -- \
    $P llama3-8b --system desktop-2x3060 --max-memory 0=10GiB,1=10GiB,cpu=64GiB
expect_out 0 "{'model.embed_tokens': 0, 'model.norm': 1, 'model.rotary_emb': 1, 'lm_head': 1, 'model.layers': 1}" -- \
    $P llama3-8b --system workstation-2x4090 --max-memory 0=2.3GB,1=16GB --policy sequential
expect_out 0 "{'model.embed_tokens': 0, 'lm_head': 0, 'model.layers.0': 0,|'model.layers.4': 0, 'model.layers.5': 'cpu'" -- \
    $P qwen2.5-1.5b-instruct --max-memory 0=1GiB,cpu=8GiB
expect_out 0 '"device_map":|["model.embed_tokens", 0]|["lm_head", 1]' -- \
    $P llama3-8b --system workstation-2x4090 --max-memory 0=10GiB,1=10GiB --json
expect_out 0 "usage: mpsim plan --device-map" -- $P --help
# A scenario gives the model, the system and the [device_map] keys.
cat >"$T/s.ini" <<'INI'
[model]
config = llama3-8b
[hardware]
system = desktop-2x3060
[device_map]
policy = auto
max_memory = 0=10GiB,1=10GiB,cpu=64GiB
[inference]
prompt_len = 128
output_len = 16
requests = 2
INI
expect_out 0 "'model.layers.14': 1" -- $P "$T/s.ini"
expect_out 0 "accelerate|pipeline|TTFT" -- run "$T/s.ini"
expect_out 0 '"mode":|"device_map"|"accelerate":|"pipeline":|"ttft_s":' -- run "$T/s.ini" --json

# --- bad input: exit 2, one line naming the flag and the value
expect 2 "--max-memory '0=10GiB,gpu1=10GiB'|unknown device 'gpu1'" -- $P llama3-8b --max-memory 0=10GiB,gpu1=10GiB
expect 2 "--max-memory '0=10G'|expected a size|got '10G'" -- $P llama3-8b --max-memory 0=10G
expect 2 "--max-memory '0=1TB'|got '1TB'" -- $P llama3-8b --max-memory 0=1TB
expect 2 "--max-memory '0=10GiB,2=10GiB'|GPU 2 is beyond workstation-2x4090|GPUs 0-1" -- \
    $P llama3-8b --system workstation-2x4090 --max-memory 0=10GiB,2=10GiB
expect 2 "GPU 1 is beyond desktop-1x4090|GPU 0 only" -- $P llama3-8b --max-memory 1=10GiB
expect 2 "--policy: expected auto, balanced, balanced_low_0 or sequential, got 'balanced_low0'|did you mean 'balanced_low_0'" -- \
    $P llama3-8b --policy balanced_low0
expect 2 "--quantization|got 'bnb8'|did you mean" -- $P llama3-8b --quantization bnb8
expect 2 "--weight-bits: expected 4, 8, 16 or 32|got '12'" -- $P llama3-8b --weight-bits 12
expect 2 "disk entry with policy auto" -- $P llama3-8b --max-memory 0=10GiB,disk=1000GB
expect 2 "cannot find 'desktop-9x9090'" -- $P llama3-8b --system desktop-9x9090
expect 2 "no-such-model" -- $P no-such-model
expect 2 "--max-memory needs a value" -- $P llama3-8b --max-memory
expect 2 "unknown option '--max-mem'" -- $P llama3-8b --max-mem 0=1GB
printf '[model]\nconfig = llama3-8b\n[device_map]\npolicy = balanced_low0\n' >"$T/p.ini"
expect 2 "p.ini:4|device_map.policy|balanced_low_0" -- $P "$T/p.ini"
printf '[model]\nconfig = llama3-8b\n[hardware]\nsystem = desktop-1x4090\n[device_map]\nmax_memory = 0=ten\n' >"$T/m.ini"
expect 2 "m.ini: key device_map.max_memory|entry '0=ten'" -- $P "$T/m.ini"
# The first generate() call as a timeline and a trace: rows of kinds
# prefill, decode and send; a write error leaves nothing behind.
expect_out 0 "accelerate" -- run "$T/s.ini" --timeline "$T/t.csv" --trace "$T/t.json"
if grep -q ',compute,prefill,0,' "$T/t.csv" && grep -q ',compute,decode,15,' "$T/t.csv" &&
   grep -q ',comm,send,' "$T/t.csv" && grep -q '"traceEvents"' "$T/t.json"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: device_map timeline/trace rows"; fi
expect 2 "/nonexistent/dir/t.csv" -- run "$T/s.ini" --timeline /nonexistent/dir/t.csv
# --- fits nowhere even with disk: exit 3 with every device's share
expect 3 "infeasible|land on disk|--max-memory '0=20GiB,cpu=50GiB,disk=50GB'|fits nowhere|'cpu'" -- \
    $P llama3-70b --policy sequential --max-memory 0=20GiB,cpu=50GiB,disk=50GB
expect 3 "infeasible|has no disk in its [host] tier" -- $P llama3-8b --system textbook --max-memory 0=1GB
# --- a map whose GPU memory cannot hold its KV cache: generate() would OOM
printf '[model]\nconfig = llama3-8b\n[hardware]\nsystem = desktop-2x3060\n[device_map]\npolicy = auto\n[inference]\nprompt_len = 4096\noutput_len = 16\nmicro_batch = 16\nrequests = 16\n' >"$T/oom.ini"
expect 3 "infeasible|run out of memory on GPU 1" -- run "$T/oom.ini"

echo "cli_device_map: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
