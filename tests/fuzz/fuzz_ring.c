/* fuzz_ring.c — libFuzzer: the engine's compact ring ops (OP_RING, with
 * the release of a piece left to the next arrival where it can:
 * sim/engine/engine.c, ring_defers / ring_settle) against the same ring
 * expanded into one transfer per piece. The input picks a fabric (a ring
 * of links, a switch, two switched nodes on a fat-tree; latency and
 * bandwidth from the input), the op, 2–16 chips, 1–16 chunks and the
 * bytes. Both runs must finish, at the same picosecond. */
#include <math.h>

#include "hardware/chip.h"
#include "hardware/system.h"
#include "sim/strategy/collective.h"
#include "fuzz.h"

static struct chip_catalog cat;

/* A ring always finishes: stuck is a bug, not an input. */
static mp_time run(const struct system *sys, struct coll_spec *c)
{
    struct mp_error err = { 0 };
    mp_time t;
    if (collective_run_alone(sys, c, &t, NULL, &err) != MP_OK) abort();
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8) return 0;
    struct mp_error err = { 0 };
    if (!cat.n && chip_catalog_load_default(&cat, &err) != MP_OK) abort();
    static const char *const topo[] = { "ring", "switch", "switch" };
    int f = data[0] % 3, n = 2 + data[1] % 15, chunks = 1 + data[2] % 16;
    double lat_ns = data[3] % 4 == 0 ? 0 : 10.0 * data[3];       /* 0 or 10 ns–2.5 us */
    double gbps = 1 + data[4];                                    /* 1–256 GB/s */
    double bytes = pow(2, 3 + data[5] % 28) * (1 + data[6] / 256.0); /* 8 B – ~4 GB */
    static const enum coll_op ops[] = { COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER };
    enum coll_op op = ops[data[7] % 3];
    int per_node = f == 2 ? (n + 1) / 2 : 16;
    char ini[512];
    snprintf(ini, sizeof ini,
             "[system]\nchip = textbook\nchips_per_node = %d\n"
             "[scaleup]\ntopology = %s\nbandwidth = %.0fGB/s\nlatency = %.0fns\n"
             "[scaleout]\ntopology = fat_tree\nbandwidth = %.0fGB/s\nlatency = %.0fns\n",
             per_node, topo[f], gbps, lat_ns, gbps / 4 + 1, lat_ns * 2);
    const char *path = fuzz_file((const uint8_t *)ini, strlen(ini), ".ini");
    struct system sys;
    if (system_load(&sys, path, 0, n, &cat, &err) != MP_OK) return 0; /* a shape it refuses */
    int chips[16];
    for (int i = 0; i < n; i++) chips[i] = i;
    struct coll_spec c = { .op = op, .algo = COLL_RING, .chips = chips, .n = n, .bytes = bytes,
                           .mb = -1, .stage = -1, .chunks = chunks };
    mp_time expanded = run(&sys, &c);
    c.compact = true;
    mp_time compact = run(&sys, &c);
    if (compact != expanded) abort();
    system_release(&sys);
    return 0;
}
