/* VNNI-4 panel packing: every value read back, padding zero, wsum, the int4
 * nibble order against the int8 panels, thread-count independence, and
 * packed tensors through the container. */
#include <check.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "fileio.h"
#include "pack.h"
#include "quant_weights.h"

static uint64_t rng_state;
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}

/* Random values in [-lim, lim], the extremes more often than chance. */
static int8_t *random_values(int n, int k, int lim)
{
    int8_t *v = malloc((size_t)n * (size_t)k);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < (size_t)n * (size_t)k; i++) {
        uint32_t r = rng() % 16;
        int x = r == 0 ? lim : r == 1 ? -lim : (int)(rng() % (2u * lim + 1)) - lim;
        v[i] = (int8_t)x;
    }
    return v;
}

static void pack_new(sq_qweight *q, sq_qtype qt, int n, int k, const int8_t *values)
{
    sq_err err;
    ck_assert_msg(sq_qweight_alloc(q, qt, n, k, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq((uintptr_t)q->data % 64, 0);
    sq_pack(q, values);
}

/* An independent statement of the layouts (SPEC.md 6.1), element by element,
 * into a zeroed buffer: the packer's output must equal it byte for byte,
 * which also proves every padding byte zero. */
static uint8_t *reference_pack(sq_qtype qt, int n, int k, const int8_t *v, uint64_t *size)
{
    int n_pad = (n + 15) / 16 * 16;
    int k_pad = qt == SQ_QT_S8 ? (k + 3) / 4 * 4 : (k + 127) / 128 * 128;
    *size = (uint64_t)n_pad * k_pad / (qt == SQ_QT_S8 ? 1 : 2);
    uint8_t *b = calloc((size_t)*size, 1);
    ck_assert_ptr_nonnull(b);
    for (int r = 0; r < n; r++)
        for (int c = 0; c < k; c++) {
            size_t row = (size_t)(r / 16) * (size_t)(k_pad / 4) + (size_t)(c / 4);
            int byte = 4 * (r % 16) + c % 4;
            int8_t x = v[(size_t)r * k + c];
            if (qt == SQ_QT_S8)
                b[row * 64 + byte] = (uint8_t)x;
            else
                b[row * 32 + byte % 32] |= (uint8_t)((x & 0xf) << (byte < 32 ? 0 : 4));
        }
    return b;
}

static void check_packed(const sq_qweight *q, const int8_t *v)
{
    const sq_qtype_traits *t = sq_qtype_get(q->qtype);
    int groups = sq_qweight_groups(q);
    uint64_t size;
    uint8_t *ref = reference_pack(q->qtype, q->n, q->k, v, &size);
    ck_assert_uint_eq(q->data_size, size);
    ck_assert_uint_eq(q->data_size, sq_packed_size(q->qtype, q->n, q->k));
    ck_assert_msg(memcmp(q->data, ref, (size_t)size) == 0, "%s [%d, %d]: bytes differ", t->name,
                  q->n, q->k);
    free(ref);
    /* Plain comparisons, one assertion each: Check's per-call overhead would
     * dominate over millions of elements. */
    int block = t->block ? t->block : q->k_pad; /* int8: one group, the whole row */
    for (int r = 0; r < q->n_pad; r++) {
        for (int g = 0; g < groups; g++) {
            int32_t want = 0;
            for (int c = g * block; r < q->n && c < q->k && c < (g + 1) * block; c++)
                want += v[(size_t)r * q->k + c];
            if (q->wsum[(size_t)r * groups + g] != want)
                ck_abort_msg("%s [%d, %d]: wsum[%d][%d] = %d, want %d", t->name, q->n, q->k, r, g,
                             q->wsum[(size_t)r * groups + g], want);
        }
        for (int c = 0; c < q->k_pad; c++) {
            int want = r < q->n && c < q->k ? v[(size_t)r * q->k + c] : 0;
            int got = t->get(q, r, c);
            if (got != want)
                ck_abort_msg("%s [%d, %d]: W[%d][%d] reads %d, want %d", t->name, q->n, q->k, r,
                             c, got, want);
        }
    }
}

static const int shapes[][2] = {
    {1, 1},    {1, 4},     {1, 128},   {1, 129},  {15, 3},    {16, 4},   {16, 128},
    {17, 5},   {20, 6},    {31, 127},  {33, 129}, {100, 257}, {7, 1000}, {1, 1536},
    {1536, 384}, {384, 1536},
};

START_TEST(round_trip_ragged)
{
    rng_state = 0x9e3779b97f4a7c15ull;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 2; t++) {
            sq_qtype qt = t ? SQ_QT_S4G128 : SQ_QT_S8;
            int n = shapes[s][0], k = shapes[s][1];
            int8_t *v = random_values(n, k, t ? 7 : 127);
            sq_qweight q;
            pack_new(&q, qt, n, k, v);
            check_packed(&q, v);
            sq_qweight_free(&q);
            free(v);
        }
}
END_TEST

START_TEST(spec_example)
{
    /* SPEC.md 6.1: N = 20, K = 6 int8; W[17][5] is byte 197. */
    int8_t v[20 * 6] = {0};
    v[17 * 6 + 5] = -99;
    sq_qweight q;
    pack_new(&q, SQ_QT_S8, 20, 6, v);
    ck_assert_uint_eq(q.data_size, 256);
    for (int i = 0; i < 256; i++)
        ck_assert_int_eq(((int8_t *)q.data)[i], i == 197 ? -99 : 0);
    sq_qweight_free(&q);
}
END_TEST

START_TEST(extremes_and_zero_rows)
{
    for (int t = 0; t < 2; t++) {
        sq_qtype qt = t ? SQ_QT_S4G128 : SQ_QT_S8;
        int lim = t ? 7 : 127, n = 19, k = 200;
        int8_t *v = malloc((size_t)n * k);
        for (int r = 0; r < n; r++)
            for (int c = 0; c < k; c++)
                v[r * k + c] = (int8_t)(r == 3 ? 0 : r % 2 ? lim : -lim);
        sq_qweight q;
        pack_new(&q, qt, n, k, v);
        check_packed(&q, v);
        ck_assert_int_eq(q.wsum[3 * sq_qweight_groups(&q)], 0);
        ck_assert_int_eq(q.wsum[0], t ? -7 * 128 : -127 * 200);
        sq_qweight_free(&q);
        /* Out-of-range input is clamped, never -128 / -8. */
        memset(v, 0x80, (size_t)n * k);
        pack_new(&q, qt, n, k, v);
        ck_assert_int_eq(sq_qtype_get(qt)->get(&q, 5, 7), -lim);
        sq_qweight_free(&q);
        free(v);
    }
}
END_TEST

/* The int4 rows unpack to the int8 rows: low nibbles of the 32 bytes are
 * bytes 0..31, high nibbles bytes 32..63 (what one AND and one shift of a
 * 256-bit load give a kernel). */
START_TEST(int4_unpacks_to_int8_panels)
{
    rng_state = 12345;
    int n = 40, k = 300;
    int8_t *v = random_values(n, k, 7);
    sq_qweight q8, q4;
    pack_new(&q8, SQ_QT_S8, n, k, v);
    pack_new(&q4, SQ_QT_S4G128, n, k, v);
    int rows8 = q8.n_pad * q8.k_pad / 64, kg8 = q8.k_pad / 4, kg4 = q4.k_pad / 4;
    for (int r = 0; r < rows8; r++) {
        int p = r / kg8, g = r % kg8;
        const uint8_t *src = (const uint8_t *)q4.data + ((size_t)p * kg4 + g) * 32;
        const int8_t *want = (const int8_t *)q8.data + (size_t)r * 64;
        for (int b = 0; b < 64; b++) {
            int nib = b < 32 ? src[b] & 0x0f : (src[b - 32] >> 4) & 0x0f;
            if ((nib ^ 8) - 8 != want[b])
                ck_abort_msg("row %d byte %d: nibble %d, int8 %d", r, b, nib, want[b]);
        }
    }
    sq_qweight_free(&q8);
    sq_qweight_free(&q4);
    free(v);
}
END_TEST

static int same_qweight(const sq_qweight *a, const sq_qweight *b)
{
    size_t e = (size_t)a->n_pad * sq_qweight_groups(a);
    return a->data_size == b->data_size && !memcmp(a->data, b->data, (size_t)a->data_size) &&
           !memcmp(a->scale, b->scale, e * sizeof(float)) &&
           !memcmp(a->wsum, b->wsum, e * sizeof(int32_t));
}

START_TEST(thread_count_independent)
{
    rng_state = 777;
    int n = 333, k = 517;
    int8_t *v = random_values(n, k, 7);
    float *w = malloc((size_t)n * k * sizeof *w);
    float imp[517];
    for (int i = 0; i < n * k; i++)
        w[i] = (float)((int)(rng() % 20001) - 10000) * 1e-5f;
    for (int i = 0; i < k; i++)
        imp[i] = (float)(rng() % 1000) * 0.01f;
    int saved = omp_get_max_threads();
    for (int t = 0; t < 2; t++)
        for (int threads = 2; threads <= 7; threads += 5) { /* 7: an uneven split */
            sq_qtype qt = t ? SQ_QT_S4G128 : SQ_QT_S8;
            sq_qweight a, b, qa, qb;
            sq_quant_opts o = {.importance = imp, .int4_search = true};
            sq_err err;
            omp_set_num_threads(1);
            pack_new(&a, qt, n, k, v);
            ck_assert_int_eq(sq_quantize_weights(w, n, k, qt, &o, &qa, &err), 0);
            omp_set_num_threads(threads);
            pack_new(&b, qt, n, k, v);
            ck_assert_int_eq(sq_quantize_weights(w, n, k, qt, &o, &qb, &err), 0);
            ck_assert(same_qweight(&a, &b));
            ck_assert(same_qweight(&qa, &qb));
            sq_qweight_free(&a), sq_qweight_free(&b);
            sq_qweight_free(&qa), sq_qweight_free(&qb);
        }
    omp_set_num_threads(saved);
    free(v);
    free(w);
}
END_TEST

START_TEST(shape_limits)
{
    sq_qweight q;
    sq_err err;
    ck_assert_int_ne(sq_qweight_alloc(&q, SQ_QT_S8, 0, 4, &err), 0);
    ck_assert_int_ne(sq_qweight_alloc(&q, SQ_QT_S8, 4, -1, &err), 0);
    ck_assert_int_ne(sq_qweight_alloc(&q, SQ_QT_F32, 4, 4, &err), 0);
    ck_assert_int_ne(sq_qweight_alloc(&q, SQ_QT_S4G128, SQ_QWEIGHT_MAX_DIM + 1, 4, &err), 0);
    ck_assert_uint_eq(sq_packed_size(SQ_QT_F32, 4, 4), 0);
    ck_assert_uint_eq(sq_packed_size(SQ_QT_S8, 17, 5), 32 * 8);
    ck_assert_uint_eq(sq_packed_size(SQ_QT_S4G128, 17, 129), 32 * 256 / 2);
    sq_qweight_free(NULL);
}
END_TEST

/* Packed weights through the container (dims [N, K]) and back as a
 * borrowed view over the mapped file. */
START_TEST(container_round_trip)
{
    char dir[] = "/tmp/sq_pack_test.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char *path = sq_path_join(dir, "w.sqm");
    rng_state = 4242;
    int n = 37, k = 190;
    float *w = malloc((size_t)n * k * sizeof *w);
    for (int i = 0; i < n * k; i++)
        w[i] = (float)((int)(rng() % 2001) - 1000) * 1e-3f;
    for (int t = 0; t < 2; t++) {
        sq_qtype qt = t ? SQ_QT_S4G128 : SQ_QT_S8;
        const sq_qtype_traits *tr = sq_qtype_get(qt);
        sq_qweight q;
        sq_err err;
        ck_assert_int_eq(sq_quantize_weights(w, n, k, qt, NULL, &q, &err), 0);
        uint64_t dims[2] = {(uint64_t)n, (uint64_t)k};
        uint64_t sdims[2] = {(uint64_t)q.n_pad, (uint64_t)sq_qweight_groups(&q)};
        sq_container_writer *wr = sq_container_writer_new(SQ_KIND_SQM);
        /* Wrong sizes are refused. */
        ck_assert_int_ne(sq_container_writer_add_tensor(wr, "w", tr->cdtype, 2, dims, q.data,
                                                        q.data_size - 1, &err),
                         0);
        ck_assert_msg(strstr(err.msg, "bytes given but the shape needs"), "%s", err.msg);
        uint64_t dims_bad[2] = {(uint64_t)n + 16, (uint64_t)k};
        ck_assert_int_ne(sq_container_writer_add_tensor(wr, "w", tr->cdtype, 2, dims_bad, q.data,
                                                        q.data_size, &err),
                         0);
        ck_assert_int_eq(sq_container_writer_add_tensor_ref(wr, "w", tr->cdtype, 2, dims, q.data,
                                                            q.data_size, &err),
                         0);
        ck_assert_int_eq(sq_container_writer_add_tensor_ref(wr, "w.scale", SQ_CDT_F32, 2, sdims,
                                                            q.scale, sdims[0] * sdims[1] * 4, &err),
                         0);
        ck_assert_int_eq(sq_container_writer_add_tensor_ref(wr, "w.wsum", SQ_CDT_I32, 2, sdims,
                                                            q.wsum, sdims[0] * sdims[1] * 4, &err),
                         0);
        ck_assert_msg(sq_container_writer_write(wr, path, &err) == 0, "%s", err.msg);
        sq_container_writer_free(wr);

        sq_container c;
        ck_assert_msg(sq_container_open(path, SQ_KIND_SQM, &c, &err) == 0, "%s", err.msg);
        ck_assert_msg(sq_container_verify(&c, &err) == 0, "%s", err.msg);
        const sq_container_tensor *tw = sq_container_find(&c, "w");
        const sq_container_tensor *ts = sq_container_find(&c, "w.scale");
        const sq_container_tensor *tk = sq_container_find(&c, "w.wsum");
        ck_assert_uint_eq(tw->dtype, tr->cdtype);
        ck_assert_str_eq(sq_cdtype_name(tw->dtype), t ? "s4g128-panel" : "s8-panel");
        ck_assert_int_eq(tw->ndim, 2);
        ck_assert_uint_eq(tw->dims[0], (uint64_t)n);
        ck_assert_uint_eq(tw->dims[1], (uint64_t)k);
        ck_assert_uint_eq(tw->size, q.data_size);
        ck_assert_mem_eq(tw->data, q.data, (size_t)q.data_size);
        sq_qweight v;
        ck_assert_msg(sq_qweight_view(&v, qt, (int)tw->dims[0], (int)tw->dims[1], tw->data,
                                      tw->size, ts->data, tk->data, &err) == 0,
                      "%s", err.msg);
        ck_assert(same_qweight(&q, &v));
        float *d1 = malloc((size_t)n * k * sizeof *d1), *d2 = malloc((size_t)n * k * sizeof *d2);
        sq_dequantize_weights(&q, d1);
        sq_dequantize_weights(&v, d2);
        ck_assert_mem_eq(d1, d2, (size_t)n * k * sizeof *d1);
        sq_qweight_free(&v); /* borrowed: frees nothing */
        ck_assert_int_ne(sq_qweight_view(&v, qt, n, k, tw->data, tw->size - 1, ts->data, tk->data,
                                         &err),
                         0);
        ck_assert_int_ne(sq_qweight_view(&v, qt, n, k, (const char *)tw->data + 1, tw->size,
                                         ts->data, tk->data, &err),
                         0);
        sq_container_close(&c);
        free(d1), free(d2);
        sq_qweight_free(&q);
    }
    unlink(path);
    rmdir(dir);
    free(path);
    free(w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("pack");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, round_trip_ragged);
    tcase_add_test(tc, spec_example);
    tcase_add_test(tc, extremes_and_zero_rows);
    tcase_add_test(tc, int4_unpacks_to_int8_panels);
    tcase_add_test(tc, thread_count_independent);
    tcase_add_test(tc, shape_limits);
    tcase_add_test(tc, container_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
