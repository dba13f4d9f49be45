/* accel.c — a scenario's device map: model, machine, dtype and budgets into
 * device_map.h's placement, and the map's reports. Generation on the map is
 * accel_gen.c. See accel.h. */
#include "accel.h"

#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static enum dm_policy policy_of(int p)
{
    switch (p) {
    case DEVMAP_BALANCED: return DM_BALANCED;
    case DEVMAP_BALANCED_LOW_0: return DM_BALANCED_LOW_0;
    case DEVMAP_SEQUENTIAL: return DM_SEQUENTIAL;
    default: return DM_AUTO; /* none: `plan --device-map` asks for auto */
    }
}

static int pick_dtype(struct accel_setup *a, struct mp_error *err)
{
    const struct config *c = &a->cfg;
    a->dtype = (struct hf_dtype){ .quant = HF_QUANT_NONE, .weight_bits = c->model.weight_bits,
                                  .fp8_block = { 128, 128 } };
    switch (c->device_map.quantization) {
    case DEVMAP_QUANT_AUTO: return hf_read_quantization(a->model_path, &a->dtype, err);
    case DEVMAP_QUANT_BNB_8BIT: a->dtype.quant = HF_QUANT_BNB_8BIT; break;
    case DEVMAP_QUANT_BNB_4BIT: a->dtype.quant = HF_QUANT_BNB_4BIT; break;
    case DEVMAP_QUANT_FP8: a->dtype.quant = HF_QUANT_FP8; break;
    default: break;
    }
    if (a->dtype.quant == HF_QUANT_NONE && c->model.weight_bits != 4 &&
        c->model.weight_bits != 8 && c->model.weight_bits != 16 && c->model.weight_bits != 32)
        return mp_fail(err, MP_ERR_INPUT, "key model.weight_bits = %d: a device map sizes "
                       "weights as a torch dtype: expected 4, 8, 16 or 32",
                       c->model.weight_bits);
    return MP_OK;
}

int accel_setup(struct accel_setup *a, const struct config *cfg, const char *memory_what,
                struct mp_error *err)
{
    memset(a, 0, sizeof *a);
    a->cfg = *cfg;
    int rc = config_check(&a->cfg, err);
    if (rc) return rc;
    const struct config *c = &a->cfg;
    if (c->model.kind != MODEL_TRANSFORMER)
        return mp_fail(err, MP_ERR_INPUT, "key model.kind: a device map needs a model "
                       "(model.kind = transformer), got synthetic");
    if ((rc = config_resolve(c, c->model.config, "models", ".json", a->model_path,
                             sizeof a->model_path, err)) ||
        (rc = model_load_as(&a->model, a->model_path,
                            strcmp(c->model.family, "auto") ? c->model.family : NULL, err)))
        return rc;
    a->has_model = true;
    if ((rc = chip_catalog_load_default(&a->cat, err))) return rc;
    a->has_cat = true;
    char path[1024];
    if ((rc = config_resolve(c, c->hardware.system, "hardware/systems", ".ini", path,
                             sizeof path, err)) ||
        (rc = system_load(&a->sys, path, 0, 1, &a->cat, err)))
        return rc;
    a->has_sys = true;
    /* Accelerate runs in one process on one node: its GPUs are node 0's. */
    a->gpus = a->sys.chips_per_node;
    if ((rc = pick_dtype(a, err))) return rc;
    if ((rc = hf_tree_build(&a->tree, &a->model, &a->dtype, err))) return rc;
    a->has_tree = true;

    char what[CONFIG_STR + 64];
    if (memory_what) snprintf(what, sizeof what, "%s", memory_what);
    else snprintf(what, sizeof what, "%s%skey device_map.max_memory", c->path,
                  c->path[0] ? ": " : "");
    struct dm_params *p = &a->params;
    p->policy = policy_of(c->device_map.policy);
    p->bnb = a->dtype.quant == HF_QUANT_BNB_8BIT || a->dtype.quant == HF_QUANT_BNB_4BIT;
    if (!strcmp(c->device_map.max_memory, "auto")) {
        dm_memory_default(&p->memory, a->gpus, a->sys.chip.mem_bytes,
                          a->sys.host.present ? a->sys.host.mem_bytes : 0);
    } else {
        if ((rc = dm_memory_parse(c->device_map.max_memory, what, &p->memory, err))) return rc;
        for (int i = 0; i < p->memory.n; i++)
            if (p->memory.device[i] >= a->gpus) {
                char has[32];
                if (a->gpus > 1) snprintf(has, sizeof has, "GPUs 0-%d", a->gpus - 1);
                else snprintf(has, sizeof has, "GPU 0 only");
                return mp_fail(err, MP_ERR_INPUT, "%s: GPU %d is beyond %s, which has %s "
                               "(Accelerate would only warn and leave it unused)", what,
                               p->memory.device[i], a->sys.name, has);
            }
        if (dm_memory_find(&p->memory, DM_CPU) >= 0 && !a->sys.host.present)
            return mp_fail(err, MP_ERR_INPUT, "%s: a cpu entry, but %s has no [host] tier "
                           "(host memory and link) to offload to", what, a->sys.name);
    }
    /* Accelerate ignores a disk entry's value, and its disk has no limit;
     * the machine's disk has one. */
    int dk = dm_memory_find(&p->memory, DM_DISK);
    static char disk_what[160];
    p->disk_capacity = a->sys.host.disk_bytes;
    if (!a->sys.host.present || a->sys.host.disk_bytes <= 0)
        snprintf(disk_what, sizeof disk_what, "%s has no disk in its [host] tier", a->sys.name);
    else
        snprintf(disk_what, sizeof disk_what, "%s's [host] disk", a->sys.name);
    if (dk >= 0 && p->memory.bytes[dk] < p->disk_capacity) {
        p->disk_capacity = p->memory.bytes[dk];
        snprintf(disk_what, sizeof disk_what, "the disk entry");
    }
    p->disk_what = disk_what;
    p->memory_what = what; /* for the call only: `what` is local */
    rc = dm_place(&a->map, &a->tree, a->model.n_layers, p, err);
    p->memory_what = NULL;
    a->has_map = true;
    return rc;
}

void accel_setup_release(struct accel_setup *a)
{
    if (a->has_map) dm_release(&a->map);
    if (a->has_tree) hf_tree_release(&a->tree);
    if (a->has_sys) system_release(&a->sys);
    if (a->has_cat) chip_catalog_release(&a->cat);
    if (a->has_model) model_release(&a->model);
    memset(a, 0, sizeof *a);
}

/* ---- reports ------------------------------------------------------------------- */

static void bytes_text(double b, char *buf, size_t n)
{
    if (isinf(b)) snprintf(buf, n, "unlimited");
    else if (b >= 1e12) snprintf(buf, n, "%.2f TB", b / 1e12);
    else snprintf(buf, n, "%.2f GB", b / 1e9);
}

/* A byte count as Python prints the int (or the float after × 0.9). */
static void py_number(FILE *f, double v)
{
    if (v == floor(v)) fprintf(f, "%.0f", v);
    else fprintf(f, "%.1f", v);
}

static void print_dict(FILE *f, const struct dm_memory *mm)
{
    fputc('{', f);
    for (int i = 0; i < mm->n; i++) {
        char dv[16];
        fprintf(f, "%s%s: ", i ? ", " : "", dm_device_repr(mm->device[i], dv, sizeof dv));
        py_number(f, mm->bytes[i]);
    }
    fputc('}', f);
}

static const char *policy_text(enum dm_policy p)
{
    switch (p) {
    case DM_AUTO: return "auto (= balanced)";
    case DM_BALANCED: return "balanced";
    case DM_BALANCED_LOW_0: return "balanced_low_0";
    default: return "sequential";
    }
}

void accel_map_text(FILE *f, const struct accel_setup *a)
{
    const struct dm_result *r = &a->map;
    const struct system *s = &a->sys;
    char b1[32], b2[32], b3[32];
    bytes_text(r->total, b1, sizeof b1);
    fprintf(f, "device map  %s (%s; %s never split), %s: %s\n", a->model.name,
            a->tree.arch_class, a->tree.layer_class, hf_dtype_name(&a->dtype), b1);
    bytes_text(s->chip.mem_bytes, b1, sizeof b1);
    fprintf(f, "machine     %s: %d × %s (%s%s)", s->name, a->gpus, s->chip.name, b1,
            a->gpus > 1 ? " each" : "");
    if (s->host.present) {
        bytes_text(s->host.mem_bytes, b2, sizeof b2);
        fprintf(f, ", host %s over %.2f GB/s per GPU", b2, s->host.link_bw / 1e9);
        if (s->host.disk_bytes > 0) {
            bytes_text(s->host.disk_bytes, b3, sizeof b3);
            fprintf(f, ", disk %s at %.2f GB/s", b3, s->host.disk_bw / 1e9);
        }
    } else {
        fprintf(f, ", no [host] tier");
    }
    fputc('\n', f);
    fprintf(f, "policy      %s", policy_text(r->policy));
    int with_memory = 0;
    for (int i = 0; i < r->given.n; i++) with_memory += r->given.device[i] >= 0 && r->given.bytes[i] > 0;
    if (r->policy != DM_SEQUENTIAL && with_memory > 1)
        fprintf(f, ": every GPU but the last capped at total / GPUs + %.0f (1.25 × max(first "
                   "layer %.0f, mean leaf %.0f))", r->buffer, r->layer_term, r->mean_term);
    else if (r->policy != DM_SEQUENTIAL && with_memory == 1 && !r->given.given)
        fprintf(f, ": one GPU and no max_memory, so 90%% of its memory");
    if (a->params.bnb) fprintf(f, "; bitsandbytes: every entry × 0.9");
    fputc('\n', f);
    fprintf(f, "max_memory  ");
    struct dm_memory got = { 0 };
    for (int i = 0; i < r->n_dev; i++)
        if (r->dev[i].device != DM_DISK) {
            got.device[got.n] = r->dev[i].device;
            got.bytes[got.n++] = r->dev[i].budget;
        }
    print_dict(f, &got);
    fprintf(f, "  %s ", r->given.given ? "from" : "from Accelerate's defaults");
    print_dict(f, &r->given);
    fprintf(f, "\n\nmodel.hf_device_map\n");
    dm_print_python(f, &a->tree, r);
    fprintf(f, "\n  device      weights      budget     reserve  modules\n");
    for (int i = 0; i < r->n_dev; i++) {
        const struct dm_device *d = &r->dev[i];
        if (d->device == DM_DISK && d->weights == 0) continue;
        char dv[16], mods[600];
        dm_device_repr(d->device, dv, sizeof dv);
        if (dv[0] == '\'') { /* 'cpu' -> cpu */
            memmove(dv, dv + 1, strlen(dv));
            dv[strlen(dv) - 1] = '\0';
        }
        bytes_text(d->weights, b1, sizeof b1);
        bytes_text(d->budget, b2, sizeof b2);
        if (d->reserve > 0) bytes_text(d->reserve, b3, sizeof b3);
        else snprintf(b3, sizeof b3, "-");
        dm_device_modules(&a->tree, r, d->device, mods, sizeof mods);
        fprintf(f, "  %-6s %11s %11s %11s  %s\n", dv, b1, b2, b3, mods);
    }
    fprintf(f, "\nreserve: the first GPU and the cpu keep room for the largest layer still to "
               "come (%.0f B at the start)\n", r->largest);
    /* What from_pretrained itself says of such a map (transformers 4.x). */
    double offloaded = 0, on_disk = r->dev[r->n_dev - 1].weights;
    for (int i = 0; i < r->n_dev; i++)
        if (r->dev[i].device < 0) offloaded += r->dev[i].weights;
    if (on_disk > 0)
        fprintf(f, "note: from_pretrained needs an offload_folder for the disk modules\n");
    if (a->params.bnb && offloaded > 0)
        fprintf(f, "note: transformers refuses a bitsandbytes map with cpu or disk modules unless "
                   "the quantization config sets llm_int8_enable_fp32_cpu_offload (they then "
                   "stay in 32 bits)\n");
}

static cJSON *device_json(int device)
{
    if (device == DM_CPU) return cJSON_CreateString("cpu");
    if (device == DM_DISK) return cJSON_CreateString("disk");
    return cJSON_CreateNumber(device);
}

void accel_map_json_into(cJSON *o, const struct accel_setup *a)
{
    const struct dm_result *r = &a->map;
    cJSON_AddStringToObject(o, "model", a->model.name);
    cJSON_AddStringToObject(o, "architecture", a->tree.arch_class);
    cJSON_AddStringToObject(o, "no_split_module", a->tree.layer_class);
    cJSON_AddStringToObject(o, "dtype", hf_dtype_name(&a->dtype));
    cJSON_AddStringToObject(o, "system", a->sys.name);
    cJSON_AddStringToObject(o, "policy", dm_policy_names[r->policy]);
    cJSON_AddNumberToObject(o, "total_bytes", r->total);
    cJSON_AddNumberToObject(o, "largest_layer_bytes", r->largest);
    cJSON_AddNumberToObject(o, "balanced_buffer_bytes", r->buffer);
    cJSON *mm = cJSON_AddObjectToObject(o, "max_memory");
    for (int i = 0; i < r->n_dev; i++) {
        if (r->dev[i].device == DM_DISK) continue;
        char key[16];
        if (r->dev[i].device == DM_CPU) snprintf(key, sizeof key, "cpu");
        else snprintf(key, sizeof key, "%d", r->dev[i].device);
        cJSON_AddNumberToObject(mm, key, r->dev[i].budget);
    }
    cJSON_AddBoolToObject(o, "max_memory_given", r->given.given);
    int *order = mp_xmalloc((size_t)(r->n_map + 1) * sizeof *order);
    dm_model_order(r, order);
    cJSON *map = cJSON_AddArrayToObject(o, "device_map");
    for (int i = 0; i < r->n_map; i++) {
        cJSON *e = cJSON_CreateArray();
        cJSON_AddItemToArray(e, cJSON_CreateString(a->tree.mod[r->map_mod[order[i]]].name));
        cJSON_AddItemToArray(e, device_json(r->map_dev[order[i]]));
        cJSON_AddItemToArray(map, e);
    }
    free(order);
    cJSON *devs = cJSON_AddArrayToObject(o, "devices");
    for (int i = 0; i < r->n_dev; i++) {
        const struct dm_device *d = &r->dev[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "device", device_json(d->device));
        cJSON_AddNumberToObject(e, "weights_bytes", d->weights);
        if (!isinf(d->budget)) cJSON_AddNumberToObject(e, "budget_bytes", d->budget);
        cJSON_AddNumberToObject(e, "reserve_bytes", d->reserve);
        char mods[2048];
        dm_device_modules(&a->tree, r, d->device, mods, sizeof mods);
        cJSON_AddStringToObject(e, "modules", mods);
        cJSON_AddItemToArray(devs, e);
    }
}

void accel_map_json(FILE *f, const struct accel_setup *a)
{
    cJSON *o = cJSON_CreateObject();
    accel_map_json_into(o, a);
    char *text = cJSON_Print(o);
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}
