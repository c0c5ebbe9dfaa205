/* Compare: a backend's output against the reference, with guard canaries
 * around the output so a write past either end is caught. */
#ifndef ATTN_CHECK_H
#define ATTN_CHECK_H

#include <stdbool.h>

#include "reference.h"

/* An output buffer with poisoned guard zones on both sides. data is 64-byte
 * aligned and the back guard starts right after the last element. */
typedef struct attn_guarded {
    float *data;
    size_t n;
    unsigned char *base;
} attn_guarded;

attn_status attn_guarded_alloc(attn_guarded *g, size_t n);
/* Fill data with NaN so an element a backend never writes cannot pass. */
void attn_guarded_poison(attn_guarded *g);
bool attn_guarded_intact(const attn_guarded *g);
void attn_guarded_free(attn_guarded *g);

typedef struct attn_tolerance {
    const char *name;
    double base;        /* x max|V| */
    double per_logit;   /* x max|V| x max|logit| */
} attn_tolerance;

/* The tolerance classes (harness/check.c justifies their numbers): fp32
 * storage, and bf16 or fp16 storage with fp32 accumulation. */
extern const attn_tolerance attn_tolerance_fp32;
extern const attn_tolerance attn_tolerance_bf16;
extern const attn_tolerance attn_tolerance_fp16;

/* The class p is judged by: that of its coarsest storage type. */
const attn_tolerance *attn_tolerance_for(const attn_problem *p);

typedef struct attn_check {
    double max_abs;         /* over the checked rows */
    double max_rel;         /* max_abs / max|ref| */
    double nmse;            /* sum (o-r)^2 / sum r^2 */
    double ref_max;         /* max|ref| */
    size_t worst_row;       /* flat row id of max_abs */
    int worst_col;
    size_t nonfinite;       /* NaN or Inf where the reference is finite (anywhere in
                               the output when the inputs are all finite) */
    size_t first_nonfinite; /* element index of the first */
    size_t mismatched;      /* where the reference is NaN or Inf, outputs that are not
                               the same (NaN for NaN, the same infinity) */
    size_t first_mismatch;  /* element index of the first */
    double mismatch_ref;    /* the reference there */
    bool guard_ok;
    size_t ref_zeros, ref_elems;      /* exact zeros among the checked reference's finite
                                         values, and those values */
    size_t ref_nonfinite;   /* the reference's NaN and Inf the output matched */
    size_t unwritten;       /* of those NaN, outputs still holding the poison */
    size_t first_unwritten;
    bool mistrusted;        /* fewer values that tell (nonzero finite ones, and NaN and
                               Inf the backend wrote) in the checked reference than one
                               output row holds (d_v): it cannot tell a right output
                               from one of zeros */
    double max_abs_v, max_abs_logit;  /* the reference's, which scale tol */
    double tol;             /* the bound max_abs must stay within */
    const attn_tolerance *tolerance;
    const char *what;       /* the output checked: NULL for O, else "dQ", "dK", "dV" */
    bool pass;
    char why[256];          /* why it failed; empty when it passed */
} attn_check;

/* Against p's class (attn_tolerance_for). */
void attn_check_output(attn_check *c, const attn_problem *p, const attn_ref *ref,
                       const attn_guarded *out);
/* Against the class given: for the tests that show the classes differ. */
void attn_check_output_with(attn_check *c, const attn_problem *p, const attn_ref *ref,
                            const attn_guarded *out, const attn_tolerance *tolerance);

/* The backward's gradients out[0..3) (dQ, dK, dV), each against its rows
 * of g, into c[0..3): the checks of attn_check_output, with the tolerance
 * of p's class scaled by the gradient's own magnitude (g->mag) where O's
 * is scaled by max|V|. fwd gives what the inputs held (NaN, Inf). */
void attn_check_grads(attn_check c[3], const attn_problem *p, const attn_ref *fwd,
                      const attn_ref_grads *g, const attn_guarded out[3]);

/* "max_abs 2.1e-07 rel 8.9e-07 nmse 3.0e-14 <= tol 1.8e-04 (exact-fp32: ...)" */
void attn_check_describe(const attn_check *c, char *buf, size_t len);

#endif
