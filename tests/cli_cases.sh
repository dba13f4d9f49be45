#!/bin/sh
# cli_cases.sh — end-to-end cases of the mpsim command: bad input exits 2
# with one message naming the file, line and key; an infeasible layout exits
# 3 with the reason; no output file is ever left behind. Run from the project
# root with MPSIM=path/to/mpsim (make check does).
MPSIM=${MPSIM:-bin/mpsim}
T=$(mktemp -d /tmp/mpsim-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0

# expect STATUS "substring1|substring2|..." -- mpsim args...
# Every substring must appear in stderr; no file may appear under $T/out.
expect() {
    want=$1; needles=$2; shift 3
    rm -rf "$T/out"; mkdir -p "$T/out"
    "$MPSIM" "$@" >"$T/stdout" 2>"$T/stderr"
    got=$?
    ok=1
    [ "$got" -eq "$want" ] || ok=0
    IFS='|'
    for n in $needles; do grep -qF -- "$n" "$T/stderr" || ok=0; done
    unset IFS
    [ -z "$(ls -A "$T/out")" ] || ok=0
    if [ "$want" -eq 2 ] && [ "$(wc -l <"$T/stderr")" -gt 3 ]; then ok=0; fi
    if [ $ok -eq 1 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: mpsim $* (want $want, got $got; want stderr to contain: $needles)"
        sed 's/^/    /' "$T/stderr"
    fi
}

# A scenario file from a here-document: scen NAME <<EOF ... EOF
scen() { cat >"$T/$1"; }

base='[model]
kind = synthetic
[hardware]
system = textbook
[parallel]
pp = 4
[training]
global_batch = 8'

O="--timeline $T/out/t.csv --trace $T/out/t.json"

# --- the command line
expect 2 "which scenario" -- run
expect 2 "unknown option '--frobnicate'" -- run scenarios/teach-bubbles.ini --frobnicate
expect 2 "unknown command 'rnu'" -- rnu scenarios/teach-bubbles.ini
expect 2 "--set needs a value" -- run scenarios/teach-bubbles.ini --set
# "--set" as the last option's value is that value, not a --set with none
# (this used to read past the end of argv and crash).
expect 2 "--best: '--set' is not a column" -- sweep scenarios/teach-bubbles.ini --vary parallel.pp=2,4 --out "$T/out/s.csv" --best --set
expect 2 "--metric '--set'" -- search scenarios/mi300x-llama3-70b.ini --chips 8 --metric --set
# Issue 22: search's new flags, offload without a host tier.
expect 2 "--fix parallel.tpp" -- search scenarios/mi300x-llama3-70b.ini --chips 8 --fix parallel.tpp=2
expect 2 "--fix training.schedule|1f1c" -- search scenarios/mi300x-llama3-70b.ini --chips 8 --fix training.schedule=1f1c
expect 2 "--simulate" -- search scenarios/mi300x-llama3-70b.ini --chips 8 --simulate 0
expect 2 "--batch-policy" -- search scenarios/mi300x-llama3-70b.ini --chips 8 --batch-policy nearest
expect 2 "training.offload|[host]" -- run scenarios/mi300x-llama3-70b.ini --set hardware.system=textbook --set training.zero=1 --set training.offload=optimizer
# Nothing fits: the summary names the constraint that ruled out the most.
"$MPSIM" search bench/search-530b.ini --chips 5128 --quiet >"$T/stdout" 2>"$T/stderr"
if [ $? -eq 3 ] && grep -q "nothing fits: the most layouts .* global batch does not split" "$T/stdout"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: search that fits nothing does not name the constraint"
fi
expect 2 "--set|parallel.pp" -- run scenarios/teach-bubbles.ini --set parallel.pp $O
expect 2 "--set|parallel.ppp|did you mean 'parallel.pp'" -- run scenarios/teach-bubbles.ini --set parallel.ppp=2 $O
expect 2 "list: unknown 'gadgets'" -- list gadgets

# --- scenario INI
expect 2 "$T/nope.ini|cannot open" -- run "$T/nope.ini" $O
expect 2 "$T|directory" -- run "$T" $O
printf '%s\n[paralel]\npp = 2\n' "$base" | scen sec.ini
expect 2 "sec.ini:9|unknown section [paralel]|did you mean [parallel]" -- run "$T/sec.ini" $O
printf '[model]\nkind = synthetic\n[parallel]\nppp = 4\n' | scen key.ini
expect 2 "key.ini:4|unknown key 'ppp'|did you mean 'pp'" -- run "$T/key.ini" $O
printf '[parallel]\npp = four\n' | scen type.ini
expect 2 "type.ini:2|parallel.pp|whole number|four" -- run "$T/type.ini" $O
printf '[parallel]\npp = 0\n' | scen zero.ini
expect 2 "zero.ini:2|parallel.pp|0" -- run "$T/zero.ini" $O
printf '[training]\nmicro_batch = -2\n' | scen neg.ini
expect 2 "neg.ini:2|training.micro_batch|-2" -- run "$T/neg.ini" $O
printf '[model]\nkind = synthetic\n[synthetic]\nforward = 5\n' | scen unit.ini
expect 2 "unit.ini:4|synthetic.forward|duration" -- run "$T/unit.ini" $O
printf '[model]\nkind = synthetic\n[synthetic]\nactivation = -1GB\n' | scen negsize.ini
expect 2 "negsize.ini:4|synthetic.activation" -- run "$T/negsize.ini" $O
printf '[parallel]\npp = 2\npp = 4\n' | scen dup.ini
expect 2 "dup.ini:3|parallel.pp|lines 2 and 3" -- run "$T/dup.ini" $O
printf '[parallel]\nthis is not ini\n' | scen syntax.ini
expect 2 "syntax.ini:2|syntax error" -- run "$T/syntax.ini" $O
printf '%s\nmicro_batch = 3\n' "$base" | scen div.ini
expect 2 "training.global_batch|training.micro_batch" -- run "$T/div.ini" $O
printf '%s\nschedule = 2f2b\n' "$base" | scen sched.ini
expect 2 "2f2b|gpipe|1f1b" -- run "$T/sched.ini" $O
printf '[model]\nkind = quantum\n' | scen kind.ini
expect 2 "kind.ini:2|model.kind|transformer|synthetic" -- run "$T/kind.ini" $O

# --- models (HF config.json)
printf '[model]\nconfig = llama3-9b\n' | scen nomodel.ini
expect 2 "llama3-9b" -- run "$T/nomodel.ini" $O
printf '{\n  "hidden_size": 4096,\n  "num_hidden_layers": 32,\n' >"$T/trunc.json"
printf '[model]\nconfig = trunc.json\n' | scen trunc.ini
expect 2 "trunc.json:3|ends before the object is complete" -- run "$T/trunc.ini" $O
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": "big", "intermediate_size": 100,\n"num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 10}\n' >"$T/wrongtype.json"
printf '[model]\nconfig = wrongtype.json\n' | scen wrongtype.ini
expect 2 "wrongtype.json|hidden_size" -- run "$T/wrongtype.ini" $O
printf '[model]\nconfig = llama3-8b\n[parallel]\npp = 64\n' | scen deep.ini
expect 2 "parallel.pp|64|32 layers" -- run "$T/deep.ini" $O

# --- systems (INI) and the chip catalogue (CSV)
printf '[system]\nname = x\nchip = h900\nchips_per_node = 8\n[scaleup]\ntopology = switch\nbandwidth = 1GB/s\nlatency = 1us\n[scaleout]\ntopology = none\n' >"$T/chip.ini"
printf '[model]\nkind = synthetic\n[hardware]\nsystem = chip.ini\n' | scen sys1.ini
expect 2 "chip.ini|h900" -- run "$T/sys1.ini" $O
printf '[system]\nname = x\nchip = textbook\nchips_per_node = 8\n[scaleup]\ntopology = switch\nbandwidth = fast\nlatency = 1us\n[scaleout]\ntopology = none\n' >"$T/bw.ini"
printf '[model]\nkind = synthetic\n[hardware]\nsystem = bw.ini\n' | scen sys2.ini
expect 2 "bw.ini:7|bandwidth|fast" -- run "$T/sys2.ini" $O
printf '[model]\nkind = synthetic\n[hardware]\nsystem = nowhere\n' | scen sys3.ini
expect 2 "nowhere" -- run "$T/sys3.ini" $O
mkdir -p "$T/home/hardware"
cp -r hardware/systems "$T/home/hardware/"
cp -r models "$T/home/"
head -3 hardware/chips.csv >"$T/home/hardware/chips.csv"
echo 'broken,Broken chip,lots,0,80,2,300,200,0.8,0.9,0,0,made up' >>"$T/home/hardware/chips.csv"
MPSIM_HOME="$T/home" expect 2 "chips.csv:4|bf16_tflops|lots" -- run scenarios/teach-bubbles.ini $O

# --- outputs
expect 2 "$T/no/such/dir/t.csv" -- run scenarios/teach-bubbles.ini --timeline "$T/no/such/dir/t.csv"

# --- infeasible: exit 3 with the reason, still no output files
expect 3 "does not fit in memory|chip 0|activations" -- run scenarios/teach-bubbles.ini --set synthetic.activation=20GB $O
# a schedule's rules: exit 3 stating the rule and the numbers
expect 3 "layers per stage (8)|vpp (3)" -- run scenarios/teach-bubbles.ini --set model.kind=transformer --set model.config=llama3-8b --set training.schedule=interleaved --set parallel.vpp=3 $O
expect 3 "dualpipe|even pp|got 3" -- run scenarios/teach-bubbles.ini --set training.schedule=dualpipe --set parallel.pp=3 --set training.global_batch=6 $O
expect 3 "dualpipe|at least 2·pp = 8 microbatches, got 6" -- run scenarios/teach-bubbles.ini --set training.schedule=dualpipe $O --set training.global_batch=6
expect 3 "interleaved|microbatches|got 2|pp = 4" -- run scenarios/teach-bubbles.ini --set training.schedule=interleaved --set parallel.vpp=2 --set training.global_batch=2 $O
expect 3 "zb-auto memory limit (0.5 M_B)" -- run scenarios/teach-bubbles.ini --set training.schedule=zb-auto --set training.memory_limit=0.5 $O
# the schedule keys' bad values: exit 2 naming the key
expect 2 "training.memory_limit|microbatch activations|lots" -- run scenarios/teach-bubbles.ini --set training.memory_limit=lots $O
expect 2 "training.memory_limit|-2" -- run scenarios/teach-bubbles.ini --set training.memory_limit=-2 $O
expect 2 "synthetic.forward_backward|duration|3" -- run scenarios/teach-bubbles.ini --set synthetic.forward_backward=3 $O

# --- and the good path writes both files, complete
"$MPSIM" run scenarios/teach-bubbles.ini --timeline "$T/t.csv" --trace "$T/t.json" >/dev/null 2>&1
if [ $? -eq 0 ] && head -1 "$T/t.csv" | grep -q '^chip,stage,stream,kind' && tail -c 4 "$T/t.json" | grep -q ']}' \
   && [ -z "$(ls "$T" | grep tmp)" ]; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: run with --timeline and --trace did not write both files whole"
fi

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
