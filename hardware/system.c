/* system.c — system presets (hardware/systems/NAME.ini, read with libinih) and
 * the links and routes they make.
 *
 * Debian's libinih is built without line numbers in its handler, so the file
 * is fed through ini_parse_stream with our own reader, which counts lines;
 * the handler runs synchronously after the reader returns the line it
 * handles, so the count is the handler's line. The reader also checks section
 * headers itself, because inih never calls the handler for a section with no
 * keys, and an unknown section must never be silently ignored. */
#include "system.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/units.h"

/* Beyond these the arrays stop being a machine and start being a typo. */
#define MAX_CHIPS (1 << 24)
#define MAX_LINKS (1 << 27)
#define MAX_HOST_BYTES 1152921504606846976.0 /* 2^60, the scenario size limit */

enum key_id {
    K_NAME, K_CHIP, K_CPN, K_DESCRIPTION,
    K_UP_TOPO, K_UP_BW, K_UP_LAT, K_UP_DIMS, K_UP_CURVE,
    K_OUT_TOPO, K_OUT_BW, K_OUT_LAT, K_OUT_AUTO, K_OUT_CURVE,
    K_HOST_MEM, K_HOST_LINK, K_HOST_LINK_BW, K_HOST_LINK_LAT, K_HOST_DISK, K_HOST_DISK_BW,
    N_KEYS
};

static const char *const sections[] = { "system", "scaleup", "scaleout", "host" };
enum { N_SECTIONS = sizeof sections / sizeof sections[0] };

static const struct key {
    const char *section, *name;
} keys[N_KEYS] = {
    [K_NAME] = { "system", "name" },
    [K_CHIP] = { "system", "chip" },
    [K_CPN] = { "system", "chips_per_node" },
    [K_DESCRIPTION] = { "system", "description" },
    [K_UP_TOPO] = { "scaleup", "topology" },
    [K_UP_BW] = { "scaleup", "bandwidth" },
    [K_UP_LAT] = { "scaleup", "latency" },
    [K_UP_DIMS] = { "scaleup", "dims" },
    [K_UP_CURVE] = { "scaleup", "busbw_curve" },
    [K_OUT_TOPO] = { "scaleout", "topology" },
    [K_OUT_BW] = { "scaleout", "bandwidth" },
    [K_OUT_LAT] = { "scaleout", "latency" },
    [K_OUT_AUTO] = { "scaleout", "auto_algorithm" },
    [K_OUT_CURVE] = { "scaleout", "busbw_curve" },
    [K_HOST_MEM] = { "host", "memory" },
    [K_HOST_LINK] = { "host", "link" },
    [K_HOST_LINK_BW] = { "host", "link_bw" },
    [K_HOST_LINK_LAT] = { "host", "link_latency" },
    [K_HOST_DISK] = { "host", "disk" },
    [K_HOST_DISK_BW] = { "host", "disk_bw" },
};

/* The host link's default bandwidth per chip per direction: host-to-device
 * copies as nvbandwidth measures them (calibration.md 3c), since offloaded
 * weights travel that way. PCIe 3.0 has no measurement there: its raw
 * 15.75 GB/s (8 GT/s x 16 lanes x 128/130) is scaled by the share the
 * measured PCIe 4.0 copy reaches of its raw 31.5 GB/s (26.28 / 31.5 = 0.834). */
const struct host_link_kind host_link_kinds[] = {
    { "pcie3x16", 13.1e9, "derived: 15.75 GB/s raw x 0.834, the share PCIe 4.0 reaches" },
    { "pcie4x16", 26.28e9, "nvbandwidth host-to-device, A100 (PCIe 4.0 x16), calibration.md 3c" },
    { "pcie5x16", 51e9, "nvbandwidth host-to-device, H100 (PCIe 5.0 x16), calibration.md 3c" },
    { "c2c", 201e9, "nvbandwidth host-to-device, GB200 (NVLink-C2C), calibration.md 3c" },
    { NULL, 0, NULL },
};

/* A copy between host memory and a chip when [host] link_latency is not
 * given. Assumed (no measurement in calibration.md): a kernel launch is
 * >= 2.6 us (calibration.md 4) and a synchronous copy from pageable memory,
 * as Accelerate's hooks make, adds a staging copy and a synchronisation. */
#define HOST_LINK_LATENCY_PS (10LL * 1000 * 1000) /* 10 us */

static const struct topo_name {
    const char *name;
    enum topology topo;
} up_topos[] = { { "switch", TOPO_SWITCH }, { "ring", TOPO_RING },
                 { "full_mesh", TOPO_FULL_MESH }, { "chain", TOPO_CHAIN },
                 { "torus", TOPO_TORUS }, { "none", TOPO_NONE } },
  out_topos[] = { { "fat_tree", TOPO_FAT_TREE }, { "rail", TOPO_RAIL },
                  { "chain", TOPO_CHAIN }, { "none", TOPO_NONE } };

static const char *topo_label(enum topology t)
{
    for (size_t i = 0; i < sizeof up_topos / sizeof up_topos[0]; i++)
        if (up_topos[i].topo == t) return up_topos[i].name;
    for (size_t i = 0; i < sizeof out_topos / sizeof out_topos[0]; i++)
        if (out_topos[i].topo == t) return out_topos[i].name;
    return "?";
}

struct ini_ctx {
    const char *path;
    struct mp_error *err;
    const struct chip_catalog *cat;
    FILE *f;
    char *buf;
    size_t cap;
    long line;
    bool failed;
    long fail_line;
    long seen[N_KEYS];     /* line of each key, 0 = not given */
    char name[64], description[256];
    const struct chip *chip;
    int cpn;
    int dims[SYSTEM_MAX_DIMS], n_dims;
    struct fabric up, out;
    bool ring_across;      /* [scaleout] auto_algorithm = ring */
    long host_line;        /* line of the [host] header, 0 = none */
    struct system_host host;
    char curve[64];        /* [scaleup] busbw_curve, "" = none */
    char out_curve[64];    /* [scaleout] busbw_curve, "" = none */
};

/* Edit distance, for "did you mean". Names here are short. */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* " (did you mean 'x'?)" for the closest of `names`, or "" if none is close.
 * A name the text begins ("h100" -> "h100-sxm") beats a near spelling
 * ("h800"): people drop suffixes far more often than they mistype digits. */
static void suggest(const char *got, const char *const *names, int n, char *out, size_t size)
{
    int best = 3, bi = -1;
    for (int i = 0; i < n && *got; i++)
        if (strncmp(names[i], got, strlen(got)) == 0) {
            best = 0, bi = i;
            break;
        }
    for (int i = 0; i < n && bi < 0; i++) {
        int d = distance(got, names[i]);
        if (d < best) best = d, bi = i;
    }
    if (bi >= 0)
        snprintf(out, size, " (did you mean '%s'?)", names[bi]);
    else
        out[0] = '\0';
}

static int fail_line(struct ini_ctx *x, long line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Keep the first error; its line decides against inih's own syntax errors. */
static int fail_line(struct ini_ctx *x, long line, const char *fmt, ...)
{
    if (x->failed) return 0;
    x->failed = true;
    x->fail_line = line;
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (line > 0) mp_fail(x->err, MP_ERR_INPUT, "%s:%ld: %s", x->path, line, what);
    else mp_fail(x->err, MP_ERR_INPUT, "%s: %s", x->path, what); /* an empty file */
    return 0;
}

/* ini_reader: one whole line per call, counted; section headers checked. */
static char *read_line(char *str, int num, void *stream)
{
    struct ini_ctx *x = stream;
    if (x->failed) return NULL;
    ssize_t len = getline(&x->buf, &x->cap, x->f);
    if (len < 0) return NULL;
    x->line++;
    const char *p = x->buf;
    while (*p == ' ' || *p == '\t') p++;
    bool comment = (*p == ';' || *p == '#');
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (end) {
            char sec[64];
            size_t n = (size_t)(end - p - 1);
            if (n >= sizeof sec) n = sizeof sec - 1;
            memcpy(sec, p + 1, n);
            sec[n] = '\0';
            int i = 0;
            while (i < N_SECTIONS && strcmp(sec, sections[i]) != 0) i++;
            if (i == N_SECTIONS) {
                char hint[96];
                suggest(sec, sections, N_SECTIONS, hint, sizeof hint);
                fail_line(x, x->line,
                          "section [%s]: expected [system], [scaleup], [scaleout] or [host]%s",
                          sec, hint);
                return NULL;
            }
            /* inih never reports a section with no keys; [host] alone must
             * still be seen (and then refused for its missing memory). */
            if (strcmp(sec, "host") == 0 && !x->host_line) x->host_line = x->line;
        }
    }
    /* inih reads at most num - 1 bytes; a longer key line would be cut in
     * two and misread, so say so. A long comment loses only its tail. */
    if (len > num - 1 && !comment) {
        fail_line(x, x->line, "expected a line of at most %d characters, got %ld", num - 2,
                  (long)len);
        return NULL;
    }
    size_t n = (size_t)len < (size_t)num - 1 ? (size_t)len : (size_t)num - 1;
    memcpy(str, x->buf, n);
    str[n] = '\0';
    return str;
}

static int parse_topology(struct ini_ctx *x, const char *key, const struct topo_name *t, int n,
                          const char *value, enum topology *out)
{
    char list[128] = "";
    const char *names[8];
    for (int i = 0; i < n; i++) {
        if (strcmp(value, t[i].name) == 0) {
            *out = t[i].topo;
            return 1;
        }
        names[i] = t[i].name;
        strcat(list, i ? (i == n - 1 ? " or " : ", ") : "");
        strcat(list, t[i].name);
    }
    char hint[96];
    suggest(value, names, n, hint, sizeof hint);
    return fail_line(x, x->line, "%s: expected %s, got '%s'%s", key, list, value, hint);
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    struct ini_ctx *x = user;
    if (x->failed) return 0;
    char full[160];
    snprintf(full, sizeof full, "[%s] %s", section, name);
    if (!*section)
        return fail_line(x, x->line, "key '%s': expected it inside a [section]", name);

    int k = 0;
    while (k < N_KEYS && !(strcmp(keys[k].section, section) == 0 && strcmp(keys[k].name, name) == 0))
        k++;
    if (k == N_KEYS) {
        const char *names[N_KEYS];
        char list[256] = "";
        int n = 0;
        for (int i = 0; i < N_KEYS; i++)
            if (strcmp(keys[i].section, section) == 0) {
                strcat(list, n ? ", " : "");
                strcat(list, keys[i].name);
                names[n++] = keys[i].name;
            }
        char hint[96];
        suggest(name, names, n, hint, sizeof hint);
        return fail_line(x, x->line, "[%s] key '%s': expected one of %s%s", section, name, list,
                         hint);
    }
    if (x->seen[k])
        return fail_line(x, x->line,
                         "%s: expected once, got it again (first at line %ld; an indented "
                         "line continues the key above it)", full, x->seen[k]);
    x->seen[k] = x->line;

    bool is_up = (k == K_UP_TOPO || k == K_UP_BW || k == K_UP_LAT);
    struct fabric *fab = is_up ? &x->up : &x->out;
    long long n;
    switch ((enum key_id)k) {
    case K_NAME:
    case K_DESCRIPTION: {
        char *dst = k == K_NAME ? x->name : x->description;
        size_t size = k == K_NAME ? sizeof x->name : sizeof x->description;
        /* Names land in JSON and CSV outputs, which must stay UTF-8. */
        if (!*value || strlen(value) >= size ||
            mp_utf8_valid_prefix(value, strlen(value)) < strlen(value))
            return fail_line(x, x->line, "%s: expected text of 1 to %zu characters, got '%s'",
                             full, size - 1, value);
        memcpy(dst, value, strlen(value) + 1);
        return 1;
    }
    case K_CHIP:
        x->chip = chip_catalog_find(x->cat, value);
        if (!x->chip) {
            char list[700] = "";
            const char *names[64];
            int m = x->cat->n < 64 ? x->cat->n : 64;
            for (int i = 0; i < x->cat->n; i++) {
                if (strlen(list) + strlen(x->cat->chips[i].name) + 3 >= sizeof list) break;
                strcat(list, i ? ", " : "");
                strcat(list, x->cat->chips[i].name);
            }
            for (int i = 0; i < m; i++) names[i] = x->cat->chips[i].name;
            char hint[96];
            suggest(value, names, m, hint, sizeof hint);
            return fail_line(x, x->line,
                             "%s: expected a chip of the catalogue (%s), got '%s'%s", full, list,
                             value, hint);
        }
        return 1;
    case K_CPN:
        if (units_parse_int(value, LLONG_MIN, LLONG_MAX, &n) != 0 || n < 1 || n > MAX_CHIPS)
            return fail_line(x, x->line,
                             "%s: expected a whole number of chips from 1 to %d, got '%s'", full,
                             MAX_CHIPS, value);
        x->cpn = (int)n;
        return 1;
    case K_UP_TOPO:
        return parse_topology(x, full, up_topos, sizeof up_topos / sizeof up_topos[0], value,
                              &fab->topo);
    case K_OUT_TOPO:
        return parse_topology(x, full, out_topos, sizeof out_topos / sizeof out_topos[0], value,
                              &fab->topo);
    case K_UP_BW:
    case K_OUT_BW:
        if (units_parse_bandwidth(value, &fab->bw) != 0 || !(fab->bw > 0))
            return fail_line(x, x->line, "%s: expected %s, got '%s'", full,
                             units_expect_bandwidth, value);
        return 1;
    case K_UP_DIMS: {
        /* "8x8" or "4x4x4": chips along x, y (and z). */
        const char *p = value;
        x->n_dims = 0;
        while (*p) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 1 || v > 4096 || x->n_dims == SYSTEM_MAX_DIMS) {
                x->n_dims = 0;
                break;
            }
            x->dims[x->n_dims++] = (int)v;
            p = end;
            if (*p == 'x') p++;
            else if (*p) { x->n_dims = 0; break; }
        }
        if (x->n_dims < 2)
            return fail_line(x, x->line, "%s: expected 2 or 3 sizes like 8x8 or 4x4x4, got '%s'",
                             full, value);
        return 1;
    }
    case K_UP_LAT:
    case K_OUT_LAT:
        if (units_parse_duration(value, &fab->latency) != 0)
            return fail_line(x, x->line, "%s: expected %s, got '%s'", full,
                             units_expect_duration, value);
        return 1;
    case K_OUT_AUTO:
        if (strcmp(value, "fastest") == 0 || strcmp(value, "ring") == 0) {
            x->ring_across = strcmp(value, "ring") == 0;
            return 1;
        }
        return fail_line(x, x->line, "%s: expected fastest or ring, got '%s'", full, value);
    case K_HOST_MEM:
    case K_HOST_DISK: {
        double *dst = k == K_HOST_MEM ? &x->host.mem_bytes : &x->host.disk_bytes;
        if (units_parse_size(value, dst) != 0 || !(*dst > 0) || *dst > MAX_HOST_BYTES)
            return fail_line(x, x->line, "%s: expected a size above zero such as 64GB or "
                             "2TiB (at most 2^60 bytes), got '%s'", full, value);
        return 1;
    }
    case K_HOST_LINK: {
        const char *names[8];
        int n = 0;
        for (; host_link_kinds[n].name; n++) {
            names[n] = host_link_kinds[n].name;
            if (strcmp(value, names[n]) == 0) {
                /* An explicit link_bw wins, wherever it stands. */
                if (!x->seen[K_HOST_LINK_BW]) x->host.link_bw = host_link_kinds[n].bw;
                return 1;
            }
        }
        char hint[96];
        suggest(value, names, n, hint, sizeof hint);
        return fail_line(x, x->line, "%s: expected pcie3x16, pcie4x16, pcie5x16 or c2c, got "
                         "'%s'%s", full, value, hint);
    }
    case K_HOST_LINK_BW:
    case K_HOST_DISK_BW: {
        double *dst = k == K_HOST_LINK_BW ? &x->host.link_bw : &x->host.disk_bw;
        if (units_parse_bandwidth(value, dst) != 0 || !(*dst > 0))
            return fail_line(x, x->line, "%s: expected %s, got '%s'", full,
                             units_expect_bandwidth, value);
        return 1;
    }
    case K_UP_CURVE:
    case K_OUT_CURVE: {
        /* Looked up in hardware/collectives.csv once the file is read. */
        char *dst = k == K_UP_CURVE ? x->curve : x->out_curve;
        if (!*value || strlen(value) >= sizeof x->curve)
            return fail_line(x, x->line, "%s: expected a curve name of "
                             "hardware/collectives.csv (1 to %zu characters), got '%s'", full,
                             sizeof x->curve - 1, value);
        memcpy(dst, value, strlen(value) + 1);
        return 1;
    }
    case K_HOST_LINK_LAT:
        if (units_parse_duration(value, &x->host.link_latency) != 0)
            return fail_line(x, x->line, "%s: expected %s, got '%s'", full,
                             units_expect_duration, value);
        return 1;
    case N_KEYS:
        break;
    }
    assert(0);
    return 0;
}

/* A fabric's keys agree with its topology: a real fabric needs both figures,
 * `none` takes neither. */
static int check_fabric(struct ini_ctx *x, const char *sec, int k_topo, int k_bw, int k_lat,
                        const struct fabric *f)
{
    if (f->topo == TOPO_NONE) {
        int k = x->seen[k_bw] ? k_bw : k_lat;
        if (x->seen[k])
            return fail_line(x, x->seen[k], "[%s] %s: expected no figure for topology none",
                             sec, keys[k].name);
        return 1;
    }
    long at = x->seen[k_topo];
    if (!x->seen[k_bw])
        return fail_line(x, at, "[%s] bandwidth: missing; expected %s", sec,
                         units_expect_bandwidth);
    if (!x->seen[k_lat])
        return fail_line(x, at, "[%s] latency: missing; expected %s", sec,
                         units_expect_duration);
    return 1;
}

/* [host], when present: memory and a link (a kind, or its bandwidth) are
 * required; the disk comes with its bandwidth or not at all. */
static int check_host(struct ini_ctx *x)
{
    long at = x->host_line;
    if (!at) return 1;
    if (!x->seen[K_HOST_MEM])
        return fail_line(x, at, "[host] memory: missing; expected the host memory of a node "
                         "such as 64GB or 2TB");
    if (!x->seen[K_HOST_LINK] && !x->seen[K_HOST_LINK_BW])
        return fail_line(x, at, "[host] link: missing; expected pcie3x16, pcie4x16, pcie5x16 "
                         "or c2c (or link_bw = a bandwidth such as 26GB/s)");
    if (x->seen[K_HOST_DISK] != 0 && !x->seen[K_HOST_DISK_BW])
        return fail_line(x, x->seen[K_HOST_DISK], "[host] disk_bw: missing; expected the "
                         "disk's read bandwidth such as 7GB/s beside disk");
    if (x->seen[K_HOST_DISK_BW] && !x->seen[K_HOST_DISK])
        return fail_line(x, x->seen[K_HOST_DISK_BW], "[host] disk: missing; expected the "
                         "disk's size such as 2TB beside disk_bw");
    x->host.present = true;
    if (!x->seen[K_HOST_LINK_LAT]) x->host.link_latency = HOST_LINK_LATENCY_PS;
    return 1;
}

/* The file's own checks, once every key is read. */
static int check_keys(struct ini_ctx *x)
{
    if (!x->seen[K_CHIP])
        return fail_line(x, x->line, "[system] chip: missing; expected a chip of the catalogue");
    if (!x->seen[K_CPN])
        return fail_line(x, x->line,
                         "[system] chips_per_node: missing; expected a whole number >= 1");
    if (x->cpn > 1 && x->up.topo == TOPO_NONE)
        return fail_line(x, x->seen[K_UP_TOPO] ? x->seen[K_UP_TOPO] : x->line,
                         "[scaleup] topology: expected switch, ring, full_mesh or chain, since "
                         "chips_per_node = %d; got %s", x->cpn,
                         x->seen[K_UP_TOPO] ? "'none'" : "no topology");
    if (x->up.topo == TOPO_FULL_MESH && (long long)x->cpn * (x->cpn - 1) > MAX_LINKS)
        return fail_line(x, x->seen[K_CPN],
                         "[system] chips_per_node: expected at most a few thousand chips on a "
                         "full mesh, got %d", x->cpn);
    if (x->up.topo == TOPO_TORUS) {
        if (!x->seen[K_UP_DIMS])
            return fail_line(x, x->seen[K_UP_TOPO],
                             "[scaleup] dims: missing; expected 2 or 3 sizes like 4x4x4 for a torus");
        long long prod = 1;
        for (int i = 0; i < x->n_dims; i++) prod *= x->dims[i];
        if (prod != x->cpn)
            return fail_line(x, x->seen[K_UP_DIMS],
                             "[scaleup] dims: expected sizes whose product is chips_per_node = %d, "
                             "got %lld", x->cpn, prod);
    } else if (x->seen[K_UP_DIMS]) {
        return fail_line(x, x->seen[K_UP_DIMS], "[scaleup] dims: expected only with topology torus");
    }
    if (!check_fabric(x, "scaleup", K_UP_TOPO, K_UP_BW, K_UP_LAT, &x->up)) return 0;
    if (!check_fabric(x, "scaleout", K_OUT_TOPO, K_OUT_BW, K_OUT_LAT, &x->out)) return 0;
    if (x->seen[K_OUT_CURVE] && ((x->out.topo != TOPO_FAT_TREE && x->out.topo != TOPO_RAIL) ||
                                 x->up.topo != TOPO_SWITCH))
        return fail_line(x, x->seen[K_OUT_CURVE], "[scaleout] busbw_curve: expected only with "
                         "topology fat_tree or rail and a [scaleup] switch (the ring on every "
                         "NIC rail it prices), got topology %s and [scaleup] %s",
                         topo_label(x->out.topo), topo_label(x->up.topo));
    if (x->seen[K_OUT_AUTO] && x->out.topo == TOPO_NONE)
        return fail_line(x, x->seen[K_OUT_AUTO], "[scaleout] auto_algorithm: expected only "
                         "with a scale-out fabric, got topology none");
    if (x->seen[K_UP_CURVE] && x->up.topo != TOPO_SWITCH && x->up.topo != TOPO_FULL_MESH)
        return fail_line(x, x->seen[K_UP_CURVE], "[scaleup] busbw_curve: expected only with "
                         "topology switch or full_mesh (the fabrics the curves were measured "
                         "on), got topology %s", topo_label(x->up.topo));
    return check_host(x);
}

/* A `busbw_curve` key's curve from hardware/collectives.csv. The table's
 * own errors name its file and line; a name it lacks is this file's error,
 * at the key's line (coll_curve.h). */
static int load_curve(struct ini_ctx *x, enum key_id k, const char *name, struct coll_curve *dst)
{
    struct mp_error e2 = { 0 };
    if (!coll_curve_load_default(dst, name, &e2)) return 1;
    if (strncmp(e2.msg, "no curve ", 9)) {
        if (x->err) *x->err = e2;
        return 0;
    }
    return fail_line(x, x->seen[k], "[%s] %s: %s", keys[k].section, keys[k].name, e2.msg);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a, b, c" of the presets in hardware/systems/, for unknown-name messages. */
static void list_presets(char *out, size_t size)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/hardware/systems", mp_data_dir());
    out[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[256] = { 0 };
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".ini") == 0) {
            names[n] = mp_xstrdup(e->d_name);
            names[n++][len - 4] = '\0';
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    for (int i = 0; i < n; i++) {
        if (strlen(out) + strlen(names[i]) + 3 < size) {
            strcat(out, i ? ", " : "");
            strcat(out, names[i]);
        }
        free(names[i]);
    }
}

static int add_link(struct system *s, double bw, mp_time latency)
{
    s->links[s->n_links] = (struct link){ .bw = bw, .latency = latency };
    return s->n_links++;
}

static int *new_table(int n)
{
    int *t = mp_xmalloc((size_t)n * sizeof *t);
    for (int i = 0; i < n; i++) t[i] = -1;
    return t;
}

/* Lay out every link. A switched route carries one fabric latency, so it
 * sits on the up link and the down link has none. */
long long system_link_count(const struct system *s)
{
    int n = s->n_chips, cpn = s->chips_per_node;
    long long count = 0;
    switch (s->scaleup.topo) {
    case TOPO_SWITCH: case TOPO_RING: case TOPO_CHAIN: count += 2LL * n; break;
    case TOPO_FULL_MESH: count += (long long)n * (cpn - 1); break;
    case TOPO_TORUS: count += 2LL * s->n_dims * n; break;
    default: break;
    }
    if (s->scaleout.topo != TOPO_NONE) count += 2LL * n;
    return count;
}

static void build_links(struct system *s)
{
    int n = s->n_chips, cpn = s->chips_per_node;
    long long count = system_link_count(s);
    assert(count <= MAX_LINKS);
    s->links = mp_xmalloc((size_t)(count ? count : 1) * sizeof *s->links);
    s->n_links = 0;

    const struct fabric *u = &s->scaleup, *o = &s->scaleout;
    if (u->topo == TOPO_SWITCH) {
        s->up = new_table(n);
        s->down = new_table(n);
        for (int c = 0; c < n; c++) {
            s->up[c] = add_link(s, u->bw, u->latency);
            s->down[c] = add_link(s, u->bw, 0);
        }
    } else if (u->topo == TOPO_RING || u->topo == TOPO_CHAIN) {
        bool ring = u->topo == TOPO_RING;
        s->next = new_table(n);
        s->prev = new_table(n);
        for (int c = 0; c < n; c++) {
            int l = c % cpn;
            if (ring || l + 1 < cpn) s->next[c] = add_link(s, u->bw, u->latency);
            if (ring || l > 0) s->prev[c] = add_link(s, u->bw, u->latency);
        }
    } else if (u->topo == TOPO_FULL_MESH) {
        /* Chip c's links to the other cpn - 1 chips of its node, in order of
         * their local index with its own skipped. */
        s->mesh = new_table(n);
        for (int c = 0; c < n; c++) {
            s->mesh[c] = s->n_links;
            for (int j = 0; j < cpn - 1; j++) add_link(s, u->bw, u->latency);
        }
    } else if (u->topo == TOPO_TORUS) {
        /* Two links per dimension (plus and minus), wrap-around included; a
         * dimension of size 1 has none. */
        s->torus = new_table(n * 2 * s->n_dims);
        for (int c = 0; c < n; c++)
            for (int d = 0; d < s->n_dims; d++)
                if (s->dims[d] > 1)
                    for (int dir = 0; dir < 2; dir++)
                        s->torus[(c * s->n_dims + d) * 2 + dir] = add_link(s, u->bw, u->latency);
    }
    if (o->topo == TOPO_FAT_TREE || o->topo == TOPO_RAIL) {
        s->nic_up = new_table(n);
        s->nic_down = new_table(n);
        for (int c = 0; c < n; c++) {
            s->nic_up[c] = add_link(s, o->bw, o->latency);
            s->nic_down[c] = add_link(s, o->bw, 0);
        }
    } else if (o->topo == TOPO_CHAIN) {
        /* One chain per local index (a rail): chip l of node k is wired to
         * chip l of nodes k - 1 and k + 1. */
        s->out_next = new_table(n);
        s->out_prev = new_table(n);
        for (int c = 0; c < n; c++) {
            int node = c / cpn;
            if (node + 1 < s->nodes) s->out_next[c] = add_link(s, o->bw, o->latency);
            if (node > 0) s->out_prev[c] = add_link(s, o->bw, o->latency);
        }
    }
    assert(s->n_links <= count);
}

int system_plan(struct system *sys, const char *path, int nodes, int chips_needed,
                const struct chip_catalog *cat, struct mp_error *err)
{
    assert(chips_needed >= 0);
    memset(sys, 0, sizeof *sys);

    /* A bare name is a preset; anything that looks like a path is a path. */
    char file[4096];
    size_t plen = strlen(path);
    bool preset = !strchr(path, '/') && !(plen > 4 && strcmp(path + plen - 4, ".ini") == 0);
    if (preset)
        snprintf(file, sizeof file, "%s/hardware/systems/%s.ini", mp_data_dir(), path);
    else
        snprintf(file, sizeof file, "%s", path);

    struct ini_ctx x;
    memset(&x, 0, sizeof x);
    x.path = file;
    x.err = err;
    x.cat = cat;
    x.up.topo = x.out.topo = TOPO_NONE;
    x.f = fopen(file, "r");
    if (!x.f) {
        if (preset) {
            char known[1024];
            list_presets(known, sizeof known);
            return mp_fail(err, MP_ERR_INPUT, "%s: no such system preset '%s' (known: %s)", file,
                           path, known);
        }
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot open the system file: %s", file,
                       strerror(errno));
    }
    int rc = ini_parse_stream(read_line, &x, on_key, &x);
    bool read_error = ferror(x.f);
    int read_errno = errno;
    fclose(x.f);
    free(x.buf);
    /* inih keeps going after a line it cannot read; report whichever error
     * came first in the file. */
    if (rc > 0 && (!x.failed || rc < x.fail_line))
        return mp_fail(err, MP_ERR_INPUT, "%s:%d: expected [section] or key = value", file, rc);
    if (rc < 0 && !x.failed)
        return mp_fail(err, MP_ERR_INTERNAL, "%s: inih could not allocate", file);
    if (!x.failed && read_error)
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot read: %s", file, strerror(read_errno));
    if (x.failed || !check_keys(&x)) return MP_ERR_INPUT;
    if (x.curve[0] && !load_curve(&x, K_UP_CURVE, x.curve, &sys->curve)) return MP_ERR_INPUT;
    if (x.out_curve[0]) {
        if (!load_curve(&x, K_OUT_CURVE, x.out_curve, &sys->out_curve)) return MP_ERR_INPUT;
        /* Measured on whole nodes of this system, more than one: the
         * per-step time is read at the piece its own ring moved. */
        int g = sys->out_curve.gpus;
        if (g <= x.cpn || g % x.cpn != 0) {
            fail_line(&x, x.seen[K_OUT_CURVE], "[scaleout] busbw_curve: curve '%s' was measured "
                      "on %d GPUs; expected a multiple of chips_per_node = %d above it (whole "
                      "nodes, more than one)", x.out_curve, g, x.cpn);
            return MP_ERR_INPUT;
        }
    }

    if (x.seen[K_NAME]) {
        snprintf(sys->name, sizeof sys->name, "%s", x.name);
    } else {
        const char *base = strrchr(file, '/');
        base = base ? base + 1 : file;
        size_t bl = strlen(base);
        if (bl > 4 && strcmp(base + bl - 4, ".ini") == 0) bl -= 4;
        if (bl >= sizeof sys->name) bl = sizeof sys->name - 1;
        memcpy(sys->name, base, bl);
        sys->name[bl] = '\0';
    }
    snprintf(sys->description, sizeof sys->description, "%s", x.description);
    sys->chip = *x.chip;
    sys->chips_per_node = x.cpn;
    sys->scaleup = x.up;
    sys->scaleout = x.out;
    sys->ring_across = x.ring_across;
    sys->host = x.host;
    for (int i = 0; i < SYSTEM_MAX_DIMS; i++) sys->dims[i] = i < x.n_dims ? x.dims[i] : 1;
    sys->n_dims = x.up.topo == TOPO_TORUS ? x.n_dims : 0;

    if (nodes < 0)
        return mp_fail(err, MP_ERR_INPUT, "%s: nodes: expected 0 (as many as needed) or more, "
                       "got %d", file, nodes);
    long long need = ((long long)chips_needed + x.cpn - 1) / x.cpn;
    if (need < 1) need = 1;
    if (nodes == 0) {
        if (need > MAX_CHIPS / x.cpn)
            return mp_fail(err, MP_ERR_INPUT, "%s: %d chips need %lld nodes; expected at most "
                           "%d chips in a system", file, chips_needed, need, MAX_CHIPS);
        nodes = (int)need;
    } else if (nodes < need) {
        return mp_fail(err, MP_ERR_INPUT,
                       "%s: %d nodes of %d chips hold %lld chips, but %d are needed: expected "
                       "nodes >= %lld (or nodes = 0 to pick)", file, nodes, x.cpn,
                       (long long)nodes * x.cpn, chips_needed, need);
    }
    if ((long long)nodes * x.cpn > MAX_CHIPS)
        return mp_fail(err, MP_ERR_INPUT, "%s: %d nodes of %d chips: expected at most %d chips "
                       "in a system", file, nodes, x.cpn, MAX_CHIPS);
    if (nodes > 1 && x.out.topo == TOPO_NONE)
        return mp_fail(err, MP_ERR_INPUT,
                       "%s: %d nodes needed for %d chips, but [scaleout] topology is none, so "
                       "the system is one node of %d chips", file, nodes, chips_needed, x.cpn);
    sys->nodes = nodes;
    sys->n_chips = nodes * x.cpn;
    long long links = 2LL * sys->n_chips +
                      (x.up.topo == TOPO_FULL_MESH ? (long long)sys->n_chips * (x.cpn - 1)
                                                   : 2LL * SYSTEM_MAX_DIMS * sys->n_chips);
    if (links > MAX_LINKS)
        return mp_fail(err, MP_ERR_INPUT, "%s: %d chips would need %lld links; expected at most "
                       "%d", file, sys->n_chips, links, MAX_LINKS);
    return MP_OK;
}

void system_build(struct system *sys)
{
    assert(sys->n_chips > 0 && !sys->links);
    build_links(sys);
}

int system_load(struct system *sys, const char *path, int nodes, int chips_needed,
                const struct chip_catalog *cat, struct mp_error *err)
{
    int rc = system_plan(sys, path, nodes, chips_needed, cat, err);
    if (!rc) system_build(sys);
    return rc;
}

void system_release(struct system *sys)
{
    free(sys->links);
    free(sys->up);
    free(sys->down);
    free(sys->next);
    free(sys->prev);
    free(sys->mesh);
    free(sys->nic_up);
    free(sys->nic_down);
    free(sys->out_next);
    free(sys->out_prev);
    free(sys->torus);
    memset(sys, 0, sizeof *sys);
}

int system_node_of(const struct system *sys, int chip)
{
    assert(chip >= 0 && chip < sys->n_chips);
    return chip / sys->chips_per_node;
}

/* Append a link, counting past `max` so the caller learns the full length. */
static void emit(int *out, int max, int *n, int link)
{
    assert(link >= 0);
    if (*n < max) out[*n] = link;
    (*n)++;
}

/* Torus coordinate of a chip's local index along `dim` (x fastest). */
static int system_torus_coord(const struct system *sys, int chip, int dim)
{
    assert(dim >= 0 && dim < SYSTEM_MAX_DIMS);
    int l = chip % sys->chips_per_node;
    for (int d = 0; d < dim; d++) l /= sys->dims[d];
    return l % sys->dims[dim];
}

/* Route between two chips of one node over the scale-up fabric. */
static void route_in_node(const struct system *s, int a, int b, int *out, int max, int *n)
{
    int cpn = s->chips_per_node, la = a % cpn, lb = b % cpn;
    if (a == b) return;
    switch (s->scaleup.topo) {
    case TOPO_SWITCH:
        emit(out, max, n, s->up[a]);
        emit(out, max, n, s->down[b]);
        return;
    case TOPO_FULL_MESH:
        emit(out, max, n, s->mesh[a] + (lb < la ? lb : lb - 1));
        return;
    case TOPO_RING:
    case TOPO_CHAIN: {
        int fwd = (lb - la + cpn) % cpn;
        /* Ring: the shorter way, forward on a tie. Chain: the only way. */
        bool forward = s->scaleup.topo == TOPO_RING ? fwd <= cpn - fwd : lb > la;
        int hops = forward ? fwd : (la - lb + cpn) % cpn;
        for (int c = a, h = 0; h < hops; h++) {
            emit(out, max, n, forward ? s->next[c] : s->prev[c]);
            int l = (c % cpn + (forward ? 1 : cpn - 1)) % cpn;
            c = c - c % cpn + l;
        }
        return;
    }
    case TOPO_TORUS: {
        /* Dimension order: fix x, then y, then z; each the shorter way
         * round its ring, forward on a tie (as TPU ICI routing does). */
        int c = a, stride = 1;
        for (int d = 0; d < s->n_dims; d++) {
            int k = s->dims[d];
            int ca = system_torus_coord(s, c, d), cb = system_torus_coord(s, b, d);
            int fwd = (cb - ca + k) % k;
            bool forward = fwd <= k - fwd;
            int hops = forward ? fwd : k - fwd;
            for (int h = 0; h < hops; h++) {
                emit(out, max, n, s->torus[(c * s->n_dims + d) * 2 + (forward ? 0 : 1)]);
                int cur = system_torus_coord(s, c, d);
                int nxt = (cur + (forward ? 1 : k - 1)) % k;
                c += (nxt - cur) * stride;
            }
            stride *= k;
        }
        assert(c == b);
        return;
    }
    default:
        assert(0 && "chips of one node with no scale-up fabric");
    }
}

int system_route(const struct system *sys, int src, int dst, int *out, int max)
{
    assert(src >= 0 && src < sys->n_chips && dst >= 0 && dst < sys->n_chips && max >= 0);
    int n = 0, cpn = sys->chips_per_node;
    int ns = src / cpn, nd = dst / cpn;
    if (ns == nd) {
        route_in_node(sys, src, dst, out, max, &n);
        return n;
    }
    switch (sys->scaleout.topo) {
    case TOPO_FAT_TREE:
        /* GPU-direct: the NIC of the source straight to the NIC of the
         * destination; the fat-tree is taken as non-blocking. */
        emit(out, max, &n, sys->nic_up[src]);
        emit(out, max, &n, sys->nic_down[dst]);
        return n;
    case TOPO_RAIL: {
        /* Each rail switch joins the NICs of one local index; traffic for
         * another rail first crosses the node's scale-up fabric to the chip
         * on the destination's rail (NCCL's PXN), then takes that NIC. */
        int c = ns * cpn + dst % cpn;
        route_in_node(sys, src, c, out, max, &n);
        emit(out, max, &n, sys->nic_up[c]);
        emit(out, max, &n, sys->nic_down[dst]);
        return n;
    }
    case TOPO_CHAIN: {
        /* Move to the destination's rail inside the source node, then hop
         * node to node along that rail. */
        int c = ns * cpn + dst % cpn;
        route_in_node(sys, src, c, out, max, &n);
        while (c / cpn != nd) {
            bool forward = nd > c / cpn;
            emit(out, max, &n, forward ? sys->out_next[c] : sys->out_prev[c]);
            c += forward ? cpn : -cpn;
        }
        return n;
    }
    default:
        assert(0 && "chips of two nodes with no scale-out fabric");
        return 0;
    }
}

int system_route_buf(const struct system *sys, int src, int dst, int *stack, int max,
                     int **links)
{
    int n = system_route(sys, src, dst, stack, max);
    *links = stack;
    if (n > max) {
        *links = mp_xmalloc((size_t)n * sizeof **links);
        system_route(sys, src, dst, *links, n);
    }
    return n;
}

static void describe_fabric(const char *section, const struct fabric *f, char *buf, size_t size)
{
    if (f->topo == TOPO_NONE) {
        snprintf(buf, size, "[%s] none", section);
        return;
    }
    char lat[32];
    units_format_duration(f->latency, lat, sizeof lat);
    if (isinf(f->bw)) snprintf(buf, size, "[%s] bandwidth = inf, latency = %s", section, lat);
    else snprintf(buf, size, "[%s] bandwidth = %.6gGB/s, latency = %s", section, f->bw / 1e9, lat);
}

void system_describe(const struct system *sys, char *buf, size_t size)
{
    char up[128], out[128];
    describe_fabric("scaleup", &sys->scaleup, up, sizeof up);
    describe_fabric("scaleout", &sys->scaleout, out, sizeof out);
    snprintf(buf, size, "system %s (%s; %s)", sys->name, up, out);
}

mp_time system_route_time(const struct system *sys, const int *route, int n, double bytes)
{
    assert(bytes >= 0);
    mp_time latency = 0;
    double bw = INFINITY;
    for (int i = 0; i < n; i++) {
        assert(route[i] >= 0 && route[i] < sys->n_links);
        const struct link *l = &sys->links[route[i]];
        /* Latencies and bandwidths come from the user's system file; a route
         * time past MP_TIME_HUGE saturates (as chip_op_time does), and
         * sim_run's horizon check reports it instead of a wrapped time. */
        latency = mp_time_add(latency, l->latency);
        if (l->bw < bw) bw = l->bw;
    }
    if (isinf(bw) || bytes == 0) return latency;
    /* (bytes × 1e12) / bw keeps round figures exact: 1e9 B at 1e11 B/s is
     * exactly 1e10 ps. */
    return mp_time_add(latency, mp_time_from_ps(bytes * 1e12 / bw));
}
