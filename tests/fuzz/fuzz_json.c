/* fuzz_json.c — libFuzzer: the config.json reader (models/json_doc.c, branch
 * models) on its own, below model_load_json (fuzz_model.c drives that). Any
 * input parses or is refused with MP_ERR_INPUT and a one-line message; a
 * parsed document keeps its promises: every object is indexed, its keys
 * sorted and distinct (duplicates are refused), each found again by
 * json_doc_get and json_doc_key_line on a line of the text; nothing nests
 * deeper than JSON_DOC_MAX_DEPTH. */
#include "models/json_doc.h"
#include "fuzz.h"

static void walk(struct json_doc *d, const cJSON *node, int depth)
{
    if (depth > JSON_DOC_MAX_DEPTH + 1) abort();
    int lines = (int)d->n_newlines + 1;
    if (cJSON_IsObject(node)) {
        const struct json_obj *o = json_doc_object(d, node);
        if (!o) abort();
        for (int i = 0; i < o->n; i++) {
            if (i > 0 && strcmp(o->keys[i - 1].name, o->keys[i].name) >= 0) abort();
            if (json_doc_peek(d, node, o->keys[i].name) != o->keys[i].item) abort();
            int line = json_doc_key_line(d, node, o->keys[i].name);
            if (line < 1 || line > lines) abort();
        }
    }
    for (const cJSON *c = node->child; c; c = c->next) walk(d, c, depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    size_t len = strlen(text); /* the reader takes a NUL-ended text */
    struct json_doc d;
    struct mp_error err = { 0 };
    int rc = json_doc_parse(&d, text, len, "fuzz.json", &err);
    if (rc == MP_OK) {
        walk(&d, d.root, 0);
        json_doc_release(&d);
    } else if (rc != MP_ERR_INPUT || !err.msg[0] || strchr(err.msg, '\n')) {
        fprintf(stderr, "fuzz_json: status %d, message '%s'\n", rc, err.msg);
        abort();
    }
    free(text);
    return 0;
}
