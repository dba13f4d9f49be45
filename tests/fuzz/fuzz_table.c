/* fuzz_table.c — libFuzzer: a sweep or plot CSV through sweep_table_load,
 * then --best and --pareto on its columns (the first, the second and a
 * metric name). Any input must end in a table or one input error; a table's
 * rows must all have the header's width. */
#include <string.h>

#include "fuzz.h"
#include "sim/explore/sweep_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sweep_table t;
    struct mp_error err = { 0 };
    int rc = sweep_table_load(&t, fuzz_file(data, size, ".csv"), &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0] || strchr(err.msg, '\n'))) abort();
    if (rc != MP_OK) return 0;
    FILE *null = fopen("/dev/null", "w");
    if (!null) abort();
    const char *metric = t.n_cols > 1 ? t.col[1] : t.col[0];
    char pareto[512];
    snprintf(pareto, sizeof pareto, "%.200s,%.200s", t.col[0], metric);
    for (int varied = 0; varied <= (t.n_cols < 2 ? t.n_cols : 2); varied++) {
        sweep_print_best(null, &t, varied, metric, 3, &err);
        sweep_print_best(null, &t, varied, "step_time_s", 3, &err);
        if (!strchr(t.col[0], ',') && !strchr(metric, ','))
            sweep_print_pareto(null, &t, varied, pareto, &err);
    }
    for (int r = 0; r < t.n_rows; r++)
        for (int c = 0; c < t.n_cols; c++) (void)sweep_table_num(&t, r, c);
    fclose(null);
    sweep_table_release(&t);
    return 0;
}
