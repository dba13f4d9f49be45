/* fuzz_resume.c — libFuzzer: a sweep's resume partial (OUT.partial, whatever
 * a kill, a crash or an editor left in it) through `sweep --resume` of a
 * small synthetic grid (8 points). Any input must end in a finished CSV or
 * one input error; a finished CSV must read back with the grid's 8 rows in
 * order, every cell free of NULs — what --resume keeps of a torn partial
 * never leaks into the result. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "sim/explore/sweep.h"

static char dir[256], out[300], partial[320];
static struct config base;
static struct sweep_grid grid;

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/mpsim-fuzz-resume-%d", (int)getpid());
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) abort();
    snprintf(out, sizeof out, "%s/out.csv", dir);
    snprintf(partial, sizeof partial, "%s/out.csv.partial", dir);
    config_defaults(&base);
    struct mp_error err;
    if (config_set_key(&base, "model.kind", "synthetic", "fuzz", &err)) abort();
    sweep_grid_init(&grid);
    if (sweep_grid_add(&grid, &base, "parallel.pp=1,2", &err) ||
        sweep_grid_add(&grid, &base, "training.global_batch=2..8+2", &err))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) setup();
    FILE *f = fopen(partial, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size)) abort();
    fclose(f);
    unlink(out);
    struct sweep_options opt = { .out = out, .jobs = 1, .resume = true };
    struct sweep_stats st;
    struct mp_error err = { 0 };
    int rc = sweep_run(&grid, &base, &opt, &st, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0] || strchr(err.msg, '\n'))) abort();
    if (rc == MP_OK) {
        struct sweep_table t;
        if (sweep_table_load(&t, out, &err) != MP_OK || t.n_rows != grid.n_points) abort();
        int which[SWEEP_MAX_AXES];
        for (int r = 0; r < t.n_rows; r++) {
            sweep_grid_point(&grid, r, which);
            for (int a = 0; a < grid.n_axes; a++)
                if (strcmp(t.cell[r][a], grid.axis[a].values[which[a]])) abort();
        }
        sweep_table_release(&t);
    }
    unlink(partial);
    unlink(out);
    return 0;
}
