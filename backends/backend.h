/* The backend contract is include/attnbench/backend.h (the public, versioned
 * ABI that built-in backends and plugins alike are written against); this
 * header adds what attnbench itself defines around it: the names of its
 * enums, the registry of backends, and the wrappers of the optional slots. */
#ifndef ATTN_BACKEND_H
#define ATTN_BACKEND_H

#include "attnbench/backend.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

const char *attn_status_str(attn_status s);

/* "fp32", "bf16", "fp16", "q8_0", ...; and back (ATTN_DTYPE_COUNT when
 * unknown). */
const char *attn_dtype_name(attn_dtype d);
attn_dtype attn_dtype_from_name(const char *name);

/* "fwd", "bwd", "fwdbwd"; and back (ATTN_PASS_COUNT when unknown). */
const char *attn_pass_name(attn_pass x);
attn_pass attn_pass_from_name(const char *name);

/* "window", "softcap", ... for one ATTN_MOD_* bit; the option that sets it. */
const char *attn_mod_name(unsigned bit);
const char *attn_mod_option(unsigned bit);

size_t attn_backend_count(void);
const attn_backend *attn_backend_get(size_t i);
const attn_backend *attn_backend_find(const char *name);
/* The backends be[0..n) of a plugin, registered after the built-ins
 * (harness/plugin.c), from the file `from` (all kept as they are): all of
 * them, or none and false when a name is taken or the registry is full. */
bool attn_backend_add(const attn_backend *be, int n, const char *from);
/* The plugin file be came from; NULL for a built-in backend. */
const char *attn_backend_origin(const attn_backend *be);

/* Built, and its probe (if any) says this machine can run it. */
attn_status attn_backend_usable(const attn_backend *be, char *why, size_t len);
/* Whether be can run p: p is of its kind, and its supports() (if any) agrees. */
attn_status attn_backend_supports(const attn_backend *be, const attn_problem *p,
                                  const attn_config *cfg, char *why, size_t len);


/* The optional slots, each through its one wrapper. */
/* The library or driver behind be; NULL when it names none. */
const char *attn_backend_version(const attn_backend *be);
/* Device memory the prepared state holds; false for host backends. */
bool attn_backend_device_bytes(const attn_backend *be, void *state, uint64_t *bytes);
/* The device the prepared state runs on, into buf; false for host backends. */
bool attn_backend_device_name(const attn_backend *be, void *state, char *buf, size_t len,
                              bool *is_cpu);
/* Device seconds of the last run; false when the backend has no device clock. */
bool attn_backend_device_time(const attn_backend *be, void *state, double *seconds);
/* Whether be runs on devices it can list (a device backend). */
bool attn_backend_has_devices(const attn_backend *be);
/* Its devices, one line each, into buf (the length snprintf would give);
 * -1 when be is no device backend. */
int attn_backend_devices(const attn_backend *be, char *buf, size_t len);
/* Whether a and b list the same devices (one device layer under both). */
bool attn_backend_same_devices(const attn_backend *a, const attn_backend *b);
/* Whether be can give its attention weights, and the weights themselves
 * (ATTN_EUNSUPPORTED when it cannot). */
bool attn_backend_has_weights(const attn_backend *be);
attn_status attn_backend_weights(const attn_backend *be, void *state, float *out);
/* The backward's gradients into dq, dk, dv (ATTN_EUNSUPPORTED when be has none). */
attn_status attn_backend_read_grads(const attn_backend *be, void *state, float *dq, float *dk,
                                    float *dv);
/* The processes be runs on: 1 unless it is a scale-out backend launched
 * on more (mpirun -n P). */
int attn_backend_world(const attn_backend *be);
/* Each rank's figures (as the ranks slot); 0 for a single-process backend. */
int attn_backend_ranks(const attn_backend *be, void *state, attn_rank_stats *out, int max);


#endif
