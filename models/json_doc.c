/* json_doc.c — config.json text → cJSON tree with NaN/Infinity, a BOM, size
 * and depth bounds, duplicate keys refused, and a sorted key index; see
 * json_doc.h. */
#include "json_doc.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Lines. */

int json_doc_line_at(const struct json_doc *d, size_t off)
{
    /* Newlines before `off`, by binary search, plus one. */
    size_t lo = 0, hi = d->n_newlines;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->newlines[mid] < off) lo = mid + 1;
        else hi = mid;
    }
    return (int)lo + 1;
}

static void index_newlines(struct json_doc *d)
{
    size_t cap = 0;
    for (const char *p = memchr(d->text, '\n', d->len); p;
         p = memchr(p + 1, '\n', d->len - (size_t)(p + 1 - d->text))) {
        MP_GROW(d->newlines, cap, d->n_newlines + 1);
        d->newlines[d->n_newlines++] = (uint32_t)(p - d->text);
        if ((size_t)(p + 1 - d->text) >= d->len) break;
    }
}

/* ------------------------------------------------------------------ */
/* The scan before cJSON: depth, number tokens, Python's special literals,
 * and the offset of every key, in document order. */

struct special { size_t number; double value; };

struct scan {
    size_t numbers;            /* number tokens seen (specials included) */
    struct special *spec;
    size_t n_spec, cap_spec;
    uint32_t *key_off;
    size_t n_keys, cap_keys;
    int depth;
    bool in_string;
};

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static bool literal_at(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* Scan text[start, len), writing into `copy` (a same-size copy of the text)
 * the replacement of each special literal. */
static int scan_text(struct json_doc *d, size_t start, char *copy, struct scan *s,
                     struct mp_error *err)
{
    const char *t = d->text, *end = t + d->len;
    size_t str_start = 0;
    for (const char *p = t + start; p < end; p++) {
        char c = *p;
        if (s->in_string) {
            if (c == '\\' && p + 1 < end) {
                p++;
            } else if (c == '"') {
                s->in_string = false;
                const char *q = p + 1;
                while (q < end && is_blank(*q)) q++;
                if (q < end && *q == ':') {
                    MP_GROW(s->key_off, s->cap_keys, s->n_keys + 1);
                    s->key_off[s->n_keys++] = (uint32_t)str_start;
                }
            }
            continue;
        }
        if (c == '"') {
            s->in_string = true;
            str_start = (size_t)(p - t);
        } else if (c == '{' || c == '[') {
            if (++s->depth > JSON_DOC_MAX_DEPTH)
                return mp_fail(err, MP_ERR_INPUT, "%s:%d: nesting deeper than %d levels (the "
                               "bound on a config.json; Hub configs nest 3 or 4)", d->origin,
                               json_doc_line_at(d, (size_t)(p - t)), JSON_DOC_MAX_DEPTH);
        } else if (c == '}' || c == ']') {
            if (s->depth > 0) s->depth--;
        } else if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') {
            /* A special literal stands where a value may start: after a
             * blank, ',', ':' or '[' (so "1Infinity" stays invalid). */
            char prev = p > t + start ? p[-1] : ' ';
            bool value_start = is_blank(prev) || prev == ',' || prev == ':' || prev == '[';
            const char *word = NULL;
            double v = 0;
            if (value_start && literal_at(p, end, "-Infinity")) word = "-Infinity", v = -INFINITY;
            else if (value_start && literal_at(p, end, "Infinity")) word = "Infinity", v = INFINITY;
            else if (value_start && literal_at(p, end, "NaN")) word = "NaN", v = NAN;
            if (word) {
                size_t n = strlen(word), off = (size_t)(p - t);
                copy[off] = '0';
                memset(copy + off + 1, ' ', n - 1);
                MP_GROW(s->spec, s->cap_spec, s->n_spec + 1);
                s->spec[s->n_spec++] = (struct special){ s->numbers, v };
                s->numbers++;
                p += n - 1;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                s->numbers++;
                while (p + 1 < end && (strchr("0123456789+-eE.", p[1]) && p[1] != '\0')) p++;
            }
        }
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ */
/* The index: after cJSON, a walk in document order. */

struct walk {
    struct json_doc *d;
    const struct scan *s;
    size_t key, number, spec, next_slot;
    int obj;
    bool mismatch;
};

static void walk(struct walk *w, const cJSON *it)
{
    bool is_obj = cJSON_IsObject(it);
    struct json_key *slot = NULL;
    if (is_obj) {
        int n = 0;
        for (const cJSON *c = it->child; c; c = c->next) n++;
        struct json_obj *o = &w->d->objs[w->obj++];
        o->obj = it;
        o->keys = slot = w->d->keys + w->next_slot;
        o->n = n;
        w->next_slot += (size_t)n;
    }
    int i = 0;
    for (const cJSON *c = it->child; c; c = c->next, i++) {
        if (is_obj) {
            if (w->key >= w->s->n_keys) { w->mismatch = true; return; }
            slot[i] = (struct json_key){ c->string, c, w->s->key_off[w->key++], false };
        }
        if (cJSON_IsNumber(c)) {
            if (w->spec < w->s->n_spec && w->s->spec[w->spec].number == w->number) {
                /* cJSON_Number items keep the value in valuedouble; the cast
                 * drops the const the tree is walked under. */
                cJSON *m = (cJSON *)c;
                m->valuedouble = w->s->spec[w->spec].value;
                m->valueint = 0;
                w->spec++;
            }
            w->number++;
        }
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) walk(w, c);
    }
}

static void count(const cJSON *it, size_t *objs, size_t *keys)
{
    if (cJSON_IsObject(it)) (*objs)++;
    for (const cJSON *c = it->child; c; c = c->next) {
        if (cJSON_IsObject(it)) (*keys)++;
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) count(c, objs, keys);
    }
}

static int key_cmp(const void *a, const void *b)
{
    const struct json_key *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->offset > y->offset) - (x->offset < y->offset);
}

static int obj_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct json_obj *)a)->obj;
    uintptr_t y = (uintptr_t)((const struct json_obj *)b)->obj;
    return (x > y) - (x < y);
}

/* ------------------------------------------------------------------ */
/* Parse errors: the line, and the text near cJSON's stop. */

static int parse_error(const struct json_doc *d, size_t at, bool truncated, struct mp_error *err)
{
    const char *t = d->text, *p = t + at;
    while (*p && is_blank(*p)) p++;
    if (*p == '\0' || truncated) {
        /* Point at the last line that has content. */
        const char *q = t + d->len;
        while (q > t && is_blank(q[-1])) q--;
        return mp_fail(err, MP_ERR_INPUT,
                       "%s:%d: invalid JSON: the text ends before the object is complete "
                       "(truncated file?)", d->origin, json_doc_line_at(d, (size_t)(q - t)));
    }
    /* cJSON may point just past the culprit (a stray comma): back up over
     * blanks, then quote the line around that spot. */
    const char *q = t + at;
    while (q > t && is_blank(q[-1]) && is_blank(*q)) q--;
    const char *from = q;
    while (from > t && from[-1] != '\n' && q - from < 24) from--;
    while (*from == ' ' || *from == '\t') from++;
    size_t n = (size_t)(q - from) + strcspn(q, "\r\n");
    char near[48];
    if (n >= sizeof near) n = sizeof near - 1;
    memcpy(near, from, n);
    near[n] = '\0';
    char shown[4 * sizeof near + 4];
    mp_quote(near, n, sizeof near, shown, sizeof shown);
    return mp_fail(err, MP_ERR_INPUT, "%s:%d: invalid JSON near '%s'", d->origin,
                   json_doc_line_at(d, (size_t)(q - t)), shown);
}

/* ------------------------------------------------------------------ */

int json_doc_parse(struct json_doc *d, const char *text, size_t len, const char *origin,
                   struct mp_error *err)
{
    memset(d, 0, sizeof *d);
    d->origin = origin;
    d->text = text;
    d->len = len;
    if (len > JSON_DOC_MAX_BYTES)
        return mp_fail(err, MP_ERR_INPUT, "%s: %zu bytes, more than the %zu MiB bound on a "
                       "config.json (Hub configs are a few KB)", origin, len,
                       JSON_DOC_MAX_BYTES >> 20);
    index_newlines(d);
    size_t start = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) start = 3; /* UTF-8 BOM */
    size_t i = start;
    while (i < len && is_blank(text[i])) i++;
    int rc = MP_OK;
    if (i == len) {
        rc = mp_fail(err, MP_ERR_INPUT, "%s: empty file; expected a JSON object (a Hugging "
                     "Face config.json)", origin);
        goto fail;
    }
    /* JSON is UTF-8 (RFC 8259); cJSON passes any bytes through, and a name
     * read from here would make our own JSON outputs invalid. */
    size_t ok = start + mp_utf8_valid_prefix(text + start, len - start);
    if (ok < len) {
        rc = mp_fail(err, MP_ERR_INPUT, "%s:%d: byte 0x%02x is not UTF-8: expected a UTF-8 "
                     "JSON text", origin, json_doc_line_at(d, ok), (unsigned char)text[ok]);
        goto fail;
    }

    char *copy = mp_xmalloc(len + 1);
    memcpy(copy, text, len + 1);
    struct scan s = { 0 };
    rc = scan_text(d, start, copy, &s, err);
    if (!rc) {
        const char *stop = NULL;
        /* cJSON keeps its last parse error in a global, written on every
         * parse: sweeps load models from several threads at once. */
        static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&parse_lock);
        d->root = cJSON_ParseWithOpts(copy + start, &stop, 1);
        pthread_mutex_unlock(&parse_lock);
        if (!d->root)
            rc = parse_error(d, stop ? (size_t)(stop - copy) : start, s.in_string || s.depth > 0,
                             err);
    }
    if (!rc) {
        size_t n_objs = 0, n_keys = 0;
        count(d->root, &n_objs, &n_keys);
        d->objs = mp_xcalloc(n_objs + 1, sizeof *d->objs);
        d->keys = mp_xcalloc(n_keys + 1, sizeof *d->keys);
        d->n_keys = n_keys;
        struct walk w = { .d = d, .s = &s };
        walk(&w, d->root);
        d->n_objs = w.obj;
        /* The scan and cJSON agree on every text cJSON accepts; a
         * disagreement is a text only one of them misread. */
        if (w.mismatch || w.key != s.n_keys || w.number != s.numbers || w.spec != s.n_spec)
            rc = mp_fail(err, MP_ERR_INPUT, "%s: invalid JSON: expected a plain JSON object "
                         "of config keys", origin);
    }
    for (int k = 0; !rc && k < d->n_objs; k++) {
        struct json_obj *o = &d->objs[k];
        qsort(o->keys, (size_t)o->n, sizeof *o->keys, key_cmp);
        for (int j = 1; j < o->n && !rc; j++)
            if (strcmp(o->keys[j - 1].name, o->keys[j].name) == 0) {
                int a = json_doc_line_at(d, o->keys[j - 1].offset);
                int b = json_doc_line_at(d, o->keys[j].offset);
                /* A key may hold anything cJSON lets through (a raw line
                 * break): shown escaped, so the message stays one line. */
                char q[160];
                mp_quote(o->keys[j].name, strlen(o->keys[j].name), 100, q, sizeof q);
                rc = mp_fail(err, MP_ERR_INPUT, "%s:%d: key %s: expected once, got it twice "
                             "(lines %d and %d)", origin, b, q, a, b);
            }
    }
    if (!rc) qsort(d->objs, (size_t)d->n_objs, sizeof *d->objs, obj_cmp);
    free(copy);
    free(s.spec);
    free(s.key_off);
fail:
    if (rc) json_doc_release(d);
    return rc;
}

void json_doc_release(struct json_doc *d)
{
    if (d->root) cJSON_Delete(d->root);
    free(d->keys);
    free(d->objs);
    free(d->newlines);
    memset(d, 0, sizeof *d);
}

const struct json_obj *json_doc_object(const struct json_doc *d, const cJSON *obj)
{
    if (!obj || !cJSON_IsObject(obj) || d->n_objs == 0) return NULL;
    struct json_obj probe = { .obj = obj };
    return bsearch(&probe, d->objs, (size_t)d->n_objs, sizeof *d->objs, obj_cmp);
}

static struct json_key *find(const struct json_doc *d, const cJSON *obj, const char *key)
{
    const struct json_obj *o = json_doc_object(d, obj);
    if (!o) return NULL;
    /* Lower bound by name: duplicates are refused, so at most one matches. */
    int lo = 0, hi = o->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(o->keys[mid].name, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < o->n && strcmp(o->keys[lo].name, key) == 0 ? &o->keys[lo] : NULL;
}

const cJSON *json_doc_get(struct json_doc *d, const cJSON *obj, const char *key)
{
    struct json_key *k = find(d, obj, key);
    if (!k) return NULL;
    k->used = true;
    return k->item;
}

const cJSON *json_doc_peek(const struct json_doc *d, const cJSON *obj, const char *key)
{
    struct json_key *k = find(d, obj, key);
    return k ? k->item : NULL;
}

int json_doc_key_line(const struct json_doc *d, const cJSON *obj, const char *key)
{
    struct json_key *k = find(d, obj, key);
    return k ? json_doc_line_at(d, k->offset) : 0;
}
