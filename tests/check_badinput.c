/* check_badinput.c — one table of malformed inputs across every format mpsim
 * reads (issue 8): scenario INI, --set assignments, HF config.json, the chip
 * catalogue CSV, system INI, the request-trace CSV, the viewer's timeline CSV
 * and command-line flags. For each row:
 *  - the library parser (then, if it let the input through, sim_run or
 *    serve_run) must return MP_ERR_INPUT with a message naming the file, the
 *    line ("FILE:LINE:") when the input has lines, and the key or column;
 *  - when $MPSIM names the mpsim binary (tests/run_suites sets it), the
 *    command itself must exit 2 with that message on stderr and leave nothing
 *    in the folder its --timeline and --trace point at.
 * Adding a case is adding a row; nothing else changes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hardware/chip.h"
#include "sim/io/config.h"
#include "models/model.h"
#include "sim/serve/serve.h"
#include "sim/train/sim.h"
#include "hardware/system.h"
#include "testutil.h"
#include "viz/timeline.h"

enum fmt { F_SCEN, F_SET, F_JSON, F_CSV, F_SYS, F_TRACE, F_TIMELINE, F_ARGS };

struct bad {
    enum fmt fmt;
    const char *text; /* file bytes; F_SET: the assignment; F_ARGS: argv, one per line,
                         with @S for a good scenario and @O for the output folder */
    size_t len;       /* bytes of `text` when it holds a NUL, else 0 */
    int line;         /* the line the message must name; 0 when the input has none */
    const char *key;  /* the key, column or flag the message must name */
    int dir;          /* a directory stands where the file should be */
};

/* A text with NUL bytes in it: the text and its length. */
#define BYTES(s) s, sizeof(s) - 1

/* A valid HF config, the base of the JSON rows. */
#define LLAMA_HEAD "{\n\"architectures\": [\"LlamaForCausalLM\"],\n"
#define LLAMA_TAIL "\"intermediate_size\": 128,\n\"num_attention_heads\": 4,\n" \
                   "\"num_hidden_layers\": 2,\n\"vocab_size\": 100\n}\n"
/* Header and a valid row of chips.csv. */
#define CSV_HEAD "name,label,bf16_tflops,fp8_tflops,mem_gb,mem_bw_tbs,scaleup_gbs," \
                 "scaleout_gbps,compute_eff,mem_eff,price_usd,price_hour_usd,source\n"
#define CSV_ROW(name, tflops, mem) \
    name ",Chip," tflops ",0," mem ",2,300,400,0.8,0.9,0,0,made up\n"
#define SYS_OK_UP "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\nlatency = 1us\n"
#define SYS_HEAD "[system]\nchip = textbook\nchips_per_node = 8\n"
#define TL_HEAD "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s," \
                "end_s,bytes,mem_bytes,label\n"

static const struct bad cases[] = {
    /* ---- scenario INI ---- */
    { F_SCEN, "", 0, 0, "", 1 },                                    /* a directory */
    { F_SCEN, "[parallel]\npp = 4\npp = 2\n", 0, 3, "parallel.pp", 0 },
    /* Offload on a system with no [host] tier (textbook): the key, exit 2. */
    { F_SCEN, "[model]\nconfig = llama3-8b\nseq_len = 256\n[hardware]\nsystem = textbook\n"
              "[training]\nglobal_batch = 8\nzero = 1\noffload = optimizer\n", 0, 0,
      "training.offload", 0 },
    { F_SCEN, "[parallel]\npp = 1000000000\n", 0, 2, "parallel.pp", 0 },
    { F_SCEN, "[parallel]\npp = 0\n", 0, 2, "parallel.pp", 0 },
    { F_SCEN, "[parallel]\npp = -4\n", 0, 2, "parallel.pp", 0 },
    { F_SCEN, "[parallel]\npp = 4.5\n", 0, 2, "parallel.pp", 0 },
    { F_SCEN, "[parallel]\npp = nan\n", 0, 2, "parallel.pp", 0 },
    { F_SCEN, "[parallel]\ntp = 99999999999999999999\n", 0, 2, "parallel.tp", 0 },
    { F_SCEN, "[parallel]\ndp = 0x10\n", 0, 2, "parallel.dp", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nforward = inf\n", 0, 4,
      "synthetic.forward", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nforward = nan ms\n", 0, 4,
      "synthetic.forward", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nforward = -1ms\n", 0, 4,
      "synthetic.forward", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nforward = 1e30s\n", 0, 4,
      "synthetic.forward", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nhop = 10000000s\n", 0, 4,
      "synthetic.hop", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nactivation = 1e30\n", 0, 4,
      "synthetic.activation", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nweights = 1e30GB\n", 0, 4,
      "synthetic.weights", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nactivation = infGB\n", 0, 4,
      "synthetic.activation", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nactivation = 8Gb\n", 0, 4,
      "synthetic.activation", 0 },
    { F_SCEN, "[model]\nseq_len = \xff\xfe\n", 0, 2, "model.seq_len", 0 },
    /* FP8 GEMMs on a chip without an FP8 peak (A100) */
    { F_SCEN, "[model]\nconfig = llama3-8b\ncompute_bits = 8\n[hardware]\nsystem = dgx-a100\n",
      0, 0, "model.compute_bits", 0 },
    { F_SCEN, "[mod\xc3\x28l]\nkind = synthetic\n", 0, 1, "unknown section", 0 },
    { F_SCEN, "[model]\nkind = synth\xe9tic\n", 0, 2, "model.kind", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[parallel]\npp", 0, 4, "syntax error", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[parallel", 0, 3, "syntax", 0 },
    { F_SCEN, BYTES("[model]\nkind = synthetic\n[parallel]\npp = 2\0\npp = 3\n"), 4, "NUL", 0 },
    { F_SCEN, "pp = 4\n", 0, 1, "pp", 0 },
    { F_SCEN, "[parallel]\nvpp = 2\n[parallel]\nvpp = 3\n", 0, 4, "parallel.vpp", 0 },
    { F_SCEN, "[training]\nglobal_batch = 2147483647\nmicro_batch = 1\n"
              "[model]\nkind = synthetic\n", 0, 0, "training.global_batch", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[parallel]\ntp = 1000000\npp = 1000000\n"
              "[training]\nglobal_batch = 1000000\n", 0, 0, "parallel.tp", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nforward = 900000s\n"
              "[parallel]\npp = 4\n[training]\nglobal_batch = 64\n", 0, 0, "int64", 0 },
    { F_SCEN, "[model]\nkind = transformer\nseq_len = 2000000000\nconfig = llama3-8b\n"
              "[parallel]\npp = 4\n", 0, 0, "model.seq_len = 2000000000", 0 },
    { F_SCEN, "[model]\nconfig = \"\"\n", 0, 2, "model.config", 0 },
    { F_SCEN, "[run]\nseed = -1\n", 0, 2, "run.seed", 0 },
    { F_SCEN, "[training]\nrecompute = sometimes\n", 0, 2, "training.recompute", 0 },
    /* issue 16: values found wrong after loading name their line; an empty file is an error */
    { F_SCEN, "[training]\nschedule = GPIPE\n[model]\nkind = synthetic\n", 0, 2,
      "training.schedule", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[hardware]\nsystem = nosuch\n", 0, 4,
      "hardware.system", 0 },
    { F_SCEN, "[model]\nconfig = llama3-8b\n[parallel]\ntp = 3\n", 0, 4, "parallel.tp", 0 },
    { F_SCEN, "; nothing but a comment\n[model]\n", 0, 0, "empty scenario", 0 },
    { F_SCEN, "[model]\nkind = synthetic\n[synthetic]\nforward = 999999s\n[training]\n"
              "global_batch = 100000\n", 0, 0, "2^63 ps", 0 },
    /* context parallelism and given stages (branch context, issue 17) */
    { F_SCEN, "[model]\nseq_len = 512\n[parallel]\npp = 4\nstage_layers = 8,8,16\n", 0, 0,
      "parallel.stage_layers", 0 },
    { F_SCEN, "[model]\nseq_len = 512\n[parallel]\npp = 4\nstage_layers = 8,8,8,7\n", 0, 0,
      "parallel.stage_layers", 0 },
    { F_SCEN, "[parallel]\npp = 4\nstage_layers = 8,0,8,16\n", 0, 3, "parallel.stage_layers", 0 },
    { F_SCEN, "[parallel]\nstage_layers = 8,,8\n", 0, 2, "parallel.stage_layers", 0 },
    { F_SCEN, "[parallel]\nstage_layers = -1\n", 0, 2, "parallel.stage_layers", 0 },
    { F_SCEN, "[parallel]\nstage_layers = 8,8,\n", 0, 2, "parallel.stage_layers", 0 },
    { F_SCEN, "[model]\nseq_len = 1000\n[parallel]\ncp = 8\n", 0, 0, "parallel.cp", 0 },
    { F_SCEN, "[model]\nseq_len = 1000\n[parallel]\ncp = 3\ncp_kind = ulysses\n", 0, 0,
      "parallel.cp", 0 },
    { F_SCEN, "[model]\nseq_len = 3072\n[parallel]\ncp = 3\ncp_kind = ulysses\n", 0, 0,
      "parallel.cp_kind", 0 },
    { F_SCEN, "[parallel]\ncp = 4\ncp_ulysses = 2\n", 0, 0, "parallel.cp_ulysses", 0 },
    { F_SCEN, "[parallel]\ncp = 4\ncp_kind = hybrid\ncp_ulysses = 3\n", 0, 0,
      "parallel.cp_ulysses", 0 },
    { F_SCEN, "[parallel]\ncp = 0\n", 0, 2, "parallel.cp", 0 },
    { F_SCEN, "[parallel]\ncp = 100000\n", 0, 2, "parallel.cp", 0 },
    { F_SCEN, "[parallel]\ncp_kind = spiral\n", 0, 2, "parallel.cp_kind", 0 },
    { F_SCEN, "[parallel]\ntp = 2\ntsp = true\ncp = 2\n", 0, 0, "parallel.tsp", 0 },
    /* ---- --set ---- */
    { F_SET, "parallel.pp", 0, 0, "parallel.pp", 0 },
    { F_SET, "parallel.stage_layers=1,2,3", 0, 0, "parallel.stage_layers", 0 },
    { F_SET, "parallel.stage_layers=1,1,1,1", 0, 0, "parallel.stage_layers", 0 },
    { F_SET, "parallel.cp=2", 0, 0, "parallel.cp", 0 },
    /* Issue 22: offload and steady-state skipping keys. */
    { F_SET, "training.offload=sometimes", 0, 0, "training.offload", 0 },
    { F_SET, "training.offload=optimizer", 0, 0, "training.offload", 0 }, /* synthetic: none */
    { F_SET, "run.steady_skip=maybe", 0, 0, "run.steady_skip", 0 },
    { F_SET, "=4", 0, 0, "=4", 0 },
    { F_SET, "parallel.pp=", 0, 0, "parallel.pp", 0 },
    { F_SET, "parallel.pp=1e9", 0, 0, "parallel.pp", 0 },
    { F_SET, "parallel.pp=2147483648", 0, 0, "parallel.pp", 0 },
    { F_SET, "synthetic.forward=NaN", 0, 0, "synthetic.forward", 0 },
    { F_SET, "synthetic.forward=Infinity", 0, 0, "synthetic.forward", 0 },
    { F_SET, "synthetic.activation=-0.5GB", 0, 0, "synthetic.activation", 0 },
    /* issue 14: recipes, attention kinds, GEMM precision */
    { F_SET, "training.recipe=megatron-2021", 0, 0, "training.recipe", 0 },
    { F_SET, "training.attention=fused", 0, 0, "training.attention", 0 },
    { F_SET, "training.grad_reduce=fp16", 0, 0, "training.grad_reduce", 0 },
    { F_SET, "model.compute_bits=12", 0, 0, "model.compute_bits", 0 },
    { F_SET, "model.compute_bits=4", 0, 0, "model.compute_bits", 0 },
    { F_SET, "training.micro_batch=0", 0, 0, "training.micro_batch", 0 },
    { F_SET, "training.global_batch=100000000", 0, 0, "training.global_batch", 0 },
    { F_SET, "parallel.sp=maybe", 0, 0, "parallel.sp", 0 },
    { F_SET, "nosuch.key=1", 0, 0, "nosuch.key", 0 },
    { F_SET, "parallel.pp=\xff", 0, 0, "parallel.pp", 0 },
    /* ---- HF config.json ---- */
    { F_JSON, "", 0, 0, "empty", 0 },
    { F_JSON, "", 0, 0, "", 1 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"intermediate_size\": 1", 0, 4, "truncated", 0 },
    { F_JSON, "[1, 2, 3]\n", 0, 1, "object", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": \"64\",\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64.5,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": -64,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 0,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    /* NaN is JSON as Python reads it (models/json_doc.h), and no integer. */
    { F_JSON, LLAMA_HEAD "\"hidden_size\": NaN,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 1e999,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 1e30,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 1000000000,\n" LLAMA_TAIL, 0, 3, "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"num_hidden_layers\": 1000000000,\n"
              "\"intermediate_size\": 128,\n\"num_attention_heads\": 4,\n"
              "\"vocab_size\": 100\n}\n", 0, 4, "num_hidden_layers", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"hidden_size\": 128,\n" LLAMA_TAIL, 0, 4,
      "hidden_size", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"num_key_value_heads\": 3,\n" LLAMA_TAIL, 0, 4,
      "num_key_value_heads", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"tie_word_embeddings\": \"yes\",\n" LLAMA_TAIL,
      0, 4, "tie_word_embeddings", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"model_type\": \"\xff\xfe\",\n" LLAMA_TAIL,
      0, 4, "UTF-8", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64\n}\n\"trailing\": 1\n", 0, 5, "JSON", 0 },
    { F_JSON, "{\n\"architectures\": [\"MixtralForCausalLM\"],\n\"hidden_size\": 64,\n"
              "\"num_local_experts\": 8,\n\"num_experts_per_tok\": 9,\n" LLAMA_TAIL, 0, 5,
      "num_experts_per_tok", 0 },
    { F_JSON, LLAMA_HEAD "\"hidden_size\": 64,\n\"layer_types\": [\"full_attention\"],\n"
              LLAMA_TAIL, 0, 4, "layer_types", 0 },
    { F_JSON, BYTES(LLAMA_HEAD "\"hidden_size\": 64\0,\n" LLAMA_TAIL), 3, "NUL", 0 },
    /* ---- chips.csv ---- */
    { F_CSV, "", 0, 0, "empty", 0 },
    { F_CSV, "", 0, 0, "", 1 },
    { F_CSV, CSV_HEAD, 0, 1, "chip row", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "1000", "80") "h1,Chip,10,0,80,2,300", 0, 3,
      "columns", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "nan", "80"), 0, 2, "bf16_tflops", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "inf", "80"), 0, 2, "bf16_tflops", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "-5", "80"), 0, 2, "bf16_tflops", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "1000", "0"), 0, 2, "mem_gb", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "1000", "1e999"), 0, 2, "mem_gb", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "1000", "80") CSV_ROW("textbook", "10", "8"), 0, 3,
      "textbook", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("text\xffz", "1000", "80"), 0, 2, "name", 0 },
    { F_CSV, CSV_HEAD "textbook,Chip \xe9,1000,0,80,2,300,400,0.8,0.9,0,0,x\n", 0, 2, "label", 0 },
    { F_CSV, CSV_HEAD "textbook,\"Chip,1000,0,80,2,300,400,0.8,0.9,0,0,x\n", 0, 2, "CSV", 0 },
    { F_CSV, "name,label,bf16_tflops\n", 0, 1, "fp8_tflops", 0 },
    { F_CSV, CSV_HEAD "textbook,Chip,1000,0,80,2,300,400,1.5,0.9,0,0,x\n", 0, 2,
      "compute_eff", 0 },
    { F_CSV, BYTES(CSV_HEAD "textbook,Chip,1000,0,80,2,300,400,0.8,0.9,0,0,x\0y\n"), 2, "NUL", 0 },
    { F_CSV, "\xef\xbb\xbf" CSV_HEAD CSV_ROW("textbook", "nan", "80"), 0, 2, "bf16_tflops", 0 },
    { F_CSV, CSV_HEAD CSV_ROW("textbook", "1000", "80") "\"unclosed,Chip,1,0,1,1,1,1,1,1,0,0,x\n",
      0, 3, "never closes", 0 },
    /* ---- system INI ---- */
    { F_SYS, "", 0, 0, "chip", 0 },
    /* [scaleup] busbw_curve: a name hardware/collectives.csv lacks; a curve on a ring. */
    { F_SYS, SYS_HEAD SYS_OK_UP "busbw_curve = h100-nvlink5\n", 0, 8, "busbw_curve", 0 },
    { F_SYS, SYS_HEAD "[scaleup]\ntopology = ring\nbandwidth = 100GB/s\nlatency = 1us\n"
             "busbw_curve = h100-nvlink4\n", 0, 8, "busbw_curve", 0 },
    { F_SYS, "", 0, 0, "", 1 },
    { F_SYS, "[system]\nchip = textbook\nchips_per_node = 0\n" SYS_OK_UP, 0, 3,
      "chips_per_node", 0 },
    { F_SYS, "[system]\nchip = textbook\nchips_per_node = 1000000000\n" SYS_OK_UP, 0, 3,
      "chips_per_node", 0 },
    { F_SYS, SYS_HEAD "[scaleup]\ntopology = switch\nbandwidth = 0GB/s\nlatency = 1us\n", 0, 6,
      "bandwidth", 0 },
    { F_SYS, SYS_HEAD "[scaleup]\ntopology = switch\nbandwidth = nanGB/s\nlatency = 1us\n", 0,
      6, "bandwidth", 0 },
    { F_SYS, SYS_HEAD "[scaleup]\ntopology = switch\nbandwidth = 1GB/s\nlatency = -1us\n", 0,
      7, "latency", 0 },
    { F_SYS, SYS_HEAD "[scaleup]\ntopology = hypercube\nbandwidth = 1GB/s\nlatency = 1us\n",
      0, 5, "topology", 0 },
    { F_SYS, SYS_HEAD "chip = h100-sxm\n" SYS_OK_UP, 0, 4, "chip", 0 },
    { F_SYS, SYS_HEAD "[scaleup]\ntopology = switch\nbandwidth = 1GB/s\n", 0, 0, "latency", 0 },
    { F_SYS, SYS_HEAD "[scale\xffup]\n", 0, 4, "section", 0 },
    { F_SYS, "[system]\nname = \xff\xfe\n" SYS_HEAD SYS_OK_UP, 0, 2, "name", 0 },
    /* ---- request-trace CSV ([inference] arrivals = trace) ---- */
    { F_TRACE, "", 0, 0, "no requests", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\n0,10,nan\n", 0, 2, "output_tokens", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\n-1,10,10\n", 0, 2, "arrival_s", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\ninf,10,10\n", 0, 2, "arrival_s", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\n1e300,10,10\n", 0, 2, "arrival_s", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\n0,0,10\n", 0, 2, "prompt_tokens", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\n1,10,10\n0.5,10,10\n", 0, 3,
      "arrival", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\n0,10", 0, 2, "output_tokens", 0 },
    { F_TRACE, "arrival_s,prompt_tokens,output_tokens\r\n0,10,5\r\n1,10,x\r\n", 0, 3,
      "output_tokens", 0 },
    { F_TRACE, "\xef\xbb\xbf# requests\n0,10,5\n0.5,1e3,5\n", 0, 3, "prompt_tokens", 0 },
    /* ---- the viewer's timeline CSV ---- */
    { F_TIMELINE, "", 0, 0, "", 0 },
    { F_TIMELINE, "", 0, 0, "", 1 },
    { F_TIMELINE, "chip,stage\n0,0\n", 0, 1, "", 0 },
    { F_TIMELINE, TL_HEAD "0,0,compute,F,0,0,-1,-1,nan,0.001,0,0,x\n", 0, 2, "", 0 },
    { F_TIMELINE, TL_HEAD "0,0,compute,F,0,0,-1,-1,0,-0.001,0,0,x\n", 0, 2, "", 0 },
    { F_TIMELINE, TL_HEAD "-1,0,compute,F,0,0,-1,-1,0,0.001,0,0,x\n", 0, 2, "", 0 },
    { F_TIMELINE, TL_HEAD "0,0,compute,F,0,0,-1,-1,0,1e30,0,0,x\n", 0, 2, "", 0 },
    { F_TIMELINE, TL_HEAD "0,0,compute,F,0,0,-1,-1,0,0.00", 0, 2, "", 0 },
    /* ---- command-line flags ---- */
    { F_ARGS, "run", 0, 0, "which scenario", 0 },
    { F_ARGS, "run\n@S\n--json\n--frobnicate", 0, 0, "--frobnicate", 0 },
    { F_ARGS, "run\n@S\n--timeline", 0, 0, "--timeline", 0 },
    { F_ARGS, "run\n@S\n@S", 0, 0, "one scenario", 0 },
    { F_ARGS, "run\n@S\n--tokens\n-5", 0, 0, "--tokens", 0 },
    { F_ARGS, "run\n@S\n--tokens\nnan", 0, 0, "--tokens", 0 },
    { F_ARGS, "frobnicate", 0, 0, "frobnicate", 0 },
    /* Issue 22: search and collective flags. */
    { F_ARGS, "search\n@S\n--chips\n8\n--simulate\n0", 0, 0, "--simulate", 0 },
    { F_ARGS, "search\n@S\n--chips\n8\n--batch-policy\nsometimes", 0, 0, "--batch-policy", 0 },
    { F_ARGS, "collective\n--system\ndgx-a100\n--op\nall_reduce\n--bytes\n1MB\n--chips\n8\n"
              "--chunks\n0", 0, 0, "--chunks", 0 },
    { F_ARGS, "run\n@S\n--set\nparallel.pp=\xff\xfe", 0, 0, "parallel.pp", 0 },
    { F_ARGS, "search\n@S\n--chips\n1e9", 0, 0, "--chips: expected a whole number from 1 to 16777216", 0 },
    { F_ARGS, "collective\n--system\ndgx-h100\n--op\nall_reduce\n--bytes\n1e30B\n--chips\n8", 0, 0,
      "at most 1024PiB", 0 },
    { F_ARGS, "run\n@S\n--timeline\n@S", 0, 0, "names the input", 0 },
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

#define GOOD_SCENARIO "[model]\nkind = synthetic\n[hardware]\nsystem = textbook\n" \
                      "[parallel]\npp = 4\n[training]\nglobal_batch = 8\n"

static char root[256];     /* per-test temporary folder */

static void write_bytes(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    if (len) ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* The file a row's input lives in, written (or made a directory). */
static void place(const struct bad *c, const char *path)
{
    if (c->dir) {
        ck_assert_int_eq(mkdir(path, 0755), 0);
        return;
    }
    write_bytes(path, c->text, c->len ? c->len : strlen(c->text));
}

static const char *file_name(enum fmt f)
{
    switch (f) {
    case F_SCEN: return "bad.ini";
    case F_JSON: return "bad.json";
    case F_CSV: return "home/hardware/chips.csv";
    case F_SYS: return "sys.ini";
    case F_TRACE: return "trace.csv";
    case F_TIMELINE: return "timeline.csv";
    default: return NULL;
    }
}

/* The scenario the CLI runs for a row (wrapping the bad file). */
static void write_wrapper(const struct bad *c, const char *bad, const char *out)
{
    char text[2048];
    switch (c->fmt) {
    case F_JSON: snprintf(text, sizeof text, "[model]\nconfig = %s\n", bad); break;
    case F_SYS:
        snprintf(text, sizeof text, "[model]\nkind = synthetic\n[hardware]\nsystem = %s\n", bad);
        break;
    case F_TRACE:
        snprintf(text, sizeof text,
                 "[model]\nconfig = llama3-8b\nseq_len = 512\n[hardware]\nsystem = dgx-h100\n"
                 "[inference]\narrivals = trace\ntrace = %s\n", bad);
        break;
    default: snprintf(text, sizeof text, GOOD_SCENARIO); break;
    }
    write_bytes(out, text, strlen(text));
}

static void expect_message(const struct bad *c, int i, const char *msg, const char *file)
{
    if (file)
        ck_assert_msg(strstr(msg, file) != NULL, "case %d: file '%s' not named in: %s", i,
                      file, msg);
    if (c->line > 0) {
        char at[600];
        snprintf(at, sizeof at, "%s:%d:", file ? file : "", c->line);
        ck_assert_msg(strstr(msg, at) != NULL, "case %d: '%s' not in: %s", i, at, msg);
    }
    ck_assert_msg(strstr(msg, c->key) != NULL, "case %d: key '%s' not named in: %s", i, c->key,
                  msg);
}

/* The library's verdict on one row. */
static void check_library(const struct bad *c, int i, const char *bad)
{
    struct mp_error err = { 0 };
    int rc = MP_OK;
    struct config cfg;
    config_defaults(&cfg);
    switch (c->fmt) {
    case F_SCEN:
        rc = config_load(&cfg, bad, &err);
        if (rc == MP_OK) {
            struct sim s;
            rc = sim_run(&s, &cfg, NULL, &err);
            sim_release(&s);
        }
        break;
    case F_SET: {
        char good[512];
        snprintf(good, sizeof good, "%s/good.ini", root);
        ck_assert_int_eq(config_load(&cfg, good, &err), MP_OK);
        rc = config_set(&cfg, c->text, "--set", &err);
        if (rc == MP_OK) {
            struct sim s;
            rc = sim_run(&s, &cfg, NULL, &err);
            sim_release(&s);
        }
        break;
    }
    case F_JSON: {
        struct model m;
        rc = model_load(&m, bad, &err);
        if (rc == MP_OK) model_release(&m);
        break;
    }
    case F_CSV: {
        struct chip_catalog cat;
        rc = chip_catalog_load(&cat, bad, &err);
        if (rc == MP_OK) chip_catalog_release(&cat);
        break;
    }
    case F_SYS: {
        struct chip_catalog cat;
        ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
        struct system sys;
        rc = system_load(&sys, bad, 0, 8, &cat, &err);
        system_release(&sys);
        chip_catalog_release(&cat);
        break;
    }
    case F_TRACE: {
        char wrap[512];
        snprintf(wrap, sizeof wrap, "%s/wrap.ini", root);
        write_wrapper(c, bad, wrap);
        ck_assert_int_eq(config_load(&cfg, wrap, &err), MP_OK);
        struct serve s;
        rc = serve_run(&s, &cfg, &err);
        serve_release(&s);
        break;
    }
    case F_TIMELINE: {
        struct timeline tl;
        timeline_init(&tl);
        rc = timeline_read_csv(&tl, bad, &err);
        timeline_release(&tl);
        break;
    }
    case F_ARGS: return; /* the command line has no library parser */
    }
    ck_assert_msg(rc == MP_ERR_INPUT, "case %d: library status %d, want 2 (%s)", i, rc, err.msg);
    expect_message(c, i, err.msg, c->fmt == F_SET ? NULL : bad);
}

static int folder_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 0;
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

/* The command's verdict: exit 2, the message on stderr, no output left. */
static void check_cli(const struct bad *c, int i, const char *bad, const char *mpsim)
{
    if (c->fmt == F_TIMELINE) return; /* read by mpsim-view, an SDL program */
    char out[512], errfile[512], wrap[512], good[512], t1[600], t2[600];
    snprintf(out, sizeof out, "%s/out", root);
    snprintf(errfile, sizeof errfile, "%s/stderr", root);
    snprintf(wrap, sizeof wrap, "%s/wrap.ini", root);
    snprintf(good, sizeof good, "%s/good.ini", root);
    snprintf(t1, sizeof t1, "%s/t.csv", out);
    snprintf(t2, sizeof t2, "%s/t.json", out);
    ck_assert_int_eq(mkdir(out, 0755), 0);
    write_wrapper(c, bad, wrap);

    char args[1024], *argv[24];
    int argc = 0;
    argv[argc++] = (char *)mpsim;
    if (c->fmt == F_ARGS) {
        snprintf(args, sizeof args, "%s", c->text);
        for (char *tok = strtok(args, "\n"); tok && argc < 20; tok = strtok(NULL, "\n"))
            argv[argc++] = !strcmp(tok, "@S") ? good : !strcmp(tok, "@O") ? out : tok;
    } else {
        argv[argc++] = "run";
        argv[argc++] = c->fmt == F_SCEN ? (char *)bad : c->fmt == F_SET || c->fmt == F_CSV
                                                         ? good : wrap;
        if (c->fmt == F_SET) {
            argv[argc++] = "--set";
            argv[argc++] = (char *)c->text;
        }
        if (c->fmt != F_TRACE) { /* serving runs write neither yet */
            argv[argc++] = "--timeline";
            argv[argc++] = t1;
            argv[argc++] = "--trace";
            argv[argc++] = t2;
        }
    }
    argv[argc] = NULL;

    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int null = open("/dev/null", O_WRONLY);
        if (fd < 0 || null < 0) _exit(99);
        dup2(fd, 2);
        dup2(null, 1);
        if (c->fmt == F_CSV) {
            char home[512];
            snprintf(home, sizeof home, "%s/home", root);
            setenv("MPSIM_HOME", home, 1);
        }
        execv(mpsim, argv);
        _exit(98);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    FILE *f = fopen(errfile, "r");
    char msg[4096] = "";
    size_t n = fread(msg, 1, sizeof msg - 1, f);
    msg[n] = '\0';
    fclose(f);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == MP_ERR_INPUT,
                  "case %d: mpsim exit %d, want 2: %s", i,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), msg);
    expect_message(c, i, msg, c->fmt == F_SET || c->fmt == F_ARGS ? NULL : bad);
    ck_assert_msg(folder_is_empty(out), "case %d: mpsim left a file in %s", i, out);
}

/* One row: a fresh folder, the file, the library, then the command. */
START_TEST(bad_input)
{
    const struct bad *c = &cases[_i];
    snprintf(root, sizeof root, "/tmp/mpsim-bad-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    char good[512], home[512], bad[512];
    snprintf(good, sizeof good, "%s/good.ini", root);
    write_bytes(good, GOOD_SCENARIO, strlen(GOOD_SCENARIO));
    /* A data folder whose chips.csv is the row's (CSV rows), with the real
     * presets beside it. */
    snprintf(home, sizeof home, "%s/home/hardware", root);
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && ln -s '%s/hardware/systems' '%s/systems' && "
             "ln -s '%s/models' '%s/../models'", home, mp_data_dir(), home, mp_data_dir(), home);
    ck_assert_int_eq(system(cmd), 0);

    const char *name = file_name(c->fmt);
    if (name) {
        snprintf(bad, sizeof bad, "%s/%s", root, name);
        place(c, bad);
    } else {
        bad[0] = '\0';
    }
    check_library(c, _i, bad);
    const char *mpsim = getenv("MPSIM");
    if (mpsim && *mpsim) check_cli(c, _i, bad, mpsim);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The table must keep its promise of at least 60 rows over every format. */
START_TEST(table_covers_every_format)
{
    int per[F_ARGS + 1] = { 0 };
    for (int i = 0; i < N_CASES; i++) per[cases[i].fmt]++;
    ck_assert_int_ge(N_CASES, 60);
    for (int f = 0; f <= F_ARGS; f++) ck_assert_int_ge(per[f], 1);
}
END_TEST

static Suite *badinput_suite(void)
{
    Suite *s = suite_create("badinput");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, bad_input, 0, N_CASES);
    tcase_add_test(tc, table_covers_every_format);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(badinput_suite)
