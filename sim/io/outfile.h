/* outfile.h — outputs that are never half-written. Each output goes to a
 * temporary file in the same folder, is flushed, and is renamed into place
 * only when complete; on any error the temporary is removed and the old file,
 * if any, is left untouched. */
#ifndef MPSIM_OUTFILE_H
#define MPSIM_OUTFILE_H

#include <stdio.h>

#include "sim/common.h"

struct outfile {
    char path[1024];
    char tmp[1040];
    FILE *f;
};

/* Open a temporary beside `path`; out->f is ready for writing. "-" means
 * standard output (written directly, commit only flushes). */
int outfile_open(struct outfile *out, const char *path, struct mp_error *err);

/* Flush, check for write errors, close and rename into place. On failure the
 * temporary is removed and MP_ERR_INTERNAL names the file and the reason. */
int outfile_commit(struct outfile *out, struct mp_error *err);

/* Give up: close and remove the temporary. Safe to call twice. */
void outfile_abort(struct outfile *out);

#endif
