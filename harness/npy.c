#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/half.h"
#include "npy.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .npy code reads and writes little-endian data as it is in memory");

static const unsigned char magic[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };

void attn_npy_shape_str(const size_t *shape, int ndim, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < ndim && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%zu", i ? ", " : "", shape[i]);
    if (at < len)
        snprintf(buf + at, len - at, ndim == 1 ? ",)" : ")");
}

void attn_npy_free(attn_npy *a)
{
    free(a->data);
    free(a->ints);
    a->data = NULL;
    a->ints = NULL;
}

/* The value of 'key' in the header dict: the text after "'key':", spaces skipped. */
static const char *dict_value(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof(pat), "'%s'", key);
    const char *p = strstr(h, pat);
    if (!p) {
        snprintf(pat, sizeof(pat), "\"%s\"", key);
        if (!(p = strstr(h, pat)))
            return NULL;
    }
    p += strlen(pat);
    while (isspace((unsigned char)*p))
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

#define FAIL(...) do { snprintf(why, len, __VA_ARGS__); goto fail; } while (0)

enum read_mode { READ_HEADER, READ_FLOATS, READ_INTS };

static bool read_npy(const char *path, attn_npy *a, enum read_mode mode, char *why, size_t len)
{
    memset(a, 0, sizeof(*a));
    char *header = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return false;
    }
    unsigned char pre[12];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, magic, 6))
        FAIL("%s: not a .npy file (no \\x93NUMPY magic)", path);
    const int major = pre[6];
    size_t hlen;
    if (major == 1) {
        if (fread(pre + 8, 1, 2, f) != 2)
            FAIL("%s: truncated header", path);
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (major == 2 || major == 3) {
        if (fread(pre + 8, 1, 4, f) != 4)
            FAIL("%s: truncated header", path);
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else {
        FAIL("%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0)", path, major, pre[7]);
    }
    if (hlen > (1u << 24))
        FAIL("%s: header of %zu bytes is implausible", path, hlen);
    if (!(header = malloc(hlen + 1)))
        FAIL("%s: out of memory", path);
    if (fread(header, 1, hlen, f) != hlen)
        FAIL("%s: truncated header", path);
    header[hlen] = '\0';

    const char *d = dict_value(header, "descr");
    if (!d || (*d != '\'' && *d != '"'))
        FAIL("%s: header has no 'descr'", path);
    char descr[16] = "";
    size_t n = 0;
    for (const char *p = d + 1; *p && *p != *d && n + 1 < sizeof(descr); p++)
        descr[n++] = *p;
    descr[n] = '\0';
    if (mode == READ_INTS) {
        if (!strcmp(descr, "<i4"))
            a->i32 = true;
        else if (!strcmp(descr, "<i8"))
            a->i64 = true;
        else
            FAIL("%s: dtype '%s' is not int32 or int64 little-endian ('<i4', '<i8')", path,
                 descr);
    } else if (!strcmp(descr, "<f8")) {
        a->f64 = true;
    } else if (!strcmp(descr, "<f2")) {
        a->f16 = true;
    } else if (!strcmp(descr, "<u2")) {
        a->u16 = true;
    } else if (strcmp(descr, "<f4")) {
        FAIL("%s: dtype '%s' is not float32, float64, float16 or uint16 (bf16 bits) "
             "little-endian ('<f4', '<f8', '<f2', '<u2')", path, descr);
    }
    const char *fo = dict_value(header, "fortran_order");
    if (!fo)
        FAIL("%s: header has no 'fortran_order'", path);
    if (!strncmp(fo, "True", 4))
        FAIL("%s: Fortran order; write it in C order (numpy.ascontiguousarray)", path);
    if (strncmp(fo, "False", 5))
        FAIL("%s: 'fortran_order' is neither True nor False", path);
    const char *s = dict_value(header, "shape");
    if (!s || *s != '(')
        FAIL("%s: header has no 'shape' tuple", path);
    s++;
    a->count = 1;
    for (;;) {
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ')')
            break;
        if (!isdigit((unsigned char)*s))
            FAIL("%s: 'shape' is not a tuple of integers", path);
        if (a->ndim == ATTN_NPY_MAX_DIMS)
            FAIL("%s: more than %d dimensions", path, ATTN_NPY_MAX_DIMS);
        char *end;
        errno = 0;
        const unsigned long long v = strtoull(s, &end, 10);
        if (errno || v > SIZE_MAX / 16 || __builtin_mul_overflow(a->count, (size_t)v, &a->count))
            FAIL("%s: shape too large", path);
        a->shape[a->ndim++] = (size_t)v;
        s = end;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ',')
            s++;
        else if (*s != ')')
            FAIL("%s: 'shape' is not a tuple of integers", path);
    }
    const size_t item = a->f64 || a->i64 ? 8 : a->f16 || a->u16 ? 2 : 4;
    size_t bytes;
    if (__builtin_mul_overflow(a->count, item, &bytes))
        FAIL("%s: shape too large", path);
    /* The data's length against the shape before anything is allocated: a
     * tiny file must not make us ask for the memory a huge shape needs. */
    struct stat st;
    const long at = ftell(f);
    if (at >= 0 && !fstat(fileno(f), &st) && S_ISREG(st.st_mode)) {
        const size_t have = st.st_size > at ? (size_t)(st.st_size - at) : 0;
        if (have < bytes)
            FAIL("%s: truncated: the shape needs %zu bytes of data, the file has %zu", path, bytes,
                 have);
        if (have > bytes)
            FAIL("%s: more data than the %zu bytes the shape describes", path, bytes);
    }
    if (mode == READ_HEADER) {
        free(header);
        fclose(f);
        return true;
    }
    if (mode == READ_INTS ? !(a->ints = malloc(a->count ? a->count * sizeof(int64_t) : 1))
                          : !(a->data = malloc(a->count ? a->count * sizeof(float) : 1)))
        FAIL("%s: out of memory for %zu values", path, a->count);
    /* float32 and int64 straight in; the others through a buffer, converted
     * (exactly, but for float64's rounding to float32). */
    size_t got = 0;
    if (a->i64) {
        got = fread(a->ints, 8, a->count, f);
    } else if (item == 4 && !a->i32) {
        got = fread(a->data, 4, a->count, f);
    } else {
        unsigned char buf[8192];
        const size_t per = sizeof(buf) / item;
        while (got < a->count) {
            const size_t want = a->count - got < per ? a->count - got : per;
            const size_t r = fread(buf, item, want, f);
            for (size_t i = 0; i < r; i++) {
                double x;
                uint16_t h;
                int32_t w;
                if (a->i32) {
                    memcpy(&w, buf + 4 * i, 4);
                    a->ints[got + i] = w;
                } else if (a->f64) {
                    memcpy(&x, buf + 8 * i, 8);
                    a->data[got + i] = (float)x;
                } else {
                    memcpy(&h, buf + 2 * i, 2);
                    a->data[got + i] = a->u16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
                }
            }
            got += r;
            if (r < want)
                break;
        }
    }
    if (got < a->count)
        FAIL("%s: truncated: the shape needs %zu bytes of data, the file has %zu", path, bytes,
             got * item);
    if (fgetc(f) != EOF)
        FAIL("%s: more data than the %zu bytes the shape describes", path, bytes);
    free(header);
    fclose(f);
    return true;
fail:
    free(header);
    fclose(f);
    attn_npy_free(a);
    return false;
}

bool attn_npy_read(const char *path, attn_npy *a, char *why, size_t len)
{
    return read_npy(path, a, READ_FLOATS, why, len);
}

bool attn_npy_read_header(const char *path, attn_npy *a, char *why, size_t len)
{
    return read_npy(path, a, READ_HEADER, why, len);
}

bool attn_npy_read_ints(const char *path, attn_npy *a, char *why, size_t len)
{
    return read_npy(path, a, READ_INTS, why, len);
}

/* data: count items of 4 bytes, of type descr. */
static bool write_npy(const char *path, const char *descr, const void *data, const size_t *shape,
                      int ndim, char *why, size_t len)
{
    char dict[512], shp[256];
    attn_npy_shape_str(shape, ndim, shp, sizeof(shp));
    int n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr, shp);
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= shape[i];
    /* magic(6) + version(2) + length(2 or 4) + dict + padding + '\n': a multiple of 64. */
    int pre = 10, major = 1;
    size_t total = (size_t)(pre + n + 1 + 63) / 64 * 64;
    if (total - (size_t)pre > 65535) {
        pre = 12, major = 2;
        total = (size_t)(pre + n + 1 + 63) / 64 * 64;
    }
    const size_t hlen = total - (size_t)pre;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(why, len, "cannot write %s: %s", path, strerror(errno));
        return false;
    }
    unsigned char head[12] = { 0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0 };
    for (int i = 0; i < pre - 8; i++)
        head[8 + i] = (unsigned char)(hlen >> (8 * i));
    bool ok = fwrite(head, 1, (size_t)pre, f) == (size_t)pre && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = (size_t)n; ok && i + 1 < hlen; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF && fwrite(data, 4, count, f) == count;
    ok = fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    if (fclose(f) || !ok) {
        snprintf(why, len, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return false;
    }
    if (rename(tmp, path)) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
}

bool attn_npy_write(const char *path, const float *data, const size_t *shape, int ndim, char *why,
                    size_t len)
{
    return write_npy(path, "<f4", data, shape, ndim, why, len);
}

bool attn_npy_write_i32(const char *path, const int32_t *data, const size_t *shape, int ndim,
                        char *why, size_t len)
{
    return write_npy(path, "<i4", data, shape, ndim, why, len);
}
