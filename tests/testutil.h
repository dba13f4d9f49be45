/* testutil.h — shared helpers for the Check suites. Each tests/check_X.c is
 * its own binary: it defines `Suite *X_suite(void)` and ends with
 * MP_TEST_MAIN(X_suite). */
#ifndef MPSIM_TESTUTIL_H
#define MPSIM_TESTUTIL_H

#include <check.h>

/* Run one suite; exit status 0 only when every test passed. */
int mp_test_run(Suite *s);

/* Absolute path of a file under the project root (tests/data/..., models/...),
 * in a static buffer valid until the next call. */
const char *mp_test_path(const char *rel);

/* Write `text` to a fresh temporary file and return its path (static buffer;
 * the file lives until the process ends). `suffix` like ".ini". */
const char *mp_test_tmpfile(const char *suffix, const char *text);

#define MP_TEST_MAIN(suite_fn) \
    int main(void) { return mp_test_run(suite_fn()); }

#endif
