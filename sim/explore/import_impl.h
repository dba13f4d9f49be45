/* import_impl.h — what import.c, import_megatron.c and import_deepspeed.c
 * share: the scenario being built key by key, each with where it came from,
 * the model's shape as read, warnings, and the INI it becomes. Private to
 * sim/explore/. */
#ifndef MPSIM_IMPORT_IMPL_H
#define MPSIM_IMPORT_IMPL_H

#include <stdbool.h>

#include "import.h"
#include "sim/io/config.h"

struct imp_entry {
    const struct config_key *key;
    char value[CONFIG_STR];
    char from[320];              /* the flags or JSON keys it came from */
};

/* A transformer's shape as the flags give it; 0 = not given. */
struct imp_shape {
    int layers, hidden, ffn, heads, kv_groups, vocab, max_pos, experts, topk, moe_ffn;
    bool swiglu, untied, gqa;
    char tokenizer[64];
};

struct imp {
    const char *what;            /* "import megatron", for messages */
    const struct import_options *opt;
    struct config cfg;           /* every imp_set applied: values checked by the key table */
    struct imp_entry *e;
    int n, cap;
    struct imp_shape shape;
    char shape_from[320];        /* the flags that gave the shape */
    int world;                   /* chips, when the launcher says; 0 unknown */
    char world_from[160];
};

void imp_init(struct imp *im, const char *what, const struct import_options *opt);
void imp_release(struct imp *im);

/* One warning line on opt->warn. */
void imp_warn(struct imp *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set `key` to `value`, remembering `from` for its comment (a later set of
 * the same key replaces it). A key the table does not have: a "not
 * modelled yet" warning, MP_OK. A value the key refuses: MP_ERR_INPUT
 * "WHAT: FROM: ...". */
int imp_set(struct imp *im, const char *key, const char *value, const char *from,
            struct mp_error *err);

/* Whether the key table has `key` (other branches add keys: context
 * parallelism, recipes, offload). */
bool imp_has_key(const char *key);

/* model.config from the shape: the preset of that shape, else a config.json
 * written to opt->model_out (MP_ERR_INPUT when none is given). */
int imp_model(struct imp *im, struct mp_error *err);

/* A ds_config.json into `im` (import_deepspeed.c). `alone`: no Megatron
 * flags came first, so the data-parallel degree comes from its batch sizes
 * (or opt->chips) and the precision default is DeepSpeed's (fp32). */
int imp_read_deepspeed(struct imp *im, const char *path, bool alone, struct mp_error *err);

/* opt->sets, hardware.system, the cross-key checks, then the INI on `out`
 * with `header` (comment lines) first. */
int imp_finish(struct imp *im, const char *header, FILE *out, struct mp_error *err);

#endif
