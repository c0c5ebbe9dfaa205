/* The onednn backend's planning, open to tests. */
#ifndef ATTN_ONEDNN_H
#define ATTN_ONEDNN_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

/* Plans p as prepare would (collapse: true) or with the batch and head
 * dimensions of the tensors always kept apart (collapse: false), and says
 * whether oneDNN runs every primitive of the plan on a JIT implementation:
 * ATTN_OK, or ATTN_EUNSUPPORTED with why naming the reference fallback.
 * Only in builds with the backend (ATTN_HAVE_ONEDNN && ATTN_HAVE_OPENMP). */
attn_status attn_onednn_plan_check(const attn_problem *p, bool collapse, char *why, size_t len);

#endif
