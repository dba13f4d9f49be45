/* device_map.h — what `from_pretrained(device_map="auto")` does with a model
 * on a machine: Accelerate's infer_auto_device_map as Transformers 4.x calls
 * it (shared/reference/device-map.md is the specification; section numbers
 * below are its).
 *
 *   max_memory   parsed as get_max_memory / convert_file_size_to_int read it
 *                (§2): device ids, "cpu", "disk"; GiB/MiB/KiB are powers of
 *                two, GB/MB/KB powers of ten, a trailing lower-case "b"
 *                means bits; reordered GPUs ascending, cpu, disk.
 *   budgets      get_balanced_memory for auto, balanced and balanced_low_0
 *                (§4): total / n GPUs plus 1.25 × the larger of the first
 *                decoder layer and the mean leaf module, every GPU but the
 *                last capped to it; sequential keeps the parsed values.
 *                bitsandbytes multiplies every entry by 0.9 (§1.5).
 *   placement    modules in order (§5), a decoder layer never split, the
 *                first GPU and the cpu keeping room for the largest layer
 *                still to come, a tied head placed with its embedding; what
 *                fits nowhere lands on disk.
 *   the map      clean_device_map's collapsing (§5.4), printed as
 *                model.hf_device_map prints.
 *
 * Departures, each a Transformers crash or a silent warning that mpsim
 * turns into an error: a GPU id the system does not have (Accelerate only
 * warns), and a `disk` entry with a balanced policy (transformers 4.x fails
 * building torch.device("disk")). Accelerate's disk has no limit; mpsim
 * checks what lands there against the machine's [host] disk (or the disk
 * entry, if given) and calls it infeasible when it does not fit. */
#ifndef MPSIM_DEVICE_MAP_H
#define MPSIM_DEVICE_MAP_H

#include <stdbool.h>
#include <stdio.h>

#include "hf_modules.h"
#include "sim/common.h"

enum dm_policy { DM_AUTO, DM_BALANCED, DM_BALANCED_LOW_0, DM_SEQUENTIAL };

/* "auto|balanced|balanced_low_0|sequential", in enum order. */
extern const char *const dm_policy_names[];

/* Parse a policy name; MP_ERR_INPUT "WHAT: expected auto, balanced,
 * balanced_low_0 or sequential, got 'x' (did you mean 'y'?)". */
int dm_policy_parse(const char *text, const char *what, enum dm_policy *out,
                    struct mp_error *err);

/* Devices: a GPU is its id (>= 0). */
#define DM_CPU (-1)
#define DM_DISK (-2)
#define DM_MAX_GPUS 256
#define DM_MAX_DEVICES (DM_MAX_GPUS + 2)

/* A max_memory dict in Accelerate's device order. */
struct dm_memory {
    int n;
    int device[DM_MAX_DEVICES];
    double bytes[DM_MAX_DEVICES]; /* the disk entry's value is kept, never a limit */
    bool given;                   /* written by the user (else Accelerate's defaults) */
};

/* One size as convert_file_size_to_int reads it (§2.2): a bare whole number
 * is bytes; "10GiB" 10 × 2^30, "10GB" 10 × 10^9, "10Gb" bits (÷ 8, integer);
 * the number may be fractional and the product is truncated. 0 or -1. */
int dm_parse_size(const char *text, double *out);

/* Parse "0=10GiB,1=10GiB,cpu=64GiB" (also "0:10GiB"). MP_ERR_INPUT names
 * `what` (the flag or key) and the entry: an unknown device, a size with an
 * unknown unit, a device given twice, more than DM_MAX_GPUS GPUs. */
int dm_memory_parse(const char *text, const char *what, struct dm_memory *out,
                    struct mp_error *err);

/* Accelerate's defaults when no max_memory is given (§2.1): each of `gpus`
 * GPUs its memory, then cpu = host memory when `host_bytes` > 0. */
void dm_memory_default(struct dm_memory *out, int gpus, double gpu_bytes, double host_bytes);

/* Index of `device` in `mm`, or -1. */
int dm_memory_find(const struct dm_memory *mm, int device);

/* "0", "'cpu'", "'disk'": a device as a Python dict value. */
const char *dm_device_repr(int device, char *buf, size_t size);

struct dm_device {
    int device;          /* GPU id, DM_CPU or DM_DISK */
    double budget;       /* the max_memory entry infer_auto_device_map got (disk: INFINITY) */
    double reserve;      /* room kept for the largest layer when this device was left
                            (main devices only: the first GPU and the cpu) */
    double weights;      /* bytes of the modules placed here, ties counted once */
    double stream_bytes; /* bytes its modules move per forward when offloaded */
};

struct dm_result {
    enum dm_policy policy;
    struct dm_memory given;   /* what was asked for (or the defaults) */
    double total;             /* module_sizes[""] */
    double layer_term, mean_term, buffer; /* get_balanced_memory's (0 for sequential) */
    double largest;           /* the largest layer at the start (§3.3) */
    int n_dev;                /* devices in order, disk last */
    struct dm_device dev[DM_MAX_DEVICES];
    int *placed_mod, *placed_dev; /* infer_auto_device_map's map before cleaning */
    int n_placed;
    int *map_mod, *map_dev;   /* the cleaned map (hf_device_map), in its dict order */
    int n_map;
    int *layer_dev;           /* [model n_layers]: the device holding each model layer */
    int main_gpu;             /* where cpu/disk modules run: the first GPU in the map, or
                                 DM_CPU when none */
};

struct dm_params {
    enum dm_policy policy;
    struct dm_memory memory;  /* parsed (given = true) or dm_memory_default */
    bool bnb;                 /* bitsandbytes: every entry × 0.9 */
    double disk_capacity;     /* bytes the disk may hold (0: no disk) */
    const char *disk_what;    /* where that figure comes from, for messages */
    const char *memory_what;  /* the flag or key to name in messages */
};

/* Place the tree. MP_ERR_INPUT for a disk entry with a balanced policy;
 * MP_ERR_INFEASIBLE when what lands on disk exceeds disk_capacity (the
 * message has every device's share). Always call dm_release. `n_layers` is
 * the model's (for layer_dev). */
int dm_place(struct dm_result *r, const struct hf_tree *t, int n_layers,
             const struct dm_params *p, struct mp_error *err);
void dm_release(struct dm_result *r);

/* The map as `print(model.hf_device_map)` shows it: {'model.embed_tokens': 0, ...}. */
void dm_print_python(FILE *f, const struct hf_tree *t, const struct dm_result *r);

/* The map's entries sorted into model order (indices into map_mod/map_dev):
 * `order` has room for n_map. */
void dm_model_order(const struct dm_result *r, int *order);

/* "model.embed_tokens, model.layers.0-13": the modules placed on `device`
 * (before cleaning), consecutive decoder layers as a range. */
void dm_device_modules(const struct hf_tree *t, const struct dm_result *r, int device,
                       char *buf, size_t size);

#endif
