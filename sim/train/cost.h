/* cost.h — what a training step costs in money and chip time, from the
 * prices in hardware/chips.csv.
 *
 * The catalogue gives a chip either a cloud price per chip-hour
 * (price_hour_usd) or a purchase price (price_usd), or neither. A chip-hour
 * is priced at price_hour_usd when the catalogue has it; otherwise the
 * purchase price is spread over COST_AMORTIZE_HOURS of continuous use (three
 * years, the usual depreciation period of accelerators). That second figure
 * is the chip alone: power, hosting, networking and staff are not in it, so
 * it reads as a lower bound, and the report says which basis it used.
 *
 *   $ per step          = chips × step_s / 3600 × $ per chip-hour
 *   $ per million tok   = $ per step × 1e6 / tokens per step
 *   chip-hours (budget) = chips × step_s / 3600 × budget / tokens per step
 *   days (budget)       = step_s × budget / tokens per step / 86400 */
#ifndef MPSIM_COST_H
#define MPSIM_COST_H

#include <stdbool.h>

#include "hardware/chip.h"

#define COST_AMORTIZE_HOURS (3.0 * 365.0 * 24.0)
/* The token budget reported when none is given: 1T tokens, the order of a
 * modern pre-training run (Chinchilla-optimal 70B is 1.4T). */
#define COST_DEFAULT_BUDGET 1e12

enum cost_basis {
    COST_UNKNOWN,  /* the catalogue has no price for the chip */
    COST_HOURLY,   /* price_hour_usd */
    COST_PURCHASE, /* price_usd over COST_AMORTIZE_HOURS */
};

struct cost {
    int basis;                  /* enum cost_basis */
    double usd_per_chip_hour;   /* 0 when unknown */
    double chip_hours_per_step; /* known even without a price */
    double usd_per_step;        /* 0 when unknown */
    double usd_per_mtok;        /* per million tokens; 0 when unknown */
    double budget_tokens;       /* the token budget the next three refer to */
    double budget_chip_hours;
    double budget_usd;          /* 0 when unknown */
    double budget_days;         /* wall-clock days at this step time */
};

/* Price one step of `n_chips` chips lasting `step_s` seconds that trains
 * on `tokens_per_step` tokens; `budget_tokens` ≤ 0 means
 * COST_DEFAULT_BUDGET. A zero step time or token count leaves the rates 0. */
void cost_compute(struct cost *c, const struct chip *chip, int n_chips, double step_s,
                  double tokens_per_step, double budget_tokens);

/* "hourly", "purchase over 3 years" or "unknown", for reports. */
const char *cost_basis_name(int basis);

/* A token count as people write it: "1T", "300B", "2.5M", "1500k",
 * "1e12" or a plain number (suffixes are powers of 1000, any case).
 * Returns 0, or -1 when the text is not of that form or not > 0. */
int cost_parse_tokens(const char *text, double *out);

/* What cost_parse_tokens accepts, for "expected ..." in messages. */
extern const char cost_expect_tokens[];

#endif
