/* check_hardware.c — the chip catalogue, system presets, routes and their
 * times. Every expected number is worked out by hand in the comment beside
 * it; bad-input cases check the status and that the message names the file
 * and line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/chip.h"
#include "hardware/system.h"
#include "testutil.h"

static struct chip_catalog cat;
static struct mp_error err;

static void load_catalogue(void)
{
    memset(&err, 0, sizeof err);
    ck_assert_msg(chip_catalog_load_default(&cat, &err) == MP_OK, "%s", err.msg);
}

static void release_catalogue(void) { chip_catalog_release(&cat); }

/* ---- catalogue ------------------------------------------------------------ */

START_TEST(catalogue_has_every_chip_with_a_source)
{
    static const char *const names[] = {
        "a100-sxm", "h100-sxm", "h800", "h200-sxm", "b200", "gb200", "mi300x", "mi325x",
        "tpu-v5e", "tpu-v5p", "tpu-v6e", "cerebras-wse3", "groq-lpu", "textbook",
    };
    ck_assert_int_eq(cat.n, 23); /* 14 + the 9 consumer and workstation rows (check_host.c) */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(chip_catalog_find(&cat, names[i]), "no chip %s", names[i]);
    for (int i = 0; i < cat.n; i++) {
        const struct chip *c = &cat.chips[i];
        ck_assert_msg(strlen(c->source) > 20, "%s: source '%s'", c->name, c->source);
        ck_assert_msg(c->label[0], "%s: no label", c->name);
        ck_assert(c->peak_bf16 > 0 && c->mem_bytes > 0 && c->mem_bw > 0);
        ck_assert(c->compute_eff > 0 && c->compute_eff <= 1);
        ck_assert(c->mem_eff > 0 && c->mem_eff <= 1);
    }
    ck_assert_ptr_null(chip_catalog_find(&cat, "h100"));
}
END_TEST

START_TEST(catalogue_figures_in_si_units)
{
    const struct chip *h = chip_catalog_find(&cat, "h100-sxm");
    ck_assert_ptr_nonnull(h);
    ck_assert_double_eq(h->peak_bf16, 989e12);            /* 989 TFLOP/s */
    ck_assert_double_eq(h->peak_fp8, 1979e12);
    ck_assert_double_eq(h->mem_bytes, 80e9);              /* 80 GB */
    ck_assert_double_eq(h->mem_bw, 3.35e12);             /* 3.35 TB/s, one rounding */
    ck_assert_double_eq(h->scaleup_bw, 450e9);            /* 450 GB/s per direction */
    ck_assert_double_eq(h->scaleout_bw, 50e9);            /* 400 Gb/s = 50 GB/s */
    const struct chip *a = chip_catalog_find(&cat, "a100-sxm");
    ck_assert_double_eq(a->peak_fp8, 0);                  /* no fp8 on Ampere */
    ck_assert_double_eq_tol(a->compute_eff, 0.82, 1e-12); /* 256.5 / 312 */
    ck_assert(strstr(a->source, "16384") != NULL);
    const struct chip *t = chip_catalog_find(&cat, "textbook");
    ck_assert(isinf(t->scaleup_bw) && isinf(t->scaleout_bw));
    ck_assert(strstr(t->label, "fictional") != NULL);
}
END_TEST

START_TEST(catalogue_columns_in_any_order_with_quotes_and_crlf)
{
    struct chip_catalog c2;
    const char *path = mp_test_path("tests/data/hardware/reordered.csv");
    ck_assert_msg(chip_catalog_load(&c2, path, &err) == MP_OK, "%s", err.msg);
    ck_assert_int_eq(c2.n, 2);
    const struct chip *t = chip_catalog_find(&c2, "toy-1");
    ck_assert_str_eq(t->label, "Toy, one");
    ck_assert_str_eq(t->source,
                     "Made up for the test, with \"quotes\", commas\r\nand a line break");
    ck_assert_double_eq(t->peak_bf16, 100e12);
    ck_assert_double_eq(t->mem_bw, 0.5e12);
    ck_assert_double_eq(t->scaleout_bw, 1e9);             /* 8 Gb/s */
    ck_assert_double_eq(t->compute_eff, 0.25);
    ck_assert_double_eq(t->price_hour_usd, 1.5);
    ck_assert_double_eq(chip_catalog_find(&c2, "toy-2")->peak_fp8, 50e12);
    chip_catalog_release(&c2);
}
END_TEST

/* ---- roofline --------------------------------------------------------------- */

START_TEST(roofline_textbook_exact)
{
    const struct chip *t = chip_catalog_find(&cat, "textbook");
    /* 2e12 FLOP at 1e15 FLOP/s = 2 ms; 1e9 B at 1e15 B/s = 1 us: compute wins. */
    ck_assert_int_eq(chip_op_time(t, 2e12, 1e9, 16), 2000000000);
    /* fp8 peak is 2e15: 1 ms. */
    ck_assert_int_eq(chip_op_time(t, 2e12, 1e9, 8), 1000000000);
    /* 5e12 B at 1e15 B/s = 5 ms beats 1e9 FLOP = 1 us: memory-bound. */
    ck_assert_int_eq(chip_op_time(t, 1e9, 5e12, 16), 5000000000);
    ck_assert_int_eq(chip_op_time(t, 0, 0, 16), 0);
    /* 1 FLOP = 1e-15 s = 0.001 ps rounds to 0; 600 FLOP = 0.6 ps rounds to 1. */
    ck_assert_int_eq(chip_op_time(t, 600, 0, 16), 1);
}
END_TEST

START_TEST(roofline_real_chips)
{
    const struct chip *a = chip_catalog_find(&cat, "a100-sxm");
    /* The calibration GEMM 16384^3: 2 × 16384^3 = 8796093022208 FLOP at
     * 312e12 × 0.82 = 255.84e12 FLOP/s = 34381226634.65 ps (bc) → ...635.
     * The A100 has no fp8, so 8-bit runs at the bf16 peak: the same time. */
    double gemm = 2.0 * 16384 * 16384 * 16384;
    ck_assert_int_eq(chip_op_time(a, gemm, 3.0 * 16384 * 16384 * 2, 16), 34381226635);
    ck_assert_int_eq(chip_op_time(a, gemm, 0, 8), 34381226635);
    /* 256.5 TFLOP/s measured: the model lands within 1% of the measurement. */
    double measured_ps = gemm / 256.5e12 * 1e12;
    ck_assert(fabs(chip_op_time(a, gemm, 0, 16) - measured_ps) < 0.01 * measured_ps);

    const struct chip *h = chip_catalog_find(&cat, "h100-sxm");
    /* Reading all 80 GB once: 80e9 B at 3.35e12 × 0.9 = 3.015e12 B/s =
     * 26533996683.25 ps (bc) → 26533996683. 1e9 FLOP is 1.26 us: memory wins. */
    ck_assert_int_eq(chip_op_time(h, 1e9, 80e9, 16), 26533996683);
}
END_TEST

/* ---- systems and routes ------------------------------------------------------- */

START_TEST(presets_load)
{
    static const char *const presets[] = { "textbook", "dgx-a100", "dgx-h100", "cerebras-cs3",
                                           "ring" };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        struct system s;
        ck_assert_msg(system_load(&s, presets[i], 0, 0, &cat, &err) == MP_OK, "%s: %s",
                      presets[i], err.msg);
        ck_assert_str_eq(s.name, presets[i]);
        ck_assert(s.description[0]);
        ck_assert_int_eq(s.nodes, 1);
        system_release(&s);
    }
}
END_TEST

/* The links a system will have, counted from its plan before they exist
 * (the work budget weighs them): on 2 nodes (16 chips) dgx-h100 has a
 * switch's up and down link and a NIC's up and down per chip, 4 × 16 = 64;
 * mi300x-node a 7-link mesh and the rail NICs, 16 × (7 + 2) = 144; on one
 * node tpu-v5p's 4×4×4 torus two links per dimension and the fat tree's
 * two, 64 × (6 + 2) = 512. Each is what system_build then lays out. */
START_TEST(link_count_before_the_links)
{
    static const struct { const char *name; int nodes; long long links; } c[] = {
        { "dgx-h100", 2, 64 }, { "mi300x-node", 2, 144 }, { "tpu-v5p", 1, 512 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct system s;
        ck_assert_int_eq(system_plan(&s, c[i].name, c[i].nodes, 0, &cat, &err), MP_OK);
        ck_assert_int_eq(system_link_count(&s), c[i].links);
        system_build(&s);
        ck_assert_int_eq(s.n_links, c[i].links);
        system_release(&s);
    }
}
END_TEST

START_TEST(node_count_selection)
{
    /* dgx-h100 has 8 chips per node: ceil(chips / 8), at least one. */
    static const int need[] = { 0, 1, 8, 9, 64, 65 }, nodes[] = { 1, 1, 1, 2, 8, 9 };
    for (int i = 0; i < 6; i++) {
        struct system s;
        ck_assert_int_eq(system_load(&s, "dgx-h100", 0, need[i], &cat, &err), MP_OK);
        ck_assert_int_eq(s.nodes, nodes[i]);
        ck_assert_int_eq(s.n_chips, 8 * nodes[i]);
        ck_assert_int_eq(s.chips_per_node, 8);
        ck_assert_int_eq(system_node_of(&s, s.n_chips - 1), nodes[i] - 1);
        system_release(&s);
    }
    struct system s;
    /* Nodes given: kept even if more than needed. */
    ck_assert_int_eq(system_load(&s, "dgx-h100", 4, 20, &cat, &err), MP_OK);
    ck_assert_int_eq(s.nodes, 4);
    ck_assert_int_eq(s.n_chips, 32);
    ck_assert_int_eq(system_node_of(&s, 15), 1);
    ck_assert_int_eq(system_node_of(&s, 16), 2);
    system_release(&s);
    /* Textbook: 1024 chips per node, so 1024 chips fit one node. */
    ck_assert_int_eq(system_load(&s, "textbook", 0, 1024, &cat, &err), MP_OK);
    ck_assert_int_eq(s.nodes, 1);
    system_release(&s);
    /* Too few: 2 nodes × 8 = 16 < 17, which needs 3. */
    ck_assert_int_eq(system_load(&s, "dgx-h100", 2, 17, &cat, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "dgx-h100.ini") && strstr(err.msg, "17") &&
                  strstr(err.msg, ">= 3"), "%s", err.msg);
    system_release(&s);
    /* The ring preset has no scale-out fabric: one node only. */
    ck_assert_int_eq(system_load(&s, "ring", 0, 9, &cat, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "ring.ini") && strstr(err.msg, "none"), "%s", err.msg);
    ck_assert_int_eq(system_load(&s, "dgx-h100", -1, 0, &cat, &err), MP_ERR_INPUT);
}
END_TEST

START_TEST(switch_and_fat_tree_routes)
{
    struct system s;
    ck_assert_int_eq(system_load(&s, "dgx-h100", 2, 16, &cat, &err), MP_OK);
    int r[8];
    /* Same node: up to the switch, down to the peer. */
    ck_assert_int_eq(system_route(&s, 0, 5, r, 8), 2);
    ck_assert_int_eq(r[0], s.up[0]);
    ck_assert_int_eq(r[1], s.down[5]);
    ck_assert_int_eq(s.links[r[0]].latency, 1500000);     /* 1.5 us on the up link */
    ck_assert_int_eq(s.links[r[1]].latency, 0);
    /* 370e9 B at 370 GB/s = 1 s, plus one 1.5 us latency. */
    ck_assert_int_eq(system_route_time(&s, r, 2, 370e9), 1000000000000 + 1500000);
    ck_assert_int_eq(system_route_time(&s, r, 2, 0), 1500000);
    /* Across nodes: NIC out of chip 3, NIC into chip 12; 47e9 B at 47 GB/s = 1 s + 5 us. */
    ck_assert_int_eq(system_route(&s, 3, 12, r, 8), 2);
    ck_assert_int_eq(r[0], s.nic_up[3]);
    ck_assert_int_eq(r[1], s.nic_down[12]);
    ck_assert_int_eq(system_route_time(&s, r, 2, 47e9), 1000000000000 + 5000000);
    ck_assert_int_eq(system_route(&s, 7, 7, r, 8), 0);
    ck_assert_int_eq(system_route_time(&s, r, 0, 1e9), 0);
    /* Too short an array: the full length comes back, only `max` written. */
    r[1] = -7;
    ck_assert_int_eq(system_route(&s, 0, 5, r, 1), 2);
    ck_assert_int_eq(r[1], -7);
    /* 4 links per chip: up, down, NIC up, NIC down. */
    ck_assert_int_eq(s.n_links, 4 * 16);
    system_release(&s);

    /* Textbook: instant links cost nothing however many bytes move. */
    ck_assert_int_eq(system_load(&s, "textbook", 2, 0, &cat, &err), MP_OK);
    ck_assert_int_eq(system_route(&s, 1, 1500, r, 8), 2);
    ck_assert_int_eq(system_route_time(&s, r, 2, 1e15), 0);
    system_release(&s);
}
END_TEST

START_TEST(ring_takes_the_shorter_way)
{
    struct system s;
    ck_assert_int_eq(system_load(&s, "ring", 0, 8, &cat, &err), MP_OK);
    int r[8];
    ck_assert_int_eq(system_route(&s, 0, 1, r, 8), 1);
    ck_assert_int_eq(r[0], s.next[0]);
    ck_assert_int_eq(system_route(&s, 0, 3, r, 8), 3);     /* forward 3 vs back 5 */
    ck_assert_int_eq(r[2], s.next[2]);
    ck_assert_int_eq(system_route(&s, 0, 6, r, 8), 2);     /* back 2: 0 -> 7 -> 6 */
    ck_assert_int_eq(r[0], s.prev[0]);
    ck_assert_int_eq(r[1], s.prev[7]);
    ck_assert_int_eq(system_route(&s, 6, 1, r, 8), 3);     /* forward 6 -> 7 -> 0 -> 1 */
    ck_assert_int_eq(r[2], s.next[0]);
    ck_assert_int_eq(system_route(&s, 0, 4, r, 8), 4);     /* a tie goes forward */
    ck_assert_int_eq(r[0], s.next[0]);
    /* 0 -> 2: two hops of 1 us; 1e9 B at 100 GB/s = 10 ms. */
    int n = system_route(&s, 0, 2, r, 8);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(system_route_time(&s, r, n, 1e9), 10000000000 + 2000000);
    system_release(&s);
}
END_TEST

START_TEST(chain_of_wafers)
{
    struct system s;
    /* 59 wafers, one per node (cases.md section 1). */
    ck_assert_int_eq(system_load(&s, "cerebras-cs3", 0, 59, &cat, &err), MP_OK);
    ck_assert_int_eq(s.nodes, 59);
    ck_assert_int_eq(s.n_chips, 59);
    ck_assert_str_eq(s.chip.name, "cerebras-wse3");
    ck_assert_double_eq(s.chip.mem_bytes, 44e9);
    int r[64];
    for (int i = 0; i < 59; i += 7)
        for (int j = 0; j < 59; j += 5) {
            int n = system_route(&s, i, j, r, 64);
            ck_assert_int_eq(n, abs(i - j));
            /* |i - j| hops of 2 us each. */
            ck_assert_int_eq(system_route_time(&s, r, n, 0), (mp_time)abs(i - j) * 2000000);
        }
    ck_assert_int_eq(system_route(&s, 3, 5, r, 64), 2);
    ck_assert_int_eq(r[0], s.out_next[3]);
    ck_assert_int_eq(r[1], s.out_next[4]);
    /* 1.2 Tb/s = 150 GB/s: 150e9 B take 1 s, plus 2 × 2 us. */
    ck_assert_int_eq(system_route_time(&s, r, 2, 150e9), 1000000000000 + 4000000);
    ck_assert_int_eq(system_route(&s, 58, 0, r, 64), 58);
    ck_assert_int_eq(r[57], s.out_prev[1]);
    system_release(&s);

    /* A chain inside a node does not wrap: 5 -> 0 is 5 hops back. */
    ck_assert_int_eq(system_load(&s, mp_test_path("tests/data/hardware/chain-switch.ini"), 0, 6,
                                 &cat, &err), MP_OK);
    ck_assert_int_eq(system_route(&s, 5, 0, r, 64), 5);
    ck_assert_int_eq(r[0], s.prev[5]);
    ck_assert_int_eq(s.next[5], -1);
    ck_assert_int_eq(system_route(&s, 1, 4, r, 64), 3);
    ck_assert_int_eq(system_route_time(&s, r, 3, 20e9), 1000000000000 + 6000000);
    system_release(&s);
}
END_TEST

START_TEST(full_mesh_and_rail_chain)
{
    struct system s;
    ck_assert_msg(system_load(&s, mp_test_path("tests/data/hardware/mesh-chain.ini"), 3, 0,
                              &cat, &err) == MP_OK, "%s", err.msg);
    ck_assert_str_eq(s.name, "mesh-chain");                /* from the file name */
    ck_assert_int_eq(s.n_chips, 12);
    int r[16], seen[64] = { 0 };
    /* Every ordered pair of node 0 has its own direct link. */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            if (i == j) continue;
            ck_assert_int_eq(system_route(&s, i, j, r, 16), 1);
            ck_assert_int_eq(seen[r[0]]++, 0);
        }
    /* 1 -> 10 (node 2, local 2): mesh 1 -> 2, then rail 2 -> 6 -> 10.
     * Latency 1 + 3 + 3 us; the slowest link is 10 GB/s: 1e9 B = 100 ms. */
    int n = system_route(&s, 1, 10, r, 16);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(r[1], s.out_next[2]);
    ck_assert_int_eq(r[2], s.out_next[6]);
    ck_assert_int_eq(system_route_time(&s, r, n, 1e9), 100000000000 + 7000000);
    /* Same rail: no mesh hop. 10 -> 2 is two hops back. */
    ck_assert_int_eq(system_route(&s, 10, 2, r, 16), 2);
    ck_assert_int_eq(r[0], s.out_prev[10]);
    ck_assert_int_eq(s.n_links, 12 * 3 + 2 * 4 * 2);       /* mesh + two chain links per rail gap */
    system_release(&s);
}
END_TEST

/* ---- bad input ---------------------------------------------------------------- */

/* The status is MP_ERR_INPUT and the message starts "PATH:LINE:" and holds
 * `needle`. */
static void expect_error(int rc, const char *path, int line, const char *needle)
{
    char prefix[600];
    if (line > 0)
        snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    else
        snprintf(prefix, sizeof prefix, "%s", path);
    ck_assert_int_eq(rc, MP_ERR_INPUT);
    ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0, "want prefix '%s', got '%s'",
                  prefix, err.msg);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "want '%s' in '%s'", needle, err.msg);
}

static const char header[] =
    "name,label,bf16_tflops,fp8_tflops,mem_gb,mem_bw_tbs,scaleup_gbs,scaleout_gbps,"
    "compute_eff,mem_eff,price_usd,price_hour_usd,source\n";
#define ROW(name, bf16, mem) name ",Chip," bf16 ",0," mem ",1,1,1,0.5,0.5,0,0,a source\n"

static int load_csv(const char *text, char *path)
{
    strcpy(path, mp_test_tmpfile(".csv", text));
    struct chip_catalog c;
    int rc = chip_catalog_load(&c, path, &err);
    ck_assert_ptr_null(c.chips);
    return rc;
}

START_TEST(csv_errors)
{
    char path[512], text[2048];
    struct chip_catalog c;
    expect_error(chip_catalog_load(&c, "/nonexistent/chips.csv", &err),
                 "/nonexistent/chips.csv", 0, "cannot open");
    /* Missing column: the header lacks mem_eff. */
    expect_error(load_csv("name,label,bf16_tflops,fp8_tflops,mem_gb,mem_bw_tbs,scaleup_gbs,"
                          "scaleout_gbps,compute_eff,price_usd,price_hour_usd,source\n", path),
                 path, 1, "column mem_eff");
    /* An unknown column in the header. */
    snprintf(text, sizeof text, "%.*s,speed\n", (int)strlen(header) - 1, header);
    expect_error(load_csv(text, path), path, 1, "got 'speed'");
    /* Non-numeric value on line 3. */
    snprintf(text, sizeof text, "%s" ROW("a", "10", "8") ROW("b", "fast", "8"), header);
    expect_error(load_csv(text, path), path, 3, "column bf16_tflops: expected");
    ck_assert(strstr(err.msg, "got 'fast'"));
    /* Negative value. */
    snprintf(text, sizeof text, "%s" ROW("a", "10", "-80"), header);
    expect_error(load_csv(text, path), path, 2, "column mem_gb: expected");
    ck_assert(strstr(err.msg, "got '-80'"));
    /* Zero bf16 peak: a chip that cannot compute. */
    snprintf(text, sizeof text, "%s" ROW("a", "0", "8"), header);
    expect_error(load_csv(text, path), path, 2, "column bf16_tflops");
    /* Duplicate chip name, first at line 2. */
    snprintf(text, sizeof text, "%s" ROW("a", "10", "8") ROW("a", "10", "8"), header);
    expect_error(load_csv(text, path), path, 3, "column name: expected a chip name not used");
    ck_assert(strstr(err.msg, "line 2"));
    /* Truncated last row: no newline, three columns missing. */
    snprintf(text, sizeof text, "%s" ROW("a", "10", "8") "b,Chip,10,0,8,1,1,1,0.5,0.5", header);
    expect_error(load_csv(text, path), path, 3, "expected 13 columns");
    ck_assert(strstr(err.msg, "got 10"));
    /* An unquoted comma makes one column too many. */
    snprintf(text, sizeof text, "%s" "a,Chip,10,0,8,1,1,1,0.5,0.5,0,0,a, b\n", header);
    expect_error(load_csv(text, path), path, 2, "got 14");
    /* Empty source. */
    snprintf(text, sizeof text, "%s" "a,Chip,10,0,8,1,1,1,0.5,0.5,0,0,\n", header);
    expect_error(load_csv(text, path), path, 2, "column source: expected where");
    /* Efficiency above 1. */
    snprintf(text, sizeof text, "%s" "a,Chip,10,0,8,1,1,1,1.5,0.5,0,0,s\n", header);
    expect_error(load_csv(text, path), path, 2, "column compute_eff: expected a share");
    /* inf only where a link may be instant. */
    snprintf(text, sizeof text, "%s" "a,Chip,inf,0,8,1,1,1,0.5,0.5,0,0,s\n", header);
    expect_error(load_csv(text, path), path, 2, "column bf16_tflops");
    /* A bad chip name (spaces would break the INI files that name it). */
    snprintf(text, sizeof text, "%s" ROW("my chip", "10", "8"), header);
    expect_error(load_csv(text, path), path, 2, "column name");
    /* A quote that never closes: the error names the row's first line. */
    snprintf(text, sizeof text, "%s" ROW("a", "10", "8") "b,\"Chip,10\n", header);
    expect_error(load_csv(text, path), path, 3, "quoted cell opened here never closes");
    /* A stray quote inside an unquoted field. */
    snprintf(text, sizeof text, "%s" "a,Ch\"ip,10,0,8,1,1,1,0.5,0.5,0,0,s\n", header);
    expect_error(load_csv(text, path), path, 2, "not valid CSV");
    /* Header only; empty file. */
    expect_error(load_csv(header, path), path, 1, "at least one chip");
    expect_error(load_csv("", path), path, 0, "empty");
    /* After a row spanning two lines, the line count is still right. */
    snprintf(text, sizeof text, "%s" "a,Chip,10,0,8,1,1,1,0.5,0.5,0,0,\"two\nlines\"\n"
             ROW("b", "x", "8"), header);
    expect_error(load_csv(text, path), path, 4, "got 'x'");
}
END_TEST

static int load_ini(const char *text, char *path)
{
    strcpy(path, mp_test_tmpfile(".ini", text));
    struct system s;
    int rc = system_load(&s, path, 0, 0, &cat, &err);
    if (rc != MP_OK) ck_assert_ptr_null(s.links);  /* a failed load leaves nothing behind */
    system_release(&s);
    return rc;
}

#define SYS "[system]\nchip = textbook\nchips_per_node = 4\n"
#define UP "[scaleup]\ntopology = switch\nbandwidth = 10GB/s\nlatency = 1us\n"

START_TEST(ini_errors)
{
    char path[512];
    struct system s;
    ck_assert_int_eq(load_ini(SYS UP, path), MP_OK);  /* the base case is fine */
    expect_error(system_load(&s, "/nonexistent/sys.ini", 0, 0, &cat, &err),
                 "/nonexistent/sys.ini", 0, "cannot open");
    /* An unknown preset lists the known ones. */
    ck_assert_int_eq(system_load(&s, "dgx-h1000", 0, 0, &cat, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "dgx-h1000") && strstr(err.msg, "dgx-h100,"), "%s", err.msg);
    /* Unknown key on line 6, with a suggestion. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = switch\nbandwith = 10GB/s\n", path), path, 6,
                 "key 'bandwith'");
    ck_assert(strstr(err.msg, "did you mean 'bandwidth'"));
    /* Unknown section, even without keys. */
    expect_error(load_ini(SYS UP "[scaleoutt]\n", path), path, 8, "section [scaleoutt]");
    ck_assert(strstr(err.msg, "did you mean 'scaleout'"));
    /* Non-numeric bandwidth. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = switch\nbandwidth = fast\nlatency = 1us\n",
                          path), path, 6, "[scaleup] bandwidth: expected");
    ck_assert(strstr(err.msg, "got 'fast'"));
    /* Zero bandwidth: nothing would ever arrive. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = switch\nbandwidth = 0GB/s\n", path), path, 6,
                 "bandwidth");
    /* Negative latency. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = switch\nbandwidth = 1GB/s\n"
                          "latency = -1us\n", path), path, 7, "[scaleup] latency: expected");
    /* Unknown chip, listing the catalogue. */
    expect_error(load_ini("[system]\nchip = h100\nchips_per_node = 8\n", path), path, 2,
                 "[system] chip: expected a chip");
    ck_assert(strstr(err.msg, "h100-sxm") && strstr(err.msg, "got 'h100'"));
    ck_assert(strstr(err.msg, "did you mean 'h100-sxm'"));
    /* Zero and non-numeric chips_per_node. */
    expect_error(load_ini("[system]\nchip = textbook\nchips_per_node = 0\n", path), path, 3,
                 "[system] chips_per_node: expected");
    expect_error(load_ini("[system]\nchip = textbook\nchips_per_node = eight\n", path), path, 3,
                 "chips_per_node");
    /* Unknown topology. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = hypercube\n", path), path, 5,
                 "expected switch, ring, full_mesh, chain, torus or none, got 'hypercube'");
    /* A torus needs dims whose product is chips_per_node, and only a torus takes dims. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = torus\nbandwidth = 1GB/s\nlatency = 1us\n", path),
                 path, 5, "[scaleup] dims: missing");
    expect_error(load_ini(SYS "[scaleup]\ntopology = torus\ndims = 2x3\nbandwidth = 1GB/s\n"
                              "latency = 1us\n", path), path, 6, "product is chips_per_node");
    expect_error(load_ini(SYS "[scaleup]\ntopology = torus\ndims = 2xx\n", path), path, 6,
                 "expected 2 or 3 sizes");
    expect_error(load_ini(SYS "[scaleup]\ntopology = switch\ndims = 2x4\nbandwidth = 1GB/s\n"
                              "latency = 1us\n", path), path, 6, "only with topology torus");
    expect_error(load_ini(SYS UP "[scaleout]\ntopology = switch\n", path), path, 9,
                 "[scaleout] topology");
    /* A key twice. */
    expect_error(load_ini(SYS "chip = textbook\n", path), path, 4, "first at line 2");
    /* A line inih cannot read. */
    expect_error(load_ini(SYS "[scaleup]\ntopology switch\n", path), path, 5,
                 "expected [section] or key = value");
    /* A key before any section. */
    expect_error(load_ini("chip = textbook\n" SYS, path), path, 1, "inside a [section]");
    /* A fabric without its figures; a fabric of none with figures. */
    expect_error(load_ini(SYS "[scaleup]\ntopology = ring\nlatency = 1us\n", path), path, 5,
                 "[scaleup] bandwidth: missing");
    expect_error(load_ini(SYS UP "[scaleout]\ntopology = none\nlatency = 1us\n", path), path, 10,
                 "[scaleout] latency: expected no figure");
    /* Several chips per node need a scale-up fabric. */
    expect_error(load_ini(SYS, path), path, 3, "[scaleup] topology");
    /* Missing chip. */
    expect_error(load_ini("[system]\nchips_per_node = 1\n", path), path, 2, "chip: missing");
    /* A key line too long for inih's buffer is refused, not cut in two. */
    char text[1024];
    snprintf(text, sizeof text, SYS "description = %0300d\n", 7);
    expect_error(load_ini(text, path), path, 4, "at most");
    /* A long comment is harmless. */
    snprintf(text, sizeof text, "; %0300d\n" SYS UP, 7);
    ck_assert_msg(load_ini(text, path) == MP_OK, "%s", err.msg);
}
END_TEST

Suite *hardware_suite(void)
{
    Suite *s = suite_create("hardware");
    TCase *t = tcase_create("catalogue");
    tcase_add_checked_fixture(t, load_catalogue, release_catalogue);
    tcase_add_test(t, catalogue_has_every_chip_with_a_source);
    tcase_add_test(t, link_count_before_the_links);
    tcase_add_test(t, catalogue_figures_in_si_units);
    tcase_add_test(t, catalogue_columns_in_any_order_with_quotes_and_crlf);
    tcase_add_test(t, roofline_textbook_exact);
    tcase_add_test(t, roofline_real_chips);
    suite_add_tcase(s, t);
    t = tcase_create("system");
    tcase_add_checked_fixture(t, load_catalogue, release_catalogue);
    tcase_add_test(t, presets_load);
    tcase_add_test(t, node_count_selection);
    tcase_add_test(t, switch_and_fat_tree_routes);
    tcase_add_test(t, ring_takes_the_shorter_way);
    tcase_add_test(t, chain_of_wafers);
    tcase_add_test(t, full_mesh_and_rail_chain);
    suite_add_tcase(s, t);
    t = tcase_create("bad_input");
    tcase_add_checked_fixture(t, load_catalogue, release_catalogue);
    tcase_add_test(t, csv_errors);
    tcase_add_test(t, ini_errors);
    suite_add_tcase(s, t);
    return s;
}

MP_TEST_MAIN(hardware_suite)
