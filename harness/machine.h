/* The context of a run, captured once: machine, build, libraries, clock. */
#ifndef ATTN_MACHINE_H
#define ATTN_MACHINE_H

#include <stdint.h>
#include <stdio.h>

#include "peak.h"

typedef struct attn_cache_info {
    int level;
    char type[16];          /* Data, Instruction, Unified */
    uint64_t size;          /* bytes */
    int sharing;            /* CPUs sharing it */
} attn_cache_info;

typedef struct attn_machine {
    char host[64];
    char cpu[128];
    char os[160];
    char governor[32];      /* "unknown" when not readable */
    char date[40];          /* ISO 8601, local time with offset */
    int cpus_online;
    int threads;            /* what every threading runtime was set to */
    char pinned[96];        /* "" when not pinned */
    char huge_pages[64];    /* the inputs' pages: "on (THP madvise)", "off", ... */
    double mhz;             /* 0 when unknown */
    double load[3];
    attn_cache_info caches[8];
    int ncaches;
    double clock_res, clock_step;   /* advertised resolution, smallest observed step (s) */
    char backends[512];     /* "name (version); ..." of the backends built in */
    bool peak_known;
    attn_peak peak;
} attn_machine;

void attn_machine_capture(attn_machine *m, int threads, const char *pinned);

/* Compile-time facts of this build. */
const char *attn_build_compiler(void);
const char *attn_build_options(void);
const char *attn_build_type(void);
const char *attn_git_revision(void);

/* A few "# " free lines for the human report. */
void attn_machine_print(FILE *f, const attn_machine *m);

/* The measured peak, or NULL when none is kept for this CPU and thread count. */
static inline const attn_peak *attn_machine_peak(const attn_machine *m)
{
    return m->peak_known ? &m->peak : NULL;
}

#endif
