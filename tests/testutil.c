/* testutil.c — see testutil.h. */
#include "testutil.h"
#include "sim/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mp_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

const char *mp_test_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", mp_data_dir(), rel);
    return buf;
}

static char tmpdir[256];
static pid_t tmpdir_owner;

static void remove_tmpdir(void)
{
    if (getpid() != tmpdir_owner) return; /* a forked Check child */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) { /* best effort */ }
}

const char *mp_test_tmpfile(const char *suffix, const char *text)
{
    static char path[512];
    static int counter;
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/mpsim-test-XXXXXX");
        if (!mkdtemp(tmpdir)) { perror("mkdtemp"); abort(); }
        tmpdir_owner = getpid();
        atexit(remove_tmpdir);
    }
    snprintf(path, sizeof path, "%s/t%d-%d%s", tmpdir, (int)getpid(), counter++, suffix);
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); abort(); }
    fputs(text, f);
    fclose(f);
    return path;
}
