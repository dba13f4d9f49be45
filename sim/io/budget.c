/* budget.c — work estimates and the budget; see budget.h. */
#include "budget.h"

#include <stdio.h>

#include "units.h"

double work_bytes(const struct work_estimate *w)
{
    double held = w->held > 0 ? w->held : w->events;
    double one = held * WORK_BYTES_PER_EVENT + w->chips * WORK_BYTES_PER_CHIP +
                 w->links * WORK_BYTES_PER_LINK + w->bytes;
    return w->points > 0 && w->jobs > 1 ? one * w->jobs : one;
}

double work_seconds(const struct work_estimate *w)
{
    if (w->points <= 0) return w->events * WORK_SECONDS_PER_EVENT + w->chips * WORK_SECONDS_PER_CHIP;
    double s = w->total_events * WORK_SECONDS_PER_EVENT + w->points * WORK_SECONDS_PER_POINT;
    return w->jobs > 1 ? s / w->jobs : s;
}

void work_format_seconds(double s, char *buf, int size)
{
    if (size <= 0) return;
    if (!(s < 1e15)) snprintf(buf, (size_t)size, "ages");
    else if (s < 60) snprintf(buf, (size_t)size, "%.2g s", s);
    else if (s < 3600) snprintf(buf, (size_t)size, "%.0f min", s / 60);
    else if (s < 86400 * 2) snprintf(buf, (size_t)size, "%.1f h", s / 3600);
    else snprintf(buf, (size_t)size, "%.0f days", s / 86400);
}

int work_check(const struct work_estimate *w, const char *what, const char *hint, bool force,
               struct mp_error *err)
{
    double bytes = work_bytes(w), secs = work_seconds(w);
    if (force || (bytes <= WORK_BUDGET_BYTES && secs <= WORK_BUDGET_SECONDS)) return MP_OK;
    char mem[32], time[32], budget_time[32], parts[160] = "";
    units_format_size(bytes, mem, sizeof mem);
    work_format_seconds(secs, time, sizeof time);
    work_format_seconds(WORK_BUDGET_SECONDS, budget_time, sizeof budget_time);
    int n = 0;
    if (w->points > 0)
        n += snprintf(parts + n, sizeof parts - (size_t)n, "%.0f points, ", w->points);
    if (w->points > 0 && w->total_events > 0)
        n += snprintf(parts + n, sizeof parts - (size_t)n, "%.3g events in all, ",
                      w->total_events);
    else if (w->events > 0)
        n += snprintf(parts + n, sizeof parts - (size_t)n, "%.3g events, ", w->events);
    if (w->chips > 0)
        snprintf(parts + n, sizeof parts - (size_t)n, "%.0f chips, ", w->chips);
    return mp_fail(err, MP_ERR_INPUT,
                   "%s: estimated %s%s of memory and about %s%s: past the work budget of "
                   "4 GiB per run and %s per sweep; pass --force to run it anyway%s%s", what,
                   parts, mem, time, w->jobs > 1 ? " on its threads" : "", budget_time,
                   hint ? ", or " : "", hint ? hint : "");
}
