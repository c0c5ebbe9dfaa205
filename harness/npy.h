/* NumPy .npy files: the arrays --inputs reads and --dump-output and
 * --dump-weights write. Format versions 1.0, 2.0 and 3.0 are read (3.0 only
 * differs by an utf-8 header); little-endian float32, float64, float16, or
 * uint16 holding bf16 bits (NumPy has no bf16), C order; int32 and int64
 * where integers are wanted (the offsets of a serving batch).
 * Writes are float32 or int32, version 1.0 (2.0 when the header needs more than
 * 65535 bytes), to FILE.tmp renamed over FILE: never a half-written file. */
#ifndef ATTN_NPY_H
#define ATTN_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ATTN_NPY_MAX_DIMS 8

typedef struct attn_npy {
    int ndim;
    size_t shape[ATTN_NPY_MAX_DIMS];
    size_t count;           /* product of shape */
    bool f64;               /* the file held float64 (converted to float32) */
    bool f16;               /* float16 (converted exactly) */
    bool u16;               /* uint16: read as bf16 bits (converted exactly); the
                               caller decides whether bf16 is what it wants */
    bool i32, i64;          /* integers, read by attn_npy_read_ints alone */
    float *data;            /* malloc'ed, count floats (attn_npy_read) */
    int64_t *ints;          /* malloc'ed, count integers (attn_npy_read_ints) */
} attn_npy;

/* false with why (one line naming the file) on any problem: unreadable,
 * not .npy, another dtype, byte order or Fortran order, a header that does
 * not parse, or data longer or shorter than the shape says. */
bool attn_npy_read(const char *path, attn_npy *a, char *why, size_t len);
/* The same checks without reading the data: shape and dtype, data NULL. */
bool attn_npy_read_header(const char *path, attn_npy *a, char *why, size_t len);
/* An int32 or int64 file into a->ints (and no other dtype). */
bool attn_npy_read_ints(const char *path, attn_npy *a, char *why, size_t len);
void attn_npy_free(attn_npy *a);

bool attn_npy_write(const char *path, const float *data, const size_t *shape, int ndim,
                    char *why, size_t len);
bool attn_npy_write_i32(const char *path, const int32_t *data, const size_t *shape, int ndim,
                        char *why, size_t len);

/* "(1, 8, 64, 16)" */
void attn_npy_shape_str(const size_t *shape, int ndim, char *buf, size_t len);

#endif
