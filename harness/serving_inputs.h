/* A serving batch's inputs (harness/serving_inputs.c): what attn_inputs_make
 * does for p->ragged beside the dense path, and the packed files. */
#ifndef ATTN_SERVING_INPUTS_H
#define ATTN_SERVING_INPUTS_H

#include "inputs.h"

/* A paged batch's block tables: the pool's n pages, each used once, in a
 * seeded shuffle, so that no item's pages are contiguous by accident. */
void attn_serving_shuffle_pages(int32_t *pages, long n, uint64_t seed);

/* A paged batch's K (or V, rows of d) filled through the block tables
 * with the values of its packed layout (the page size moves the keys,
 * never changes them): fp32 into x, or straight to 16 bits into h where x
 * is NULL. */
void attn_serving_fill(float *x, uint16_t *h, const attn_problem *p, const int32_t *pages,
                       const attn_setup *s, int tensor, int d);

/* The slots of each item's last page past its keys: NaN in K and V, in
 * every storage held. */
void attn_serving_poison_slack(attn_inputs *in, const attn_problem *p);

/* fp8's scale of item b's K/V head g, from its keys alone (rows of n in
 * x, gathered into tmp, room for the item's keys). */
float attn_serving_fp8_scale(const float *x, const attn_problem *p, const int32_t *pages, int b,
                             int g, int n, attn_kvq f, float *tmp);

/* Q, K and V from DIR packed ([T,H,d]), the offsets checked against
 * DIR/cu_seqlens_q.npy and cu_seqlens_k.npy where they are there; the
 * block tables drawn before. */
attn_status attn_serving_read(attn_inputs *in, const attn_problem *p, const char *dir,
                              char *why, size_t len);

#endif
