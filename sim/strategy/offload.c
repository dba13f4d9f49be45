/* offload.c — copies to and from host memory; see offload.h. */
#include "offload.h"

#include <assert.h>
#include <math.h>

int offload_links(enum offload_kind kind, int n_chips)
{
    return kind == OFFLOAD_NONE ? 0 : 2 * n_chips;
}

int offload_copy(struct taskgraph *g, const struct offload *o, int chip, bool to_host,
                 double bytes, int after, enum mem_cat cat, double alloc, double release)
{
    assert(o->kind != OFFLOAD_NONE && o->host.present && o->host.link_bw > 0);
    /* As system_route_time: latency plus bytes over the bandwidth, in whole
     * picoseconds (1e9 B at 1e11 B/s is exactly 1e10 ps). The latency is in
     * flight, not on the link (engine.h). */
    double ps = bytes * 1e12 / o->host.link_bw;
    mp_time lat = o->host.link_latency;
    mp_time ser = mp_time_from_ps(ps); /* saturates (sim/common.h) */
    mp_time d = ser < MP_TIME_HUGE - lat ? ser + lat : MP_TIME_HUGE;
    struct op c = tg_op(OP_TRANSFER, chip, to_host ? STREAM_TO_HOST : STREAM_FROM_HOST,
                        to_host ? TAG_OFFLOAD : TAG_RELOAD, d);
    c.latency = d - ser < lat ? d - ser : lat;
    c.bytes = bytes;
    c.comm = COMM_HOST;
    c.alloc_cat = c.free_cat = (uint8_t)cat;
    c.alloc_bytes = alloc;
    c.free_bytes = release;
    int link = o->link_base + 2 * chip + (to_host ? 0 : 1);
    int id = tg_add_transfer(g, &c, &link, 1);
    if (after >= 0) tg_dep(g, after, id);
    return id;
}
