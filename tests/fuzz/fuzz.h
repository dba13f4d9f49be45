/* fuzz.h — shared by the libFuzzer harnesses in tests/fuzz/ (issue 8).
 * The parsers take file paths, so each input is written to one temporary
 * file per process, rewritten for every input; or copied into a NUL-ended
 * buffer for the parsers that read text. */
#ifndef MPSIM_FUZZ_H
#define MPSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/common.h"

static char fuzz_path[256];

static void fuzz_remove_file(void) { unlink(fuzz_path); }

/* The input as a file at a path that keeps `suffix` (".ini", ".csv"). */
static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    char *path = fuzz_path;
    if (!path[0]) {
        snprintf(path, sizeof fuzz_path, "/tmp/mpsim-fuzz-%d%s", (int)getpid(), suffix);
        atexit(fuzz_remove_file);
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort(); /* the machine, not the input: stop loudly */
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    return path;
}

/* The input as a NUL-ended string (NULs inside end it early, as in a C caller). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *s = mp_xmalloc(size + 1);
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
