/* fuzz_timeline.c — libFuzzer: a timeline CSV through the viewer's reader
 * (viz/timeline.h, linked as is; viz/ is not edited). Any input must end in a
 * timeline or one input error. */
#include <string.h>

#include "fuzz.h"
#include "viz/timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct timeline tl;
    struct mp_error err = { 0 };
    timeline_init(&tl);
    int rc = timeline_read_csv_buffer(&tl, "fuzz.csv", (const char *)data, size, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    timeline_release(&tl);
    return 0;
}
