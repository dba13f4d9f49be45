/* units.c — numbers with units, see units.h.
 *
 * Numbers are scanned by hand rather than with strtod(): strtod() accepts
 * "nan", "inf", hex floats and a leading sign, none of which belong in a
 * scenario file, and a duration must land on an exact picosecond. So a number
 * is first split into its decimal digits and a power of ten; durations are
 * then rounded with integer arithmetic, and sizes/bandwidths go through
 * strtod() on a normalised "DIGITSeN" string, which is correctly rounded
 * (so "1.2Tb/s" is exactly 150e9 B/s, not 1.2 × 1e12 / 8 with two roundings). */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char units_expect_duration[] =
    "a duration such as 1ms or 2.5us (units ps, ns, us, ms, s)";
const char units_expect_size[] =
    "a size such as 16GiB, 44GB or 1024 (bytes; B, KB, MB, GB, TB or KiB, MiB, GiB, TiB)";
const char units_expect_bandwidth[] =
    "a bandwidth above zero such as 450GB/s or 400Gb/s (B = bytes, b = bits), or inf";
const char units_expect_bool[] = "true or false (also yes/no, on/off, 1/0)";

/* Longer input is certainly a mistake, and the bound keeps buffers fixed. */
#define NUM_MAX_DIGITS 64

/* A non-negative decimal number: value = digits × 10^exp10. `digits` has no
 * leading zeros ("" means zero). */
struct decimal {
    char digits[NUM_MAX_DIGITS + 1];
    int ndigits;
    long exp10;
};

static const char *skip_space(const char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    return s;
}

/* True when only whitespace is left. */
static bool at_end(const char *s) { return *skip_space(s) == '\0'; }

/* Scan [digits][.digits][e[+-]digits] at `s` (no sign: negatives are never
 * valid here). Returns the first character after the number, or NULL when
 * there is no number or it is too long. */
static const char *scan_decimal(const char *s, struct decimal *d)
{
    int seen = 0;
    long frac = 0;
    bool in_frac = false;
    d->ndigits = 0;
    d->exp10 = 0;
    for (;; s++) {
        if (*s == '.' && !in_frac) {
            in_frac = true;
            continue;
        }
        if (!isdigit((unsigned char)*s)) break;
        seen++;
        if (in_frac) frac++;
        if (d->ndigits == 0 && *s == '0') continue; /* leading zero */
        if (d->ndigits == NUM_MAX_DIGITS) return NULL;
        d->digits[d->ndigits++] = *s;
    }
    if (seen == 0) return NULL;
    d->digits[d->ndigits] = '\0';
    long exp = 0;
    if ((*s == 'e' || *s == 'E') &&
        (isdigit((unsigned char)s[1]) ||
         ((s[1] == '+' || s[1] == '-') && isdigit((unsigned char)s[2])))) {
        /* A unit never starts with e, so "1e3ns" is unambiguous. */
        s++;
        int sign = 1;
        if (*s == '+' || *s == '-') sign = (*s++ == '-') ? -1 : 1;
        for (; isdigit((unsigned char)*s); s++) {
            if (exp > 100000) return NULL; /* absurd; avoid overflow */
            exp = exp * 10 + (*s - '0');
        }
        exp *= sign;
    }
    d->exp10 = exp - frac;
    return s;
}

/* The decimal times 10^shift, correctly rounded to a double. */
static double decimal_to_double(const struct decimal *d, int shift)
{
    if (d->ndigits == 0) return 0.0;
    char buf[NUM_MAX_DIGITS + 32];
    snprintf(buf, sizeof buf, "%se%ld", d->digits, d->exp10 + shift);
    errno = 0;
    return strtod(buf, NULL); /* overflow gives HUGE_VAL, checked by callers */
}

/* The decimal times 10^shift, rounded to the nearest integer (halves up).
 * -1 when it does not fit in int64. */
static int decimal_to_int64(const struct decimal *d, int shift, int64_t *out)
{
    long e = d->exp10 + shift;
    int keep = d->ndigits; /* digits before the decimal point */
    if (e < 0) keep = (-e >= d->ndigits) ? 0 : d->ndigits + (int)e;
    int64_t v = 0;
    for (int i = 0; i < keep; i++) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, d->digits[i] - '0', &v))
            return -1;
    }
    if (e > 0) {
        if (v != 0 && e > 19) return -1;
        for (long i = 0; i < e && v != 0; i++)
            if (__builtin_mul_overflow(v, 10, &v)) return -1;
    } else if (e < 0) {
        /* The first dropped digit decides; it exists only if -e ≤ ndigits. */
        int first = d->ndigits + (int)(e < -100000 ? -100000 : e);
        if (first >= 0 && first < d->ndigits && d->digits[first] >= '5')
            if (__builtin_add_overflow(v, 1, &v)) return -1;
    }
    *out = v;
    return 0;
}

/* ---- durations ---------------------------------------------------------- */

struct unit {
    const char *name;
    int exp10;   /* power of ten of the unit */
    int exp2;    /* power of two (binary prefixes) */
    int bits;    /* 1 when the unit counts bits (÷ 8) */
};

static const struct unit duration_units[] = {
    {"ps", 0, 0, 0},  {"ns", 3, 0, 0},  {"us", 6, 0, 0},
    {"\xc2\xb5s", 6, 0, 0}, /* µs, MICRO SIGN */
    {"\xce\xbcs", 6, 0, 0}, /* μs, GREEK SMALL LETTER MU */
    {"ms", 9, 0, 0},  {"s", 12, 0, 0},  {NULL, 0, 0, 0},
};

/* Match the rest of the text (trailing whitespace allowed) against a table. */
static const struct unit *match_unit(const struct unit *table, const char *s)
{
    s = skip_space(s);
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    for (const struct unit *u = table; u->name; u++)
        if (strlen(u->name) == n && memcmp(u->name, s, n) == 0) return u;
    return NULL;
}

int units_parse_duration(const char *text, mp_time *out)
{
    struct decimal d;
    const char *rest = scan_decimal(skip_space(text), &d);
    if (!rest) return -1;
    if (at_end(rest)) {
        /* Zero is zero in every unit; any other bare number is ambiguous. */
        if (d.ndigits != 0) return -1;
        *out = 0;
        return 0;
    }
    const struct unit *u = match_unit(duration_units, rest);
    if (!u) return -1;
    int64_t v;
    if (decimal_to_int64(&d, u->exp10, &v) != 0) return -1;
    *out = v;
    return 0;
}

/* ---- sizes and bandwidths ----------------------------------------------- */

/* Byte and bit units. Upper-case K is accepted as well as SI's k, because
 * "KB" is what people write; all other letters are case-sensitive, since b
 * (bit) and B (byte) differ by 8. */
static const struct unit size_units[] = {
    {"B", 0, 0, 0},
    {"kB", 3, 0, 0},   {"KB", 3, 0, 0},   {"MB", 6, 0, 0},   {"GB", 9, 0, 0},
    {"TB", 12, 0, 0},  {"PB", 15, 0, 0},
    {"KiB", 0, 10, 0}, {"MiB", 0, 20, 0}, {"GiB", 0, 30, 0}, {"TiB", 0, 40, 0},
    {"PiB", 0, 50, 0},
    {"b", 0, 0, 1},
    {"kb", 3, 0, 1},   {"Kb", 3, 0, 1},   {"Mb", 6, 0, 1},   {"Gb", 9, 0, 1},
    {"Tb", 12, 0, 1},  {"Pb", 15, 0, 1},
    {"Kib", 0, 10, 1}, {"Mib", 0, 20, 1}, {"Gib", 0, 30, 1}, {"Tib", 0, 40, 1},
    {"Pib", 0, 50, 1},
    {NULL, 0, 0, 0},
};

static double apply_unit(const struct decimal *d, const struct unit *u)
{
    double v = decimal_to_double(d, u->exp10);
    v = ldexp(v, u->exp2);
    if (u->bits) v /= 8; /* exact: a power of two */
    return v;
}

int units_parse_size(const char *text, double *out)
{
    struct decimal d;
    const char *rest = scan_decimal(skip_space(text), &d);
    if (!rest) return -1;
    double v;
    if (at_end(rest)) {
        v = decimal_to_double(&d, 0); /* plain number: bytes */
    } else {
        const struct unit *u = match_unit(size_units, rest);
        /* A size in bits is far more often a typo for bytes than meant. */
        if (!u || u->bits) return -1;
        v = apply_unit(&d, u);
    }
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

int units_parse_bandwidth(const char *text, double *out)
{
    const char *s = skip_space(text);
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    if ((n == 3 && strncasecmp(s, "inf", 3) == 0) ||
        (n == 8 && strncasecmp(s, "infinity", 8) == 0)) {
        *out = INFINITY;
        return 0;
    }
    struct decimal d;
    const char *rest = scan_decimal(s, &d);
    if (!rest || rest >= s + n) return -1; /* no unit */
    rest = skip_space(rest);
    /* Split "<unit>/s" or "<unit>ps" (Gbps, GBps) into the unit and rate. */
    char unit[16];
    size_t len = n - (size_t)(rest - s);
    if (len >= 2 && rest[len - 2] == '/' && rest[len - 1] == 's') len -= 2;
    else if (len >= 3 && rest[len - 2] == 'p' && rest[len - 1] == 's' &&
             (rest[len - 3] == 'b' || rest[len - 3] == 'B')) len -= 2;
    else return -1;
    if (len == 0 || len >= sizeof unit) return -1;
    memcpy(unit, rest, len);
    unit[len] = '\0';
    const struct unit *u = match_unit(size_units, unit);
    if (!u) return -1;
    double v = apply_unit(&d, u);
    /* A zero-rate link can carry nothing: an instant one is spelled inf. */
    if (!isfinite(v) || v <= 0) return -1;
    *out = v;
    return 0;
}

/* ---- plain values ------------------------------------------------------- */

int units_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    const char *s = skip_space(text);
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strlen(yes[i]) == n && strncasecmp(s, yes[i], n) == 0) {
            *out = true;
            return 0;
        }
        if (strlen(no[i]) == n && strncasecmp(s, no[i], n) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int units_parse_int(const char *text, long long min, long long max, long long *out)
{
    const char *s = skip_space(text);
    /* strtoll would skip whitespace after a sign and accept "0x"-less junk
     * like "+ 5"; require a digit right after an optional sign. */
    const char *p = (*s == '-' || *s == '+') ? s + 1 : s;
    if (!isdigit((unsigned char)*p)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || !at_end(end)) return -1;
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

int units_parse_double(const char *text, double *out)
{
    const char *s = skip_space(text);
    const char *p = (*s == '-' || *s == '+') ? s + 1 : s;
    /* Refuse "inf", "nan" and hex floats, which strtod would take. */
    if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
        return -1;
    if (strpbrk(s, "xX")) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!at_end(end) || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* ---- formatting --------------------------------------------------------- */

/* Four significant digits without switching to exponent notation. */
static void format_scaled(double v, const char *unit, char *buf, int size)
{
    if (v >= 1000) snprintf(buf, (size_t)size, "%.0f %s", v, unit);
    else snprintf(buf, (size_t)size, "%.4g %s", v, unit);
}

void units_format_duration(mp_time t, char *buf, int size)
{
    static const struct { const char *name; double ps; } scale[] = {
        {"s", 1e12}, {"ms", 1e9}, {"us", 1e6}, {"ns", 1e3}, {"ps", 1},
    };
    if (size <= 0) return;
    double v = (double)t; /* double: |INT64_MIN| has no int64 */
    const char *sign = "";
    if (v < 0) {
        sign = "-";
        v = -v;
    }
    size_t i = 0;
    while (i + 1 < sizeof scale / sizeof *scale && v < scale[i].ps) i++;
    char tmp[64];
    format_scaled(v / scale[i].ps, scale[i].name, tmp, sizeof tmp);
    snprintf(buf, (size_t)size, "%s%s", sign, tmp);
}

void units_format_size(double bytes, char *buf, int size)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (size <= 0) return;
    if (isnan(bytes)) {
        snprintf(buf, (size_t)size, "nan");
        return;
    }
    if (isinf(bytes)) {
        snprintf(buf, (size_t)size, "%sinf", bytes < 0 ? "-" : "");
        return;
    }
    double v = fabs(bytes);
    size_t i = 0;
    while (i + 1 < sizeof names / sizeof *names && v >= 1024) {
        v /= 1024;
        i++;
    }
    char tmp[64];
    format_scaled(v, names[i], tmp, sizeof tmp);
    snprintf(buf, (size_t)size, "%s%s", bytes < 0 ? "-" : "", tmp);
}

/* Sign and magnitude apart: the magnitude of INT64_MIN needs the unsigned type. */
static void format_exact(mp_time t, uint64_t per_unit, int digits, char *buf, int size)
{
    if (size <= 0) return;
    uint64_t a = t < 0 ? (uint64_t)0 - (uint64_t)t : (uint64_t)t;
    snprintf(buf, (size_t)size, "%s%" PRIu64 ".%0*" PRIu64, t < 0 ? "-" : "", a / per_unit,
             digits, a % per_unit);
}

void units_format_seconds_exact(mp_time t, char *buf, int size)
{
    format_exact(t, (uint64_t)MP_PS_PER_S, 12, buf, size);
}

long long units_trace_ticks(mp_time t)
{
    /* ps × 1024 / 10^6 = ps × 128 / 125000, rounded half up. */
    return (long long)(((__int128)t * 128 + 62500) / 125000);
}

void units_format_trace_ticks(long long k, char *buf, int size)
{
    if (size <= 0) return;
    long long whole = k / 1024, frac = (k % 1024) * 9765625LL; /* 10^10 / 1024 */
    if (!frac) {
        snprintf(buf, (size_t)size, "%lld", whole);
        return;
    }
    int n = snprintf(buf, (size_t)size, "%lld.%010lld", whole, frac);
    if (n >= size) n = size - 1;
    while (n > 0 && buf[n - 1] == '0') buf[--n] = '\0';
}

long long units_format_trace_span(mp_time a, mp_time b, char *ts, char *dur, int size)
{
    long long ta = units_trace_ticks(a), tb = units_trace_ticks(b);
    long long d = tb > ta ? tb - ta : 0;
    units_format_trace_ticks(ta, ts, size);
    units_format_trace_ticks(d, dur, size);
    return d;
}
