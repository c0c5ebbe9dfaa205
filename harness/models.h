/* --model: the attention of published models as presets (heads, K/V heads,
 * widths, scale, causal, score modifiers), and the score modifiers' own
 * option values. */
#ifndef ATTN_MODELS_H
#define ATTN_MODELS_H

#include <stdio.h>

#include "backend.h"

typedef struct attn_model {
    const char *name;            /* lower case, as --model takes it */
    int heads, kv_heads, d_k, d_v;
    double scale;                /* 0: 1/sqrt(dk) */
    bool causal;                 /* a decoder: prefill is causal */
    attn_mods mods;
    const char *source;          /* where the numbers come from */
} attn_model;

size_t attn_model_count(void);
const attn_model *attn_model_get(size_t i);
/* By name (case-insensitive); NULL when unknown. */
const attn_model *attn_model_find(const char *name);
/* The logit scale of m: its own, or 1/sqrt(dk). */
float attn_model_scale(const attn_model *m);

/* --model list: the table, each preset's fields and their source. */
void attn_models_print(FILE *f);

/* "L" or "L,R" (each 0..max) for --window: L = R when one is given.
 * -1 when val is one, else the exit code after one line on stderr. */
int attn_parse_window(const char *val, int max, attn_mods *m);

#endif
