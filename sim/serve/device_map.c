/* device_map.c — Accelerate's max_memory parsing, get_balanced_memory,
 * infer_auto_device_map and clean_device_map over an hf_tree; see
 * device_map.h. Each function follows the Python it mirrors step by step
 * (shared/reference/device-map.md §2-5), so the comments name the step. */
#include "device_map.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *const dm_policy_names[] = { "auto", "balanced", "balanced_low_0", "sequential",
                                        NULL };

int dm_policy_parse(const char *text, const char *what, enum dm_policy *out,
                    struct mp_error *err)
{
    size_t best = 4;
    int bi = -1;
    for (int i = 0; dm_policy_names[i]; i++) {
        if (strcmp(text, dm_policy_names[i]) == 0) {
            *out = (enum dm_policy)i;
            return MP_OK;
        }
        size_t d = mp_edit_distance(text, dm_policy_names[i]);
        if (d < best) best = d, bi = i;
    }
    char hint[64] = "";
    if (bi >= 0) snprintf(hint, sizeof hint, " (did you mean '%s'?)", dm_policy_names[bi]);
    return mp_fail(err, MP_ERR_INPUT, "%s: expected auto, balanced, balanced_low_0 or "
                   "sequential, got '%s'%s", what, text, hint);
}

/* ---- max_memory (§2) ------------------------------------------------------------ */

/* Python's float() of a trimmed string, without inf, nan or hex. */
static int py_float(const char *s, size_t n, double *out)
{
    char buf[64];
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    if (!n || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!(isdigit((unsigned char)buf[i]) || strchr("+-.eE", buf[i]))) return -1;
    char *end;
    double v = strtod(buf, &end);
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static bool ends_with_ci(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    if (n < k) return false;
    for (size_t i = 0; i < k; i++)
        if (toupper((unsigned char)s[n - k + i]) != suf[i]) return false;
    return true;
}

int dm_parse_size(const char *text, double *out)
{
    size_t n = strlen(text);
    while (n && isspace((unsigned char)text[n - 1])) n--;
    /* convert_file_size_to_int's branches, in its order. */
    static const struct { const char *suffix; double mult; bool bits_quirk; } units[] = {
        { "GIB", 1073741824.0, false }, { "MIB", 1048576.0, false }, { "KIB", 1024.0, false },
        { "GB", 1e9, true }, { "MB", 1e6, true }, { "KB", 1e3, true },
    };
    double v;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!ends_with_ci(text, n, units[i].suffix)) continue;
        if (py_float(text, n - strlen(units[i].suffix), &v)) return -1;
        double bytes = trunc(v * units[i].mult);
        /* "10Gb": a lower-case b means bits (integer division by 8). */
        if (units[i].bits_quirk && text[n - 1] == 'b') bytes = floor(bytes / 8);
        if (bytes < 0 || bytes > 1152921504606846976.0) return -1; /* 2^60 */
        *out = bytes == 0 ? 0 : bytes;
        return 0;
    }
    /* No unit: an int (or a float) passed through as bytes. */
    if (py_float(text, n, &v) || v < 0 || v > 1152921504606846976.0) return -1;
    *out = v;
    return 0;
}

int dm_memory_find(const struct dm_memory *mm, int device)
{
    for (int i = 0; i < mm->n; i++)
        if (mm->device[i] == device) return i;
    return -1;
}

/* GPUs ascending, then cpu, then disk (§2.3). */
static void memory_sort(struct dm_memory *mm)
{
    for (int i = 1; i < mm->n; i++)
        for (int j = i; j > 0; j--) {
            int a = mm->device[j - 1], b = mm->device[j];
            /* Order key: GPU id, then cpu (-1) after every GPU, disk (-2) last. */
            long ka = a >= 0 ? a : (long)INT_MAX + (a == DM_CPU ? 1 : 2);
            long kb = b >= 0 ? b : (long)INT_MAX + (b == DM_CPU ? 1 : 2);
            if (ka <= kb) break;
            int td = mm->device[j]; mm->device[j] = mm->device[j - 1]; mm->device[j - 1] = td;
            double tb = mm->bytes[j]; mm->bytes[j] = mm->bytes[j - 1]; mm->bytes[j - 1] = tb;
        }
}

int dm_memory_parse(const char *text, const char *what, struct dm_memory *out,
                    struct mp_error *err)
{
    memset(out, 0, sizeof *out);
    out->given = true;
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    if (!*p)
        return mp_fail(err, MP_ERR_INPUT, "%s: expected entries like 0=10GiB,1=10GiB,"
                       "cpu=64GiB, got nothing", what);
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char entry[128];
        if (len >= sizeof entry)
            return mp_fail(err, MP_ERR_INPUT, "%s: entry '%.40s...' is too long", what, p);
        memcpy(entry, p, len);
        entry[len] = '\0';
        char *eq = strchr(entry, '=');
        if (!eq) eq = strchr(entry, ':');
        if (!eq)
            return mp_fail(err, MP_ERR_INPUT, "%s: entry '%s': expected DEVICE=SIZE such as "
                           "0=10GiB or cpu=64GiB", what, entry);
        *eq = '\0';
        char *key = entry, *val = eq + 1;
        while (isspace((unsigned char)*key)) key++;
        for (char *q = key + strlen(key); q > key && isspace((unsigned char)q[-1]);) *--q = '\0';
        int dev;
        if (*key && strspn(key, "0123456789") == strlen(key)) {
            long id = strlen(key) <= 6 ? strtol(key, NULL, 10) : LONG_MAX;
            if (id >= DM_MAX_GPUS)
                return mp_fail(err, MP_ERR_INPUT, "%s: entry '%s=%s': GPU id %s: expected at "
                               "most %d", what, key, val, key, DM_MAX_GPUS - 1);
            dev = (int)id;
        } else if (strcmp(key, "cpu") == 0) {
            dev = DM_CPU;
        } else if (strcmp(key, "disk") == 0) {
            dev = DM_DISK;
        } else {
            /* mps is Accelerate's Apple GPU; mpsim has no Apple chip. */
            /* "gpu1", "cuda:1" -> 1: Accelerate's GPUs are bare ids. */
            char digits[16] = "";
            const char *d = strpbrk(key, "0123456789");
            if (d) snprintf(digits, sizeof digits, "%.*s", (int)strspn(d, "0123456789"), d);
            const char *near = mp_edit_distance(key, "cpu") <= 1   ? "cpu"
                               : mp_edit_distance(key, "disk") <= 1 ? "disk"
                               : digits[0]                          ? digits
                                                                    : NULL;
            char hint[48] = "";
            if (near) snprintf(hint, sizeof hint, " (did you mean '%s'?)", near);
            return mp_fail(err, MP_ERR_INPUT, "%s: entry '%s=%s': unknown device '%s'; "
                           "expected a GPU id (0, 1, ...), cpu or disk, as Accelerate's "
                           "max_memory keys%s", what, key, val, key, hint);
        }
        if (dm_memory_find(out, dev) >= 0)
            return mp_fail(err, MP_ERR_INPUT, "%s: entry '%s=%s': device %s given twice", what,
                           key, val, key);
        double bytes;
        if (dm_parse_size(val, &bytes))
            return mp_fail(err, MP_ERR_INPUT, "%s: entry '%s=%s': expected a size as Accelerate "
                           "reads it (10GiB = 10 x 2^30, 10GB = 10 x 10^9; also MiB, KiB, MB, "
                           "KB, or a whole number of bytes), got '%s'", what, key, val, val);
        if (out->n == DM_MAX_DEVICES)
            return mp_fail(err, MP_ERR_INPUT, "%s: expected at most %d entries", what,
                           DM_MAX_DEVICES);
        out->device[out->n] = dev;
        out->bytes[out->n++] = bytes;
        p = end ? end + 1 : p + len;
        if (end && !*p)
            return mp_fail(err, MP_ERR_INPUT, "%s: expected another entry after the last ','",
                           what);
    }
    memory_sort(out);
    return MP_OK;
}

void dm_memory_default(struct dm_memory *out, int gpus, double gpu_bytes, double host_bytes)
{
    memset(out, 0, sizeof *out);
    for (int g = 0; g < gpus && out->n < DM_MAX_GPUS; g++) {
        out->device[out->n] = g;
        out->bytes[out->n++] = gpu_bytes;
    }
    if (host_bytes > 0) {
        out->device[out->n] = DM_CPU;
        out->bytes[out->n++] = host_bytes;
    }
}

const char *dm_device_repr(int device, char *buf, size_t size)
{
    if (device == DM_CPU) snprintf(buf, size, "'cpu'");
    else if (device == DM_DISK) snprintf(buf, size, "'disk'");
    else snprintf(buf, size, "%d", device);
    return buf;
}

/* ---- balanced budgets (§4) ----------------------------------------------------- */

/* Python's a // b for non-negative floats. */
static double floordiv(double a, double b)
{
    double q = floor(a / b);
    if (q * b > a) q -= 1;
    else if ((q + 1) * b <= a) q += 1;
    return q;
}

static int balanced_memory(struct dm_memory *mm, const struct hf_tree *t, bool low_zero,
                           struct dm_result *r, const char *what, struct mp_error *err)
{
    int num = 0;
    for (int i = 0; i < mm->n; i++) num += mm->device[i] >= 0 && mm->bytes[i] > 0;
    if (num == 0) return MP_OK;
    if (num == 1) {
        low_zero = false;
        /* Asked for nothing: 90% of the one GPU, "a good compromise". */
        if (!mm->given)
            for (int i = 0; i < mm->n; i++)
                if (mm->device[i] >= 0) {
                    mm->bytes[i] *= 0.9;
                    break;
                }
    }
    double total = t->mod[0].size;
    double per_gpu = floordiv(total, low_zero ? num - 1 : num);
    /* The first module of the no-split class in tensor order (layers.0). */
    r->layer_term = 0;
    for (int i = 0; i < t->n; i++)
        if (t->mod[i].no_split && t->mod[i].sized) {
            r->layer_term = t->mod[i].size;
            break;
        }
    r->mean_term = trunc(t->mod[0].leaf_bytes / (t->mod[0].leaves > 1 ? t->mod[0].leaves : 1));
    r->buffer = trunc(1.25 * (r->layer_term > r->mean_term ? r->layer_term : r->mean_term));
    per_gpu += r->buffer;
    /* Every GPU with memory but the highest-numbered one is capped. */
    int last = -1;
    for (int i = 0; i < mm->n; i++)
        if (mm->device[i] >= 0 && mm->bytes[i] > 0) last = i;
    for (int i = 0; i < last; i++)
        if (mm->device[i] >= 0 && mm->bytes[i] > 0 && !(low_zero && mm->device[i] == 0) &&
            per_gpu < mm->bytes[i])
            mm->bytes[i] = per_gpu;
    if (low_zero) {
        /* GPU 0 gets what GPUs 1 .. num-1 cannot hold. */
        double rest = 0;
        for (int id = 1; id < num; id++) {
            int k = dm_memory_find(mm, id);
            if (k < 0)
                return mp_fail(err, MP_ERR_INPUT, "%s: balanced_low_0 needs GPUs numbered 0 to "
                               "%d (transformers fails with a KeyError on GPU %d)", what,
                               num - 1, id);
            rest += mm->bytes[k];
        }
        int k0 = dm_memory_find(mm, 0);
        if (k0 < 0)
            return mp_fail(err, MP_ERR_INPUT, "%s: balanced_low_0 needs a GPU 0", what);
        double min_zero = total - rest > 0 ? total - rest : 0;
        if (min_zero < mm->bytes[k0]) mm->bytes[k0] = min_zero;
    }
    return MP_OK;
}

/* ---- placement (§5) --------------------------------------------------------------- */

struct queue {
    int *v;
    int n, cap;
};

static void q_insert(struct queue *q, int at, const int *items, int k)
{
    MP_GROW(q->v, q->cap, q->n + k);
    memmove(q->v + at + k, q->v + at, (size_t)(q->n - at) * sizeof *q->v);
    memcpy(q->v + at, items, (size_t)k * sizeof *items);
    q->n += k;
}

static void q_remove(struct queue *q, int at)
{
    memmove(q->v + at, q->v + at + 1, (size_t)(q->n - at - 1) * sizeof *q->v);
    q->n--;
}

/* The module's children, in order, into `out` (room for t->n). */
static int children(const struct hf_tree *t, int m, int *out)
{
    int k = 0;
    for (int c = t->mod[m].first_child; c >= 0; c = t->mod[c].next_sibling) out[k++] = c;
    return k;
}

static bool splittable(const struct hf_tree *t, int m)
{
    return t->mod[m].first_child >= 0 && !t->mod[m].no_split;
}

/* get_max_layer_size (§3.3) over `list`: the largest size and every module
 * that has it, depth first, a leaf or no-split module being one layer. */
static double max_layer(const struct hf_tree *t, const int *list, int n, struct queue *names,
                        int *stack, int *scratch)
{
    double best = 0;
    names->n = 0;
    int top = 0;
    for (int i = n - 1; i >= 0; i--) stack[top++] = list[i];
    while (top) {
        int m = stack[--top];
        if (!splittable(t, m)) {
            double s = t->mod[m].size;
            if (s > best) {
                best = s;
                names->n = 0;
            }
            if (s == best) q_insert(names, names->n, &m, 1);
        } else {
            /* Push the children in reverse so the first is treated first;
             * every module is pushed at most once, so t->n is room enough. */
            int k = children(t, m, scratch);
            for (int j = k - 1; j >= 0; j--) stack[top++] = scratch[j];
        }
    }
    return best;
}

/* Python's `name + "." in k + "."`. */
static bool name_in(const char *name, const char *k)
{
    char a[HF_NAME + 2], b[HF_NAME + 2];
    snprintf(a, sizeof a, "%s.", name);
    snprintf(b, sizeof b, "%s.", k);
    return strstr(b, a) != NULL;
}

static int dev_index(const struct dm_result *r, int device)
{
    for (int i = 0; i < r->n_dev; i++)
        if (r->dev[i].device == device) return i;
    return -1;
}

/* A module is placed at most once: placed_* have room for every module. */
static void place(struct dm_result *r, int mod, int device)
{
    r->placed_mod[r->n_placed] = mod;
    r->placed_dev[r->n_placed++] = device;
}

static void infer(struct dm_result *r, const struct hf_tree *t)
{
    int gpus = 0;
    for (int i = 0; i < r->n_dev; i++) gpus += r->dev[i].device >= 0;
    /* Main devices keep room for the largest layer: the first GPU and the
     * cpu, or only the cpu when there is no GPU (§5.1). */
    int first_gpu = gpus ? r->dev[0].device : INT_MIN;
    struct queue q = { 0 }, names = { 0 };
    int *stack = mp_xmalloc((size_t)t->n * sizeof *stack);
    int *kids = mp_xmalloc((size_t)t->n * sizeof *kids);
    int *scratch = mp_xmalloc((size_t)t->n * sizeof *scratch);
    int k = children(t, 0, kids); /* the root has no direct tensors */
    q_insert(&q, 0, kids, k);
    double largest = max_layer(t, q.v, q.n, &names, stack, scratch);
    r->largest = largest;
    double *used = mp_xcalloc((size_t)r->n_dev, sizeof *used);
    int cur = 0;
    r->placed_mod = mp_xmalloc((size_t)t->n * sizeof *r->placed_mod);
    r->placed_dev = mp_xmalloc((size_t)t->n * sizeof *r->placed_dev);
    while (q.n) {
        int m = q.v[0];
        q_remove(&q, 0);
        const char *name = t->mod[m].name;
        /* a. The reserve is for the largest layer still to come. */
        for (int i = 0; i < names.n;)
            if (hf_under(t, names.v[i], m)) q_remove(&names, i);
            else i++;
        if (names.n == 0) largest = max_layer(t, q.v, q.n, &names, stack, scratch);
        double size = t->mod[m].size;
        /* b. Tied: the tie group has a member inside `m` and one outside. */
        int tied_mod = -1;
        double with_ties = size;
        bool has_tied = false;
        if (t->tied) {
            bool in0 = name_in(name, t->tie_name[0]), in1 = name_in(name, t->tie_name[1]);
            if (in0 != in1) {
                has_tied = true;
                int out = in0 ? 1 : 0;
                /* The first queue entry whose name is inside the tied
                 * parameter's name (Python's `n in tied_param`). */
                for (int i = 0; i < q.n && tied_mod < 0; i++)
                    if (strstr(t->tie_name[out], t->mod[q.v[i]].name)) tied_mod = i;
                if (tied_mod >= 0) with_ties += t->mod[q.v[tied_mod]].size - t->tie_size[out];
            }
        }
        struct dm_device *d = &r->dev[cur];
        bool is_disk = d->device == DM_DISK;
        bool is_main = d->device == first_gpu || d->device == DM_CPU;
        double limit = is_disk ? INFINITY : d->budget - (is_main ? largest : 0);
        /* d. It fits, with its tied modules. */
        if (is_disk || used[cur] + with_ties <= limit) {
            used[cur] += with_ties;
            place(r, m, d->device);
            if (tied_mod >= 0) {
                place(r, q.v[tied_mod], d->device);
                q_remove(&q, tied_mod);
            }
            d->reserve = is_main ? largest : 0;
            continue;
        }
        /* e. It fits without its tied module: split that module if it can be. */
        if (has_tied && used[cur] + size <= limit && tied_mod >= 0 &&
            splittable(t, q.v[tied_mod])) {
            int tm = q.v[tied_mod];
            q_remove(&q, tied_mod);
            k = children(t, tm, kids);
            q_insert(&q, tied_mod, kids, k);
            q_insert(&q, 0, &m, 1);
            largest = max_layer(t, q.v, q.n, &names, stack, scratch);
            continue;
        }
        /* f. Too big: split it into its children if it is not a layer. */
        if (used[cur] + size >= limit && splittable(t, m)) {
            k = children(t, m, kids);
            q_insert(&q, 0, kids, k);
            largest = max_layer(t, q.v, q.n, &names, stack, scratch);
            continue;
        }
        /* g. On to the next device for good. */
        d->reserve = is_main ? largest : 0;
        cur++;
        q_insert(&q, 0, &m, 1);
    }
    free(used);
    free(q.v);
    free(names.v);
    free(stack);
    free(kids);
    free(scratch);
}

/* ---- clean_device_map (§5.4) --------------------------------------------------- */

struct dmap {
    int *mod, *dev;
    int n, cap;
};

static bool has_prefix(const char *k, const char *prefix)
{
    return strncmp(k, prefix, strlen(prefix)) == 0;
}

static void clean(struct dmap *map, const struct hf_tree *t, int module)
{
    const char *mname = t->mod[module].name;
    char prefix[HF_NAME + 1];
    snprintf(prefix, sizeof prefix, "%s%s", mname, *mname ? "." : "");
    int count = 0, value = 0;
    bool same = true;
    for (int i = 0; i < map->n; i++)
        if (has_prefix(t->mod[map->mod[i]].name, prefix)) {
            if (count && map->dev[i] != value) same = false;
            value = map->dev[i];
            count++;
        }
    if (same && count > 1) {
        int w = 0;
        for (int i = 0; i < map->n; i++)
            if (!has_prefix(t->mod[map->mod[i]].name, prefix)) {
                map->mod[w] = map->mod[i];
                map->dev[w++] = map->dev[i];
            }
        map->n = w;
        map->mod[map->n] = module; /* re-inserted at the end of the dict */
        map->dev[map->n++] = value;
    }
    /* Recurse into the child prefixes, in the order they appear (Python
     * iterates a set: any order gives the same entries). */
    size_t mlen = strlen(mname);
    int *kids = mp_xmalloc((size_t)(map->n + 1) * sizeof *kids);
    int nk = 0;
    for (int i = 0; i < map->n; i++) {
        const char *k = t->mod[map->mod[i]].name;
        if (!has_prefix(k, prefix) || strlen(k) <= mlen) continue;
        /* The ancestor of the entry one level below `module`. */
        int c = map->mod[i];
        while (c >= 0 && t->mod[c].parent != module) c = t->mod[c].parent;
        if (c < 0) continue;
        bool seen = false;
        for (int j = 0; j < nk && !seen; j++) seen = kids[j] == c;
        if (!seen) kids[nk++] = c;
    }
    for (int j = 0; j < nk; j++) clean(map, t, kids[j]);
    free(kids);
}

/* ---- the whole of it -------------------------------------------------------------- */

int dm_place(struct dm_result *r, const struct hf_tree *t, int n_layers,
             const struct dm_params *p, struct mp_error *err)
{
    memset(r, 0, sizeof *r);
    r->policy = p->policy;
    r->given = p->memory;
    r->total = t->mod[0].size;
    r->main_gpu = DM_CPU;
    const char *what = p->memory_what ? p->memory_what : "max_memory";
    struct dm_memory mm = p->memory;
    if (p->policy != DM_SEQUENTIAL && dm_memory_find(&mm, DM_DISK) >= 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "%s: a disk entry with policy %s: transformers 4.x fails on it "
                       "(get_balanced_memory builds torch.device('disk')); leave disk out "
                       "(it is always the last device) or use policy sequential", what,
                       dm_policy_names[p->policy]);
    int rc;
    if (p->policy != DM_SEQUENTIAL &&
        (rc = balanced_memory(&mm, t, p->policy == DM_BALANCED_LOW_0, r, what, err)))
        return rc;
    for (int i = 0; i < mm.n; i++) {
        if (p->bnb) mm.bytes[i] *= 0.90; /* bitsandbytes' adjust_max_memory */
        /* Clipped to what the user asked for (a no-op in a fresh process,
         * where no CUDA cache is reserved). */
        int u = dm_memory_find(&p->memory, mm.device[i]);
        if (p->memory.given && u >= 0 && p->memory.bytes[u] < mm.bytes[i])
            mm.bytes[i] = p->memory.bytes[u];
    }
    for (int i = 0; i < mm.n; i++)
        if (mm.device[i] != DM_DISK)
            r->dev[r->n_dev++] = (struct dm_device){ .device = mm.device[i],
                                                     .budget = mm.bytes[i] };
    r->dev[r->n_dev++] = (struct dm_device){ .device = DM_DISK, .budget = INFINITY };
    infer(r, t);

    /* Per device: bytes placed, bytes a forward streams, and per model layer
     * its device (every module inside a placed one goes with it). */
    r->layer_dev = mp_xmalloc((size_t)(n_layers > 0 ? n_layers : 1) * sizeof *r->layer_dev);
    for (int l = 0; l < n_layers; l++) r->layer_dev[l] = DM_DISK;
    for (int i = 0; i < r->n_placed; i++) {
        int m = r->placed_mod[i], dv = r->placed_dev[i];
        struct dm_device *d = &r->dev[dev_index(r, dv)];
        d->weights += t->mod[m].size;
        d->stream_bytes += t->mod[m].stream_bytes;
        for (int j = m; j < t->n && hf_under(t, j, m); j++)
            if (t->mod[j].model_layer >= 0 && t->mod[j].model_layer < n_layers)
                r->layer_dev[t->mod[j].model_layer] = dv;
    }
    struct dmap map = { 0 };
    map.cap = r->n_placed + 2;
    map.mod = mp_xmalloc((size_t)map.cap * sizeof *map.mod);
    map.dev = mp_xmalloc((size_t)map.cap * sizeof *map.dev);
    memcpy(map.mod, r->placed_mod, (size_t)r->n_placed * sizeof *map.mod);
    memcpy(map.dev, r->placed_dev, (size_t)r->n_placed * sizeof *map.dev);
    map.n = r->n_placed;
    clean(&map, t, 0);
    r->map_mod = map.mod;
    r->map_dev = map.dev;
    r->n_map = map.n;
    /* dispatch_model's main device: the first GPU among the map's values. */
    for (int i = 0; i < r->n_map && r->main_gpu == DM_CPU; i++)
        if (r->map_dev[i] >= 0) r->main_gpu = r->map_dev[i];

    const struct dm_device *disk = &r->dev[r->n_dev - 1];
    if (disk->weights > p->disk_capacity) {
        char msg[900];
        int len = snprintf(msg, sizeof msg, "%.2f GB of weights land on disk, but the disk holds "
                           "%.2f GB (%s); the model (%.2f GB at these sizes) fits nowhere:",
                           disk->weights / 1e9, p->disk_capacity / 1e9,
                           p->disk_what ? p->disk_what : "the disk's capacity", r->total / 1e9);
        for (int i = 0; i < r->n_dev && len < (int)sizeof msg - 80; i++) {
            char dv[16];
            dm_device_repr(r->dev[i].device, dv, sizeof dv);
            len += snprintf(msg + len, sizeof msg - (size_t)len, " %s %.2f GB%s", dv,
                            r->dev[i].weights / 1e9, i + 1 < r->n_dev ? "," : "");
        }
        return mp_fail(err, MP_ERR_INFEASIBLE, "%s; %s gave %s", msg, what,
                       p->memory.given ? "these limits" : "no limits (Accelerate's defaults)");
    }
    return MP_OK;
}

void dm_release(struct dm_result *r)
{
    free(r->placed_mod);
    free(r->placed_dev);
    free(r->map_mod);
    free(r->map_dev);
    free(r->layer_dev);
    memset(r, 0, sizeof *r);
}

/* ---- printing ------------------------------------------------------------------- */

void dm_print_python(FILE *f, const struct hf_tree *t, const struct dm_result *r)
{
    fputc('{', f);
    for (int i = 0; i < r->n_map; i++) {
        char dv[16];
        fprintf(f, "%s'%s': %s", i ? ", " : "", t->mod[r->map_mod[i]].name,
                dm_device_repr(r->map_dev[i], dv, sizeof dv));
    }
    fputs("}\n", f);
}

void dm_model_order(const struct dm_result *r, int *order)
{
    for (int i = 0; i < r->n_map; i++) order[i] = i;
    /* Insertion sort by preorder index, which is model order. */
    for (int i = 1; i < r->n_map; i++)
        for (int j = i; j > 0 && r->map_mod[order[j - 1]] > r->map_mod[order[j]]; j--) {
            int tmp = order[j]; order[j] = order[j - 1]; order[j - 1] = tmp;
        }
}

/* The decoder number of a module named "...layers.N" / "...h.N", or -1. */
static int decoder_number(const struct hf_tree *t, int m)
{
    if (!t->mod[m].no_split) return -1;
    const char *dot = strrchr(t->mod[m].name, '.');
    return dot ? atoi(dot + 1) : -1;
}

void dm_device_modules(const struct hf_tree *t, const struct dm_result *r, int device,
                       char *buf, size_t size)
{
    int *mods = mp_xmalloc((size_t)(r->n_placed + 1) * sizeof *mods);
    int n = 0;
    for (int i = 0; i < r->n_placed; i++)
        if (r->placed_dev[i] == device) mods[n++] = r->placed_mod[i];
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && mods[j - 1] > mods[j]; j--) {
            int tmp = mods[j]; mods[j] = mods[j - 1]; mods[j - 1] = tmp;
        }
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && len + 1 < size; i++) {
        int a = decoder_number(t, mods[i]);
        int j = i;
        while (a >= 0 && j + 1 < n && decoder_number(t, mods[j + 1]) == a + (j + 1 - i)) j++;
        int w;
        if (j > i) {
            const char *dot = strrchr(t->mod[mods[i]].name, '.');
            w = snprintf(buf + len, size - len, "%s%.*s.%d-%d", len ? ", " : "",
                         (int)(dot - t->mod[mods[i]].name), t->mod[mods[i]].name, a,
                         decoder_number(t, mods[j]));
        } else {
            w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                         t->mod[mods[i]].name[0] ? t->mod[mods[i]].name : "(everything)");
        }
        if (w < 0 || (size_t)w >= size - len) {
            if (size > 4) snprintf(buf + size - 4, 4, "...");
            break;
        }
        len += (size_t)w;
        i = j;
    }
    if (!n) snprintf(buf, size, "-");
    free(mods);
}
