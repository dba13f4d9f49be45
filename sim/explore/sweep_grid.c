/* sweep_grid.c — a sweep's grid: `--vary` value lists with their ranges,
 * checked against the key table before anything runs, and the product of
 * the axes numbered like nested loops; see sweep.h. */
#include "sweep.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/units.h"
#include "sim/strategy/schedule.h"

#define RANGE_MAX_ITEMS 1000000

/* ---- value lists and ranges -------------------------------------------- */

static int range_fail(struct mp_error *err, const struct config_key *k, const char *item,
                      const char *why)
{
    return mp_fail(err, MP_ERR_INPUT,
                   "--vary %s: bad range '%s': %s; ranges are A..B*K (multiply: 1..64*2 = "
                   "1,2,4,...,64), A..B+S (step: 8..64+8 = 8,16,...,64) or A..B (step 1)",
                   k->name, item, why);
}

/* Append a copy of `text` to the growing list. */
static void push(char ***v, int *n, int *cap, const char *text)
{
    MP_GROW(*v, *cap, *n + 1);
    (*v)[(*n)++] = mp_xstrdup(text);
}

/* One "A..B*K", "A..B+S" or "A..B" item of a numeric key. */
static int expand_range(const struct config_key *k, const char *item, char ***v, int *n,
                        int *cap, struct mp_error *err)
{
    char a[64], b[64], step[64] = "1";
    char op = '+';
    const char *dots = strstr(item, "..");
    size_t la = (size_t)(dots - item);
    const char *rest = dots + 2;
    size_t lb = strcspn(rest, "*+");
    if (la == 0 || la >= sizeof a || lb == 0 || lb >= sizeof b)
        return range_fail(err, k, item, "expected a number on each side of '..'");
    memcpy(a, item, la);
    a[la] = '\0';
    memcpy(b, rest, lb);
    b[lb] = '\0';
    if (rest[lb]) {
        op = rest[lb];
        if (strlen(rest + lb + 1) == 0 || strlen(rest + lb + 1) >= sizeof step)
            return range_fail(err, k, item, "expected a number after the * or +");
        snprintf(step, sizeof step, "%s", rest + lb + 1);
    }
    if (k->type == CONFIG_DOUBLE) {
        double x, y, s;
        if (units_parse_double(a, &x) || units_parse_double(b, &y) || units_parse_double(step, &s))
            return range_fail(err, k, item, "expected decimal numbers");
        if (x > y) return range_fail(err, k, item, "the start is above the end");
        if (op == '*' && !(s > 1 && x > 0))
            return range_fail(err, k, item, "a multiplying range needs K > 1 and A > 0");
        if (op == '+' && !(s > 0)) return range_fail(err, k, item, "the step must be > 0");
        /* From the start each time, so steps of 0.1 do not drift. */
        double tol = 1e-9 * fmax(fabs(x), fabs(y));
        for (long i = 0;; i++) {
            double val = op == '*' ? x * pow(s, (double)i) : x + (double)i * s;
            if (val > y + tol) break;
            if (i >= RANGE_MAX_ITEMS) return range_fail(err, k, item, "more than 1000000 values");
            char buf[64];
            snprintf(buf, sizeof buf, "%.15g", val);
            push(v, n, cap, buf);
        }
        return MP_OK;
    }
    long long x, y, s;
    if (units_parse_int(a, LLONG_MIN / 4, LLONG_MAX / 4, &x) ||
        units_parse_int(b, LLONG_MIN / 4, LLONG_MAX / 4, &y) ||
        units_parse_int(step, 1, LLONG_MAX / 4, &s))
        return range_fail(err, k, item, "expected whole numbers, and a step or factor ≥ 1");
    if (x > y) return range_fail(err, k, item, "the start is above the end");
    if (op == '*' && (s < 2 || x < 1))
        return range_fail(err, k, item, "a multiplying range needs K ≥ 2 and A ≥ 1");
    long count = 0;
    for (long long val = x; val <= y; val = op == '*' ? val * s : val + s) {
        if (++count > RANGE_MAX_ITEMS) return range_fail(err, k, item, "more than 1000000 values");
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", val);
        push(v, n, cap, buf);
        if ((op == '*' && val > y / s) || (op == '+' && val > y - s)) break;
    }
    return MP_OK;
}

int sweep_expand(const struct config_key *k, const char *list, char ***values, int *n,
                 struct mp_error *err)
{
    *values = NULL;
    *n = 0;
    int cap = 0, rc = MP_OK;
    const char *p = list;
    while (*p == ' ') p++;
    if (!*p) {
        return mp_fail(err, MP_ERR_INPUT,
                       "--vary %s: empty value list; expected %s=v1,v2,... or a range "
                       "such as 1..64*2", k->name, k->name);
    }
    for (int item_no = 1;; item_no++) {
        size_t len = strcspn(p, ",");
        char item[CONFIG_STR];
        const char *s = p, *e = p + len;
        while (s < e && (*s == ' ' || *s == '\t')) s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
        if (e == s) {
            rc = mp_fail(err, MP_ERR_INPUT, "--vary %s: value %d of '%s' is empty", k->name,
                         item_no, list);
            break;
        }
        if ((size_t)(e - s) >= sizeof item) {
            rc = mp_fail(err, MP_ERR_INPUT, "--vary %s: value %d is too long", k->name, item_no);
            break;
        }
        memcpy(item, s, (size_t)(e - s));
        item[e - s] = '\0';
        if (strstr(item, "..")) {
            if (k->type != CONFIG_INT && k->type != CONFIG_U64 && k->type != CONFIG_DOUBLE) {
                rc = mp_fail(err, MP_ERR_INPUT,
                             "--vary %s: ranges ('%s') are for numeric keys; list the values "
                             "of %s one by one", k->name, item, k->name);
                break;
            }
            if ((rc = expand_range(k, item, values, n, &cap, err))) break;
        } else {
            push(values, n, &cap, item);
        }
        if (!p[len]) break;
        p += len + 1;
    }
    if (rc) {
        sweep_values_free(*values, *n);
        *values = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- the grid ------------------------------------------------------------ */

void sweep_grid_init(struct sweep_grid *g)
{
    memset(g, 0, sizeof *g);
    g->n_points = 1;
}

void sweep_grid_release(struct sweep_grid *g)
{
    for (int a = 0; a < g->n_axes; a++) sweep_values_free(g->axis[a].values, g->axis[a].n);
    free(g->axis);
    sweep_grid_init(g);
}

/* Checks a value needs beyond its type: the names that must exist. */
static int check_name(const struct config *cfg, const struct config_key *k, const char *where,
                      struct mp_error *err)
{
    char path[1024];
    int rc = MP_OK;
    if (!strcmp(k->name, "training.schedule") && !schedule_find(cfg->training.schedule))
        return mp_fail(err, MP_ERR_INPUT, "%s: unknown pipeline schedule '%s' (known: %s)",
                       where, cfg->training.schedule, schedule_names());
    if (!strcmp(k->name, "model.config"))
        rc = config_resolve(cfg, cfg->model.config, "models", ".json", path, sizeof path, err);
    else if (!strcmp(k->name, "hardware.system"))
        rc = config_resolve(cfg, cfg->hardware.system, "hardware/systems", ".ini", path,
                            sizeof path, err);
    if (rc) mp_error_prefix(err, "%s: ", where);
    return rc;
}

int sweep_grid_add(struct sweep_grid *g, const struct config *base, const char *spec,
                   struct mp_error *err)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return mp_fail(err, MP_ERR_INPUT,
                       "--vary '%s': expected section.key=v1,v2,... (e.g. parallel.pp=1,2,4 "
                       "or parallel.pp=1..64*2)", spec);
    char name[128];
    size_t n = (size_t)(eq - spec);
    while (n > 0 && spec[n - 1] == ' ') n--;
    if (n >= sizeof name) return mp_fail(err, MP_ERR_INPUT, "--vary: key name too long");
    memcpy(name, spec, n);
    name[n] = '\0';
    struct config scratch = *base;
    const struct config_key *k = config_find_key(name);
    if (!k) return config_set_key(&scratch, name, "", "--vary", err); /* did-you-mean */
    if (g->n_axes >= SWEEP_MAX_AXES)
        return mp_fail(err, MP_ERR_INPUT, "--vary: at most %d keys", SWEEP_MAX_AXES);
    for (int a = 0; a < g->n_axes; a++)
        if (g->axis[a].key == k)
            return mp_fail(err, MP_ERR_INPUT,
                           "--vary %s is given twice; put all its values in one list", name);

    char **raw;
    int nraw;
    int rc = sweep_expand(k, eq + 1, &raw, &nraw, err);
    if (rc) return rc;
    struct sweep_axis ax = { .key = k, .values = mp_xcalloc((size_t)nraw, sizeof(char *)) };
    char where[160];
    snprintf(where, sizeof where, "--vary %s", k->name);
    for (int i = 0; i < nraw && !rc; i++) {
        rc = config_set_key(&scratch, k->name, raw[i], where, err);
        if (!rc) rc = check_name(&scratch, k, where, err);
        if (rc) break;
        char canon[CONFIG_STR];
        config_format_value(&scratch, k, canon, sizeof canon);
        ax.values[ax.n++] = mp_xstrdup(canon);
    }
    sweep_values_free(raw, nraw);
    if (!rc && (double)g->n_points * ax.n > (double)SWEEP_MAX_POINTS)
        rc = mp_fail(err, MP_ERR_INPUT, "--vary %s: the grid would have %.0f points, more than "
                     "%lld; narrow a range", k->name, (double)g->n_points * ax.n,
                     SWEEP_MAX_POINTS);
    if (rc) {
        sweep_values_free(ax.values, ax.n);
        return rc;
    }
    g->axis = mp_xrealloc(g->axis, (size_t)(g->n_axes + 1) * sizeof *g->axis);
    g->axis[g->n_axes++] = ax;
    g->n_points *= ax.n;
    return MP_OK;
}

void sweep_grid_point(const struct sweep_grid *g, long long index, int *which)
{
    for (int a = g->n_axes - 1; a >= 0; a--) {
        which[a] = (int)(index % g->axis[a].n);
        index /= g->axis[a].n;
    }
}

/* The chips one data-parallel replica of `cfg` takes: tp × cp × pp
 * (context parallelism, issue 17: its ranks share a replica's sequences). */
static long long replica_chips(const struct config *cfg)
{
    return (long long)cfg->parallel.tp * cfg->parallel.cp * cfg->parallel.pp;
}

int sweep_grid_config(const struct sweep_grid *g, const struct config *base, long long index,
                      struct config *out, struct mp_error *err)
{
    int which[SWEEP_MAX_AXES];
    sweep_grid_point(g, index, which);
    *out = *base;
    for (int a = 0; a < g->n_axes; a++) {
        int rc = config_set_key(out, g->axis[a].key->name, g->axis[a].values[which[a]], "--vary",
                                err);
        if (rc) return rc;
    }
    if (g->chips > 0) {
        long long r = replica_chips(out);
        if (g->chips % r != 0)
            return mp_fail(err, MP_ERR_INPUT, "--chips %d: not divisible by tp %d × cp %d × pp %d "
                           "= %lld, so parallel.dp would not be whole", g->chips, out->parallel.tp,
                           out->parallel.cp, out->parallel.pp, r);
        out->parallel.dp = (int)(g->chips / r);
    }
    return MP_OK;
}

int sweep_grid_fix_chips(struct sweep_grid *g, const struct config *base, int chips,
                         struct mp_error *err)
{
    for (int a = 0; a < g->n_axes; a++)
        if (!strcmp(g->axis[a].key->name, "parallel.dp"))
            return mp_fail(err, MP_ERR_INPUT, "--chips %d: parallel.dp is derived from it "
                           "(chips ÷ (tp × cp × pp)); do not --vary it too", chips);
    if (sweep_grid_serving(g, base))
        return mp_fail(err, MP_ERR_INPUT, "--chips %d: a serving sweep places its stages by "
                       "memory; --chips is for training sweeps", chips);
    /* Only tp, cp and pp decide; walk their values, not the whole grid. */
    const struct sweep_axis *tp = NULL, *pp = NULL, *cp = NULL;
    for (int a = 0; a < g->n_axes; a++) {
        if (!strcmp(g->axis[a].key->name, "parallel.tp")) tp = &g->axis[a];
        if (!strcmp(g->axis[a].key->name, "parallel.pp")) pp = &g->axis[a];
        if (!strcmp(g->axis[a].key->name, "parallel.cp")) cp = &g->axis[a];
    }
    int ntp = tp ? tp->n : 1, npp = pp ? pp->n : 1, ncp = cp ? cp->n : 1;
    char seen[512] = "";
    size_t used = 0;
    for (int i = 0; i < ntp; i++)
        for (int j = 0; j < npp; j++)
            for (int k = 0; k < ncp; k++) {
                long long t = tp ? atoll(tp->values[i]) : base->parallel.tp;
                long long p = pp ? atoll(pp->values[j]) : base->parallel.pp;
                long long c = cp ? atoll(cp->values[k]) : base->parallel.cp;
                if (t > 0 && p > 0 && c > 0 && chips % (t * c * p) == 0) {
                    g->chips = chips;
                    return MP_OK;
                }
                if (used + 40 < sizeof seen)
                    used += (size_t)snprintf(seen + used, sizeof seen - used, "%s%lld×%lld×%lld",
                                             used ? ", " : "", t, c, p);
            }
    return mp_fail(err, MP_ERR_INPUT, "--chips %d: no point of the grid divides it: tp × cp × pp "
                   "takes %s; expected a chip count that some tp × cp × pp divides", chips, seen);
}
