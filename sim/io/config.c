/* config.c — scenario files and --set overrides, see config.h.
 *
 * Debian's libinih is built without INI_HANDLER_LINENO, so the handler is not
 * told which line it is on. We therefore feed inih through our own reader,
 * one physical line per call, and count lines there; when the handler runs it
 * is always for the line the reader handed over last. The reader also:
 *  - strips leading whitespace, because inih would otherwise take an indented
 *    "  pp = 4" as a continuation of the previous key's value (multi-line
 *    values are compiled in) and silently set tp to "pp = 4";
 *  - checks [section] lines itself, because inih only calls the handler for
 *    key = value lines, so an unknown section with no keys would pass unseen;
 *  - refuses lines longer than inih's fixed buffer instead of letting inih
 *    split them into pieces that it would count as separate lines.
 * The file is read into a copy of the config, committed only on success, so
 * a failed load leaves `cfg` as it was. */
#include "config.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "units.h"

/* Caps on durations and sizes, so that arithmetic on them cannot leave int64
 * picoseconds or lose whole bytes in a double: 10^6 s (11.6 days) for one op
 * and 2^60 bytes (1 EiB). Beyond them a value is a typo, not a machine. */
#define DURATION_MAX (1000000 * MP_PS_PER_S)
#define SIZE_MAX_BYTES 0x1p60


/* ---- small helpers ------------------------------------------------------ */

/* Append to a fixed buffer, truncating silently (messages only). */
static void append(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

static void *field(struct config *cfg, const struct config_key *k)
{
    return (char *)cfg + k->offset;
}

static const void *cfield(const struct config *cfg, const struct config_key *k)
{
    return (const char *)cfg + k->offset;
}

static size_t section_len(const char *dotted)
{
    const char *dot = strchr(dotted, '.');
    return dot ? (size_t)(dot - dotted) : strlen(dotted);
}

static const char *short_name(const struct config_key *k)
{
    return k->name + section_len(k->name) + 1;
}

static bool section_known(const char *s, size_t n)
{
    for (const struct config_key *k = config_keys; k->name; k++)
        if (section_len(k->name) == n && strncmp(k->name, s, n) == 0) return true;
    return false;
}

/* Close enough to suggest: about one typo per four letters. */
static bool close_enough(const char *word, size_t d)
{
    size_t n = strlen(word);
    return d < n && d <= 1 + n / 4;
}

/* The nearest key to `word`: by short name within `section` when given,
 * else by dotted name (and, for a word without a dot, by short name in any
 * section, so "--set pp=4" suggests "parallel.pp"). */
static const struct config_key *suggest_key(const char *word, const char *section)
{
    const struct config_key *best = NULL;
    size_t best_d = SIZE_MAX;
    bool bare = !section && !strchr(word, '.');
    for (const struct config_key *k = config_keys; k->name; k++) {
        size_t d;
        if (section) {
            if (section_len(k->name) != strlen(section) ||
                strncmp(k->name, section, strlen(section)) != 0)
                continue;
            d = mp_edit_distance(word, short_name(k));
        } else {
            d = mp_edit_distance(word, k->name);
            if (bare) {
                size_t ds = mp_edit_distance(word, short_name(k));
                if (ds < d) d = ds;
            }
        }
        if (d < best_d) {
            best_d = d;
            best = k;
        }
    }
    return best && close_enough(word, best_d) ? best : NULL;
}

/* The nearest section name to `word`, written to `out`; false when none is
 * close. (No static buffer: sweeps may set keys from several threads.) */
static bool suggest_section(const char *word, char *out, size_t size)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX, best_n = 0;
    for (const struct config_key *k = config_keys; k->name; k++) {
        char name[64];
        size_t n = section_len(k->name);
        if (n >= sizeof name) continue;
        memcpy(name, k->name, n);
        name[n] = '\0';
        size_t d = mp_edit_distance(word, name);
        if (d < best_d) {
            best_d = d;
            best = k->name;
            best_n = n;
        }
    }
    if (!best || !close_enough(word, best_d) || best_n >= size) return false;
    memcpy(out, best, best_n);
    out[best_n] = '\0';
    return true;
}

static void list_sections(char *buf, size_t size)
{
    const char *prev = NULL;
    size_t prev_n = 0;
    for (const struct config_key *k = config_keys; k->name; k++) {
        size_t n = section_len(k->name);
        if (prev && n == prev_n && strncmp(prev, k->name, n) == 0) continue;
        append(buf, size, "%s%.*s", prev ? ", " : "", (int)n, k->name);
        prev = k->name;
        prev_n = n;
    }
}

static void list_section_keys(char *buf, size_t size, const char *section)
{
    bool first = true;
    size_t n = strlen(section);
    for (const struct config_key *k = config_keys; k->name; k++) {
        if (section_len(k->name) != n || strncmp(k->name, section, n) != 0) continue;
        append(buf, size, "%s%s", first ? "" : ", ", short_name(k));
        first = false;
    }
}

/* "WHERE: " or nothing. */
static void where_prefix(char *buf, size_t size, const char *where)
{
    buf[0] = '\0';
    if (where && *where) snprintf(buf, size, "%s: ", where);
}

/* Unknown dotted key, as from --set. */
static int fail_unknown_dotted(struct mp_error *err, const char *where, const char *key)
{
    char msg[sizeof err->msg];
    where_prefix(msg, sizeof msg, where);
    append(msg, sizeof msg, "unknown key '%s'", key);
    const struct config_key *s = suggest_key(key, NULL);
    if (s) append(msg, sizeof msg, " (did you mean '%s'?)", s->name);
    size_t n = section_len(key);
    char section[64];
    if (strchr(key, '.') && n < sizeof section && section_known(key, n)) {
        memcpy(section, key, n);
        section[n] = '\0';
        append(msg, sizeof msg, "; known keys in [%s]: ", section);
        list_section_keys(msg, sizeof msg, section);
    } else {
        append(msg, sizeof msg, "; keys are written section.key, with sections ");
        list_sections(msg, sizeof msg);
    }
    return mp_fail(err, MP_ERR_INPUT, "%s", msg);
}

/* ---- values ------------------------------------------------------------- */

/* What a key accepts, for "expected ..." in messages. */
static void describe(const struct config_key *k, char *buf, size_t size)
{
    switch (k->type) {
    case CONFIG_INT:
    case CONFIG_DOUBLE: {
        const char *what = k->type == CONFIG_INT ? "a whole number" : "a number";
        if (k->min > k->max) snprintf(buf, size, "%s", what);
        else if (k->max >= CONFIG_DEGREE_MAX)
            snprintf(buf, size, "%s ≥ %g (at most %.0f)", what, k->min, k->max);
        else if (k->type == CONFIG_INT) snprintf(buf, size, "%s from %.0f to %.0f", what, k->min, k->max);
        else snprintf(buf, size, "%s from %g to %g", what, k->min, k->max);
        break;
    }
    case CONFIG_U64: snprintf(buf, size, "a whole number ≥ 0"); break;
    case CONFIG_BOOL: snprintf(buf, size, "%s", units_expect_bool); break;
    case CONFIG_DURATION:
        snprintf(buf, size, "%s, at most 1000000s", units_expect_duration);
        break;
    case CONFIG_SIZE: snprintf(buf, size, "%s, at most 1024PiB", units_expect_size); break;
    case CONFIG_STRING:
        snprintf(buf, size, "a name or path of 1 to %zu characters", k->size - 1);
        break;
    case CONFIG_MEM_AMOUNT:
        snprintf(buf, size, "a count of microbatch activations from %g to %g (such as 8) or "
                 "a size with a unit (such as 40GB or 16GiB)", k->min, k->max);
        break;
    case CONFIG_INT_LIST:
        snprintf(buf, size, "'%s' or a comma list of at most %d whole numbers from %g to %g "
                 "(such as 7,8,8,7)", k->fallback, CONFIG_LIST_MAX, k->min, k->max);
        break;
    case CONFIG_ENUM:
        snprintf(buf, size, "one of ");
        for (const char *c = k->choices; *c; c++)
            append(buf, size, *c == '|' ? ", " : "%c", *c);
        break;
    }
}

/* Index of `value` among "a|b|c", case-insensitive; -1 when absent. */
static int enum_index(const char *choices, const char *value)
{
    size_t n = strlen(value);
    int i = 0;
    for (const char *c = choices;; i++) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncasecmp(c, value, n) == 0) return i;
        if (!bar) return -1;
        c = bar + 1;
    }
}

static void enum_name(const char *choices, int index, char *buf, size_t size)
{
    const char *c = choices;
    for (int i = 0; i < index && c; i++) {
        c = strchr(c, '|');
        if (c) c++;
    }
    if (!c || index < 0) {
        snprintf(buf, size, "%d", index); /* out of range: show the number */
        return;
    }
    const char *bar = strchr(c, '|');
    int len = bar ? (int)(bar - c) : (int)strlen(c);
    snprintf(buf, size, "%.*s", len, c);
}

static int parse_u64(const char *text, uint64_t *out)
{
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    if (!isdigit((unsigned char)*s)) return -1; /* strtoull takes "-1" */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (errno == ERANGE || *end) return -1;
    *out = v;
    return 0;
}

/* Shortest "%g" that reads back as the same double. */
static void format_double(double v, char *buf, size_t size)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* "7,8,8,7" into `out`, each entry in [lo, hi]; the key's own word for
 * none (its fallback, "even") gives n = 0. -1 when malformed. */
static int parse_int_list(const char *text, const char *none, double lo, double hi,
                          struct config_int_list *out)
{
    if (strcasecmp(text, none) == 0) {
        out->n = 0;
        return 0;
    }
    struct config_int_list l = { 0 };
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        size_t len = strcspn(p, ",");
        char one[32];
        if (len == 0 || len >= sizeof one || l.n == CONFIG_LIST_MAX) return -1;
        memcpy(one, p, len);
        one[len] = '\0';
        long long v;
        if (units_parse_int(one, (long long)lo, (long long)hi, &v)) return -1;
        l.v[l.n++] = (int)v;
        p += len;
        if (!*p) break;
        p++; /* the comma: another entry must follow */
    }
    *out = l;
    return 0;
}

const struct config_key *config_find_key(const char *name)
{
    for (const struct config_key *k = config_keys; k->name; k++)
        if (strcmp(k->name, name) == 0) return k;
    return NULL;
}

static int set_key(struct config *cfg, const struct config_key *k, const char *value,
                   const char *where, struct mp_error *err);

int config_set_key(struct config *cfg, const char *key, const char *value,
                   const char *where, struct mp_error *err)
{
    const struct config_key *k = config_find_key(key);
    if (!k) return fail_unknown_dotted(err, where, key);
    int rc = set_key(cfg, k, value, where, err);
    if (rc) return rc;
    /* Recorded as given, so a recipe leaves it alone (config_recipe.c). */
    size_t i = (size_t)(k - config_keys);
    if (i < 64 * sizeof cfg->key_given / sizeof cfg->key_given[0])
        cfg->key_given[i / 64] |= (uint64_t)1 << (i % 64);
    /* Only the recipe key changes what a recipe fills: any other key is
     * now given and keeps its value whatever the recipe. */
    if (strcmp(k->name, "training.recipe") == 0) config_recipe_apply(cfg);
    return MP_OK;
}

int config_set_key_quiet(struct config *cfg, const char *key, const char *value,
                         struct mp_error *err)
{
    const struct config_key *k = config_find_key(key);
    if (!k) return fail_unknown_dotted(err, "recipe", key);
    return set_key(cfg, k, value, "recipe", err);
}

bool config_key_given(const struct config *cfg, const char *key)
{
    const struct config_key *k = config_find_key(key);
    size_t i = k ? (size_t)(k - config_keys) : SIZE_MAX;
    return k && i < 64 * sizeof cfg->key_given / sizeof cfg->key_given[0] &&
           (cfg->key_given[i / 64] >> (i % 64) & 1);
}

static int set_key(struct config *cfg, const struct config_key *k, const char *value,
                   const char *where, struct mp_error *err)
{

    /* Trim, and drop one pair of double quotes around strings, which people
     * write in INI files out of habit. */
    while (isspace((unsigned char)*value)) value++;
    size_t n = strlen(value);
    while (n > 0 && isspace((unsigned char)value[n - 1])) n--;
    if (k->type == CONFIG_STRING && n >= 2 && value[0] == '"' && value[n - 1] == '"') {
        value++;
        n -= 2;
    }
    char text[CONFIG_STR * 2];
    bool ok = n < sizeof text;
    if (ok) {
        memcpy(text, value, n);
        text[n] = '\0';
    }

    void *p = field(cfg, k);
    if (ok) {
        switch (k->type) {
        case CONFIG_INT: {
            long long v;
            long long lo = k->min > k->max ? INT_MIN : (long long)k->min;
            long long hi = k->min > k->max ? INT_MAX : (long long)k->max;
            ok = units_parse_int(text, lo, hi, &v) == 0;
            if (ok) *(int *)p = (int)v;
            break;
        }
        case CONFIG_U64: ok = parse_u64(text, (uint64_t *)p) == 0; break;
        case CONFIG_BOOL: ok = units_parse_bool(text, (bool *)p) == 0; break;
        case CONFIG_DURATION: {
            mp_time v;
            ok = units_parse_duration(text, &v) == 0 && v <= DURATION_MAX;
            if (ok) *(mp_time *)p = v;
            break;
        }
        case CONFIG_SIZE: {
            double v;
            ok = units_parse_size(text, &v) == 0 && v <= SIZE_MAX_BYTES;
            if (ok) *(double *)p = v;
            break;
        }
        case CONFIG_DOUBLE: {
            double v;
            ok = units_parse_double(text, &v) == 0 &&
                 (k->min > k->max || (v >= k->min && v <= k->max));
            if (ok) *(double *)p = v;
            break;
        }
        case CONFIG_STRING:
            ok = n > 0 && n < k->size;
            if (ok) memcpy(p, text, n + 1);
            break;
        case CONFIG_MEM_AMOUNT: {
            /* A bare number counts M_B; anything else must be a size, and
             * units_parse_size would take a bare number as bytes, so the
             * number is tried first. */
            struct config_mem_amount *a = p;
            double v;
            if (units_parse_double(text, &v) == 0) {
                ok = v >= k->min && v <= k->max;
                if (ok) *a = (struct config_mem_amount){ .value = v, .bytes = false };
            } else {
                ok = units_parse_size(text, &v) == 0;
                if (ok) *a = (struct config_mem_amount){ .value = v, .bytes = true };
            }
            break;
        }
        case CONFIG_ENUM: {
            int i = enum_index(k->choices, text);
            ok = i >= 0;
            if (ok) *(int *)p = i;
            break;
        }
        case CONFIG_INT_LIST:
            ok = parse_int_list(text, k->fallback, k->min, k->max,
                                (struct config_int_list *)p) == 0;
            break;
        }
    }
    if (ok) {
        cfg->key_line[k - config_keys] = -1; /* config_load puts the line in */
        /* Any inference key turns the scenario into a serving one. */
        if (strncmp(k->name, "inference.", 10) == 0) cfg->inference.present = true;
        return MP_OK;
    }

    char expect[256], prefix[CONFIG_STR + 32], got[256];
    describe(k, expect, sizeof expect);
    where_prefix(prefix, sizeof prefix, where);
    mp_quote(value, n, 120, got, sizeof got); /* one line, whatever --set held */
    return mp_fail(err, MP_ERR_INPUT, "%skey %s: expected %s, got '%s'", prefix, k->name,
                   expect, got);
}

void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    size_t nkeys = 0;
    while (config_keys[nkeys].name) nkeys++;
    assert(nkeys <= CONFIG_KEY_LINES && "raise CONFIG_KEY_LINES (config.h)");
    for (const struct config_key *k = config_keys; k->name; k++) {
        int rc = config_set_key(cfg, k->name, k->fallback, "default", NULL);
        assert(rc == MP_OK && "a default in config_keys[] does not parse");
        (void)rc;
    }
    memset(cfg->key_line, 0, sizeof cfg->key_line); /* every key: its default */
    cfg->inference.present = false; /* defaults are not a request to serve */
    memset(cfg->key_given, 0, sizeof cfg->key_given); /* defaults are not given */
}

int config_set(struct config *cfg, const char *assignment, const char *where,
               struct mp_error *err)
{
    char prefix[CONFIG_STR + 32];
    where_prefix(prefix, sizeof prefix, where);
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return mp_fail(err, MP_ERR_INPUT,
                       "%sexpected section.key=value (such as parallel.pp=4), got '%s'",
                       prefix, assignment);
    const char *s = assignment;
    while (s < eq && isspace((unsigned char)*s)) s++;
    const char *e = eq;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    char key[128];
    if ((size_t)(e - s) >= sizeof key || e == s)
        return mp_fail(err, MP_ERR_INPUT, "%sexpected section.key=value, got '%s'", prefix,
                       assignment);
    memcpy(key, s, (size_t)(e - s));
    key[e - s] = '\0';
    int rc = config_set_key(cfg, key, eq + 1, where, err);
    /* An override no longer comes from the file's line: the command line. */
    const struct config_key *k = config_find_key(key);
    if (!rc && k && (size_t)(k - config_keys) < CONFIG_KEY_LINES)
        cfg->key_line[k - config_keys] = -1;
    return rc;
}

void config_format_value(const struct config *cfg, const struct config_key *k, char *buf,
                         size_t size)
{
    const void *p = cfield(cfg, k);
    switch (k->type) {
    case CONFIG_INT: snprintf(buf, size, "%d", *(const int *)p); break;
    case CONFIG_U64: snprintf(buf, size, "%" PRIu64, *(const uint64_t *)p); break;
    case CONFIG_BOOL: snprintf(buf, size, "%s", *(const bool *)p ? "true" : "false"); break;
    case CONFIG_DURATION: {
        /* The largest unit that divides exactly, so parsing gives it back. */
        static const struct { const char *unit; mp_time ps; } u[] = {
            {"s", MP_PS_PER_S}, {"ms", MP_PS_PER_MS}, {"us", MP_PS_PER_US},
            {"ns", MP_PS_PER_NS}, {"ps", 1},
        };
        mp_time t = *(const mp_time *)p;
        if (t == 0) {
            snprintf(buf, size, "0");
            break;
        }
        size_t i = 0;
        while (t % u[i].ps != 0) i++;
        snprintf(buf, size, "%" PRId64 "%s", t / u[i].ps, u[i].unit);
        break;
    }
    case CONFIG_SIZE: {
        /* The largest unit, binary or decimal, that divides exactly (1GiB,
         * 44GB, 1536MiB), else plain bytes; both read back to the same
         * double, since the quotient is a whole number below 2^53. */
        static const struct { const char *unit; double bytes; } u[] = {
            {"TiB", 0x1p40}, {"TB", 1e12}, {"GiB", 0x1p30}, {"GB", 1e9},
            {"MiB", 0x1p20}, {"MB", 1e6},  {"KiB", 0x1p10}, {"KB", 1e3},
        };
        double v = *(const double *)p;
        for (size_t i = 0; i < sizeof u / sizeof *u; i++) {
            if (v > 0 && v / u[i].bytes < 0x1p53 && fmod(v, u[i].bytes) == 0) {
                snprintf(buf, size, "%.0f%s", v / u[i].bytes, u[i].unit);
                return;
            }
        }
        format_double(v, buf, size);
        break;
    }
    case CONFIG_DOUBLE: format_double(*(const double *)p, buf, size); break;
    case CONFIG_STRING: snprintf(buf, size, "%s", (const char *)p); break;
    case CONFIG_ENUM: enum_name(k->choices, *(const int *)p, buf, size); break;
    case CONFIG_MEM_AMOUNT: {
        /* Bytes keep a unit so that they read back as bytes, not as M_B. */
        const struct config_mem_amount *a = p;
        format_double(a->value, buf, size);
        if (a->bytes) append(buf, size, "B");
        break;
    }
    case CONFIG_INT_LIST: {
        const struct config_int_list *l = p;
        if (size) buf[0] = '\0';
        if (l->n == 0) append(buf, size, "%s", k->fallback);
        for (int i = 0; i < l->n; i++) append(buf, size, "%s%d", i ? "," : "", l->v[i]);
        break;
    }
    }
}

/* ---- each key in its range ---------------------------------------------- */

int config_check_keys(const struct config *cfg, struct mp_error *err)
{
    char prefix[CONFIG_STR + 8];
    where_prefix(prefix, sizeof prefix, cfg->path);
    /* Fields may have been written directly, so ranges are checked again. */
    for (const struct config_key *k = config_keys; k->name; k++) {
        const void *p = cfield(cfg, k);
        bool ok = true;
        if (k->type == CONFIG_INT && k->min <= k->max) {
            int v = *(const int *)p;
            ok = v >= k->min && v <= k->max;
        } else if (k->type == CONFIG_ENUM) {
            char tmp[64];
            enum_name(k->choices, *(const int *)p, tmp, sizeof tmp);
            ok = enum_index(k->choices, tmp) == *(const int *)p;
        } else if (k->type == CONFIG_MEM_AMOUNT) {
            const struct config_mem_amount *a = p;
            ok = isfinite(a->value) && a->value >= 0 && (a->bytes || a->value <= k->max);
        } else if (k->type == CONFIG_STRING) {
            ok = *(const char *)p != '\0';
        } else if (k->type == CONFIG_INT_LIST) {
            const struct config_int_list *l = p;
            ok = l->n >= 0 && l->n <= CONFIG_LIST_MAX;
            for (int i = 0; ok && i < l->n; i++) ok = l->v[i] >= k->min && l->v[i] <= k->max;
        }
        if (!ok) {
            char expect[256], value[64];
            describe(k, expect, sizeof expect);
            config_format_value(cfg, k, value, sizeof value);
            return mp_fail(err, MP_ERR_INPUT, "%skey %s = '%s': expected %s", prefix,
                           k->name, value, expect);
        }
    }
    return MP_OK;
}

/* ---- loading a file ----------------------------------------------------- */

struct loader {
    const char *path;     /* as the user wrote it, for messages */
    FILE *f;
    struct config work;   /* committed to the caller's config on success */
    int line;             /* physical line last handed to inih */
    char *buf;            /* getline() buffer */
    size_t cap;
    char **lines;         /* text of each line, to quote syntax errors */
    int nlines, cap_lines;
    int *key_line;        /* per config_keys[] index: line that set it, or 0 */
    int err_line;         /* line of the first error we found, 0 = none */
    struct mp_error *err;
    struct mp_error own;  /* used when the caller passed err == NULL */
    int status;
};

static int loader_fail(struct loader *ld, int status)
{
    ld->err_line = ld->line;
    ld->status = status;
    return 0; /* inih: "handler failed" */
}

/* [section] line, already left-trimmed: its name must be known and nothing
 * but a comment may follow. Lines without ']' are left to inih to reject. */
static bool check_section_line(struct loader *ld, const char *s)
{
    const char *close = strchr(s, ']');
    if (!close) return true;
    const char *a = s + 1, *b = close;
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    const char *after = close + 1;
    while (isspace((unsigned char)*after)) after++;
    if (*after && *after != ';' && *after != '#') {
        mp_fail(ld->err, MP_ERR_INPUT,
                "%s:%d: syntax error: unexpected text after ']': '%s' "
                "(put each key = value on its own line)", ld->path, ld->line, after);
        loader_fail(ld, MP_ERR_INPUT);
        return false;
    }
    char name[64];
    size_t n = (size_t)(b - a);
    if (n < sizeof name) {
        memcpy(name, a, n);
        name[n] = '\0';
        if (section_known(name, n)) return true;
    } else {
        snprintf(name, sizeof name, "%.60s", a);
    }
    char msg[sizeof ld->err->msg];
    snprintf(msg, sizeof msg, "%s:%d: unknown section [%s]", ld->path, ld->line, name);
    char near[64];
    if (suggest_section(name, near, sizeof near))
        append(msg, sizeof msg, " (did you mean [%s]?)", near);
    append(msg, sizeof msg, "; known sections: ");
    list_sections(msg, sizeof msg);
    mp_fail(ld->err, MP_ERR_INPUT, "%s", msg);
    loader_fail(ld, MP_ERR_INPUT);
    return false;
}

/* inih's fgets-like reader: exactly one physical line per call. */
static char *loader_read(char *str, int num, void *stream)
{
    struct loader *ld = stream;
    if (ld->err_line) return NULL; /* stop at the first error */
    ssize_t got = getline(&ld->buf, &ld->cap, ld->f);
    if (got < 0) {
        if (ferror(ld->f)) {
            mp_fail(ld->err, MP_ERR_INPUT, "%s: cannot read: %s", ld->path, strerror(errno));
            ld->line++;
            loader_fail(ld, MP_ERR_INPUT);
        }
        return NULL;
    }
    ld->line++;
    char *s = ld->buf;
    size_t n = strlen(s);
    /* A NUL byte would silently cut the line short (and inih would never see
     * the rest): a scenario is text, so say it is not. */
    if (n < (size_t)got) {
        mp_fail(ld->err, MP_ERR_INPUT, "%s:%d: a NUL byte at column %zu: expected a text "
                "file (is it binary, or UTF-16?)", ld->path, ld->line, n + 1);
        loader_fail(ld, MP_ERR_INPUT);
        return NULL;
    }
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    if (ld->line == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0) s += 3, n -= 3; /* BOM */
    while (isspace((unsigned char)*s)) s++, n--;

    MP_GROW(ld->lines, ld->cap_lines, ld->nlines + 1);
    ld->lines[ld->nlines++] = mp_xstrdup(s);

    if (n + 2 > (size_t)num) {
        mp_fail(ld->err, MP_ERR_INPUT, "%s:%d: line too long (%zu characters, at most %d)",
                ld->path, ld->line, n, num - 2);
        loader_fail(ld, MP_ERR_INPUT);
        return NULL;
    }
    if (*s == '[' && !check_section_line(ld, s)) return NULL;
    memcpy(str, s, n);
    str[n] = '\n';
    str[n + 1] = '\0';
    return str;
}

static int loader_handle(void *user, const char *section, const char *name,
                         const char *value)
{
    struct loader *ld = user;
    if (ld->err_line) return 0;
    /* inih keeps the blanks inside "[ parallel ]". */
    while (isspace((unsigned char)*section)) section++;
    size_t sn = strlen(section);
    while (sn > 0 && isspace((unsigned char)section[sn - 1])) sn--;

    char where[CONFIG_STR + 32];
    snprintf(where, sizeof where, "%s:%d", ld->path, ld->line);
    if (sn == 0) {
        char msg[sizeof ld->err->msg];
        snprintf(msg, sizeof msg, "%s: key '%s' comes before any [section]; sections are ",
                 where, name);
        list_sections(msg, sizeof msg);
        mp_fail(ld->err, MP_ERR_INPUT, "%s", msg);
        return loader_fail(ld, MP_ERR_INPUT);
    }
    char dotted[160];
    snprintf(dotted, sizeof dotted, "%.*s.%s", (int)sn, section, name);
    const struct config_key *k = config_find_key(dotted);
    if (!k) {
        char sec[64];
        snprintf(sec, sizeof sec, "%.*s", (int)sn, section);
        if (!section_known(sec, strlen(sec))) {
            fail_unknown_dotted(ld->err, where, dotted);
            return loader_fail(ld, MP_ERR_INPUT);
        }
        char msg[sizeof ld->err->msg];
        snprintf(msg, sizeof msg, "%s: unknown key '%s' in [%s]", where, name, sec);
        const struct config_key *near = suggest_key(name, sec);
        if (near) append(msg, sizeof msg, " (did you mean '%s'?)", short_name(near));
        append(msg, sizeof msg, "; known keys: ");
        list_section_keys(msg, sizeof msg, sec);
        mp_fail(ld->err, MP_ERR_INPUT, "%s", msg);
        return loader_fail(ld, MP_ERR_INPUT);
    }
    size_t idx = (size_t)(k - config_keys);
    if (ld->key_line[idx]) {
        mp_fail(ld->err, MP_ERR_INPUT, "%s: key %s is set twice, on lines %d and %d",
                where, k->name, ld->key_line[idx], ld->line);
        return loader_fail(ld, MP_ERR_INPUT);
    }
    ld->key_line[idx] = ld->line;
    assert(idx < CONFIG_KEY_LINES && "more keys than CONFIG_KEY_LINES");
    ld->work.key_line[idx] = ld->line;
    int rc = config_set_key(&ld->work, k->name, value, where, ld->err);
    if (rc != MP_OK) return loader_fail(ld, rc);
    ld->work.key_line[idx] = ld->line;
    return 1;
}

/* Copy `src` into a fixed field, or fail: a truncated path would point
 * somewhere else. */
static bool copy_fits(char *dst, size_t size, const char *src, size_t n)
{
    if (n >= size) return false;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return true;
}

int config_load(struct config *cfg, const char *path, struct mp_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return mp_fail(err, MP_ERR_INPUT,
                       "%s: is a directory, expected a scenario .ini file", path);

    struct loader ld = {.path = path, .work = *cfg};
    ld.err = err ? err : &ld.own;
    /* Fill path, dir and name first, so a failure here touches nothing. */
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t base_n = strlen(base);
    if (base_n > 4 && strcmp(base + base_n - 4, ".ini") == 0) base_n -= 4;
    bool fits = copy_fits(ld.work.path, sizeof ld.work.path, path, strlen(path)) &&
                copy_fits(ld.work.name, sizeof ld.work.name, base, base_n);
    if (!slash) fits = fits && copy_fits(ld.work.dir, sizeof ld.work.dir, ".", 1);
    else if (slash == path) fits = fits && copy_fits(ld.work.dir, sizeof ld.work.dir, "/", 1);
    else fits = fits && copy_fits(ld.work.dir, sizeof ld.work.dir, path, (size_t)(slash - path));
    if (!fits)
        return mp_fail(err, MP_ERR_INPUT, "%s: path too long (at most %d characters)", path,
                       CONFIG_STR - 1);

    ld.f = fopen(path, "r");
    if (!ld.f)
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    size_t nkeys = 0;
    while (config_keys[nkeys].name) nkeys++;
    ld.key_line = mp_xcalloc(nkeys, sizeof *ld.key_line);

    int r = ini_parse_stream(loader_read, &ld, loader_handle, &ld);

    /* inih reports the first line it could not parse, and it numbers lines
     * as our reader does; whichever error came first wins. */
    int status = MP_OK;
    if (r == -2) {
        status = mp_fail(err, MP_ERR_INTERNAL, "%s: out of memory while parsing", path);
    } else if (r > 0 && (!ld.err_line || r < ld.err_line)) {
        const char *text = r <= ld.nlines ? ld.lines[r - 1] : "";
        status = mp_fail(err, MP_ERR_INPUT,
                         "%s:%d: syntax error: expected 'key = value' or '[section]', "
                         "got '%.200s'", path, r, text);
    } else if (ld.err_line) {
        status = ld.status;
    }
    /* A file that sets nothing (empty, or only comments and [section]
     * lines) would silently run every default: llama3-8b on the textbook
     * chip. It is almost always the wrong file, or one cut short. */
    bool any = false;
    for (size_t i = 0; i < nkeys && !any; i++) any = ld.key_line[i] != 0;
    if (status == MP_OK && !any)
        status = mp_fail(err, MP_ERR_INPUT, "%s: empty scenario: it sets no key (%d lines of "
                         "comments and sections), so every default would run; expected at least "
                         "one key = value in a [section] (mpsim list keys)", path, ld.nlines);
    if (status == MP_OK) *cfg = ld.work;

    fclose(ld.f);
    free(ld.buf);
    for (int i = 0; i < ld.nlines; i++) free(ld.lines[i]);
    free(ld.lines);
    free(ld.key_line);
    return status;
}

const char *config_key_where(const struct config *cfg, const char *key, char *buf, size_t size)
{
    const struct config_key *k = config_find_key(key);
    size_t idx = k ? (size_t)(k - config_keys) : CONFIG_KEY_LINES;
    int line = idx < CONFIG_KEY_LINES ? cfg->key_line[idx] : 0;
    const char *file = cfg->path[0] ? cfg->path : "scenario";
    if (line > 0) snprintf(buf, size, "%s:%d: key %s", file, line, key);
    else snprintf(buf, size, "%s: key %s", file, key);
    return buf;
}

/* ---- finding presets ---------------------------------------------------- */

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* "; the presets are a, b, c (did you mean 'b'?)": the files of
 * <data>/<subdir> ending in `ext`, sorted, for a name that is no path. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void append_presets(char *msg, size_t size, const char *name, const char *subdir,
                           const char *ext)
{
    char folder[700];
    snprintf(folder, sizeof folder, "%s/%s", mp_data_dir(), subdir);
    DIR *d = opendir(folder);
    if (!d) return;
    char *names[128];
    int n = 0;
    size_t el = strlen(ext);
    struct dirent *de;
    while ((de = readdir(d)) && n < 128) {
        size_t len = strlen(de->d_name);
        if (len > el && !strcmp(de->d_name + len - el, ext)) {
            names[n] = mp_xstrdup(de->d_name);
            names[n++][len - el] = '\0';
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    const char *near = NULL;
    size_t best = SIZE_MAX;
    for (int i = 0; i < n; i++) {
        size_t dist = mp_edit_distance(name, names[i]);
        if (dist < best) best = dist, near = names[i];
    }
    if (n) append(msg, size, "; the presets are");
    for (int i = 0; i < n; i++) append(msg, size, "%s %s", i ? "," : "", names[i]);
    if (near && best <= 3) append(msg, size, " (did you mean '%s'?)", near);
    for (int i = 0; i < n; i++) free(names[i]);
}

int config_resolve(const struct config *cfg, const char *name, const char *subdir,
                   const char *ext, char *out, size_t size, struct mp_error *err)
{
    if (!name || !*name)
        return mp_fail(err, MP_ERR_INPUT, "expected a preset name or a path, got ''");
    enum { MAX_TRIES = 3 };
    char tried[MAX_TRIES][1024];
    int n = 0;
    if (name[0] == '/' || !cfg || !cfg->dir[0]) {
        snprintf(tried[n++], sizeof tried[0], "%s", name);
    } else {
        snprintf(tried[n++], sizeof tried[0], "%s/%s", cfg->dir, name);
    }
    if (name[0] != '/') {
        /* Presets live under the data folder; the extension is optional. */
        const char *data = mp_data_dir();
        char folder[600];
        if (subdir && *subdir) snprintf(folder, sizeof folder, "%s/%s", data, subdir);
        else snprintf(folder, sizeof folder, "%s", data);
        size_t nl = strlen(name), el = ext ? strlen(ext) : 0;
        bool has_ext = el > 0 && nl >= el && strcmp(name + nl - el, ext) == 0;
        if (el > 0 && !has_ext)
            snprintf(tried[n++], sizeof tried[0], "%s/%s%s", folder, name, ext);
        snprintf(tried[n++], sizeof tried[0], "%s/%s", folder, name);
    }
    for (int i = 0; i < n; i++) {
        if (!is_file(tried[i])) continue;
        if (strlen(tried[i]) >= size)
            return mp_fail(err, MP_ERR_INPUT, "%s: path too long (at most %zu characters)",
                           tried[i], size - 1);
        memcpy(out, tried[i], strlen(tried[i]) + 1);
        return MP_OK;
    }
    char msg[1024];
    snprintf(msg, sizeof msg, "cannot find '%s'; looked for ", name);
    for (int i = 0; i < n; i++) append(msg, sizeof msg, "%s%s", i ? ", " : "", tried[i]);
    if (name[0] != '/' && !strchr(name, '/') && subdir && *subdir && ext && *ext)
        append_presets(msg, sizeof msg, name, subdir, ext);
    return mp_fail(err, MP_ERR_INPUT, "%s", msg);
}

void config_where(const struct config *cfg, const char *name, char *buf, size_t size)
{
    const struct config_key *k = config_find_key(name);
    int line = k ? cfg->key_line[k - config_keys] : 0;
    if (cfg->path[0] && line > 0) snprintf(buf, size, "%s:%d: key %s", cfg->path, line, name);
    else if (cfg->path[0]) snprintf(buf, size, "%s: key %s (%s)", cfg->path, name,
                                    line < 0 ? "from the command line" : "default");
    else snprintf(buf, size, "key %s", name);
}

int config_resolve_key(const struct config *cfg, const char *name, const char *subdir,
                       const char *ext, char *out, size_t size, struct mp_error *err)
{
    const struct config_key *k = config_find_key(name);
    assert(k && k->type == CONFIG_STRING);
    int rc = config_resolve(cfg, (const char *)cfield(cfg, k), subdir, ext, out, size, err);
    if (rc) {
        char where[CONFIG_STR + 128];
        config_where(cfg, name, where, sizeof where);
        mp_error_prefix(err, "%s: ", where);
    }
    return rc;
}
