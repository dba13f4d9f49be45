/* outfile.c — write to a temporary, rename when complete; see outfile.h. */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int outfile_open(struct outfile *out, const char *path, struct mp_error *err)
{
    memset(out, 0, sizeof *out);
    if (strlen(path) >= sizeof out->path)
        return mp_fail(err, MP_ERR_INPUT, "%s: output path too long", path);
    strcpy(out->path, path);
    if (!strcmp(path, "-")) {
        out->f = stdout;
        return MP_OK;
    }
    snprintf(out->tmp, sizeof out->tmp, "%s.tmpXXXXXX", path);
    int fd = mkstemp(out->tmp);
    if (fd < 0) {
        int e = errno;
        out->tmp[0] = '\0';
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot create output: %s", path, strerror(e));
    }
    /* mkstemp makes the file 0600; an output is as any file the user
     * creates: 0666 less the umask (read back by setting it twice). */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    out->f = fdopen(fd, "w");
    if (!out->f) {
        int e = errno;
        close(fd);
        unlink(out->tmp);
        out->tmp[0] = '\0';
        return mp_fail(err, MP_ERR_INTERNAL, "%s: cannot write: %s", path, strerror(e));
    }
    return MP_OK;
}

int outfile_commit(struct outfile *out, struct mp_error *err)
{
    if (!out->f) return mp_fail(err, MP_ERR_INTERNAL, "%s: output not open", out->path);
    if (out->f == stdout) {
        out->f = NULL;
        if (fflush(stdout) != 0 || ferror(stdout))
            return mp_fail(err, MP_ERR_INTERNAL, "standard output: write failed: %s",
                           strerror(errno));
        return MP_OK;
    }
    int failed = fflush(out->f) != 0 || ferror(out->f);
    int e = errno;
    if (!failed && fsync(fileno(out->f)) != 0 && errno != EINVAL) { failed = 1; e = errno; }
    if (fclose(out->f) != 0 && !failed) { failed = 1; e = errno; }
    out->f = NULL;
    if (!failed && rename(out->tmp, out->path) != 0) { failed = 1; e = errno; }
    if (failed) {
        unlink(out->tmp);
        out->tmp[0] = '\0';
        return mp_fail(err, MP_ERR_INTERNAL, "%s: write failed, nothing written: %s", out->path,
                       strerror(e));
    }
    out->tmp[0] = '\0';
    return MP_OK;
}

void outfile_abort(struct outfile *out)
{
    if (out->f && out->f != stdout) fclose(out->f);
    out->f = NULL;
    if (out->tmp[0]) unlink(out->tmp);
    out->tmp[0] = '\0';
}
