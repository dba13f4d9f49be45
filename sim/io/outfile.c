/* outfile.c — outputs written whole or not at all, without replacing what
 * is not a regular file, and removed when a signal stops mpsim; see
 * outfile.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- the registry the signal handler reads ------------------------------ */

enum { SLOTS = 16, FREE = 0, REMOVE = 1, KEEP = 2, BUSY = 3 };

/* A slot is claimed (FREE → BUSY), its path written, then published
 * (BUSY → REMOVE or KEEP); the handler reads only published slots. */
static struct {
    atomic_int state;
    char path[1100];
} reg[SLOTS];

int outfile_register(const char *path, bool keep)
{
    if (strlen(path) >= sizeof reg[0].path) return -1;
    for (int i = 0; i < SLOTS; i++) {
        int expect = FREE;
        if (!atomic_compare_exchange_strong(&reg[i].state, &expect, BUSY)) continue;
        strcpy(reg[i].path, path);
        atomic_store(&reg[i].state, keep ? KEEP : REMOVE);
        return i;
    }
    return -1;
}

void outfile_forget(int slot)
{
    if (slot >= 0 && slot < SLOTS) atomic_store(&reg[slot].state, FREE);
}

static void say(const char *s) { (void)!write(STDERR_FILENO, s, strlen(s)); }

/* Only async-signal-safe calls here: unlink, write, _exit. */
static void on_signal(int sig)
{
    const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM"
                       : sig == SIGHUP ? "SIGHUP" : "SIGPIPE";
    int removed = 0;
    for (int i = 0; i < SLOTS; i++)
        if (atomic_load(&reg[i].state) == REMOVE && unlink(reg[i].path) == 0) removed++;
    if (sig != SIGPIPE) { /* a closed pipe is the reader's choice, not news */
        say("mpsim: stopped by ");
        say(name);
        say(removed ? "; unfinished outputs removed" : "");
        for (int i = 0; i < SLOTS; i++)
            if (atomic_load(&reg[i].state) == KEEP) {
                say("; kept ");
                say(reg[i].path);
                say(" for --resume");
            }
        say("\n");
    }
    _exit(128 + sig);
}

static mode_t umask_bits;
static pthread_once_t umask_once = PTHREAD_ONCE_INIT;

/* umask() can only be read by setting it; done once, before any thread. */
static void read_umask(void)
{
    umask_bits = umask(022);
    umask(umask_bits);
}

void outfile_init_signals(void)
{
    pthread_once(&umask_once, read_umask);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask); /* one handler at a time */
    const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* A signal ignored by whoever started us (nohup) stays ignored. */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- where an output goes ----------------------------------------------- */

enum target { T_NEW, T_REGULAR, T_DIRECT, T_SOCKET, T_DIR };

/* Follow `path` through symbolic links (existing or dangling, up to 16) to
 * what it names; write that path to `out` and its kind and mode. */
static int resolve(const char *path, char *out, size_t size, enum target *kind, mode_t *mode,
                   struct mp_error *err)
{
    char cur[PATH_MAX];
    if (strlen(path) >= sizeof cur)
        return mp_fail(err, MP_ERR_INPUT, "%.200s: output path too long", path);
    strcpy(cur, path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno != ENOENT)
                return mp_fail(err, MP_ERR_INPUT, "%s: cannot create output: %s", path,
                               strerror(errno));
            *kind = T_NEW;
            *mode = 0666 & ~umask_bits;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char link[PATH_MAX];
            ssize_t n = readlink(cur, link, sizeof link - 1);
            if (n < 0 || hops >= 16)
                return mp_fail(err, MP_ERR_INPUT, "%s: cannot follow the link: %s", path,
                               n < 0 ? strerror(errno) : "too many levels");
            link[n] = '\0';
            char next[PATH_MAX];
            const char *slash = strrchr(cur, '/');
            if (link[0] == '/' || !slash) snprintf(next, sizeof next, "%s", link);
            else if (snprintf(next, sizeof next, "%.*s/%s", (int)(slash - cur), cur, link) >=
                     (int)sizeof next)
                return mp_fail(err, MP_ERR_INPUT, "%.200s: output path too long", path);
            strcpy(cur, next);
            continue;
        }
        *mode = st.st_mode & 07777;
        *kind = S_ISREG(st.st_mode) ? T_REGULAR : S_ISDIR(st.st_mode) ? T_DIR
                : S_ISSOCK(st.st_mode) ? T_SOCKET : T_DIRECT;
        break;
    }
    if (*kind == T_DIR)
        return mp_fail(err, MP_ERR_INPUT, "%s: is a directory, expected a file to write", path);
    if (strlen(cur) >= size)
        return mp_fail(err, MP_ERR_INPUT, "%.200s: output path too long", path);
    strcpy(out, cur);
    return MP_OK;
}

/* A descriptor writing straight into a device, FIFO or socket. */
static int open_direct(const char *path, enum target kind)
{
    if (kind != T_SOCKET) return open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof a.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int outfile_open(struct outfile *out, const char *path, struct mp_error *err)
{
    memset(out, 0, sizeof *out);
    out->slot = -1;
    pthread_once(&umask_once, read_umask);
    if (strlen(path) >= sizeof out->path)
        return mp_fail(err, MP_ERR_INPUT, "%.200s: output path too long", path);
    if (!strcmp(path, "-")) {
        strcpy(out->path, path);
        out->f = stdout;
        return MP_OK;
    }
    enum target kind;
    mode_t mode;
    int rc = resolve(path, out->path, sizeof out->path, &kind, &mode, err);
    if (rc) return rc;
    int fd;
    if (kind == T_DIRECT || kind == T_SOCKET) {
        fd = open_direct(out->path, kind);
        if (fd < 0)
            return mp_fail(err, MP_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
    } else {
        snprintf(out->tmp, sizeof out->tmp, "%s.tmpXXXXXX", out->path);
        fd = mkstemp(out->tmp);
        if (fd < 0) {
            int e = errno;
            out->tmp[0] = '\0';
            return mp_fail(err, MP_ERR_INPUT, "%s: cannot create output: %s", path, strerror(e));
        }
        out->slot = outfile_register(out->tmp, false);
        /* mkstemp makes 0600; the file gets what it replaces, or the umask's. */
        if (fchmod(fd, mode) != 0) {
            int e = errno;
            close(fd);
            outfile_abort(out);
            return mp_fail(err, MP_ERR_INTERNAL, "%s: cannot set permissions: %s", path,
                           strerror(e));
        }
    }
    out->f = fdopen(fd, "w");
    if (!out->f) {
        int e = errno;
        close(fd);
        outfile_abort(out);
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
    /* fsync: a regular file's bytes reach the disk before the rename makes
     * them the file; devices and pipes may refuse it (EINVAL, EROFS). */
    if (!failed && out->tmp[0] && fsync(fileno(out->f)) != 0 && errno != EINVAL) {
        failed = 1;
        e = errno;
    }
    if (fclose(out->f) != 0 && !failed) { failed = 1; e = errno; }
    out->f = NULL;
    if (!failed && out->tmp[0] && rename(out->tmp, out->path) != 0) { failed = 1; e = errno; }
    if (failed) {
        outfile_abort(out);
        return mp_fail(err, MP_ERR_INTERNAL, "%s: write failed, nothing written: %s", out->path,
                       strerror(e));
    }
    outfile_forget(out->slot);
    out->slot = -1;
    out->tmp[0] = '\0';
    return MP_OK;
}

void outfile_abort(struct outfile *out)
{
    if (out->f && out->f != stdout) fclose(out->f);
    out->f = NULL;
    if (out->tmp[0]) unlink(out->tmp);
    out->tmp[0] = '\0';
    outfile_forget(out->slot);
    out->slot = -1;
}

int outfile_install(const char *done, const char *path, struct mp_error *err)
{
    pthread_once(&umask_once, read_umask);
    char target[1024];
    enum target kind;
    mode_t mode;
    int rc = resolve(path, target, sizeof target, &kind, &mode, err);
    if (rc) return rc;
    if (kind == T_NEW || kind == T_REGULAR) {
        if (kind == T_REGULAR) chmod(done, mode); /* keep the old file's permissions */
        if (rename(done, target) != 0)
            return mp_fail(err, MP_ERR_INTERNAL, "%s: cannot rename to %s: %s", done, path,
                           strerror(errno));
        return MP_OK;
    }
    int to = open_direct(target, kind);
    if (to < 0) return mp_fail(err, MP_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
    int from = open(done, O_RDONLY | O_CLOEXEC);
    char buf[65536];
    ssize_t n = from < 0 ? -1 : 0;
    while (from >= 0 && (n = read(from, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(to, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) { n = -1; break; }
            off += w;
        }
        if (n < 0) break;
    }
    int e = errno;
    if (from >= 0) close(from);
    if (close(to) != 0 && n >= 0) { n = -1; e = errno; }
    if (n < 0)
        return mp_fail(err, MP_ERR_INTERNAL, "%s: write failed (%s keeps the rows): %s", path,
                       done, strerror(e));
    unlink(done);
    return MP_OK;
}

/* ---- two outputs, one file ---------------------------------------------- */

/* The absolute path a new file would get: its folder's real path and name. */
static bool new_path(const char *p, char *out, size_t size)
{
    const char *slash = strrchr(p, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == p) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - p), p);
    if (!realpath(dir, real)) return false;
    return snprintf(out, size, "%s/%s", real, slash ? slash + 1 : p) < (int)size;
}

bool outfile_same(const char *a, const char *b)
{
    if (!strcmp(a, b)) return true;
    struct stat sa, sb;
    bool ha = !strcmp(a, "-") ? fstat(STDOUT_FILENO, &sa) == 0 : stat(a, &sa) == 0;
    bool hb = !strcmp(b, "-") ? fstat(STDOUT_FILENO, &sb) == 0 : stat(b, &sb) == 0;
    if (ha && hb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ha || hb) return false;
    char pa[PATH_MAX + 256], pb[PATH_MAX + 256];
    return new_path(a, pa, sizeof pa) && new_path(b, pb, sizeof pb) && !strcmp(pa, pb);
}

int outfile_distinct(const char *const *paths, const char *const *flags, int n,
                     struct mp_error *err)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n && paths[i]; j++)
            if (paths[j] && outfile_same(paths[i], paths[j]))
                return mp_fail(err, MP_ERR_INPUT, "%s %.300s and %s %.300s name one file: expected "
                               "a file of its own for each output", flags[i], paths[i], flags[j],
                               paths[j]);
    return MP_OK;
}
