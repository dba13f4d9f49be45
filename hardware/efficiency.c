/* efficiency.c — the op-efficiency table; see efficiency.h. */
#include "efficiency.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split "a,b,c,d,rest" into 4 fields and the rest (the quoted source). */
static int fields(char *line, char *f[5])
{
    for (int i = 0; i < 4; i++) {
        f[i] = line;
        char *c = strchr(line, ',');
        if (!c) return -1;
        *c = '\0';
        line = c + 1;
    }
    f[4] = line;
    return 0;
}

static bool number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

/* Read the rows for `chip` (or `*`) from `path`. MP_ERR_INPUT names file and line. */
static int efficiency_load(struct efficiency *e, const char *path, const char *chip,
                           struct mp_error *err)
{
    memset(e, 0, sizeof *e);
    FILE *f = fopen(path, "r");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct efficiency own = { 0 }, any = { 0 };
    bool has_own = false;
    char *line = NULL;
    size_t cap = 0;
    int n = 0, rc = MP_OK;
    while (getline(&line, &cap, f) >= 0) {
        n++;
        line[strcspn(line, "\r\n")] = '\0';
        if (n == 1 || !*line || *line == '#') continue;
        char *fl[5];
        double size, value;
        if (fields(line, fl) || !number(fl[2], &size) || !number(fl[3], &value) ||
            (value <= 0 && strcmp(fl[1], "elementwise"))) {
            rc = mp_fail(err, MP_ERR_INPUT, "%s:%d: expected chip,op,size,value,source with "
                         "size >= 0 and value > 0 (elementwise: >= 0)", path, n);
            break;
        }
        bool mine = !strcmp(fl[0], chip);
        if (!mine && strcmp(fl[0], "*")) continue;
        struct efficiency *t = mine ? &own : &any;
        has_own |= mine;
        if (!strcmp(fl[1], "gemm")) {
            if (t->n_gemm == EFF_MAX_POINTS || (t->n_gemm && size <= t->gemm_size[t->n_gemm - 1]) ||
                size <= 0) {
                rc = mp_fail(err, MP_ERR_INPUT, "%s:%d: gemm sizes must be > 0 and increase, "
                             "at most %d per chip", path, n, EFF_MAX_POINTS);
                break;
            }
            t->gemm_size[t->n_gemm] = size;
            t->gemm_share[t->n_gemm++] = value;
        } else if (!strcmp(fl[1], "elementwise")) {
            t->elementwise = value;
        } else {
            rc = mp_fail(err, MP_ERR_INPUT, "%s:%d: op: expected gemm or elementwise, got '%s'",
                         path, n, fl[1]);
            break;
        }
    }
    free(line);
    fclose(f);
    if (rc == MP_OK) *e = has_own ? own : any;
    return rc;
}

int efficiency_load_default(struct efficiency *e, const char *chip, struct mp_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/efficiency.csv", mp_data_dir());
    return efficiency_load(e, path, chip, err);
}

/* Share of compute_eff a GEMM of `size` FLOPs reaches (1 with no rows). */
static double efficiency_gemm(const struct efficiency *e, double size)
{
    if (e->n_gemm == 0 || size <= 0) return 1;
    if (size <= e->gemm_size[0]) return e->gemm_share[0];
    for (int i = 1; i < e->n_gemm; i++)
        if (size <= e->gemm_size[i]) {
            double x0 = log(e->gemm_size[i - 1]), x1 = log(e->gemm_size[i]);
            double t = (log(size) - x0) / (x1 - x0);
            return e->gemm_share[i - 1] + t * (e->gemm_share[i] - e->gemm_share[i - 1]);
        }
    return e->gemm_share[e->n_gemm - 1];
}

mp_time efficiency_op_time(const struct efficiency *e, const struct chip *c, double flops,
                           double bytes, double gemm_size, double elem_bytes, int bits)
{
    double share = efficiency_gemm(e, gemm_size);
    double peak = bits == 8 && c->peak_fp8 > 0 ? c->peak_fp8 : c->peak_bf16;
    double compute = flops / (peak * c->compute_eff * share);
    double mem = isinf(c->mem_bw) ? 0 : bytes / (c->mem_bw * c->mem_eff);
    double elem = isinf(c->mem_bw) ? 0 : e->elementwise * elem_bytes / (c->mem_bw * c->mem_eff);
    double ps = ((compute > mem ? compute : mem) + elem) * 1e12;
    return mp_time_from_ps(ps); /* saturates; sim_run names the inputs */
}
