/* cost.c — money and chip time of a step; see cost.h. */
#include "cost.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char cost_expect_tokens[] =
    "a token count > 0 such as 1T, 300B, 2.5M, 1500k or 1e12";

void cost_compute(struct cost *c, const struct chip *chip, int n_chips, double step_s,
                  double tokens_per_step, double budget_tokens)
{
    memset(c, 0, sizeof *c);
    c->budget_tokens = budget_tokens > 0 ? budget_tokens : COST_DEFAULT_BUDGET;
    if (chip && chip->price_hour_usd > 0) {
        c->basis = COST_HOURLY;
        c->usd_per_chip_hour = chip->price_hour_usd;
    } else if (chip && chip->price_usd > 0) {
        c->basis = COST_PURCHASE;
        c->usd_per_chip_hour = chip->price_usd / COST_AMORTIZE_HOURS;
    } else {
        c->basis = COST_UNKNOWN;
    }
    if (n_chips <= 0 || !(step_s > 0) || !(tokens_per_step > 0)) return;
    c->chip_hours_per_step = n_chips * step_s / 3600.0;
    double steps = c->budget_tokens / tokens_per_step;
    c->budget_chip_hours = c->chip_hours_per_step * steps;
    c->budget_days = step_s * steps / 86400.0;
    if (c->basis == COST_UNKNOWN) return;
    c->usd_per_step = c->chip_hours_per_step * c->usd_per_chip_hour;
    c->usd_per_mtok = c->usd_per_step * 1e6 / tokens_per_step;
    c->budget_usd = c->budget_chip_hours * c->usd_per_chip_hour;
}

const char *cost_basis_name(int basis)
{
    switch (basis) {
    case COST_HOURLY: return "hourly";
    case COST_PURCHASE: return "purchase over 3 years";
    default: return "unknown";
    }
}

int cost_parse_tokens(const char *text, double *out)
{
    const char *s = text;
    while (isspace((unsigned char)*s)) s++;
    /* strtod would also take "inf", "nan" and hex; a count is digits. */
    if (!isdigit((unsigned char)*s) && *s != '.') return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE) return -1;
    while (isspace((unsigned char)*end)) end++;
    double scale = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': scale = 1e3; end++; break;
    case 'm': scale = 1e6; end++; break;
    case 'b': case 'g': scale = 1e9; end++; break;
    case 't': scale = 1e12; end++; break;
    case 'p': scale = 1e15; end++; break;
    default: break;
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end || !isfinite(v * scale) || !(v > 0)) return -1;
    *out = v * scale;
    return 0;
}
