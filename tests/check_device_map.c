/* check_device_map.c — Accelerate's infer_auto_device_map as
 * sim/serve/device_map.h reimplements it, on cases a person can check:
 * sizes parsed as convert_file_size_to_int reads them, a tiny Llama whose
 * every byte is counted below, the worked Llama-3-8B numbers of
 * shared/reference/device-map.md §8 and its printed maps (§7), and the
 * offload streaming time of a generate() forward (sim/serve/accel.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/serve/accel.h"
#include "testutil.h"

/* ---- sizes and max_memory ------------------------------------------------------ */

START_TEST(sizes_as_accelerate_reads_them)
{
    double b;
    ck_assert_int_eq(dm_parse_size("10GiB", &b), 0);
    ck_assert_double_eq(b, 10.0 * 1073741824);          /* 10 × 2^30 */
    ck_assert_int_eq(dm_parse_size("10GB", &b), 0);
    ck_assert_double_eq(b, 1e10);                        /* 10 × 10^9 */
    ck_assert_int_eq(dm_parse_size("10gib", &b), 0);     /* any case */
    ck_assert_double_eq(b, 10.0 * 1073741824);
    ck_assert_int_eq(dm_parse_size("10Gb", &b), 0);      /* lower-case b: bits */
    ck_assert_double_eq(b, 1.25e9);
    ck_assert_int_eq(dm_parse_size("1.5GiB", &b), 0);
    ck_assert_double_eq(b, 1610612736);                  /* 1.5 × 2^30 */
    ck_assert_int_eq(dm_parse_size("512MiB", &b), 0);
    ck_assert_double_eq(b, 536870912);
    ck_assert_int_eq(dm_parse_size("3KB", &b), 0);
    ck_assert_double_eq(b, 3000);
    ck_assert_int_eq(dm_parse_size("123456", &b), 0);    /* an int is bytes */
    ck_assert_double_eq(b, 123456);
    ck_assert_int_eq(dm_parse_size("1.5KiB", &b), 0);
    ck_assert_double_eq(b, 1536);
    /* Units Accelerate refuses, and what is not a number. */
    ck_assert_int_eq(dm_parse_size("10G", &b), -1);
    ck_assert_int_eq(dm_parse_size("1TB", &b), -1);
    ck_assert_int_eq(dm_parse_size("1TiB", &b), -1);
    ck_assert_int_eq(dm_parse_size("10B", &b), -1);
    ck_assert_int_eq(dm_parse_size("-1GB", &b), -1);
    ck_assert_int_eq(dm_parse_size("GB", &b), -1);
    ck_assert_int_eq(dm_parse_size("infGB", &b), -1);
    ck_assert_int_eq(dm_parse_size("nan", &b), -1);
    ck_assert_int_eq(dm_parse_size("0x10GB", &b), -1);
}
END_TEST

START_TEST(max_memory_order_and_errors)
{
    struct dm_memory mm;
    struct mp_error err = { 0 };
    /* Reordered: GPU ids ascending, then cpu, then disk (§2.3). */
    ck_assert_int_eq(dm_memory_parse("cpu=64GiB, 1=10GiB,0=2GB", "--max-memory", &mm, &err),
                     MP_OK);
    ck_assert_int_eq(mm.n, 3);
    ck_assert_int_eq(mm.device[0], 0);
    ck_assert_double_eq(mm.bytes[0], 2e9);
    ck_assert_int_eq(mm.device[1], 1);
    ck_assert_int_eq(mm.device[2], DM_CPU);
    ck_assert(mm.given);
    ck_assert_int_eq(dm_memory_parse("disk=1TB", "x", &mm, &err), MP_ERR_INPUT); /* no TB */
    ck_assert_int_eq(dm_memory_parse("disk=100GB,0:1GiB", "x", &mm, &err), MP_OK);
    ck_assert_int_eq(mm.device[0], 0);
    ck_assert_int_eq(mm.device[1], DM_DISK);
    /* Bad entries name the flag, the entry and what was expected. */
    static const struct { const char *text, *want; } bad[] = {
        { "gpu0=10GiB", "unknown device 'gpu0'" },
        { "cuda:0=10GiB", "did you mean '0'" },
        { "cpo=10GiB", "did you mean 'cpu'" },
        { "mps=10GiB", "unknown device 'mps'" },
        { "0=10G", "expected a size as Accelerate reads it" },
        { "0=10GiB,0=5GiB", "given twice" },
        { "0=10GiB,", "another entry" },
        { "0", "expected DEVICE=SIZE" },
        { "", "got nothing" },
        { "99999=1GB", "expected at most" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(dm_memory_parse(bad[i].text, "--max-memory", &mm, &err), MP_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, "--max-memory") && strstr(err.msg, bad[i].want),
                      "'%s': %s", bad[i].text, err.msg);
    }
}
END_TEST

START_TEST(policy_names)
{
    enum dm_policy p;
    struct mp_error err = { 0 };
    ck_assert_int_eq(dm_policy_parse("balanced_low_0", "--policy", &p, &err), MP_OK);
    ck_assert_int_eq(p, DM_BALANCED_LOW_0);
    ck_assert_int_eq(dm_policy_parse("balanced_low0", "--policy", &p, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "--policy") && strstr(err.msg, "did you mean 'balanced_low_0'"),
                  "%s", err.msg);
    ck_assert_int_eq(dm_policy_parse("sequencial", "--policy", &p, &err), MP_ERR_INPUT);
    ck_assert(strstr(err.msg, "did you mean 'sequential'"));
}
END_TEST

/* ---- a tiny Llama, every byte by hand -------------------------------------------- */

/* hidden 64, 4 heads of 16 (no GQA), FFN 128, 4 layers, vocab 100, bf16:
 *   embed_tokens  100 × 64 × 2                      =  12,800 B
 *   a layer: q,k,v,o 4 × 64 × 64 = 16,384; gate/up/down 3 × 64 × 128 =
 *            24,576; 2 norms × 64 = 128 → 41,088 params × 2 =  82,176 B
 *            (9 leaf modules: 7 Linear + 2 norms)
 *   norm 64 × 2 = 128 B; rotary_emb inv_freq 16 / 2 = 8 × 2 = 16 B
 *   lm_head 100 × 64 × 2 = 12,800 B (0 when tied)
 * untied total 2 × 12,800 + 4 × 82,176 + 128 + 16 = 354,448 B. */
#define EMB 12800.0
#define LAYER 82176.0
#define TOTAL 354448.0

static const char tiny_json[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
    "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, "
    "\"num_key_value_heads\": 4, \"num_hidden_layers\": 4, \"vocab_size\": 100, "
    "\"hidden_act\": \"silu\", \"tie_word_embeddings\": %s}";

/* A one-node system of `gpus` textbook chips with a host tier: 1 GB/s per
 * GPU, 1 us per copy, a disk read at 0.5 GB/s. */
static const char *tiny_system(int gpus)
{
    char text[512];
    snprintf(text, sizeof text,
             "[system]\nchip = textbook\nchips_per_node = %d\n%s"
             "[host]\nmemory = 1TB\nlink_bw = 1GB/s\nlink_latency = 1us\n"
             "disk = 1GB\ndisk_bw = 0.5GB/s\n",
             gpus, gpus > 1 ? "[scaleup]\ntopology = switch\nbandwidth = 1GB/s\nlatency = 0\n" : "");
    static char path[512];
    snprintf(path, sizeof path, "%s", mp_test_tmpfile(".ini", text));
    return path;
}

static int setup_tiny(struct accel_setup *a, bool tied, int gpus, const char *policy,
                      const char *max_memory, struct mp_error *err)
{
    char json[1024];
    snprintf(json, sizeof json, tiny_json, tied ? "true" : "false");
    char model[512];
    snprintf(model, sizeof model, "%s", mp_test_tmpfile(".json", json));
    struct config cfg;
    config_defaults(&cfg);
    ck_assert_int_eq(config_set_key(&cfg, "model.config", model, "test", err), MP_OK);
    ck_assert_int_eq(config_set_key(&cfg, "hardware.system", tiny_system(gpus), "test", err),
                     MP_OK);
    ck_assert_int_eq(config_set_key(&cfg, "device_map.policy", policy, "test", err), MP_OK);
    ck_assert_int_eq(config_set_key(&cfg, "device_map.max_memory", max_memory, "test", err),
                     MP_OK);
    return accel_setup(a, &cfg, "--max-memory", err);
}

/* The printed map of a setup, as text. */
static const char *map_text(const struct accel_setup *a)
{
    static char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    dm_print_python(f, &a->tree, &a->map);
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

START_TEST(tiny_sizes_by_hand)
{
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_tiny(&a, false, 1, "sequential", "0=1GB", &err) == MP_OK, "%s", err.msg);
    const struct hf_tree *t = &a.tree;
    ck_assert_double_eq(t->mod[0].size, TOTAL);
    ck_assert_double_eq(t->mod[hf_find(t, "model.embed_tokens")].size, EMB);
    ck_assert_double_eq(t->mod[hf_find(t, "model.layers.2")].size, LAYER);
    ck_assert_double_eq(t->mod[hf_find(t, "model.norm")].size, 128);
    ck_assert_double_eq(t->mod[hf_find(t, "model.rotary_emb")].size, 16);
    ck_assert_double_eq(t->mod[hf_find(t, "lm_head")].size, EMB);
    /* Leaves: embedding, 4 × 9, norm, rotary, head = 40. */
    ck_assert_int_eq(t->mod[0].leaves, 40);
    ck_assert(t->mod[hf_find(t, "model.layers.0")].no_split);
    ck_assert_str_eq(t->layer_class, "LlamaDecoderLayer");
    /* Parameters agree with models/model.c's count of each layer. */
    for (int l = 1; l <= 4; l++) ck_assert_double_eq(a.model.layer[l].params * 2, LAYER);
    accel_setup_release(&a);
}
END_TEST

START_TEST(a_model_that_fits)
{
    /* 354,448 B on a 1 MB GPU: every module on 0, cleaned to the root. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_tiny(&a, false, 1, "auto", "0=1MB", &err) == MP_OK, "%s", err.msg);
    ck_assert_str_eq(map_text(&a), "{'': 0}");
    accel_setup_release(&a);
}
END_TEST

START_TEST(split_at_a_known_layer_and_the_reserve)
{
    /* Sequential, GPU 0 then GPU 1. GPU 0 is a main device: it keeps room
     * for the largest layer still to come, a decoder (82,176 B). With
     * X = 12,800 + 2 × 82,176 + 82,176 = 259,328 B the limit is 177,152:
     * the embedding and layers 0 and 1 fill it exactly (<= fits), layer 2
     * goes to GPU 1. Without the reserve (3 × 82,176 + 12,800 = 259,328)
     * a third layer would have fitted: the reserve costs one layer. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_tiny(&a, false, 2, "sequential", "0=259328,1=1MB", &err) == MP_OK, "%s",
                  err.msg);
    ck_assert_str_eq(map_text(&a), "{'model.embed_tokens': 0, 'model.layers.0': 0, "
                                   "'model.layers.1': 0, 'model.layers.2': 1, 'model.layers.3': 1, "
                                   "'model.norm': 1, 'model.rotary_emb': 1, 'lm_head': 1}");
    ck_assert_double_eq(a.map.dev[0].weights, EMB + 2 * LAYER);
    ck_assert_double_eq(a.map.dev[0].reserve, LAYER);
    accel_setup_release(&a);
    /* One byte less and layer 1 no longer fits: the boundary moves by
     * exactly one layer. */
    ck_assert_msg(setup_tiny(&a, false, 2, "sequential", "0=259327,1=1MB", &err) == MP_OK, "%s",
                  err.msg);
    ck_assert_str_eq(map_text(&a), "{'model.embed_tokens': 0, 'model.layers.0': 0, "
                                   "'model.layers.1': 1, 'model.layers.2': 1, 'model.layers.3': 1, "
                                   "'model.norm': 1, 'model.rotary_emb': 1, 'lm_head': 1}");
    accel_setup_release(&a);
    /* 95,000 B: limit 95,000 - 82,176 = 12,824 holds the embedding
     * (12,800) only; every layer on GPU 1, so clean_device_map collapses
     * them to 'model.layers', re-inserted at the end of the dict. */
    ck_assert_msg(setup_tiny(&a, false, 2, "sequential", "0=95000,1=1MB", &err) == MP_OK, "%s",
                  err.msg);
    ck_assert_str_eq(map_text(&a), "{'model.embed_tokens': 0, 'model.norm': 1, "
                                   "'model.rotary_emb': 1, 'lm_head': 1, 'model.layers': 1}");
    accel_setup_release(&a);
}
END_TEST

START_TEST(balanced_four_equal_layers_over_two_gpus)
{
    /* get_balanced_memory (§4): per_gpu = 354,448 // 2 = 177,224; layer term
     * = layers.0 = 82,176; mean term = int(354,448 / 40) = 8,861; buffer =
     * int(1.25 × 82,176) = 102,720; GPU 0 = min(177,224 + 102,720, 1 MB) =
     * 279,944, GPU 1 (the last) keeps 1 MB. Placement: GPU 0's limit is
     * 279,944 - 82,176 = 197,768 >= 12,800 + 2 × 82,176 = 177,152 but
     * < 259,328: two layers each. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_tiny(&a, false, 2, "balanced", "0=1MB,1=1MB", &err) == MP_OK, "%s",
                  err.msg);
    ck_assert_double_eq(a.map.buffer, 102720);
    ck_assert_double_eq(a.map.mean_term, 8861);
    ck_assert_double_eq(a.map.dev[0].budget, 279944);
    ck_assert_double_eq(a.map.dev[1].budget, 1e6);
    ck_assert_str_eq(map_text(&a), "{'model.embed_tokens': 0, 'model.layers.0': 0, "
                                   "'model.layers.1': 0, 'model.layers.2': 1, 'model.layers.3': 1, "
                                   "'model.norm': 1, 'model.rotary_emb': 1, 'lm_head': 1}");
    accel_setup_release(&a);
    /* balanced_low_0: GPU 0 = max(0, 354,448 - 1 MB) = 0: nothing on it,
     * GPU 1 takes everything. */
    ck_assert_msg(setup_tiny(&a, false, 2, "balanced_low_0", "0=1MB,1=1MB", &err) == MP_OK,
                  "%s", err.msg);
    ck_assert_double_eq(a.map.dev[0].budget, 0);
    ck_assert_str_eq(map_text(&a), "{'': 1}");
    accel_setup_release(&a);
}
END_TEST

START_TEST(tied_embedding_on_one_device)
{
    /* Tied: lm_head holds no bytes of its own (total 341,648) and is placed
     * with the embedding, right after it in the map. GPU 0 = 100,000 B keeps
     * 82,176 for a layer: limit 17,824 holds the embedding (12,800) and its
     * tied head, no layer; the rest goes to the cpu, layers collapsed. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_tiny(&a, true, 1, "sequential", "0=100000,cpu=1MB", &err) == MP_OK,
                  "%s", err.msg);
    ck_assert_double_eq(a.tree.mod[0].size, TOTAL - EMB);
    ck_assert_double_eq(a.tree.mod[hf_find(&a.tree, "lm_head")].size, 0);
    ck_assert_str_eq(map_text(&a), "{'model.embed_tokens': 0, 'lm_head': 0, 'model.norm': 'cpu', "
                                   "'model.rotary_emb': 'cpu', 'model.layers': 'cpu'}");
    accel_setup_release(&a);
    /* 90,000 B: limit 7,824 < 12,800: the embedding and its head both go
     * to the cpu, never apart. */
    ck_assert_msg(setup_tiny(&a, true, 1, "sequential", "0=90000,cpu=1MB", &err) == MP_OK, "%s",
                  err.msg);
    ck_assert_str_eq(map_text(&a), "{'': 'cpu'}");
    accel_setup_release(&a);
}
END_TEST

START_TEST(offload_streaming_time_by_hand)
{
    /* Sequential {0: 259,328, cpu: 1 MB}: embedding and layers 0-1 on GPU 0
     * (as above); layers 2-3, norm, rotary and head on the cpu: 2 × 82,176
     * + 128 + 16 + 12,800 = 177,296 B streamed to GPU 0 every forward over
     * the 1 GB/s host link: 177.296 us, plus 1 us for each of the 5
     * modules' copies = 182.296 us = 182,296,000 ps. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_tiny(&a, false, 1, "sequential", "0=259328,cpu=1MB", &err) == MP_OK,
                  "%s", err.msg);
    double disk;
    ck_assert_int_eq(accel_stream_time(&a, &disk), 182296000);
    ck_assert_double_eq(disk, 0);
    /* generate(): one forward for the prompt and one per further token,
     * each paying the whole stream again. */
    a.cfg.inference.prompt_len = 8;
    a.cfg.inference.output_len = 5;
    a.cfg.inference.requests = 1;
    a.cfg.inference.context_len = 13;
    struct accel_report rep;
    ck_assert_msg(accel_generate(&rep, &a, &err) == MP_OK, "%s", err.msg);
    ck_assert_int_eq(rep.gen.stream, 5 * (mp_time)182296000);
    ck_assert_double_eq(rep.gen.stream_bytes_per_forward, 177296);
    accel_setup_release(&a);
    /* With no cpu entry the same modules land on disk: each forward reads
     * 177,296 B at 0.5 GB/s (354.592 us) before the same host copy. */
    ck_assert_msg(setup_tiny(&a, false, 1, "sequential", "0=259328", &err) == MP_OK, "%s",
                  err.msg);
    ck_assert_int_eq(accel_stream_time(&a, &disk), 182296000);
    ck_assert_double_eq(disk, 354592000);
    accel_setup_release(&a);
}
END_TEST

START_TEST(fits_nowhere_even_with_disk)
{
    /* The tiny system's disk holds 1 GB: fine. A disk entry of 100,000 B
     * (sequential) and no cpu: 177,296 B would land on disk. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_int_eq(setup_tiny(&a, false, 1, "sequential", "0=259328,disk=100000", &err),
                     MP_ERR_INFEASIBLE);
    ck_assert_msg(strstr(err.msg, "on disk") && strstr(err.msg, "--max-memory") &&
                  strstr(err.msg, "fits nowhere"), "%s", err.msg);
    accel_setup_release(&a);
    /* A disk entry with a balanced policy: transformers 4.x fails. */
    ck_assert_int_eq(setup_tiny(&a, false, 1, "auto", "0=1MB,disk=1GB", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "disk entry"), "%s", err.msg);
    accel_setup_release(&a);
    /* A GPU the system does not have. */
    ck_assert_int_eq(setup_tiny(&a, false, 2, "auto", "0=1MB,2=1MB", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "GPU 2 is beyond") && strstr(err.msg, "GPUs 0-1"), "%s",
                  err.msg);
    accel_setup_release(&a);
}
END_TEST

/* ---- the reference's Llama-3-8B and Qwen2.5-1.5B (device-map.md §7, §8) ---------- */

static int setup_preset(struct accel_setup *a, const char *model, const char *system,
                        const char *policy, const char *mem, struct mp_error *err)
{
    struct config cfg;
    config_defaults(&cfg);
    ck_assert_int_eq(config_set_key(&cfg, "model.config", model, "test", err), MP_OK);
    ck_assert_int_eq(config_set_key(&cfg, "hardware.system", system, "test", err), MP_OK);
    ck_assert_int_eq(config_set_key(&cfg, "device_map.policy", policy, "test", err), MP_OK);
    ck_assert_int_eq(config_set_key(&cfg, "device_map.max_memory", mem, "test", err), MP_OK);
    return accel_setup(a, &cfg, NULL, err);
}

START_TEST(llama3_8b_worked_numbers)
{
    /* §8: layer 436,224,000 B; embedding = head = 1,050,673,152 B; total
     * 16,060,522,624 B; buffer int(1.25 × 436,224,000) = 545,280,000; GPU 0
     * = 16,060,522,624 // 2 + 545,280,000 = 8,575,541,312; its limit minus
     * the head still to come = 7,524,868,160 holds the embedding + 14
     * layers (7,157,809,152 B), not a 15th. */
    struct accel_setup a;
    struct mp_error err = { 0 };
    ck_assert_msg(setup_preset(&a, "llama3-8b", "workstation-2x4090", "auto",
                               "0=10GiB,1=10GiB,cpu=64GiB", &err) == MP_OK, "%s", err.msg);
    ck_assert_double_eq(a.map.total, 16060522624.0);
    ck_assert_double_eq(a.tree.mod[hf_find(&a.tree, "model.layers.0")].size, 436224000.0);
    ck_assert_double_eq(a.map.largest, 1050673152.0);
    ck_assert_double_eq(a.map.buffer, 545280000.0);
    ck_assert_double_eq(a.map.dev[0].budget, 8575541312.0);
    ck_assert_double_eq(a.map.dev[1].budget, 10737418240.0);
    ck_assert_double_eq(a.map.dev[0].weights, 7157809152.0);
    ck_assert_int_eq(a.map.layer_dev[14], 0);  /* model layer 14 = decoder 13 */
    ck_assert_int_eq(a.map.layer_dev[15], 1);  /* decoder 14 */
    const char *m = map_text(&a);
    ck_assert(strstr(m, "'model.layers.13': 0, 'model.layers.14': 1"));
    ck_assert(strstr(m, "'model.norm': 1, 'model.rotary_emb': 1, 'lm_head': 1}"));
    accel_setup_release(&a);
    /* §7, sequential on {0: 2.3GB, 1: 16GB}. */
    ck_assert_msg(setup_preset(&a, "llama3-8b", "workstation-2x4090", "sequential",
                               "0=2.3GB,1=16GB", &err) == MP_OK, "%s", err.msg);
    ck_assert_str_eq(map_text(&a), "{'model.embed_tokens': 0, 'model.norm': 1, "
                                   "'model.rotary_emb': 1, 'lm_head': 1, 'model.layers': 1}");
    accel_setup_release(&a);
}
END_TEST

START_TEST(qwen_1_5b_cases)
{
    struct accel_setup a;
    struct mp_error err = { 0 };
    /* §7: {0: "24GB"} -> {'': 0}. */
    ck_assert_msg(setup_preset(&a, "qwen2.5-1.5b-instruct", "desktop-1x4090", "auto", "0=24GB",
                               &err) == MP_OK, "%s", err.msg);
    ck_assert_str_eq(map_text(&a), "{'': 0}");
    /* Qwen2.5-1.5B: 1536 × 151,936 embedding (tied) + 28 layers of 46,797,824
     * params (q with bias 2,360,832; k, v with bias 393,472 each; o
     * 2,359,296; MLP 3 × 1536 × 8960 = 41,287,680; norms 3,072) + norm
     * 1,536 = 1,543,714,304 params; bf16 plus the rotary's 64 × 2 B. */
    ck_assert_double_eq(a.map.total, 1543714304.0 * 2 + 128);
    accel_setup_release(&a);
    /* §7: {0: 1GiB, cpu: 8GiB}: embedding and its tied head, layers 0-4 on
     * GPU 0, the rest on the cpu. */
    ck_assert_msg(setup_preset(&a, "qwen2.5-1.5b-instruct", "desktop-1x4090", "auto",
                               "0=1GiB,cpu=8GiB", &err) == MP_OK, "%s", err.msg);
    const char *m = map_text(&a);
    ck_assert_msg(strstr(m, "{'model.embed_tokens': 0, 'lm_head': 0, 'model.layers.0': 0,") &&
                  strstr(m, "'model.layers.4': 0, 'model.layers.5': 'cpu',") &&
                  strstr(m, "'model.norm': 'cpu', 'model.rotary_emb': 'cpu'}"), "%s", m);
    accel_setup_release(&a);
}
END_TEST

START_TEST(bitsandbytes_sizes)
{
    /* bnb 8-bit on Llama-3-8B: every tensor 1 byte except lm_head, which bnb
     * leaves at 16 bits: 525,336,576 (embedding) + 32 × 218,112,000 + 4,096
     * (norm) + 64 (rotary) + 1,050,673,152 = 8,555,597,888 B. Budgets × 0.9:
     * 0=10GiB becomes 9,663,676,416 B, then the balanced cap. */
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    config_set_key(&cfg, "model.config", "llama3-8b", "t", &err);
    config_set_key(&cfg, "hardware.system", "desktop-1x4090", "t", &err);
    config_set_key(&cfg, "device_map.policy", "sequential", "t", &err);
    config_set_key(&cfg, "device_map.max_memory", "0=10GiB", "t", &err);
    config_set_key(&cfg, "device_map.quantization", "bnb_8bit", "t", &err);
    struct accel_setup a;
    ck_assert_msg(accel_setup(&a, &cfg, NULL, &err) == MP_OK, "%s", err.msg);
    ck_assert_double_eq(a.map.total, 8555597888.0);
    ck_assert_double_eq(a.map.dev[0].budget, 10737418240.0 * 0.9);
    accel_setup_release(&a);
    /* Plain 8-bit (--weight-bits 8): 1 byte everywhere, no × 0.9. */
    config_set_key(&cfg, "device_map.quantization", "none", "t", &err);
    cfg.model.weight_bits = 8;
    ck_assert_msg(accel_setup(&a, &cfg, NULL, &err) == MP_OK, "%s", err.msg);
    ck_assert_double_eq(a.map.total, 8030261312.0);  /* 8,030,261,248 params + 64 */
    ck_assert_double_eq(a.map.dev[0].budget, 10737418240.0);
    accel_setup_release(&a);
}
END_TEST

START_TEST(every_preset_matches_model_c)
{
    /* The tree's bytes per decoder at 16 bits are twice models/model.c's
     * parameters for every shipped architecture (DeepSeek's router bias
     * is a buffer here, a parameter there: the same count). */
    static const char *const presets[] = { "llama3-8b", "llama3-70b", "mixtral-8x7b",
                                           "deepseek-v3", "gpt3-175b", "kimi-k3",
                                           "qwen2.5-1.5b-instruct" };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        struct model m;
        struct mp_error err = { 0 };
        char path[512];
        snprintf(path, sizeof path, "models/%s.json", presets[i]);
        ck_assert_msg(model_load(&m, mp_test_path(path), &err) == MP_OK, "%s", err.msg);
        struct hf_tree t;
        struct hf_dtype dt = { .quant = HF_QUANT_NONE, .weight_bits = 16 };
        ck_assert_int_eq(hf_tree_build(&t, &m, &dt, &err), MP_OK);
        for (int l = 1; l <= m.decoders; l++) {
            char name[64];
            snprintf(name, sizeof name, "%s.%d",
                     strcmp(m.arch, "gpt2") ? "model.layers" : "transformer.h", l - 1);
            int k = hf_find(&t, name);
            ck_assert_msg(k >= 0, "%s: no %s", presets[i], name);
            ck_assert_msg(t.mod[k].size == 2 * m.layer[l].params, "%s %s: %.0f vs %.0f",
                          presets[i], name, t.mod[k].size, 2 * m.layer[l].params);
        }
        /* The whole: model_params plus the rotary buffer (none for GPT-2). */
        double rot = strcmp(m.arch, "gpt2") == 0 ? 0
                     : 2 * floor((m.kv_lora_rank ? m.qk_rope_head_dim : m.head_dim) / 2.0);
        ck_assert_msg(t.mod[0].size == 2 * model_params(&m) + rot, "%s: %.0f vs %.0f",
                      presets[i], t.mod[0].size, 2 * model_params(&m) + rot);
        hf_tree_release(&t);
        model_release(&m);
    }
}
END_TEST

Suite *device_map_suite(void)
{
    Suite *s = suite_create("device_map");
    TCase *t = tcase_create("parse");
    tcase_add_test(t, sizes_as_accelerate_reads_them);
    tcase_add_test(t, max_memory_order_and_errors);
    tcase_add_test(t, policy_names);
    suite_add_tcase(s, t);
    t = tcase_create("tiny");
    tcase_add_test(t, tiny_sizes_by_hand);
    tcase_add_test(t, a_model_that_fits);
    tcase_add_test(t, split_at_a_known_layer_and_the_reserve);
    tcase_add_test(t, balanced_four_equal_layers_over_two_gpus);
    tcase_add_test(t, tied_embedding_on_one_device);
    tcase_add_test(t, offload_streaming_time_by_hand);
    tcase_add_test(t, fits_nowhere_even_with_disk);
    suite_add_tcase(s, t);
    t = tcase_create("reference");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, llama3_8b_worked_numbers);
    tcase_add_test(t, qwen_1_5b_cases);
    tcase_add_test(t, bitsandbytes_sizes);
    tcase_add_test(t, every_preset_matches_model_c);
    suite_add_tcase(s, t);
    return s;
}

MP_TEST_MAIN(device_map_suite)
