/* outfile.h — outputs that are never half-written, and never destroy what
 * they replace (issues 8, 16).
 *
 * A regular file (or a new path) is written to a temporary beside it,
 * flushed, and renamed into place only when complete; on any error the
 * temporary is removed and the old file, if any, is left untouched. The new
 * file has the old one's permissions, or 0666 less the umask when it is new.
 * A symbolic link is followed: the file it points at is replaced, the link
 * stays. Anything else that is not a directory — a device (/dev/null,
 * /dev/stdout), a FIFO, a Unix socket — is written directly, since renaming
 * over it would replace the device or leave the FIFO's reader with nothing.
 *
 * Temporaries in flight are registered, so that SIGINT, SIGTERM, SIGHUP and
 * SIGPIPE (outfile_init_signals) remove them before mpsim exits with 128 +
 * the signal's number; a file registered to keep (a sweep's OUT.partial, for
 * --resume) is named instead. */
#ifndef MPSIM_OUTFILE_H
#define MPSIM_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/common.h"

struct outfile {
    char path[1024];  /* where it goes: the path given, or a link's target */
    char tmp[1040];   /* the temporary ("" when written directly) */
    FILE *f;
    int slot;         /* in the signal handler's registry, -1 none */
};

/* Open `path` for writing as above; out->f is ready. "-" means standard
 * output (written directly, commit only flushes). MP_ERR_INPUT names the
 * path when it is a directory or cannot be created. */
int outfile_open(struct outfile *out, const char *path, struct mp_error *err);

/* Flush, check for write errors, close and rename into place (or just
 * close, for a direct target). On failure the temporary is removed and
 * MP_ERR_INTERNAL names the file and the reason. */
int outfile_commit(struct outfile *out, struct mp_error *err);

/* Give up: close and remove the temporary. Safe to call twice. */
void outfile_abort(struct outfile *out);

/* Put the finished file `done` (a sweep's OUT.partial) at `path` as a
 * commit would: renamed over a regular file or a new path, copied into a
 * device, FIFO or socket (and then removed). */
int outfile_install(const char *done, const char *path, struct mp_error *err);

/* Whether two output paths name one file: both "-", the same existing file
 * (device and inode, through links), or the same new path. */
bool outfile_same(const char *a, const char *b);

/* Refuse two of the `n` outputs that name one file (`flags[i]` names
 * output i for the message, as "--timeline"); NULL paths are skipped.
 * MP_ERR_INPUT: "--timeline t.csv and --trace t.csv name one file". */
int outfile_distinct(const char *const *paths, const char *const *flags, int n,
                     struct mp_error *err);

/* Install the handlers for SIGINT, SIGTERM, SIGHUP and SIGPIPE and read the
 * umask once; mpsim's main calls it first. */
void outfile_init_signals(void);

/* Register `path` with the handler: removed (keep = false) or named as kept
 * (keep = true) when a signal stops mpsim. Returns its slot, -1 when the
 * registry (16 slots) is full; outfile_forget(slot) takes it out. */
int outfile_register(const char *path, bool keep);
void outfile_forget(int slot);

#endif
