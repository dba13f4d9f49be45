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
# The simulate tier's own estimate: 32 layouts of 40,000 microbatches each
# (~4e7 events per step) are refused, with the estimate, before any runs.
expect 2 "search: simulating 32 of 48 bounded layouts (round 1): estimated 32 points|past the work budget|--force|a smaller --simulate" -- search scenarios/mi300x-llama3-70b.ini --chips 8 --set training.global_batch=40000 --fix parallel.tp=8 --fix training.micro_batch=1 --jobs 1 --quiet
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

# --- infeasible: exit 3 with the reason. A step that ran but does not fit
# in memory still writes the timeline and trace it was asked for, with the
# chip over capacity said where it shows (issue 20); a schedule that cannot
# be built writes nothing.
rm -rf "$T/oom"; mkdir -p "$T/oom"
"$MPSIM" run scenarios/teach-bubbles.ini --set synthetic.activation=20GB \
    --timeline "$T/oom/t.csv" --trace "$T/oom/t.json" >/dev/null 2>"$T/stderr"
if [ $? -eq 3 ] && grep -qF "does not fit in memory" "$T/stderr" &&
   grep -q 'capacity_bytes=80000000000' "$T/oom/t.csv" && grep -q 'OVER CAPACITY: peak 160.00 GB of 80.00 GB' "$T/oom/t.json"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: an out-of-memory run did not write its timeline and trace"; cat "$T/stderr"
fi
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

# --- the kernel calibration table (hardware/kernels.csv) and its keys (issue 14)
mkdir -p "$T/home"
cp -r hardware "$T/home/"
ln -s "$(pwd)/models" "$T/home/models"
K="$T/home/hardware/kernels.csv"
printf 'a100-sxm,gemm,bf16,-,-,-,1.5,too good\n' >>"$K"
export MPSIM_HOME="$T/home"
expect 2 "hardware/kernels.csv:$(wc -l <"$K"):|column value|at most 1" -- run scenarios/megatron-gpt3-175b.ini $O
cp hardware/kernels.csv "$K"
grep -v '^a100-sxm,launch,' hardware/kernels.csv >"$K"
expect 2 "hardware/kernels.csv:|chip a100-sxm has no launch row|expected" -- run scenarios/megatron-gpt3-175b.ini $O
# the measured collective busbw table (hardware/collectives.csv) and [scaleup] busbw_curve
C="$T/home/hardware/collectives.csv"
cp hardware/kernels.csv "$K"
printf 'a100-nvlink3,all_reduce,8,34359738368,0,no bandwidth\n' >>"$C"
expect 2 "hardware/collectives.csv:$(wc -l <"$C"):|column busbw_gbs|above 0|got '0'" -- run scenarios/megatron-gpt3-175b.ini $O
expect 2 "hardware/collectives.csv:$(wc -l <"$C"):|column busbw_gbs" -- collective --system dgx-a100 --op all_reduce --bytes 1GiB --chips 8
cp hardware/collectives.csv "$C"
printf 'a100-nvlink3,all_reduce,8,1024,1,out of order\n' >>"$C"
expect 2 "hardware/collectives.csv:$(wc -l <"$C"):|column size_bytes|increasing|got '1024'" -- collective --system dgx-a100 --op all_reduce --bytes 1GiB --chips 8
cp hardware/collectives.csv "$C"
printf 'a100-nvlink3,all_reduce,8,34359738368\n' >>"$C"
expect 2 "hardware/collectives.csv:$(wc -l <"$C"):|expected 6 columns|got 4" -- collective --system dgx-a100 --op all_reduce --bytes 1GiB --chips 8
cp hardware/collectives.csv "$C"
sed 's/^busbw_curve = a100-nvlink3/busbw_curve = a100-nvlink4/' hardware/systems/dgx-a100.ini >"$T/home/hardware/systems/dgx-a100.ini"
expect 2 "dgx-a100.ini:$(grep -n '^busbw_curve' "$T/home/hardware/systems/dgx-a100.ini" | cut -d: -f1):|[scaleup] busbw_curve|no curve 'a100-nvlink4'|known: a100-nvlink3" -- collective --system dgx-a100 --op all_reduce --bytes 1GiB --chips 8
cp hardware/systems/dgx-a100.ini "$T/home/hardware/systems/dgx-a100.ini"
unset MPSIM_HOME
expect 2 "model.compute_bits = 8|a100-sxm has no FP8 peak|expected 16" -- run scenarios/megatron-gpt3-175b.ini --set model.compute_bits=8 $O
expect 2 "training.recipe|megatron-2021|none, megatron-2022, megatron-core" -- run scenarios/megatron-gpt3-175b.ini --set training.recipe=megatron-2021 $O
expect 2 "training.attention|flash, unfused" -- run scenarios/megatron-gpt3-175b.ini --set training.attention=sparse $O
# --- context parallelism and given stages (branch context, issue 17)
L8='--set model.kind=transformer --set model.config=llama3-8b --set model.seq_len=4096'
expect 2 "parallel.stage_layers|3 entries|parallel.pp = 4" -- run scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=8,8,16 $O
expect 2 "parallel.stage_layers|adds up to 31|32" -- run scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=8,8,8,7 $O
expect 2 "parallel.stage_layers|8,0,8,16" -- run scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=8,0,8,16 $O
expect 2 "model.seq_len = 4096|2 × parallel.cp = 24" -- run scenarios/teach-bubbles.ini $L8 --set parallel.cp=12 $O
expect 2 "parallel.cp_kind = ulysses|32 attention heads|3 does not divide" -- run scenarios/teach-bubbles.ini $L8 --set model.seq_len=3072 --set parallel.cp=3 --set parallel.cp_kind=ulysses $O
expect 3 "zb-v|stage 0 7 layers|even number" -- run scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=7,9,9,7 --set training.schedule=zb-v $O
expect 3 "interleaved|stage 3 1 layers|vpp = 2" -- run scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=9,11,11,1 --set training.schedule=interleaved --set parallel.vpp=2 $O
# search: cp × tp × pp × dp must make the chips; stage_layers fixes pp
expect 2 "--chips 12|parallel.pp = 8|cp × tp × pp × dp" -- search scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=4,4,4,4,4,4,4,4 --set parallel.pp=8 --chips 12 --quiet
expect 2 "parallel.stage_layers|adds up to 31" -- search scenarios/teach-bubbles.ini $L8 --set parallel.stage_layers=8,8,8,7 --chips 8 --quiet

# --- mpsim model (issue 15): what a config.json is read as
expect 2 "model: which config" -- model
expect 2 "cannot find 'nosuch'|the presets are" -- model nosuch
expect 2 "model: unknown option '--frob'" -- model qwen3-8b --frob
expect 2 "--kv-bits|4 to 32|99" -- model qwen3-8b --kv-bits 99
sed 's/"llama"/"my_llama"/; /architectures/,/\],/d' tests/data/models/llama.json >"$T/u.json"
expect 2 "u.json:|key model_type: unknown family \"my_llama\"|llama, mistral|model.family" -- model "$T/u.json"
expect 2 "model.family = lama|did you mean llama" -- model "$T/u.json" --family lama
printf '{"model_type": "t5", "d_model": 512}\n' >"$T/t5.json"
expect 2 "t5.json:1: key model_type: t5 is not read: encoder-decoder" -- model "$T/t5.json"
printf '{"model_type": "gemma3", "text_config": {"num_hidden_layers": 2}}\n' >"$T/g3.json"
expect 2 "g3.json:1: key text_config.hidden_size: missing" -- model "$T/g3.json"
printf '{\n"model_type": "llama",\n"a": 1,\n"a": 2}\n' >"$T/dup.json"
expect 2 "dup.json:4: key a: expected once, got it twice (lines 3 and 4)" -- model "$T/dup.json"
# model.family in a scenario reads an unknown model_type by a row
scen fam.ini <<EOF
[model]
config = $T/u.json
seq_len = 16
[hardware]
system = textbook
[training]
global_batch = 2
EOF
expect 2 "key model_type: unknown family \"my_llama\"" -- run "$T/fam.ini" $O
expect 2 "key model.family = lama|did you mean llama" -- run "$T/fam.ini" --set model.family=lama $O
if "$MPSIM" run "$T/fam.ini" --set model.family=llama --json >"$T/fam.json" 2>"$T/stderr" &&
   grep -q '"params":	276032,' "$T/fam.json" && grep -q '"active_params":	276032,' "$T/fam.json"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: run with model.family = llama: expected params 276032 (check_arch.c's hand count)"
fi
# the text and JSON of a preset: gpt-oss-120b's published 116.83B and 5.13B
# active without the embedding table (OpenAI's model card)
if "$MPSIM" model gpt-oss-120b >"$T/m.txt" 2>&1 && grep -q '^params      116.83B total' "$T/m.txt" &&
   grep -q '5.13B without the embedding table' "$T/m.txt" &&
   "$MPSIM" model gpt-oss-120b --json >"$T/m.json" 2>&1 && grep -q '"family":	"gpt_oss"' "$T/m.json" &&
   grep -q '"quant_method":	"mxfp4"' "$T/m.json" && "$MPSIM" model --families | grep -q '^  t5 .*encoder-decoder'; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: mpsim model gpt-oss-120b (text, --json) or --families"; cat "$T/m.txt"
fi

# --- and the good path writes both files, complete
"$MPSIM" run scenarios/teach-bubbles.ini --timeline "$T/t.csv" --trace "$T/t.json" >/dev/null 2>&1
if [ $? -eq 0 ] && head -1 "$T/t.csv" | grep -q '^chip,stage,stream,kind' && tail -c 4 "$T/t.json" | grep -q ']}' \
   && [ -z "$(ls "$T" | grep tmp)" ]; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: run with --timeline and --trace did not write both files whole"
fi

# --- issue 20: help, did-you-mean, one hint, warnings, null MFU, umask
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*"; }
for c in run list collective sweep search plot plan explain compare import; do
    "$MPSIM" "$c" --help >"$T/h1" 2>&1 && "$MPSIM" help "$c" >"$T/h2" 2>&1 && cmp -s "$T/h1" "$T/h2" &&
        grep -q "usage: mpsim $c" "$T/h1" && ok || no "mpsim $c --help / mpsim help $c"
done
expect 2 "unknown command 'rn' (did you mean 'run'?)|the commands are run, list" -- rn scenarios/teach-bubbles.ini
expect 2 "run: unknown option '--sett' (did you mean '--set'?)|mpsim run --help" -- run scenarios/teach-bubbles.ini --sett parallel.pp=2
expect 2 "unknown 'model' (did you mean 'models'?)" -- list model
expect 2 "sweep: unknown option '--paretto' (did you mean '--pareto'?)" -- sweep scenarios/teach-bubbles.ini --paretto a,b
expect 2 "the presets are cerebras-cs3, desktop-1x4090|did you mean 'dgx-h100'?" -- run scenarios/teach-bubbles.ini --set hardware.system=dgx-h10
# each hint once
"$MPSIM" sweep scenarios/teach-bubbles.ini --frob 2>"$T/stderr"
[ "$(grep -c 'see `mpsim' "$T/stderr")" -eq 1 ] && ok || no "the --help hint is printed more than once"
# warnings on stderr, exit 0
"$MPSIM" run scenarios/megatron-gpt3-175b.ini --set parallel.tp=16 --set parallel.dp=4 >/dev/null 2>"$T/stderr" &&
    grep -qF "warning: tp 16 spans 2 nodes of 8 chips" "$T/stderr" && ok || no "no warning for TP across nodes"
"$MPSIM" run scenarios/uneven-stages.ini >/dev/null 2>"$T/stderr" &&
    grep -qF "warning: stage 3 computes" "$T/stderr" && ok || no "no warning for uneven stages"
"$MPSIM" run scenarios/teach-1f1b.ini --set parallel.vpp=2 >/dev/null 2>"$T/stderr" &&
    grep -qF "warning: schedule 1f1b runs 1 model chunk per device: parallel.vpp = 2 is ignored" "$T/stderr" &&
    "$MPSIM" run scenarios/teach-interleaved.ini >/dev/null 2>"$T/stderr" && ! grep -q "is ignored" "$T/stderr" &&
    ok || no "no warning for vpp under a schedule that ignores it (or one under interleaved)"
"$MPSIM" plan scenarios/megatron-gpt3-175b.ini >/dev/null 2>"$T/stderr" &&
    grep -qF "has no [inference] section" "$T/stderr" && ok || no "no warning for plan on a training scenario"
# MFU and HFU are null where a synthetic model has no FLOP count
"$MPSIM" run scenarios/teach-bubbles.ini --json | grep -q '"mfu":[[:space:]]*null' && ok || no "mfu not null for a synthetic model"
# a new output honours the umask (one it replaces keeps its mode: cli_hostile.sh)
(umask 027 && "$MPSIM" run scenarios/teach-bubbles.ini --trace "$T/new-umask.json" >/dev/null) &&
    [ "$(stat -c %a "$T/new-umask.json")" = 640 ] && ok || no "trace mode $(stat -c %a "$T/new-umask.json" 2>/dev/null), umask 027"
# import: bad values exit 2 naming the flag or key, nothing on stdout
expect 2 "import megatron: --tensor-model-parallel-size 'eight': expected a whole number" -- import megatron '--tensor-model-parallel-size eight --num-layers 2'
[ ! -s "$T/stdout" ] && ok || no "import wrote output on a bad value"
expect 2 "ds_bad_stage.json: key zero_optimization.stage: expected a whole number from 0 to 3, got a string" -- import deepspeed tests/data/import/ds_bad_stage.json
expect 2 "import: unknown source 'megatorn' (did you mean 'megatron'?)" -- import megatorn '--bf16'
# import → a scenario that runs; explain and compare on it
"$MPSIM" import megatron "$(cat tests/data/import/megatron-gpt3-175b.sh)" --system dgx-a100 >"$T/imp.ini" 2>"$T/stderr" &&
    grep -qF -- "--lr 6.0e-5 ignored" "$T/stderr" && "$MPSIM" run "$T/imp.ini" --json >"$T/imp.json" &&
    "$MPSIM" compare "$T/imp.json" scenarios/megatron-gpt3-175b.ini >"$T/cmp" &&
    grep -q '(none: the same scenario keys)' "$T/cmp" && grep -q '^step time s .*+0.0%' "$T/cmp" && ok ||
    { no "import → run → compare"; cat "$T/stderr"; }
"$MPSIM" explain scenarios/teach-bubbles.ini >"$T/ex" 2>&1 && grep -q 'training.schedule=zb-h1' "$T/ex" &&
    grep -q '^levers, each simulated' "$T/ex" && ok || no "explain"
expect 2 "explain is for training scenarios" -- explain scenarios/kimi-k3-wafers.ini
expect 2 "compare: which two?" -- compare scenarios/teach-bubbles.ini
echo '{"not": "a run"}' >"$T/notrun.json"
expect 2 "notrun.json: expected the JSON object \`mpsim run --json\` prints" -- compare "$T/notrun.json" scenarios/teach-bubbles.ini
expect 2 "explain: --top: expected a whole number" -- explain scenarios/teach-bubbles.ini --top 0
# Serving on clusters (issue 19): --slo, serve-plan, layouts beyond the system.
scen l70.ini <<'EOF2'
[model]
config = llama3-70b
[hardware]
system = dgx-h100
nodes = 1
[parallel]
tp = 4
[inference]
placement = even
replicas = 2
requests = 40
rate = 10
EOF2
expect 2 "--slo: unknown metric 'ttfb'|ttft, tpot or e2e" -- run "$T/l70.ini" --slo ttfb=1s
expect 2 "--slo is for serving scenarios" -- run scenarios/teach-bubbles.ini --slo ttft=1s
sed 's/^replicas = 2/replicas = 3/' "$T/l70.ini" >"$T/l70x3.ini"
expect 2 "l70x3.ini:10: key inference.replicas = 3|expected at most 2 replicas" -- run "$T/l70x3.ini"
expect 2 "l70.ini: key inference.replicas = 3|need 12 chips on nodes of 8" -- run "$T/l70.ini" --set inference.replicas=3
expect 2 "serve-plan: --rate R (requests/s) is required" -- serve-plan "$T/l70.ini" --slo ttft=1s
expect 2 "serve-plan: --slo is required" -- serve-plan "$T/l70.ini" --rate 5
expect 2 "--slo: unknown metric 'latency'" -- serve-plan "$T/l70.ini" --rate 5 --slo latency=1s
expect 2 "serve-plan: --attain: expected a share" -- serve-plan "$T/l70.ini" --rate 5 --slo ttft=1s --attain 2
expect 2 "has no [inference] section" -- serve-plan scenarios/teach-bubbles.ini --rate 5 --slo ttft=1s
expect 2 "--vary inference.replicas" -- serve-plan "$T/l70.ini" --rate 5 --slo ttft=1s --vary inference.replicas=0
expect 2 "key inference.scheduler = 'fcfs': unknown scheduler" -- run "$T/l70.ini" --set inference.scheduler=fcfs
# A device map's sequence counts its positions in an int: prompt + output
# past 2^31 - 1 is refused with both keys (the value fuzzer: UB in a message).
expect 2 "keys inference.prompt_len + output_len = 2147484158 tokens|at most 2147483647" -- run scenarios/devmap-llama3-8b-2x3060.ini --set inference.output_len=2147483646
# Slots over the replicas are counted in an int: 2,148 replicas × 10^6 in
# flight is 2.148e9, past 2^31 - 1, refused before the layout is allocated.
scen inf.ini <<'EOF2'
[model]
config = llama3-8b
[hardware]
system = dgx-h100
nodes = 269
[inference]
placement = even
replicas = 2148
inflight = 1000000
EOF2
expect 2 "inf.ini: key inference.inflight: 2148000000 slots over the replicas, past the 2147483647" -- run "$T/inf.ini"
# Empirical length files (inference.prompt_file / output_file): each fault
# names the file, the line and the key; a BOM and CRLF are read as text.
E="--set inference.prompt_dist=empirical --set inference.prompt_file"
expect 2 "l70.ini: key inference.prompt_file: cannot find '$T/nope.csv'" -- run "$T/l70.ini" $E="$T/nope.csv"
printf 'tokens,weight\n100,1\n99999999,1\n' >"$T/len-big.csv"
expect 2 "len-big.csv:3: key inference.prompt_file: expected tokens[,weight] with tokens in 1..8191" -- run "$T/l70.ini" $E="$T/len-big.csv"
printf '100,-1\n' >"$T/len-neg.csv"
expect 2 "len-neg.csv:1: key inference.prompt_file|weight >= 0" -- run "$T/l70.ini" $E="$T/len-neg.csv"
printf '100,1,5\n' >"$T/len-three.csv"
expect 2 "len-three.csv:1: key inference.prompt_file|got 3 cells" -- run "$T/l70.ini" $E="$T/len-three.csv"
: >"$T/len-empty.csv"
expect 2 "len-empty.csv: key inference.prompt_file: no lengths with a positive weight" -- run "$T/l70.ini" $E="$T/len-empty.csv"
printf '100,0\n200,0\n' >"$T/len-zero.csv"
expect 2 "len-zero.csv: key inference.prompt_file: no lengths with a positive weight" -- run "$T/l70.ini" $E="$T/len-zero.csv"
printf '100,1\n2\0000,1\n' >"$T/len-nul.csv"
expect 2 "len-nul.csv:2: key inference.prompt_file: a NUL byte at column 2" -- run "$T/l70.ini" $E="$T/len-nul.csv"
expect 2 "l70.ini: key inference.output_file: inference.output_dist = empirical needs a CSV" -- run "$T/l70.ini" --set inference.output_dist=empirical
printf '\357\273\277tokens,weight\r\n100,1\r\n300,2\r\n' >"$T/len-bom.csv"
"$MPSIM" run "$T/l70.ini" $E="$T/len-bom.csv" >"$T/stdout" 2>"$T/stderr" && ok || { no "a BOM/CRLF length file runs"; cat "$T/stderr"; }
"$MPSIM" run "$T/l70.ini" --slo ttft=10s,tpot=1s --json >"$T/slo.json" 2>"$T/stderr" &&
    grep -q '"requests_met":	40' "$T/slo.json" && ok || no "run --slo goodput"
"$MPSIM" serve-plan "$T/l70.ini" --rate 10 --slo ttft=2s,tpot=100ms --vary inference.replicas=1,2 \
    --vary parallel.tp=4,8 --out "$T/plan.csv" --quiet >"$T/plan.txt" 2>"$T/stderr" &&
    grep -q '^  rank  layout' "$T/plan.txt" && [ -f "$T/plan.csv" ] &&
    [ "$(wc -l <"$T/plan.csv")" -eq 5 ] && ok || { no "serve-plan runs"; cat "$T/stderr"; }
"$MPSIM" list schedulers | grep -q '^decode_first .*TGI' && "$MPSIM" list routers |
    grep -q '^prefix_aware' && ok || no "list schedulers/routers"

viewer="$(dirname "$MPSIM")/mpsim-view"
if [ -x "$viewer" ]; then
    "$viewer" scenarios/teach-bubbles.ini --screenshot "$T/out.jpg" 2>"$T/stderr"
    [ $? -eq 2 ] && grep -qF "expected a .png file" "$T/stderr" && [ ! -e "$T/out.jpg" ] && ok ||
        no "--screenshot x.jpg is not refused"
fi

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
