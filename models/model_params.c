/* model_params.c — a model's parameter counts by the conventions vendors
 * publish, by group, and the MTP modules'; see model.h. */
#include "model_impl.h"

#include <string.h>

double model_params(const struct model *m)
{
    double sum = 0;
    for (int i = 0; i < m->n_layers; i++) sum += m->layer[i].params;
    return sum;
}

double model_active_params(const struct model *m)
{
    double sum = 0;
    for (int i = 0; i < m->n_layers; i++) sum += m->layer[i].active_params;
    return sum;
}

void model_param_counts(const struct model *m, struct model_counts *total,
                        struct model_counts *active)
{
    struct model_counts t = {0}, a = {0};
    for (int i = 0; i < m->n_layers; i++) {
        const struct layer *L = &m->layer[i];
        t.all += L->params;
        a.all += L->active_params;
        if (L->kind == LAYER_DECODER) {
            t.decoders += L->params;
            a.decoders += L->active_params;
        }
    }
    /* Without the embedding table; a tied table stays as the head's weights. */
    double table = m->n_layers ? m->layer[0].params : 0;
    double head_share = m->tied_embeddings ? (double)m->vocab * m->hidden : 0;
    t.no_embedding = t.all - table + head_share;
    a.no_embedding = a.all - table + head_share;
    if (total) *total = t;
    if (active) *active = a;
}

double model_mtp_params(const struct model *m) { return m->mtp_modules * m->mtp.params; }

void model_param_groups(const struct model *m, double out[N_PARAM_GROUPS])
{
    memset(out, 0, N_PARAM_GROUPS * sizeof *out);
    if (!m->n_layers) return;
    double h = m->hidden, V = m->vocab;
    const struct layer *e = &m->layer[0], *head = &m->layer[m->n_layers - 1];
    double embed_norm = m->embed_norm ? m->norm_params : 0;
    out[PG_EMBEDDING] += e->params - embed_norm;
    out[PG_NORM] += embed_norm + m->norm_params;
    out[PG_HEAD] += m->tied_embeddings ? 0 : V * h;
    (void)head;
    for (int i = 1; i <= m->decoders; i++) {
        const struct layer *L = &m->layer[i];
        double norms = (double)m->norms_per_layer * m->norm_params;
        double router = 0;
        if (L->mlp == MLP_MOE) {
            router = h * m->experts + (m->bias & BIAS_ROUTER ? m->experts : 0) +
                     (m->family && m->family->score_bias ? m->experts : 0);
        }
        out[PG_NORM] += norms;
        out[PG_MIXER] += L->mixer_params;
        out[PG_ROUTER] += router;
        out[PG_EXPERTS] += L->expert_params;
        out[PG_MLP] += L->params - norms - L->mixer_params - router - L->expert_params;
    }
}
