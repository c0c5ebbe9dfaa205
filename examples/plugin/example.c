/* example: an attnbench plugin. Softmax attention as its definition reads,
 * one query row at a time, in one thread: fp32 storage, dense batches,
 * grouped-query heads, the causal and padding masks, the forward. It
 * includes nothing of attnbench's but its public header, and attnbench
 * checks it, times it and reports it like any backend:
 *
 *   cc -O2 -shared -fPIC $(pkg-config --cflags attnbench) example.c -o libexample.so -lm
 *   attnbench --plugin ./libexample.so --backend example.rows --seq 1024 --causal
 *
 * docs/writing-a-backend.md walks through each part. */
#include <attnbench/backend.h>
#include <math.h>

/* What prepare plans and bind hands over; every byte from cfg->alloc. */
typedef struct example {
    attn_problem p;
    const attn_allocator *alloc;
    int *kv_len;             /* a copy of p->kv_len, or NULL */
    float *scores;           /* one row of Nk scores */
    attn_tensors t;
} example;

static size_t example_workspace(const attn_problem *p, const attn_config *cfg)
{
    (void)cfg;
    return sizeof(example) + (size_t)p->seq_kv * sizeof(float) +
           (p->kv_len ? (size_t)p->batch * sizeof(int) : 0);
}

static void example_release(void *state)
{
    example *s = state;
    if (!s)
        return;
    const attn_allocator *a = s->alloc;
    attn_free(a, s->scores);
    attn_free(a, s->kv_len);
    attn_free(a, s);
}

static attn_status example_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    example *s = attn_alloc(cfg->alloc, sizeof(example));
    if (!s)
        return ATTN_ENOMEM;
    *s = (example){ .p = *p, .alloc = cfg->alloc };
    /* The problem's arrays belong to the caller: keep a copy. */
    s->scores = attn_alloc(cfg->alloc, (size_t)p->seq_kv * sizeof(float));
    if (p->kv_len) {
        s->kv_len = attn_alloc(cfg->alloc, (size_t)p->batch * sizeof(int));
        if (s->kv_len)
            memcpy(s->kv_len, p->kv_len, (size_t)p->batch * sizeof(int));
        s->p.kv_len = s->kv_len;
    }
    if (!s->scores || (p->kv_len && !s->kv_len)) {
        example_release(s);
        return ATTN_ENOMEM;
    }
    *state = s;
    return ATTN_OK;
}

static attn_status example_bind(void *state, const attn_tensors *t)
{
    ((example *)state)->t = *t;
    return ATTN_OK;
}

/* O[b,h,i,:]: the keys row i sees (attn_visible_range: causal aligned
 * bottom-right, padding), their softmax, and the weighted sum of V. */
static void example_row(const example *s, int b, int h, int i)
{
    const attn_problem *p = &s->p;
    const int nq = p->seq_q, nk = p->seq_kv, dk = p->d_k, dv = p->d_v;
    const int g = h / attn_group(p);
    const float *q = s->t.q + (((size_t)b * p->heads + h) * nq + i) * dk;
    const float *k = s->t.k + ((size_t)b * attn_kv_heads(p) + g) * nk * dk;
    const float *v = s->t.v + ((size_t)b * attn_kv_heads(p) + g) * nk * dv;
    float *o = s->t.o + (((size_t)b * p->heads + h) * nq + i) * dv;
    int lo, hi;
    attn_visible_range(p, b, i, &lo, &hi);
    float m = -INFINITY;
    for (int j = lo; j < hi; j++) {
        float dot = 0.0f;
        for (int c = 0; c < dk; c++)
            dot += q[c] * k[(size_t)j * dk + c];
        s->scores[j] = p->scale * dot;
        m = s->scores[j] > m ? s->scores[j] : m;
    }
    for (int c = 0; c < dv; c++)
        o[c] = 0.0f;
    if (hi <= lo)
        return;   /* no key: zeros, by the contract */
    float l = 0.0f;
    for (int j = lo; j < hi; j++) {
        const float w = expf(s->scores[j] - m);
        l += w;
        for (int c = 0; c < dv; c++)
            o[c] += w * v[(size_t)j * dv + c];
    }
    for (int c = 0; c < dv; c++)
        o[c] /= l;
}

static attn_status example_run(void *state)
{
    const example *s = state;
    for (int b = 0; b < s->p.batch; b++)
        for (int h = 0; h < s->p.heads; h++)
            for (int i = 0; i < s->p.seq_q; i++)
                example_row(s, b, h, i);
    return ATTN_OK;
}

/* O is written in place, in the bound t->o; out may be another buffer. */
static attn_status example_read(void *state, float *out)
{
    const example *s = state;
    const size_t n = (size_t)s->p.batch * s->p.heads * s->p.seq_q * s->p.d_v;
    if (out != s->t.o)
        memcpy(out, s->t.o, n * sizeof(float));
    return ATTN_OK;
}

static const attn_backend example_rows = {
    .name = "rows",
    .summary = "softmax attention row by row, 1 thread, fp32 (examples/plugin)",
    .kind = ATTN_KIND_SOFTMAX,
    .prepare = example_prepare,
    .bind = example_bind,
    .run = example_run,
    .read = example_read,
    .release = example_release,
    .workspace = example_workspace,
};

static const attn_backend *const example_backends[] = { &example_rows };

#ifndef EXAMPLE_NO_ENTRY
const attn_plugin *attnbench_plugin(void);

const attn_plugin *attnbench_plugin(void)
{
    static const attn_plugin d = ATTN_PLUGIN_DESCRIBE(
        "example", "the example plugin: attention as its definition reads", example_backends, 1);
    return &d;
}
#endif
