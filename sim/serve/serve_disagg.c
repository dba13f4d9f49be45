/* serve_disagg.c — disaggregated prefill and decode (inference.disaggregate;
 * DistServe, Splitwise; vLLM's and SGLang's P/D disaggregation): pool 0's
 * replicas only prefill, pool 1's only decode, and each request's KV goes
 * from one to the other over the system's links.
 *
 * A request is routed to a prefill replica on arrival (inference.router).
 * The pass that ends its prompt samples its first token; the request then
 * leaves the prefill replica and its KV is sent: from each prefill stage's
 * lane chip to the lane chip of the decode stage holding the same first
 * layer, prompt × the stage's KV bytes per token (per chip: each rank of a
 * tensor-parallel group sends its own shard over its own links at the same
 * time, the symmetric ranks simulated once), as one transfer per stage that
 * holds every link of its route for its bytes' serialisation and arrives a
 * route latency later — queued behind whatever holds those links (other
 * requests' KV, pipeline hand-offs): contention is simulated. The decode
 * replica is picked when the prefill ends, by the same router over the
 * decode pool. The first token reaches the user with the KV (TTFT =
 * arrival to the last stage's transfer arriving, the prefill and the
 * transfer included); the request then waits for a seat on the decode
 * replica like any other, its prompt's KV held, and decodes the rest. The
 * prefill replica frees its blocks when the transfer has arrived (the
 * decode side has read them). */
#include "serve_impl.h"

#include <math.h>
#include <stdlib.h>

void serve_disagg_send(struct serve *s, struct serve_request *r, mp_time now)
{
    const struct serve_pool *P = &s->pool[0], *D = &s->pool[1];
    const struct serve_router *rt = serve_router_find(s->cfg.inference.router);
    int from = r->replica;
    s->rep[from].outstanding--;
    s->inflight--;
    int idx = D->replicas == 1 ? 0 : rt->pick(s, r, 1);
    int to = D->rep0 + idx;
    const struct serve_replica *Rp = &s->rep[from], *Rd = &s->rep[to];
    mp_time arrive = now;
    int stack[64], *buf;
    for (int st = 0; st < P->stages; st++) {
        const struct plan_stage *ps = &P->pr->plan.stage[st];
        /* The decode stage holding this stage's first layer. */
        int dst = 0;
        while (dst + 1 < D->stages && D->pr->plan.stage[dst].last < ps->first) dst++;
        int a = s->stage_chip[Rp->stage0 + st], b = s->stage_chip[Rd->stage0 + dst];
        double bytes = plan_stage_request_bytes(ps, r->prompt);
        s->res.kv_transfer_bytes += bytes;
        if (a == b || bytes <= 0) continue;
        int len = system_route_buf(&s->sys, a, b, stack, 64, &buf);
        mp_time start = now, lat = system_route_time(&s->sys, buf, len, 0);
        double bw = INFINITY;
        for (int i = 0; i < len; i++) {
            if (s->link_free[buf[i]] > start) start = s->link_free[buf[i]];
            if (s->sys.links[buf[i]].bw < bw) bw = s->sys.links[buf[i]].bw;
        }
        mp_time ser = isinf(bw) ? 0 : mp_time_from_ps(bytes / bw * 1e12);
        for (int i = 0; i < len; i++) s->link_free[buf[i]] = start + ser;
        if (buf != stack) free(buf);
        if (start + ser + lat > arrive) arrive = start + ser + lat;
    }
    r->replica = to;
    s->rep[to].outstanding++;
    s->rep[to].routed++;
    serve_hist_transfer(s, arrive - now);
    serve_schedule(s, arrive, EV_KV_ARRIVE, (int)(r - s->req));
}

void serve_disagg_arrive(struct serve *s, int id, mp_time now)
{
    struct serve_request *r = &s->req[id];
    /* The prefill replica lets the blocks go; the decode replica will take
     * its own when it admits the request. */
    int kv = r->kv;
    serve_kv_free(s, r->slot, r, false);
    serve_kv_account(s, s->slot_rep[r->slot]);
    r->kv = kv;
    r->slot = -1;
    r->first_token = now;
    r->last_emit = now;
    serve_wait_push(s, r->replica, id, false);
    serve_wake_idle(s, r->replica, now);
    serve_kv_log(s, now);
}
