/* serve_router.c — which replica an arriving request goes to: a registry
 * like the schedulers' (`inference.router`), each entry naming the real
 * router it mirrors. The router sees the replicas' state at the arrival:
 * requests outstanding (routed and not done) and, for prefix_aware, the
 * prefix blocks each replica has cached. */
#include "serve_impl.h"

#include <string.h>

/* Round robin: the i-th arrival to replica i mod n (the default of vLLM's
 * production-stack router and of sgl-router's round_robin policy). */
static int pick_round_robin(struct serve *s, const struct serve_request *r, int pool)
{
    (void)r;
    return (int)(s->route_seq % (uint64_t)s->pool[pool].replicas);
}

static int least_outstanding(const struct serve *s, int pool)
{
    const struct serve_pool *P = &s->pool[pool];
    int best = 0;
    for (int i = 1; i < P->replicas; i++)
        if (s->rep[P->rep0 + i].outstanding < s->rep[P->rep0 + best].outstanding) best = i;
    return best;
}

/* Least outstanding requests: the replica with the fewest routed and not
 * done, the lowest index on ties (Envoy's LEAST_REQUEST, sgl-router's
 * shortest_queue). */
static int pick_least(struct serve *s, const struct serve_request *r, int pool)
{
    (void)r;
    return least_outstanding(s, pool);
}

/* Prefix aware: the replica holding the longest cached prefix of the
 * request's prompt (looked up in each of its slots' pools); when none holds
 * any, or when the replicas' loads differ by more than PREFIX_BALANCE
 * requests, the least outstanding one. This is sgl-router's cache_aware
 * policy with the router's approximate tree replaced by the replicas' own
 * caches; PREFIX_BALANCE is an assumption standing for its
 * balance_abs_threshold (load imbalance past which it balances instead). */
#define PREFIX_BALANCE 32

static int pick_prefix(struct serve *s, const struct serve_request *r, int pool)
{
    const struct serve_pool *P = &s->pool[pool];
    int lo = least_outstanding(s, pool), hi = lo;
    for (int i = 0; i < P->replicas; i++)
        if (s->rep[P->rep0 + i].outstanding > s->rep[P->rep0 + hi].outstanding) hi = i;
    if (!s->tree || r->node < 0 ||
        s->rep[P->rep0 + hi].outstanding - s->rep[P->rep0 + lo].outstanding > PREFIX_BALANCE)
        return lo;
    int best = -1, best_hit = 0;
    struct serve_request probe = *r;
    probe.shared = 0;
    for (int i = 0; i < P->replicas; i++) {
        const struct serve_replica *R = &s->rep[P->rep0 + i];
        for (int k = R->slot0; k < R->slot0 + P->slots; k++) {
            int hit = serve_prefix_lookup(s, k, &probe, false);
            if (hit > best_hit ||
                (hit == best_hit && hit > 0 && best >= 0 &&
                 R->outstanding < s->rep[P->rep0 + best].outstanding)) {
                best_hit = hit;
                best = i;
            }
        }
    }
    return best >= 0 ? best : lo;
}

static const struct serve_router routers[] = {
    { "round_robin", "the i-th arrival to replica i mod n (vLLM production-stack's and "
      "sgl-router's round_robin)", pick_round_robin },
    { "least_outstanding", "the replica with the fewest requests routed and not done (Envoy's "
      "LEAST_REQUEST, sgl-router's shortest_queue)", pick_least },
    { "prefix_aware", "the replica with the longest cached prefix of the prompt, else the least "
      "outstanding (sgl-router's cache_aware, on the replicas' own caches)", pick_prefix },
    { NULL, NULL, NULL },
};

const struct serve_router *serve_router_find(const char *name)
{
    for (const struct serve_router *x = routers; x->name; x++)
        if (!strcmp(x->name, name)) return x;
    return NULL;
}

const char *serve_router_name(int i, const char **summary)
{
    if (i < 0 || i >= (int)(sizeof routers / sizeof *routers) - 1) return NULL;
    if (summary) *summary = routers[i].summary;
    return routers[i].name;
}
