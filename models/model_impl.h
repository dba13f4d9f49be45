/* model_impl.h — what the files of models/ share and nothing else sees: the
 * per-kind facts of layer_kinds.c as functions, and the reader's state that
 * model_read.c, model_pattern.c and model_quant.c pass around. The API is
 * model.h (and arch.h for the table). */
#ifndef MPSIM_MODEL_IMPL_H
#define MPSIM_MODEL_IMPL_H

#include "arch.h"
#include "json_doc.h"
#include "model.h"

/* ---- layer_kinds.c: one table row per mixer kind ---- */

/* Parameters of mixer kind `k` in model `m` (norms before it apart);
 * `*matmul` gets the part that is weight matrices a token multiplies by. */
double kind_params(const struct model *m, enum mixer_kind k, double *matmul);

/* K/V elements per token of context (MLA: the latent and the rope key). */
double kind_kv_elems(const struct model *m, enum mixer_kind k);

/* Recurrent state elements per request; `*conv` the short convolution's part
 * of them. */
double kind_state_elems(const struct model *m, enum mixer_kind k, double *conv);

/* Forward FLOPs of the core without weights: per (query, key) pair for
 * softmax kinds, per token for recurrent kinds. */
void kind_core_flops(const struct model *m, enum mixer_kind k, double *per_pair,
                     double *per_token);

/* Elements per token a forward stashes for the backward, beyond the layer's
 * inputs (Korthikanti's "split by t" part, the mixer's share). */
double kind_act_elems(const struct model *m, enum mixer_kind k);

/* ---- the reader (model_read.c; keys in model_keys.c) ---- */

/* The largest integer any config.json key may hold (2^26): no real model
 * has a width, count or length near it, and int sums of a few stay exact. */
#define MODEL_INT_MAX (1 << 26)

struct reader {
    struct json_doc doc;
    const char *origin;
    const cJSON *root;          /* the top-level object */
    const cJSON *obj;           /* where the language model's keys live */
    const char *prefix;         /* "" or "text_config." for messages */
    char prefix_buf[48];
    const struct arch_row *row; /* the row the keys are read by */
    struct model *m;
    struct mp_error *err;
};

/* "FILE:LINE: key PREFIX.KEY: ..." (line omitted when the key is absent). */
int rd_fail(const struct reader *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Member `key` of the model's object (dotted "a.b" looks into object a),
 * marked used; NULL when absent or JSON null. */
const cJSON *rd_get(struct reader *r, const char *key);

/* An integer >= min, or `fallback` when absent; non-integers and values over
 * 2^26 are errors naming the key. */
int rd_int(struct reader *r, const char *key, int fallback, int min, int *out);
int rd_bool(struct reader *r, const char *key, bool fallback, bool *out);

/* A field of the row (arch.h) by its spellings: the row's own or HF's usual
 * ones; two spellings present with different values are an error naming
 * both; absent, the row's default (noted in m->defaults) or `fallback`
 * (required: an error). `*present` (may be NULL) says whether a key was found. */
int rd_field_int(struct reader *r, enum field f, bool required, int fallback, int *out,
                 bool *present);
int rd_field_bool(struct reader *r, enum field f, bool fallback, bool *out);
const char *rd_field_str(struct reader *r, enum field f);

/* The spelling of field f that the config uses (or its first one): for messages. */
const char *rd_field_key(const struct reader *r, enum field f);

/* A short rendering of a JSON value for "got ..." (NaN and infinities by name). */
void rd_show(const cJSON *v, char *buf, size_t size);

/* Record "key = value" in a key list (kept up to its cap; all counted). */
void key_list_add(struct key_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void key_list_free(struct key_list *l);

/* The keys of `obj` never read, into m->ignored (those known to change no
 * size or cost) and m->unused (the warnings), in document order. */
void rd_collect_unused(struct reader *r, const cJSON *obj, const char *prefix);

/* ---- model_pattern.c ---- */

/* Fill every decoder's mixer, window and MLP kind by the row's forms and a
 * `layer_types` list (which must agree with them), with MP_ERR_INPUT naming
 * the key whose length or entries disagree with the layer count. */
int pattern_read(struct reader *r);

/* ---- model_quant.c ---- */

/* Read quantization_config and torch_dtype into m->quant. */
int quant_read(struct reader *r);

#endif
