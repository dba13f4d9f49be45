/* fuzz_requests.c — libFuzzer: a request trace (inference.trace:
 * arrival_s,prompt_tokens,output_tokens) through the serving workload reader.
 * Any input must end in requests (in time order, within context_len) or one
 * input error naming inference.trace. */
#include <string.h>

#include "fuzz.h"
#include "sim/serve/serve_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct serve *s = mp_xcalloc(1, sizeof *s);
    config_defaults(&s->cfg);
    const char *path = fuzz_file(data, size, ".csv");
    if (config_set_key(&s->cfg, "inference.trace", path, "fuzz", NULL)) abort();
    struct mp_error err = { 0 };
    int rc = serve_trace_requests(s, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !strstr(err.msg, "inference.trace") ||
                        strchr(err.msg, '\n')))
        abort();
    if (rc == MP_OK && s->n_req < 1) abort();
    for (int i = 0; rc == MP_OK && i < s->n_req; i++) {
        const struct serve_request *q = &s->req[i];
        if (q->prompt < 1 || q->output < 1 || q->prompt + q->output > s->cfg.inference.context_len ||
            q->arrival < 0 || (i > 0 && q->arrival < s->req[i - 1].arrival))
            abort();
    }
    free(s->req);
    free(s);
    return 0;
}
