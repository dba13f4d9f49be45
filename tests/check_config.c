/* check_config.c — scenario files, --set overrides, cross-key checks and
 * preset lookup. Error tests check that each message names the file, the
 * line, the key and what was expected, as DESIGN.md §4 promises. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/io/config.h"
#include "testutil.h"
#include "sim/io/units.h"

#define has(msg, part) \
    ck_assert_msg(strstr((msg), (part)) != NULL, "'%s' not in message: %s", (part), (msg))

static char path[512]; /* the last scenario written */

/* Write `text` as a scenario and load it over the defaults. */
static int load(const char *text, struct config *cfg, struct mp_error *err)
{
    snprintf(path, sizeof path, "%s", mp_test_tmpfile(".ini", text));
    config_defaults(cfg);
    memset(err, 0, sizeof *err);
    return config_load(cfg, path, err);
}

/* A load that must fail with MP_ERR_INPUT at `line`, naming the file. */
static void load_fails(const char *text, int line, struct mp_error *err)
{
    struct config cfg;
    ck_assert_int_eq(load(text, &cfg, err), MP_ERR_INPUT);
    ck_assert_int_eq(err->status, MP_ERR_INPUT);
    char at[600];
    snprintf(at, sizeof at, "%s:%d: ", path, line);
    has(err->msg, at);
}

START_TEST(defaults)
{
    struct config c;
    config_defaults(&c);
    ck_assert_str_eq(c.model.config, "llama3-8b");
    ck_assert_int_eq(c.model.kind, MODEL_TRANSFORMER);
    ck_assert_int_eq(c.model.seq_len, 2048);
    ck_assert_int_eq(c.model.weight_bits, 16);
    ck_assert_int_eq(c.model.activation_bits, 16);
    ck_assert_int_eq(c.model.kv_bits, 16);
    ck_assert_int_eq(c.synthetic.forward, MP_PS_PER_MS);
    ck_assert_int_eq(c.synthetic.backward_input, MP_PS_PER_MS);
    ck_assert_int_eq(c.synthetic.backward_weight, MP_PS_PER_MS);
    ck_assert_int_eq(c.synthetic.hop, 0);
    ck_assert(c.synthetic.activation == 1073741824.0);
    ck_assert(c.synthetic.activation_w == 0);
    ck_assert(c.synthetic.weights == 0);
    ck_assert_str_eq(c.hardware.system, "textbook");
    ck_assert_int_eq(c.hardware.nodes, 0);
    ck_assert_int_eq(c.parallel.tp, 1);
    ck_assert_int_eq(c.parallel.pp, 1);
    ck_assert_int_eq(c.parallel.dp, 1);
    ck_assert_int_eq(c.parallel.ep, 1);
    ck_assert_int_eq(c.parallel.vpp, 1);
    ck_assert(!c.parallel.sp);
    ck_assert_int_eq(c.training.global_batch, 8);
    ck_assert_int_eq(c.training.micro_batch, 1);
    ck_assert_str_eq(c.training.schedule, "1f1b");
    ck_assert_int_eq(c.training.recompute, RECOMPUTE_NONE);
    ck_assert_int_eq(c.training.zero, 0);
    ck_assert_uint_eq(c.run.seed, 1);
    ck_assert_str_eq(c.path, "");
    ck_assert_int_eq(config_check(&c, NULL), MP_OK);
    ck_assert_int_eq(config_microbatches(&c), 8); /* 8 / (1 × 1) */
}
END_TEST

START_TEST(key_table)
{
    /* Each default is written in the form config_format_value gives back,
     * so --help shows the same text a sweep CSV would. */
    struct config c;
    config_defaults(&c);
    int n = 0;
    for (const struct config_key *k = config_keys; k->name; k++, n++) {
        ck_assert_ptr_nonnull(k->doc);
        ck_assert_ptr_nonnull(k->fallback);
        ck_assert_ptr_nonnull(strchr(k->name, '.'));
        ck_assert_ptr_eq(config_find_key(k->name), k);
        char buf[CONFIG_STR];
        config_format_value(&c, k, buf, sizeof buf);
        ck_assert_str_eq(buf, k->fallback);
    }
    ck_assert_int_eq(n, 121); /* 8 model, 8 synthetic, 2 hardware, 13 parallel (4 of them
                              * context's: cp, cp_kind, cp_ulysses, stage_layers), 15 training,
                              * 22 + 36 inference (issue 19), 10 experts, 4 run, 3 device_map */
    ck_assert_ptr_null(config_find_key("parallel.ppp"));
    ck_assert_ptr_null(config_find_key("pp"));
}
END_TEST

START_TEST(load_good_file)
{
    struct config c;
    struct mp_error err;
    int rc = load("; a scenario\n"
                  "[model]\n"
                  "kind = synthetic\n"
                  "seq_len = 4096\n"
                  "config = \"gpt3-175b\"\n"
                  "\n"
                  "[synthetic]\n"
                  "forward = 2ms\n"
                  "backward_input = 1500us   ; B\n"
                  "backward_weight = 0.5 ms\n"
                  "hop = 10ns\n"
                  "activation = 2GiB\n"
                  "activation_w = 512MiB\n"
                  "weights = 44GB\n"
                  "[ hardware ]\n"
                  "system = dgx-h100\n"
                  "nodes = 4\n"
                  "[parallel]\n"
                  "  tp = 8\n"   /* indented: not a continuation of anything */
                  "  pp = 4\n"
                  "dp = 2\n"
                  "sp = yes\n"
                  "# comment\n"
                  "[training]\n"
                  "global_batch = 64\n"
                  "micro_batch = 2\n"
                  "schedule = zb-h1\n"
                  "recompute = selective\n"
                  "zero = 1\n"
                  "[run]\n"
                  "seed = 18446744073709551615\n",
                  &c, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    ck_assert_int_eq(c.model.kind, MODEL_SYNTHETIC);
    ck_assert_int_eq(c.model.seq_len, 4096);
    ck_assert_str_eq(c.model.config, "gpt3-175b");
    ck_assert_int_eq(c.synthetic.forward, 2 * MP_PS_PER_MS);
    ck_assert_int_eq(c.synthetic.backward_input, 1500 * MP_PS_PER_US);
    ck_assert_int_eq(c.synthetic.backward_weight, 500 * MP_PS_PER_US);
    ck_assert_int_eq(c.synthetic.hop, 10000);
    ck_assert(c.synthetic.activation == 2147483648.0);
    ck_assert(c.synthetic.activation_w == 536870912.0);
    ck_assert(c.synthetic.weights == 44e9);
    ck_assert_str_eq(c.hardware.system, "dgx-h100");
    ck_assert_int_eq(c.hardware.nodes, 4);
    ck_assert_int_eq(c.parallel.tp, 8);
    ck_assert_int_eq(c.parallel.pp, 4);
    ck_assert_int_eq(c.parallel.dp, 2);
    ck_assert_int_eq(c.parallel.ep, 1); /* untouched: default */
    ck_assert(c.parallel.sp);
    ck_assert_int_eq(c.training.global_batch, 64);
    ck_assert_int_eq(c.training.micro_batch, 2);
    ck_assert_str_eq(c.training.schedule, "zb-h1");
    ck_assert_int_eq(c.training.recompute, RECOMPUTE_SELECTIVE);
    ck_assert_int_eq(c.training.zero, 1);
    ck_assert_uint_eq(c.run.seed, UINT64_MAX);
    ck_assert_int_eq(config_check(&c, &err), MP_OK);
    ck_assert_int_eq(config_microbatches(&c), 16); /* 64 / (2 × 2) */

    /* path, folder and name of the scenario */
    ck_assert_str_eq(c.path, path);
    const char *slash = strrchr(path, '/');
    ck_assert_int_eq(strlen(c.dir), slash - path);
    ck_assert_int_eq(strncmp(c.dir, path, strlen(c.dir)), 0);
    ck_assert_int_eq(strlen(c.name) + 4, strlen(slash + 1));
    ck_assert_int_eq(strncmp(c.name, slash + 1, strlen(c.name)), 0);
}
END_TEST

START_TEST(error_unknown_key)
{
    struct mp_error err;
    load_fails("[parallel]\ntp = 2\nppp = 4\n", 3, &err);
    has(err.msg, "unknown key 'ppp' in [parallel]");
    has(err.msg, "(did you mean 'pp'?)");
    has(err.msg, "known keys: tp, pp, dp, ep, vpp, sp");
}
END_TEST

START_TEST(error_bad_value)
{
    struct mp_error err;
    load_fails("[parallel]\n\n\n\n\n\npp = four\n", 7, &err);
    has(err.msg, "key parallel.pp: expected a whole number ≥ 1");
    has(err.msg, "got 'four'");

    load_fails("[model]\nweight_bits = 3\n", 2, &err);
    has(err.msg, "key model.weight_bits: expected a whole number from 4 to 32, got '3'");
    load_fails("[training]\nrecompute = some\n", 2, &err);
    has(err.msg, "key training.recompute: expected one of none, selective, full, got 'some'");
    load_fails("[synthetic]\nforward = 1\n", 2, &err); /* a time needs a unit */
    has(err.msg, "key synthetic.forward: expected a duration such as 1ms");
    load_fails("[synthetic]\nactivation = 1Gb\n", 2, &err);
    has(err.msg, "key synthetic.activation: expected a size");
    load_fails("[parallel]\nsp = maybe\n", 2, &err);
    has(err.msg, "key parallel.sp: expected true or false");
    load_fails("[parallel]\ntp = 2000000\n", 2, &err);
    has(err.msg, "at most 1000000");
    load_fails("[run]\nseed = -1\n", 2, &err);
    has(err.msg, "key run.seed: expected a whole number ≥ 0, got '-1'");
    load_fails("[hardware]\nsystem =\n", 2, &err);
    has(err.msg, "key hardware.system: expected a name or path");
    load_fails("[parallel]\npp = 4 # four stages\n", 2, &err); /* # only starts a line */
    has(err.msg, "got '4 # four stages'");
}
END_TEST

START_TEST(error_unknown_section)
{
    struct mp_error err;
    load_fails("[model]\nseq_len = 8\n[paralel]\npp = 2\n", 3, &err);
    has(err.msg, "unknown section [paralel]");
    has(err.msg, "(did you mean [parallel]?)");
    has(err.msg, "known sections: model, synthetic, hardware, parallel, training, inference, experts, run");
    /* An empty unknown section is still an error: nothing is ignored. */
    load_fails("[model]\n[xyzzy]\n", 2, &err);
    has(err.msg, "unknown section [xyzzy]");
    ck_assert_ptr_null(strstr(err.msg, "did you mean"));
}
END_TEST

START_TEST(error_syntax)
{
    struct mp_error err;
    load_fails("[parallel]\ntp = 2\nthis is not a key\n", 3, &err);
    has(err.msg, "syntax error: expected 'key = value' or '[section]'");
    has(err.msg, "got 'this is not a key'");
    load_fails("[parallel\ntp = 2\n", 1, &err);
    has(err.msg, "syntax error");
    load_fails("[parallel] tp = 2\n", 1, &err);
    has(err.msg, "syntax error");
    /* Stop at the first error, whichever kind it is. */
    load_fails("[parallel]\nbad line\nppp = 2\n", 2, &err);
    has(err.msg, "syntax error");
    load_fails("[parallel]\nppp = 2\nbad line\n", 2, &err);
    has(err.msg, "unknown key 'ppp'");
}
END_TEST

START_TEST(error_duplicate_key)
{
    struct mp_error err;
    load_fails("[parallel]\npp = 2\ntp = 2\n[training]\nzero = 1\n[parallel]\npp = 4\n", 7,
               &err);
    has(err.msg, "key parallel.pp is set twice, on lines 2 and 7");
}
END_TEST

START_TEST(error_key_before_section)
{
    struct mp_error err;
    load_fails("pp = 2\n[parallel]\n", 1, &err);
    has(err.msg, "key 'pp' comes before any [section]");
}
END_TEST

START_TEST(error_long_line)
{
    struct mp_error err;
    char text[400];
    memset(text, 'x', sizeof text);
    memcpy(text, "[model]\nconfig = ", 17);
    memcpy(text + sizeof text - 2, "\n", 2);
    load_fails(text, 2, &err);
    has(err.msg, "line too long");
}
END_TEST

START_TEST(error_files)
{
    struct config c;
    struct mp_error err;
    config_defaults(&c);
    ck_assert_int_eq(config_load(&c, "/nonexistent/x.ini", &err), MP_ERR_INPUT);
    ck_assert_str_eq(err.msg, "/nonexistent/x.ini: cannot open: No such file or directory");

    char dir[512];
    snprintf(dir, sizeof dir, "%s", mp_test_tmpfile(".d", ""));
    ck_assert_int_eq(remove(dir), 0);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(config_load(&c, dir, &err), MP_ERR_INPUT);
    has(err.msg, dir);
    has(err.msg, "is a directory");
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(failed_load_changes_nothing)
{
    struct config c, before;
    struct mp_error err;
    ck_assert_int_eq(load("[parallel]\npp = 4\ntp = zero\n", &c, &err), MP_ERR_INPUT);
    config_defaults(&before);
    ck_assert_int_eq(c.parallel.pp, 1);
    ck_assert_int_eq(memcmp(&c, &before, sizeof c), 0);
    /* A NULL error record is allowed and the status still comes back. */
    ck_assert_int_eq(config_load(&c, path, NULL), MP_ERR_INPUT);
}
END_TEST

START_TEST(set_overrides)
{
    struct config c;
    struct mp_error err;
    ck_assert_int_eq(load("[parallel]\npp = 2\ndp = 2\n", &c, &err), MP_OK);
    /* --set is applied after the file, so it wins */
    ck_assert_int_eq(config_set(&c, "parallel.pp=8", "--set", &err), MP_OK);
    ck_assert_int_eq(config_set(&c, "  training.recompute = FULL ", "--set", &err), MP_OK);
    ck_assert_int_eq(config_set(&c, "model.config=a=b", "--set", &err), MP_OK);
    ck_assert_int_eq(c.parallel.pp, 8);
    ck_assert_int_eq(c.parallel.dp, 2); /* from the file */
    ck_assert_int_eq(c.training.recompute, RECOMPUTE_FULL);
    ck_assert_str_eq(c.model.config, "a=b"); /* split at the first '=' */
    ck_assert_int_eq(config_set_key(&c, "synthetic.hop", "5us", "--vary", &err), MP_OK);
    ck_assert_int_eq(c.synthetic.hop, 5 * MP_PS_PER_US);
}
END_TEST

/* training.recipe fills the keys nobody gave, whatever the order they come
 * in; keys given win; switching recipes leaves nothing of the old one. */
START_TEST(recipes)
{
    struct config c;
    struct mp_error err;
    ck_assert_int_eq(load("[training]\nrecipe = megatron-2022\n", &c, &err), MP_OK);
    ck_assert_int_eq(c.training.attention, ATTENTION_UNFUSED);
    ck_assert(c.training.dropout && c.parallel.tp_overlap && !c.training.dp_overlap);
    ck_assert_int_eq(c.training.zero, 0);
    ck_assert_int_eq(c.training.grad_reduce, PRECISION_FP32);
    /* A key given before or after the recipe keeps its value. */
    ck_assert_int_eq(load("[training]\nattention = flash\nrecipe = megatron-2022\nzero = 2\n", &c,
                          &err), MP_OK);
    ck_assert_int_eq(c.training.attention, ATTENTION_FLASH);
    ck_assert_int_eq(c.training.zero, 2);
    ck_assert(c.training.dropout);
    /* Megatron-Core: flash, bf16 reduce, overlapped distributed optimizer,
     * SP with TP comm overlap; then back to none: the defaults again. */
    ck_assert_int_eq(load("[training]\nrecipe = megatron-core\n", &c, &err), MP_OK);
    ck_assert_int_eq(c.training.grad_reduce, PRECISION_BF16);
    ck_assert(c.training.overlap_param_gather && c.parallel.sp && c.parallel.tp_comm_overlap);
    ck_assert_int_eq(c.training.zero, 1);
    ck_assert_int_eq(config_set(&c, "training.recipe=none", "--set", &err), MP_OK);
    ck_assert_int_eq(c.training.grad_reduce, PRECISION_FP32);
    ck_assert(!c.training.overlap_param_gather && !c.parallel.sp && !c.parallel.tp_overlap);
    ck_assert_int_eq(c.training.zero, 0);
    /* A recipe never turns sequence parallelism on over TSP. */
    ck_assert_int_eq(load("[parallel]\ntsp = true\n[training]\nrecipe = megatron-core\n", &c, &err),
                     MP_OK);
    ck_assert(c.parallel.tsp && !c.parallel.sp);
    ck_assert_int_eq(config_check(&c, &err), MP_OK);
    /* Every value a recipe sets parses. */
    for (int r = RECIPE_NONE; r <= RECIPE_MEGATRON_CORE; r++) {
        struct config d;
        config_defaults(&d);
        for (const char *const *x = config_recipe_settings(r); x[0]; x += 2)
            ck_assert_msg(config_set_key_quiet(&d, x[0], x[1], &err) == MP_OK, "%s", err.msg);
        ck_assert(config_recipe_summary(r)[0]);
    }
}
END_TEST

START_TEST(set_errors)
{
    struct config c;
    struct mp_error err;
    config_defaults(&c);
    ck_assert_int_eq(config_set(&c, "parallel.pp", "--set", &err), MP_ERR_INPUT);
    has(err.msg, "--set: expected section.key=value");
    ck_assert_int_eq(config_set(&c, "=4", "--set", &err), MP_ERR_INPUT);
    has(err.msg, "--set: expected section.key=value");

    ck_assert_int_eq(config_set(&c, "parallel.ppp=4", "--set", &err), MP_ERR_INPUT);
    ck_assert_int_eq(err.status, MP_ERR_INPUT);
    ck_assert_ptr_eq(strstr(err.msg, "--set: "), err.msg);
    has(err.msg, "unknown key 'parallel.ppp' (did you mean 'parallel.pp'?)");
    has(err.msg, "known keys in [parallel]: tp, pp");

    ck_assert_int_eq(config_set(&c, "pp=4", "--set", &err), MP_ERR_INPUT);
    has(err.msg, "(did you mean 'parallel.pp'?)");
    ck_assert_int_eq(config_set(&c, "paralel.tp=4", "--set", &err), MP_ERR_INPUT);
    has(err.msg, "(did you mean 'parallel.tp'?)");
    ck_assert_int_eq(config_set(&c, "zzz.qqq=1", "--set", &err), MP_ERR_INPUT);
    ck_assert_ptr_null(strstr(err.msg, "did you mean"));
    has(err.msg, "sections model, synthetic");

    ck_assert_int_eq(config_set(&c, "parallel.pp=four", "--set", &err), MP_ERR_INPUT);
    ck_assert_str_eq(err.msg, "--set: key parallel.pp: expected a whole number ≥ 1 "
                              "(at most 1000000), got 'four'");
    ck_assert_int_eq(c.parallel.pp, 1); /* a refused value leaves the old one */
}
END_TEST

START_TEST(check_batches)
{
    struct config c;
    struct mp_error err;
    config_defaults(&c);
    c.training.global_batch = 10;
    c.training.micro_batch = 4;
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "training.global_batch = 10");
    has(err.msg, "= 4 × 1 = 4");

    c.training.global_batch = 24; /* 24 / (4 × 3) = 2 */
    c.parallel.dp = 3;
    ck_assert_int_eq(config_check(&c, &err), MP_OK);
    ck_assert_int_eq(config_microbatches(&c), 2);
    c.parallel.dp = 4; /* 24 % 16 = 8 */
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "= 4 × 4 = 16");
}
END_TEST

START_TEST(check_fields)
{
    struct config c;
    struct mp_error err;
    config_defaults(&c);
    c.parallel.pp = 0; /* written directly, bypassing config_set */
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "key parallel.pp = '0': expected a whole number ≥ 1");
    config_defaults(&c);
    c.parallel.vpp = 2000000;
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "parallel.vpp");
    config_defaults(&c);
    c.training.recompute = 7;
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "training.recompute");
    config_defaults(&c);
    c.hardware.system[0] = '\0';
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "hardware.system");

    /* M_W is part of M_B, so it cannot be larger (synthetic models only). */
    config_defaults(&c);
    c.synthetic.activation_w = 2 * c.synthetic.activation;
    ck_assert_int_eq(config_check(&c, &err), MP_OK);
    c.model.kind = MODEL_SYNTHETIC;
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, "synthetic.activation_w = 2 GiB exceeds synthetic.activation = 1 GiB");

    /* After a load, the message names the scenario. */
    ck_assert_int_eq(load("[training]\nglobal_batch = 10\nmicro_batch = 4\n", &c, &err), MP_OK);
    ck_assert_int_eq(config_check(&c, &err), MP_ERR_INPUT);
    has(err.msg, path);
}
END_TEST

/* Format then parse gives back the same bits, for every key. */
static void round_trip(const char *key, const char *value, const char *formatted)
{
    struct config a, b;
    struct mp_error err;
    config_defaults(&a);
    config_defaults(&b);
    const struct config_key *k = config_find_key(key);
    ck_assert_ptr_nonnull(k);
    ck_assert_msg(config_set_key(&a, key, value, "test", &err) == MP_OK, "%s", err.msg);
    char buf[CONFIG_STR];
    config_format_value(&a, k, buf, sizeof buf);
    if (formatted) ck_assert_str_eq(buf, formatted);
    ck_assert_msg(config_set_key(&b, key, buf, "test", &err) == MP_OK, "%s", err.msg);
    ck_assert_msg(memcmp((char *)&a + k->offset, (char *)&b + k->offset, k->size) == 0,
                  "%s = %s formatted as %s does not read back", key, value, buf);
}

START_TEST(format_round_trip)
{
    round_trip("parallel.pp", "64", "64");
    round_trip("model.seq_len", " 8192 ", "8192");
    round_trip("run.seed", "18446744073709551615", "18446744073709551615");
    round_trip("parallel.sp", "on", "true");
    round_trip("parallel.sp", "0", "false");
    round_trip("synthetic.forward", "2.5ms", "2500us");
    round_trip("synthetic.forward", "1.000000000001s", "1000000000001ps");
    round_trip("synthetic.forward", "3s", "3s");
    round_trip("synthetic.hop", "0ns", "0");
    round_trip("synthetic.hop", "250ns", "250ns");
    round_trip("synthetic.activation", "1.5GiB", "1536MiB");
    round_trip("synthetic.activation", "44GB", "44GB");
    round_trip("synthetic.activation", "4096", "4KiB");
    round_trip("synthetic.activation", "2.5", "2.5");
    round_trip("synthetic.activation", "123456789", "123456789");
    round_trip("synthetic.activation", "0.1GB", "100MB");
    round_trip("synthetic.weights", "1e18", NULL);
    round_trip("model.kind", "SYNTHETIC", "synthetic");
    round_trip("training.recompute", "full", "full");
    round_trip("hardware.system", "\"my system\"", "my system");
    round_trip("training.schedule", "interleaved-1f1b", "interleaved-1f1b");

    /* Many values: durations over the whole int64 range of picoseconds, and
     * sizes of every magnitude, fractional or not. A fixed LCG keeps it
     * reproducible. */
    uint64_t x = 88172645463325252u;
    const struct config_key *kd = config_find_key("synthetic.forward");
    const struct config_key *ks = config_find_key("synthetic.activation");
    /* Defaults once: each round writes the two fields it reads back (the
     * 20,000 rounds took 1.3 s of CPU re-filling 121 keys twice a round,
     * and timed out under load). */
    struct config a, b;
    config_defaults(&a);
    config_defaults(&b);
    for (int i = 0; i < 20000; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        char buf[128];
        int shift = (int)(x >> 58); /* 0..63: spread the magnitudes */
        a.synthetic.forward = (mp_time)((x >> 1) >> shift);
        if (i % 3 == 0) a.synthetic.forward -= a.synthetic.forward % MP_PS_PER_US;
        config_format_value(&a, kd, buf, sizeof buf);
        ck_assert_int_eq(config_set_key(&b, kd->name, buf, "t", NULL), MP_OK);
        ck_assert_int_eq(a.synthetic.forward, b.synthetic.forward);

        /* up to 2^59 bytes: within the 1024 PiB a size may be */
        double v = ldexp((double)(x >> 11), (int)(x % 67) - 60);
        if (i % 2 == 0) v = floor(v);
        if (i % 5 == 0) v = (double)(x % 1000) * 1e9;
        a.synthetic.activation = v;
        config_format_value(&a, ks, buf, sizeof buf);
        ck_assert_int_eq(config_set_key(&b, ks->name, buf, "t", NULL), MP_OK);
        ck_assert_msg(a.synthetic.activation == b.synthetic.activation, "%.17g -> %s", v, buf);
    }
}
END_TEST

/* Create an empty file at dir/rel. */
static void touch(const char *dir, const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
}

START_TEST(resolve)
{
    struct config c;
    struct mp_error err;
    ck_assert_int_eq(load("[model]\nconfig = mine.json\n", &c, &err), MP_OK);
    char out[1024], want[1024];

    /* 1. relative to the scenario's folder */
    touch(c.dir, "mine.json");
    ck_assert_int_eq(config_resolve(&c, c.model.config, "models", ".json", out, sizeof out,
                                    &err), MP_OK);
    snprintf(want, sizeof want, "%s/mine.json", c.dir);
    ck_assert_str_eq(out, want);

    /* 2. and 3. the data folder, with and without the extension */
    char home[600];
    snprintf(home, sizeof home, "%s/home", c.dir);
    ck_assert_int_eq(mkdir(home, 0700), 0);
    snprintf(want, sizeof want, "%s/models", home);
    ck_assert_int_eq(mkdir(want, 0700), 0);
    touch(home, "models/tiny.json");
    touch(home, "models/raw");
    setenv("MPSIM_HOME", home, 1);
    ck_assert_int_eq(config_resolve(&c, "tiny", "models", ".json", out, sizeof out, &err),
                     MP_OK);
    snprintf(want, sizeof want, "%s/models/tiny.json", home);
    ck_assert_str_eq(out, want);
    ck_assert_int_eq(config_resolve(&c, "raw", "models", ".json", out, sizeof out, &err),
                     MP_OK);
    snprintf(want, sizeof want, "%s/models/raw", home);
    ck_assert_str_eq(out, want);

    /* absolute paths are taken as they are */
    ck_assert_int_eq(config_resolve(&c, want, "models", ".json", out, sizeof out, &err),
                     MP_OK);
    ck_assert_str_eq(out, want);

    /* a folder is not a file; a miss names every place tried */
    ck_assert_int_eq(config_resolve(&c, "models", "", ".json", out, sizeof out, &err),
                     MP_ERR_INPUT);
    ck_assert_int_eq(config_resolve(&c, "nope", "models", ".json", out, sizeof out, &err),
                     MP_ERR_INPUT);
    has(err.msg, "cannot find 'nope'");
    snprintf(want, sizeof want, "%s/nope", c.dir);
    has(err.msg, want);
    snprintf(want, sizeof want, "%s/models/nope.json", home);
    has(err.msg, want);
    snprintf(want, sizeof want, "%s/models/nope,", home);
    ck_assert_ptr_null(strstr(err.msg, want)); /* listed last, without a comma */
    snprintf(want, sizeof want, "%s/models/nope", home);
    has(err.msg, want);

    /* a buffer too small is an error, not a truncated path */
    ck_assert_int_eq(config_resolve(&c, "tiny", "models", ".json", out, 8, &err),
                     MP_ERR_INPUT);

    /* built from defaults (no scenario folder): relative to the working dir */
    struct config d;
    config_defaults(&d);
    ck_assert_int_eq(config_resolve(&d, "tiny", "models", ".json", out, sizeof out, &err),
                     MP_OK);
    ck_assert_str_eq(strrchr(out, '/'), "/tiny.json");
    unsetenv("MPSIM_HOME");
}
END_TEST

Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("keys");
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, key_table);
    tcase_add_test(tc, format_round_trip);
    suite_add_tcase(s, tc);

    TCase *tl = tcase_create("load");
    tcase_add_test(tl, load_good_file);
    tcase_add_test(tl, error_unknown_key);
    tcase_add_test(tl, error_bad_value);
    tcase_add_test(tl, error_unknown_section);
    tcase_add_test(tl, error_syntax);
    tcase_add_test(tl, error_duplicate_key);
    tcase_add_test(tl, error_key_before_section);
    tcase_add_test(tl, error_long_line);
    tcase_add_test(tl, error_files);
    tcase_add_test(tl, failed_load_changes_nothing);
    suite_add_tcase(s, tl);

    TCase *ts = tcase_create("set_check_resolve");
    tcase_add_test(ts, set_overrides);
    tcase_add_test(ts, recipes);
    tcase_add_test(ts, set_errors);
    tcase_add_test(ts, check_batches);
    tcase_add_test(ts, check_fields);
    tcase_add_test(ts, resolve);
    suite_add_tcase(s, ts);
    return s;
}

MP_TEST_MAIN(config_suite)
