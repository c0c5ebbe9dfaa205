/* The .npy reader and writer: round trips, headers written by hand in
 * versions 1.0, 2.0 and 3.0, float64 input, and every malformed file refused
 * with its reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npy.h"
#include "tap.h"

static char dir[] = "/tmp/attnbench-npy-XXXXXX";

static const char *path(const char *name)
{
    static char p[256];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return p;
}

/* A file of: magic, version major.0, the header padded to 64 with '\n', data. */
static void handmade(const char *name, int major, const char *dict, const void *data, size_t bytes)
{
    FILE *f = fopen(path(name), "wb");
    const int pre = major == 1 ? 10 : 12;
    const size_t n = strlen(dict), total = (pre + n + 1 + 63) / 64 * 64, hlen = total - pre;
    unsigned char head[12] = { 0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0 };
    for (int i = 0; i < pre - 8; i++)
        head[8 + i] = (unsigned char)(hlen >> (8 * i));
    fwrite(head, 1, (size_t)pre, f);
    fputs(dict, f);
    for (size_t i = n; i + 1 < hlen; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}

static void refused(const char *name, const char *want)
{
    attn_npy a;
    char why[512] = "";
    const bool ok = attn_npy_read(path(name), &a, why, sizeof(why));
    tap_ok(!ok && strstr(why, want), "%s refused: %s", name, why);
    if (ok)
        attn_npy_free(&a);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 2;
    }
    /* Round trip through the writer. */
    float x[2 * 3 * 4];
    for (int i = 0; i < 24; i++)
        x[i] = (float)i * 0.5f - 3.0f;
    const size_t shape[3] = { 2, 3, 4 };
    char why[512] = "";
    const bool w = attn_npy_write(path("rt.npy"), x, shape, 3, why, sizeof(why));
    attn_npy a;
    const bool r = w && attn_npy_read(path("rt.npy"), &a, why, sizeof(why));
    tap_ok(r && a.ndim == 3 && a.shape[0] == 2 && a.shape[1] == 3 && a.shape[2] == 4 &&
           a.count == 24 && !a.f64 && !memcmp(a.data, x, sizeof(x)),
           "write then read (2, 3, 4) float32: identical %s", why);
    if (r)
        attn_npy_free(&a);
    tap_ok(access(path("rt.npy.tmp"), F_OK) != 0, "no temporary file left behind");
    FILE *f = fopen(path("rt.npy"), "rb");
    unsigned char head[10] = { 0 };
    tap_ok(f && fread(head, 1, 10, f) == 10 && head[6] == 1 && (10 + (head[8] | head[9] << 8)) % 64 == 0,
           "version 1.0, header padded to a multiple of 64");
    if (f)
        fclose(f);

    /* Headers by hand: 2.0 and 3.0, double quotes, float64, 1-d, 0-d shape. */
    const double dv[3] = { 1.5, -2.25, 1e-3 };
    handmade("v2.npy", 2, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", dv, sizeof(dv));
    bool ok = attn_npy_read(path("v2.npy"), &a, why, sizeof(why));
    tap_ok(ok && a.f64 && a.ndim == 1 && a.shape[0] == 3 && a.data[0] == 1.5f && a.data[1] == -2.25f &&
           a.data[2] == (float)1e-3, "version 2.0, float64 (3,): converted to float32 %s", why);
    if (ok)
        attn_npy_free(&a);
    const float fv[4] = { 1, 2, 3, 4 };
    handmade("v3.npy", 3, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 2)}", fv, sizeof(fv));
    ok = attn_npy_read(path("v3.npy"), &a, why, sizeof(why));
    tap_ok(ok && a.ndim == 2 && a.count == 4 && a.data[3] == 4, "version 3.0, double quotes %s", why);
    if (ok)
        attn_npy_free(&a);

    /* Malformed files. */
    handmade("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", fv, sizeof(fv));
    refused("be.npy", "dtype '>f4' is not float32, float64, float16 or uint16 (bf16 bits) "
                      "little-endian");
    handmade("int.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", fv, sizeof(fv));
    refused("int.npy", "dtype '<i4'");
    handmade("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", fv, sizeof(fv));
    refused("fortran.npy", "Fortran order");
    handmade("short.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", fv, sizeof(fv));
    refused("short.npy", "truncated: the shape needs 20 bytes of data, the file has 16");
    handmade("long.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", fv, sizeof(fv));
    refused("long.npy", "more data than the 12 bytes the shape describes");
    handmade("noshape.npy", 1, "{'descr': '<f4', 'fortran_order': False}", fv, sizeof(fv));
    refused("noshape.npy", "no 'shape'");
    handmade("badshape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", fv, sizeof(fv));
    refused("badshape.npy", "not a tuple of integers");
    handmade("v9.npy", 9, "{}", fv, 0);
    refused("v9.npy", "version 9.0 is not supported");
    f = fopen(path("text.npy"), "w");
    fputs("q,k,v\n1,2,3\n", f);
    fclose(f);
    refused("text.npy", "not a .npy file");
    f = fopen(path("cut.npy"), "wb");
    fwrite("\x93NUMPY\x01\x00\x76\x00{'descr'", 1, 19, f);
    fclose(f);
    refused("cut.npy", "truncated header");
    refused("missing.npy", "No such file");
    /* Found by fuzzing (tests/fuzz/npy/crash-huge-shape.npy): a 1e16-element
     * shape in a file of a few bytes is refused before any allocation. */
    handmade("huge.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (16167041637590688, ), }",
             fv, sizeof(fv));
    refused("huge.npy", "truncated: the shape needs 64668166550362752 bytes of data, the file has 16");

    /* Integers, for a serving batch's offsets: int32 written and read back,
     * int64 by hand (big values exact), and each reader refusing the other
     * kind. */
    const int32_t iv[4] = { 0, 7, -3, 2147483647 };
    const size_t ishape[1] = { 4 };
    ok = attn_npy_write_i32(path("i32.npy"), iv, ishape, 1, why, sizeof(why)) &&
         attn_npy_read_ints(path("i32.npy"), &a, why, sizeof(why));
    tap_ok(ok && a.i32 && a.ndim == 1 && a.count == 4 && a.ints[1] == 7 && a.ints[2] == -3 &&
           a.ints[3] == 2147483647, "int32 (4,): written and read back exactly %s", why);
    if (ok)
        attn_npy_free(&a);
    const int64_t lv[2] = { 1, (int64_t)1 << 40 };
    handmade("i64.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", lv, sizeof(lv));
    ok = attn_npy_read_ints(path("i64.npy"), &a, why, sizeof(why));
    tap_ok(ok && a.i64 && a.count == 2 && a.ints[0] == 1 && a.ints[1] == (int64_t)1 << 40,
           "int64 (2,): read exactly, 2^40 included %s", why);
    if (ok)
        attn_npy_free(&a);
    ok = attn_npy_read_ints(path("rt.npy"), &a, why, sizeof(why));
    tap_ok(!ok && strstr(why, "dtype '<f4' is not int32 or int64"), "a float file where integers "
           "are wanted is refused: %s", why);
    if (ok)
        attn_npy_free(&a);
    refused("i32.npy", "dtype '<i4' is not float32");

    /* Clean up. */
    const char *names[] = { "rt.npy", "v2.npy", "v3.npy", "be.npy", "int.npy", "fortran.npy",
                            "short.npy", "long.npy", "noshape.npy", "badshape.npy", "v9.npy",
                            "text.npy", "cut.npy", "huge.npy", "i32.npy", "i64.npy" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        unlink(path(names[i]));
    rmdir(dir);
    return tap_done();
}
