/* json_doc.h — a config.json read the way Hugging Face's Python loader reads
 * it (json.loads), with cJSON underneath, and the bookkeeping a reader of
 * configs needs: the line of every key, fast lookup by name, and which keys
 * were never looked at.
 *
 * Accepted beyond RFC 8259, as Python's json module accepts them: the
 * literals `NaN`, `Infinity` and `-Infinity` (Nemotron-H writes
 * "time_step_limit": [0.0, Infinity]) and a UTF-8 byte-order mark. cJSON knows
 * neither, so the text is copied with each such literal replaced by "0" and
 * blanks of the same length (lines and columns stay put), and after parsing
 * the n-th number of the tree in document order — the n-th number token of
 * the text — gets its value back.
 *
 * Refused, where Python would not refuse but a simulator must not run away:
 * a text larger than JSON_DOC_MAX_BYTES and nesting deeper than
 * JSON_DOC_MAX_DEPTH (cJSON recurses once per level), each message naming the
 * bound; and a key named twice in one object (Python keeps the last silently:
 * which one the author meant is their call). Duplicates are found by sorting
 * each object's keys once, so a config with 300,000 keys loads in
 * milliseconds, and the sorted keys serve every later lookup. */
#ifndef MPSIM_JSON_DOC_H
#define MPSIM_JSON_DOC_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/common.h"

/* The largest config.json read. Hub configs are a few KB; the largest with
 * label maps (id2label of tens of thousands of classes) a few MB. */
#define JSON_DOC_MAX_BYTES ((size_t)32 << 20)
/* The deepest nesting read. Hub configs nest 3 or 4 levels (rope_scaling,
 * quantization_config, text_config.rope_scaling). */
#define JSON_DOC_MAX_DEPTH 64

struct json_key {
    const char *name;
    const cJSON *item;
    uint32_t offset;       /* byte offset of the key's opening quote */
    bool used;             /* looked up with json_doc_get */
};

struct json_obj {
    const cJSON *obj;
    struct json_key *keys; /* sorted by name (points into json_doc.keys) */
    int n;
};

struct json_doc {
    const char *origin;    /* file name for messages */
    const char *text;      /* the caller's text (not copied; must outlive the doc) */
    size_t len;
    cJSON *root;
    struct json_key *keys; /* every key of every object, grouped by object */
    size_t n_keys;
    struct json_obj *objs; /* every object, sorted by cJSON pointer */
    int n_objs;
    uint32_t *newlines;    /* offsets of '\n' in the text, for line numbers */
    size_t n_newlines;
};

/* Parse `len` bytes of `text` (NUL-terminated at text[len]). MP_ERR_INPUT with
 * "ORIGIN:LINE: ..." for invalid JSON, non-UTF-8 bytes, the size and depth
 * bounds and duplicate keys. On success the caller releases the document. */
int json_doc_parse(struct json_doc *d, const char *text, size_t len, const char *origin,
                   struct mp_error *err);

/* Free the tree and the index (safe on a zeroed or released document). */
void json_doc_release(struct json_doc *d);

/* The member `key` of object `obj` (NULL when obj is not an object or has no
 * such key), marked used. A JSON null is returned as it is: callers decide. */
const cJSON *json_doc_get(struct json_doc *d, const cJSON *obj, const char *key);

/* The same without marking it used. */
const cJSON *json_doc_peek(const struct json_doc *d, const cJSON *obj, const char *key);

/* 1-based line of member `key` of `obj`, 0 when absent. */
int json_doc_key_line(const struct json_doc *d, const cJSON *obj, const char *key);

/* 1-based line of byte offset `off` of the text. */
int json_doc_line_at(const struct json_doc *d, size_t off);

/* The index entry of object `obj` (NULL when obj is not an object of the
 * document), to walk its keys in sorted order. */
const struct json_obj *json_doc_object(const struct json_doc *d, const cJSON *obj);

#endif
