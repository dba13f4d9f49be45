/* check_explain.c — `mpsim explain` (sim/explore/explain.h) and `mpsim
 * import` (sim/explore/import.h) through the library: every lever's
 * predicted step is exactly the run of the changed scenario; a Megatron
 * command line and a DeepSpeed JSON in tests/data/import become the
 * scenarios written here by hand; malformed values are input errors naming
 * the flag or key. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/explore/explain.h"
#include "sim/explore/import.h"
#include "sim/train/sim.h"
#include "testutil.h"

static void load(struct config *cfg, const char *path)
{
    struct mp_error err = { 0 };
    config_defaults(cfg);
    ck_assert_msg(config_load(cfg, path, &err) == MP_OK, "%s", err.msg);
}

/* Each lever that fits: its step is what sim_run gives the scenario with
 * the lever's --set applied, to the picosecond; and at least one lever on
 * GPT-3 175B is faster. */
START_TEST(every_lever_is_the_run_of_its_changed_scenario)
{
    struct config cfg;
    load(&cfg, mp_test_path("scenarios/megatron-gpt3-175b.ini"));
    struct explain x;
    struct mp_error err = { 0 };
    ck_assert_int_eq(explain_run(&x, &cfg, 2, &err), MP_OK);
    ck_assert_int_ge(x.n_levers, 5);
    int checked = 0;
    for (int i = 0; i < x.n_levers; i++) {
        const struct explain_lever *lv = &x.lever[i];
        struct config c = cfg;
        for (int k = 0; k < lv->n_set; k++) ck_assert_int_eq(config_set(&c, lv->set[k], "test", &err), MP_OK);
        struct sim s;
        int rc = sim_run(&s, &c, NULL, &err);
        ck_assert_int_eq(rc, lv->run.rc);
        if (rc == MP_OK) {
            ck_assert_int_eq(s.res.step_time, lv->run.step);
            ck_assert_int_eq(step_split_total(&lv->run.split), lv->run.step);
            checked++;
        }
        sim_release(&s);
    }
    ck_assert_int_ge(checked, 5);
    /* the best lever is first, and it is faster than the scenario */
    ck_assert_int_eq(x.lever[0].run.rc, MP_OK);
    ck_assert(x.lever[0].run.step < x.base.step);
    for (int i = 1; i < checked; i++) ck_assert(x.lever[i - 1].run.step <= x.lever[i].run.step);
    /* tp_overlap is proposed for the exposed TP time, and it helps */
    bool overlap = false;
    for (int i = 0; i < x.n_levers; i++)
        if (!strcmp(x.lever[i].set[0], "parallel.tp_overlap=true")) {
            overlap = true;
            ck_assert_ptr_nonnull(strstr(x.lever[i].why, "exposed TP"));
            ck_assert(x.lever[i].run.split.part[SPLIT_TP] < x.base.split.part[SPLIT_TP]);
        }
    ck_assert(overlap);
    /* the chip count never changes */
    for (int i = 0; i < x.n_levers; i++)
        if (x.lever[i].run.has_metrics) ck_assert_int_eq(x.lever[i].run.chips, 1024);
    explain_release(&x);
}
END_TEST

START_TEST(explain_refuses_a_serving_scenario)
{
    struct config cfg;
    load(&cfg, mp_test_path("scenarios/kimi-k3-wafers.ini"));
    struct explain x;
    struct mp_error err = { 0 };
    ck_assert_int_eq(explain_run(&x, &cfg, 1, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "training scenarios"));
    explain_release(&x);
}
END_TEST

/* Run an import into a string; NULL words → DeepSpeed `path`. */
static char *import_text(const char *cmdline, const char *path, const struct import_options *o,
                         int want_rc, struct mp_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc;
    if (cmdline) {
        char **w;
        int n;
        ck_assert_int_eq(import_split_words(cmdline, &w, &n, err), MP_OK);
        rc = import_megatron(w, n, o, f, err);
        import_words_free(w, n);
    } else {
        rc = import_deepspeed(path, o, f, err);
    }
    fclose(f);
    ck_assert_msg(rc == want_rc, "rc %d: %s", rc, err->msg);
    return buf;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Every key of two scenarios, as the INI would hold it, is the same. */
static void assert_same_keys(const struct config *a, const struct config *b)
{
    for (const struct config_key *k = config_keys; k->name; k++) {
        char x[CONFIG_STR], y[CONFIG_STR];
        config_format_value(a, k, x, sizeof x);
        config_format_value(b, k, y, sizeof y);
        ck_assert_msg(!strcmp(x, y), "%s: imported %s, by hand %s", k->name, x, y);
    }
}

/* GPT-3 175B as Narayanan et al. ran it (tests/data/import/
 * megatron-gpt3-175b.sh: torchrun on 128 nodes × 8, TP 8, PP 16, batch 1536,
 * full recompute, bf16, --overlap-grad-reduce) is this scenario: dp =
 * 1024 / (8 × 16) = 8, the gpt3-175b preset (96 layers, h 12288, 96 heads,
 * GPT-2 BPE padded to 51,200), Megatron's 40M-parameter bucket = 160 MB of
 * fp32 gradients. It is scenarios/megatron-gpt3-175b.ini, key for key. */
static const char gpt3_by_hand[] =
    "[model]\nconfig = gpt3-175b\nseq_len = 2048\nweight_bits = 16\nactivation_bits = 16\n"
    "[hardware]\nsystem = dgx-a100\n"
    "[parallel]\ntp = 8\npp = 16\ndp = 8\n"
    "[training]\nglobal_batch = 1536\nmicro_batch = 1\nschedule = 1f1b\nrecompute = full\n"
    "zero = 0\ndp_overlap = true\ndp_bucket = 160MB\n";

START_TEST(megatron_command_line_round_trips)
{
    struct mp_error err = { 0 };
    struct import_options o = { .system = "dgx-a100" };
    char *ini = import_text(slurp(mp_test_path("tests/data/import/megatron-gpt3-175b.sh")), NULL,
                            &o, MP_OK, &err);
    /* a comment for every key: the flag it came from */
    ck_assert_ptr_nonnull(strstr(ini, "; --tensor-model-parallel-size 8\ntp = 8\n"));
    ck_assert_ptr_nonnull(strstr(ini, "; world size 1024 (--nnodes 128 × --nproc_per_node 8)"));
    struct config got, want, shipped;
    char path[600];
    snprintf(path, sizeof path, "%s", mp_test_tmpfile(".ini", ini));
    load(&got, path);
    load(&want, mp_test_tmpfile(".ini", gpt3_by_hand));
    assert_same_keys(&got, &want);
    load(&shipped, mp_test_path("scenarios/megatron-gpt3-175b.ini"));
    assert_same_keys(&got, &shipped);
    free(ini);
}
END_TEST

/* A Llama-3-70B-shaped run with virtual stages, SP, the distributed
 * optimizer and context parallelism: 80 layers over pp 4 in virtual stages
 * of 5 layers → vpp = 80 / (4 × 5) = 4, interleaved; dp = 512 / (8 × 4 ×
 * 2) = 8 (cp takes chips); the llama3-70b preset by shape. */
START_TEST(megatron_virtual_stages_and_gqa)
{
    struct mp_error err = { 0 };
    struct import_options o = { .system = "dgx-h100", .chips = 512 };
    char *ini = import_text(
        "python pretrain_gpt.py --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4 "
        "--context-parallel-size 2 --num-layers-per-virtual-pipeline-stage 5 --num-layers 80 "
        "--hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 "
        "--group-query-attention --num-query-groups 8 --swiglu --untie-embeddings-and-output-weights "
        "--vocab-size 128256 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1 "
        "--global-batch-size 512 --sequence-parallel --use-distributed-optimizer "
        "--overlap-grad-reduce --tp-comm-overlap --recompute-activations --bf16",
        NULL, &o, MP_OK, &err);
    struct config got;
    load(&got, mp_test_tmpfile(".ini", ini));
    ck_assert_str_eq(got.model.config, "llama3-70b");
    ck_assert_int_eq(got.parallel.vpp, 4);
    ck_assert_str_eq(got.training.schedule, "interleaved");
    ck_assert_int_eq(got.parallel.dp, 8);
    ck_assert(got.parallel.sp && got.parallel.tp_overlap && got.training.dp_overlap);
    ck_assert_int_eq(got.training.zero, 1);
    ck_assert_int_eq(got.training.recompute, RECOMPUTE_SELECTIVE);
    /* 1M × dp = 8M < 40M parameters: the 40M default, 160 MB */
    ck_assert_double_eq(got.training.dp_bucket, 160e6);
    free(ini);
}
END_TEST

/* DeepSpeed: 256 = 4 per GPU × 2 accumulation steps × dp → dp 32; ZeRO-2;
 * a bucket of 5e7 elements = 200 MB of 4-byte gradients. */
static const char ds_by_hand[] =
    "[model]\nconfig = llama3-8b\nweight_bits = 16\nactivation_bits = 16\n"
    "[hardware]\nsystem = dgx-h100\n"
    "[parallel]\ndp = 32\n"
    "[training]\nglobal_batch = 256\nmicro_batch = 4\nzero = 2\ndp_overlap = true\n"
    "dp_bucket = 200MB\n";

START_TEST(deepspeed_json_round_trips)
{
    struct mp_error err = { 0 };
    static const char *const sets[] = { "model.config=llama3-8b", NULL };
    struct import_options o = { .system = "dgx-h100", .sets = sets };
    char *ini = import_text(NULL, mp_test_path("tests/data/import/ds_zero2.json"), &o, MP_OK, &err);
    struct config got, want;
    load(&got, mp_test_tmpfile(".ini", ini));
    load(&want, mp_test_tmpfile(".ini", ds_by_hand));
    assert_same_keys(&got, &want);
    free(ini);
}
END_TEST

START_TEST(malformed_values_name_the_flag_or_key)
{
    struct mp_error err = { 0 };
    struct import_options o = { .system = "dgx-h100" };
    char *out = import_text("--tensor-model-parallel-size eight --num-layers 2", NULL, &o,
                            MP_ERR_INPUT, &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "--tensor-model-parallel-size 'eight': expected a whole number"));
    ck_assert_str_eq(out, ""); /* nothing written */
    free(out);
    out = import_text("--recompute-granularity most", NULL, &o, MP_ERR_INPUT, &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "--recompute-granularity 'most': expected full or selective"));
    free(out);
    out = import_text("--micro-batch-size", NULL, &o, MP_ERR_INPUT, &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "--micro-batch-size needs a value"));
    free(out);
    out = import_text("--num-layers 96 --hidden-size 1000 --num-attention-heads 7", NULL, &o,
                      MP_ERR_INPUT, &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "--model-out"));
    free(out);
    out = import_text(NULL, mp_test_path("tests/data/import/ds_bad_stage.json"), &o, MP_ERR_INPUT,
                      &err);
    ck_assert_ptr_nonnull(strstr(err.msg, "key zero_optimization.stage: expected a whole number from 0 to 3, got a string"));
    ck_assert_str_eq(out, "");
    free(out);
    char **w;
    int n;
    ck_assert_int_eq(import_split_words("'--tensor-model-parallel-size 8", &w, &n, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "unterminated ' quote"));
}
END_TEST

static Suite *explain_suite(void)
{
    Suite *s = suite_create("explain");
    TCase *tc = tcase_create("explain_import");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_lever_is_the_run_of_its_changed_scenario);
    tcase_add_test(tc, explain_refuses_a_serving_scenario);
    tcase_add_test(tc, megatron_command_line_round_trips);
    tcase_add_test(tc, megatron_virtual_stages_and_gqa);
    tcase_add_test(tc, deepspeed_json_round_trips);
    tcase_add_test(tc, malformed_values_name_the_flag_or_key);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(explain_suite)
