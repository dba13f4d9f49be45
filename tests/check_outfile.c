/* check_outfile.c — issue 16, class 4: outputs that do not destroy what
 * they replace. A regular file is replaced whole and keeps its permissions;
 * a new one gets 0666 less the umask (mkstemp's 0600 before); a link is
 * followed, not replaced; a FIFO or a character device is written directly;
 * two outputs naming one file are found however they are spelled; and a
 * signal removes what was half written (exit 128 + the signal) but names a
 * kept file. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/io/outfile.h"
#include "testutil.h"

static char dir[256];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/mpsim-outfile-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *at(const char *name)
{
    static char buf[4][400];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void put(const char *path, const char *text)
{
    struct outfile out;
    struct mp_error err;
    ck_assert_int_eq(outfile_open(&out, path, &err), MP_OK);
    fputs(text, out.f);
    ck_assert_int_eq(outfile_commit(&out, &err), MP_OK);
}

/* Only the temporaries' names (".tmp") would be left in `dir`. */
static int temporaries(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '\\.tmp' >/dev/null", dir);
    return system(cmd) == 0;
}

/* First in the suite: mpsim reads the umask once per process, so the child
 * that sets it must not inherit a reading (CK_FORK=no runs every test in
 * one process). */
START_TEST(new_file_honours_umask)
{
    make_dir();
    struct stat st;
    /* A new file under umask 027: 0666 & ~027 = 0640 (mkstemp's 0600 before).
     * In a child, which sets its umask before its first output. */
    pid_t pid = fork();
    if (pid == 0) {
        umask(027);
        struct outfile out;
        struct mp_error err;
        if (outfile_open(&out, at("new.csv"), &err) || outfile_commit(&out, &err)) _exit(1);
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_eq(stat(at("new.csv"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    remove_dir();
}
END_TEST

START_TEST(regular_file_keeps_mode)
{
    make_dir();
    write_text(at("old.csv"), "old\n");
    ck_assert_int_eq(chmod(at("old.csv"), 0640), 0);
    put(at("old.csv"), "new\n");
    struct stat st;
    ck_assert_int_eq(stat(at("old.csv"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    char buf[64];
    read_text(at("old.csv"), buf, sizeof buf);
    ck_assert_str_eq(buf, "new\n");
    ck_assert(!temporaries());
    remove_dir();
}
END_TEST

START_TEST(link_is_followed)
{
    make_dir();
    write_text(at("target.csv"), "old\n");
    ck_assert_int_eq(symlink("target.csv", at("link.csv")), 0);
    put(at("link.csv"), "new\n");
    struct stat st;
    ck_assert_int_eq(lstat(at("link.csv"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    char buf[64];
    read_text(at("target.csv"), buf, sizeof buf);
    ck_assert_str_eq(buf, "new\n");
    /* A dangling link: the file it names is created. */
    ck_assert_int_eq(symlink("later.csv", at("dangling.csv")), 0);
    put(at("dangling.csv"), "made\n");
    read_text(at("later.csv"), buf, sizeof buf);
    ck_assert_str_eq(buf, "made\n");
    ck_assert_int_eq(lstat(at("dangling.csv"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    remove_dir();
}
END_TEST

/* A FIFO gets the bytes (a reader sees them) and stays a FIFO; /dev/null
 * stays the character device it was. */
START_TEST(fifo_and_device_written_directly)
{
    make_dir();
    ck_assert_int_eq(mkfifo(at("pipe"), 0644), 0);
    pid_t pid = fork();
    if (pid == 0) { /* the reader */
        int fd = open(at("pipe"), O_RDONLY);
        char buf[64] = "";
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        _exit(n == 6 && !memcmp(buf, "hello\n", 6) ? 0 : 1);
    }
    put(at("pipe"), "hello\n");
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct stat st;
    ck_assert_int_eq(stat(at("pipe"), &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    struct stat before, after;
    ck_assert_int_eq(stat("/dev/null", &before), 0);
    put("/dev/null", "nothing\n");
    ck_assert_int_eq(stat("/dev/null", &after), 0);
    ck_assert(S_ISCHR(after.st_mode) && after.st_rdev == before.st_rdev && after.st_ino == before.st_ino);
    ck_assert(!temporaries());
    remove_dir();
}
END_TEST

START_TEST(directory_is_refused)
{
    make_dir();
    struct outfile out;
    struct mp_error err;
    ck_assert_int_eq(outfile_open(&out, dir, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "is a directory"), "%s", err.msg);
    remove_dir();
}
END_TEST

/* One file, four spellings: the same path, ./ and a folder's .., a link
 * and its target, and "-" twice. A new path is compared by where it would
 * be created. */
START_TEST(same_file_found)
{
    make_dir();
    ck_assert_int_eq(mkdir(at("sub"), 0755), 0);
    write_text(at("t.csv"), "x\n");
    ck_assert_int_eq(symlink("t.csv", at("l.csv")), 0);
    char dotted[600];
    snprintf(dotted, sizeof dotted, "%s/sub/../t.csv", dir);
    ck_assert(outfile_same(at("t.csv"), at("t.csv")));
    ck_assert(outfile_same(at("t.csv"), dotted));
    ck_assert(outfile_same(at("l.csv"), at("t.csv")));
    ck_assert(outfile_same("-", "-"));
    char new1[600], new2[600];
    snprintf(new1, sizeof new1, "%s/sub/../new.csv", dir);
    snprintf(new2, sizeof new2, "%s/new.csv", dir);
    ck_assert(outfile_same(new1, new2));
    ck_assert(!outfile_same(at("t.csv"), new2));
    const char *paths[] = { at("t.csv"), NULL, at("l.csv") };
    const char *flags[] = { "--timeline", "--json", "--trace" };
    struct mp_error err;
    ck_assert_int_eq(outfile_distinct(paths, flags, 3, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "--timeline") && strstr(err.msg, "--trace") &&
                  strstr(err.msg, "name one file"), "%s", err.msg);
    paths[2] = new2;
    ck_assert_int_eq(outfile_distinct(paths, flags, 3, &err), MP_OK);
    remove_dir();
}
END_TEST

/* A sweep's finished partial installed into a FIFO: copied, then removed. */
START_TEST(install_into_fifo)
{
    make_dir();
    write_text(at("rows.partial"), "a,b\n1,2\n");
    ck_assert_int_eq(mkfifo(at("out"), 0644), 0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(at("out"), O_RDONLY);
        char buf[64] = "";
        ssize_t n = 0, got;
        while (fd >= 0 && (got = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0) n += got;
        _exit(n == 8 && !memcmp(buf, "a,b\n1,2\n", 8) ? 0 : 1);
    }
    struct mp_error err;
    ck_assert_int_eq(outfile_install(at("rows.partial"), at("out"), &err), MP_OK);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ck_assert_int_ne(access(at("rows.partial"), F_OK), 0);
    remove_dir();
}
END_TEST

/* SIGTERM while an output is open: its temporary is removed, a file
 * registered to keep is still there, and the exit status is 128 + 15. */
START_TEST(signal_removes_unfinished)
{
    make_dir();
    write_text(at("rows.partial"), "kept\n");
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2); /* the handler's one line: not the test's output */
        outfile_init_signals();
        outfile_register(at("rows.partial"), true);
        struct outfile out;
        struct mp_error err;
        if (outfile_open(&out, at("result.csv"), &err)) _exit(1);
        fputs("half", out.f);
        fflush(out.f);
        (void)!write(ready[1], "x", 1);
        for (;;) pause();
    }
    close(ready[1]);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    ck_assert(temporaries()); /* the child's temporary exists now */
    kill(pid, SIGTERM);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 143);
    ck_assert(!temporaries());
    ck_assert_int_ne(access(at("result.csv"), F_OK), 0);
    ck_assert_int_eq(access(at("rows.partial"), F_OK), 0);
    remove_dir();
}
END_TEST

static Suite *outfile_suite(void)
{
    Suite *s = suite_create("outfile");
    TCase *tc = tcase_create("outfile");
    tcase_add_test(tc, new_file_honours_umask);
    tcase_add_test(tc, regular_file_keeps_mode);
    tcase_add_test(tc, link_is_followed);
    tcase_add_test(tc, fifo_and_device_written_directly);
    tcase_add_test(tc, directory_is_refused);
    tcase_add_test(tc, same_file_found);
    tcase_add_test(tc, install_into_fifo);
    tcase_add_test(tc, signal_removes_unfinished);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(outfile_suite)
