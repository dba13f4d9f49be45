/* collective.c — ring collectives as transfers; see collective.h. */
#include "collective.h"

#include <assert.h>
#include <stdlib.h>

#define MAX_ROUTE 256

void collective_ring_all_reduce(struct taskgraph *g, const struct system *sys,
                                const int *chips, int n, double bytes,
                                const int *ready, int *done)
{
    if (n <= 1) {
        for (int i = 0; i < n; i++) done[i] = ready[i];
        return;
    }
    double chunk = bytes / n;
    int *prev = mp_xmalloc((size_t)n * sizeof *prev); /* last transfer sent by chip i */
    int *cur = mp_xmalloc((size_t)n * sizeof *cur);
    int links[MAX_ROUTE];
    for (int step = 0; step < 2 * (n - 1); step++) {
        for (int i = 0; i < n; i++) {
            int src = chips[i], dst = chips[(i + 1) % n];
            int nl = system_route(sys, src, dst, links, MAX_ROUTE);
            assert(nl <= MAX_ROUTE);
            struct op o = tg_op(OP_TRANSFER, src, STREAM_COMM, TAG_ALL_REDUCE,
                                system_route_time(sys, links, nl, chunk));
            o.bytes = chunk;
            cur[i] = tg_add_transfer(g, &o, links, nl);
            if (step == 0) {
                if (ready[i] >= 0) tg_dep(g, ready[i], cur[i]);
            } else {
                /* What chip i sends at this step is what it received last step. */
                tg_dep(g, prev[(i + n - 1) % n], cur[i]);
            }
        }
        int *t = prev; prev = cur; cur = t;
    }
    for (int i = 0; i < n; i++) done[i] = prev[(i + n - 1) % n];
    free(prev);
    free(cur);
}

mp_time collective_ring_all_reduce_time(const struct system *sys, const int *chips, int n,
                                        double bytes)
{
    if (n <= 1) return 0;
    int links[MAX_ROUTE];
    mp_time slowest = 0;
    for (int i = 0; i < n; i++) {
        int nl = system_route(sys, chips[i], chips[(i + 1) % n], links, MAX_ROUTE);
        assert(nl <= MAX_ROUTE);
        mp_time t = system_route_time(sys, links, nl, bytes / n);
        if (t > slowest) slowest = t;
    }
    return 2 * (mp_time)(n - 1) * slowest;
}
