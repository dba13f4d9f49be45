/* fuzz_csv.c — libFuzzer: the one CSV reader (sim/io/csv_reader.h) on any
 * bytes, with and without comments. It must end in rows or one input error
 * with a one-line message naming the file and a line; rows must have
 * 1..CSV_CELLS_MAX cells, lines that never go back, and cells without NUL. */
#include <string.h>

#include "fuzz.h"
#include "sim/io/csv_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".csv");
    for (int comments = 0; comments < 2; comments++) {
        struct csv_reader r;
        struct csv_reader_opts o = { .key = comments ? "experts.trace" : NULL, .comments = comments };
        struct mp_error err = { 0 };
        if (csv_reader_open(&r, path, &o, &err) != MP_OK) abort();
        struct csv_row row;
        int got;
        long last = 0;
        while ((got = csv_reader_next(&r, &row, &err)) > 0) {
            if (row.n < 1 || row.n > CSV_CELLS_MAX || row.line < last || row.line < 1) abort();
            last = row.line;
            if (row.end < 0 || row.end > (off_t)size) abort();
        }
        if (got < 0 && (err.status != MP_ERR_INPUT || !strstr(err.msg, path) ||
                        strchr(err.msg, '\n')))
            abort();
        csv_reader_close(&r);
    }
    char **cells;
    int n;
    if (csv_split_line((const char *)data, size, &cells, &n) == 0) {
        for (int i = 0; i < n; i++) free(cells[i]);
        free(cells);
    }
    return 0;
}
