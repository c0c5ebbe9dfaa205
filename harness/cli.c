#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

enum {
    MAX_BATCH = 65536, MAX_HEADS = 4096, MAX_SEQ = 1 << 24, MAX_DIM = 4096,
    MAX_THREADS = 1024, MAX_REPS = 1000000, MAX_WARMUP = 1000,
};

typedef enum opt_id {
    O_BACKEND, O_BATCH, O_HEADS, O_SEQ, O_SEQ_KV, O_DK, O_DV, O_SCALE, O_CAUSAL, O_KV_LEN,
    O_FILL, O_SEED, O_THREADS, O_REPS, O_WARMUP, O_CHECK_ROWS, O_MAX_MEM, O_LIST, O_HELP,
    O_VERSION,
} opt_id;

static const struct option_def {
    const char *name;
    opt_id id;
    bool arg;
} options[] = {
    { "backend", O_BACKEND, true },    { "batch", O_BATCH, true },
    { "heads", O_HEADS, true },        { "seq", O_SEQ, true },
    { "seq-kv", O_SEQ_KV, true },      { "dk", O_DK, true },
    { "dv", O_DV, true },              { "scale", O_SCALE, true },
    { "causal", O_CAUSAL, false },     { "kv-len", O_KV_LEN, true },
    { "fill", O_FILL, true },          { "seed", O_SEED, true },
    { "threads", O_THREADS, true },    { "reps", O_REPS, true },
    { "warmup", O_WARMUP, true },      { "check-rows", O_CHECK_ROWS, true },
    { "max-mem", O_MAX_MEM, true },    { "list", O_LIST, false },
    { "help", O_HELP, false },         { "version", O_VERSION, false },
};

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("attnbench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return ATTN_EXIT_USAGE;
}

/* A whole decimal integer in [lo, hi]: no sign games, spaces or trailing text. */
static bool parse_long(const char *s, long lo, long hi, long *out)
{
    if (!*s || !(*s == '-' || (*s >= '0' && *s <= '9')))
        return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_int_opt(const char *name, const char *val, long lo, long hi, int *dst)
{
    long v;
    if (!parse_long(val, lo, hi, &v))
        return usage_error("--%s: '%s' is not an integer in [%ld, %ld]", name, val, lo, hi);
    *dst = (int)v;
    return -1;
}

static int parse_seed(const char *val, uint64_t *dst)
{
    if (!*val || *val < '0' || *val > '9')
        return usage_error("--seed: '%s' is not an integer in [0, %llu]", val, ULLONG_MAX);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || *end)
        return usage_error("--seed: '%s' is not an integer in [0, %llu]", val, ULLONG_MAX);
    *dst = v;
    return -1;
}

static int parse_scale(const char *val, float *dst)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || *end || errno || !isfinite(v) || fabs(v) > 1e30)
        return usage_error("--scale: '%s' is not a finite number in [-1e30, 1e30]", val);
    *dst = (float)v;
    return -1;
}

/* Bytes with an optional binary suffix: 512M, 8G, 1T. */
static int parse_bytes(const char *val, uint64_t *dst)
{
    static const char bad[] = "--max-mem: '%s' is not a size such as 512M, 8G or 1073741824 "
                              "(suffixes K, M, G, T; at least 1 byte)";
    if (!*val || *val < '0' || *val > '9')
        return usage_error(bad, val);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    int shift = 0;
    switch (*end) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (errno || *end || v == 0 || v > (ULLONG_MAX >> shift))
        return usage_error(bad, val);
    *dst = (uint64_t)v << shift;
    return -1;
}

static int parse_kv_len(const char *val, int **out, int *count)
{
    int n = 1;
    for (const char *c = val; *c; c++)
        n += *c == ',';
    if (n > MAX_BATCH)
        return usage_error("--kv-len: more than %d values", MAX_BATCH);
    int *v = malloc((size_t)n * sizeof(int));
    char *copy = strdup(val);
    if (!v || !copy) {
        free(v);
        free(copy);
        return usage_error("--kv-len: out of memory");
    }
    int i = 0;
    for (char *tok = copy, *next; tok; tok = next, i++) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        long x;
        if (!parse_long(tok, 0, MAX_SEQ, &x)) {
            int rc = usage_error("--kv-len: '%s' is not an integer in [0, %d] (a comma list, "
                                 "one per batch item or one for all)", tok, MAX_SEQ);
            free(v);
            free(copy);
            return rc;
        }
        v[i] = (int)x;
    }
    free(copy);
    free(*out);
    *out = v;
    *count = n;
    return -1;
}

static int parse_backends(attn_opts *o, const char *val)
{
    const size_t nreg = attn_backend_count();
    free(o->backends);
    o->backends = NULL;
    o->nbackends = 0;
    char *copy = strdup(val);
    const attn_backend **list = calloc(nreg + 1, sizeof(*list));
    int rc = -1;
    if (!copy || !list) {
        rc = usage_error("--backend: out of memory");
        goto done;
    }
    size_t n = 0;
    for (char *tok = copy, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        const bool all = !strcmp(tok, "all");
        const attn_backend *be = all ? NULL : attn_backend_find(tok);
        if (!all && !be) {
            char known[512] = "";
            size_t at = 0;
            for (size_t i = 0; i < nreg && at < sizeof(known); i++)
                at += (size_t)snprintf(known + at, sizeof(known) - at, "%s%s", i ? ", " : "",
                                       attn_backend_get(i)->name);
            rc = usage_error("--backend: unknown backend '%s' (known: %s, all)", tok, known);
            goto done;
        }
        for (size_t i = 0; i < (all ? nreg : 1); i++) {
            const attn_backend *add = all ? attn_backend_get(i) : be;
            bool seen = false;
            for (size_t j = 0; j < n; j++)
                seen |= list[j] == add;
            if (!seen)
                list[n++] = add;
        }
    }
    o->backends = list;
    o->nbackends = n;
    list = NULL;
done:
    free(list);
    free(copy);
    return rc;
}

static int default_threads(void)
{
    if (!ATTN_HAVE_OPENMP)
        return 1;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static int apply(attn_opts *o, opt_id id, const char *name, const char *val,
                 bool *seq_kv_set, bool *dv_set, bool *scale_set, int *nkv)
{
    switch (id) {
    case O_BACKEND: o->explicit_backends = true; return parse_backends(o, val);
    case O_BATCH:   return parse_int_opt(name, val, 1, MAX_BATCH, &o->p.batch);
    case O_HEADS:   return parse_int_opt(name, val, 1, MAX_HEADS, &o->p.heads);
    case O_SEQ:     return parse_int_opt(name, val, 1, MAX_SEQ, &o->p.seq_q);
    case O_SEQ_KV:  *seq_kv_set = true; return parse_int_opt(name, val, 1, MAX_SEQ, &o->p.seq_kv);
    case O_DK:      return parse_int_opt(name, val, 1, MAX_DIM, &o->p.d_k);
    case O_DV:      *dv_set = true; return parse_int_opt(name, val, 1, MAX_DIM, &o->p.d_v);
    case O_SCALE:   *scale_set = true; return parse_scale(val, &o->p.scale);
    case O_CAUSAL:  o->p.causal = true; return -1;
    case O_KV_LEN:  return parse_kv_len(val, &o->kv_len, nkv);
    case O_SEED:    return parse_seed(val, &o->setup.seed);
    case O_THREADS: return parse_int_opt(name, val, 1, MAX_THREADS, &o->setup.threads);
    case O_REPS:    return parse_int_opt(name, val, 0, MAX_REPS, &o->setup.reps);
    case O_WARMUP:  return parse_int_opt(name, val, 0, MAX_WARMUP, &o->setup.warmup);
    case O_MAX_MEM: return parse_bytes(val, &o->setup.max_mem);
    case O_LIST:    o->list = true; return -1;
    case O_HELP:    o->help = true; return -1;
    case O_VERSION: o->version = true; return -1;
    case O_FILL:
        for (int f = 0; f < ATTN_FILL_COUNT; f++) {
            if (!strcmp(val, attn_fill_name((attn_fill_kind)f))) {
                o->setup.fill = (attn_fill_kind)f;
                return -1;
            }
        }
        return usage_error("--fill: '%s' is not one of: normal, extreme", val);
    case O_CHECK_ROWS: {
        long v;
        if (!strcmp(val, "all")) {
            o->setup.check_rows = -1;
            return -1;
        }
        if (!strcmp(val, "auto")) {
            o->setup.check_rows = 0;
            return -1;
        }
        if (!parse_long(val, 1, LONG_MAX, &v))
            return usage_error("--check-rows: '%s' is not 'auto', 'all' or an integer >= 1", val);
        o->setup.check_rows = v;
        return -1;
    }
    }
    return usage_error("internal: unhandled option --%s", name);
}

/* Fills in what depends on other options and checks them against each other. */
static int finish(attn_opts *o, bool seq_kv_set, bool dv_set, bool scale_set, int nkv)
{
    attn_problem *p = &o->p;
    if (!ATTN_HAVE_OPENMP && o->setup.threads > 1)
        return usage_error("--threads: %d, but this build has no OpenMP and runs 1 thread "
                           "(reconfigure with -Dopenmp=enabled)", o->setup.threads);
    if (!seq_kv_set)
        p->seq_kv = p->seq_q;
    if (!dv_set)
        p->d_v = p->d_k;
    if (!scale_set)
        p->scale = (float)(1.0 / sqrt((double)p->d_k));
    if (o->kv_len) {
        if (nkv != 1 && nkv != p->batch)
            return usage_error("--kv-len: %d values for --batch %d (give one per batch item, "
                               "or one for all)", nkv, p->batch);
        if (nkv == 1 && p->batch > 1) {
            int *all = realloc(o->kv_len, (size_t)p->batch * sizeof(int));
            if (!all)
                return usage_error("--kv-len: out of memory");
            for (int b = 1; b < p->batch; b++)
                all[b] = all[0];
            o->kv_len = all;
        }
        for (int b = 0; b < p->batch; b++)
            if (o->kv_len[b] > p->seq_kv)
                return usage_error("--kv-len: %d is not in [0, %d] (the key length, --seq-kv)",
                                   o->kv_len[b], p->seq_kv);
        p->kv_len = o->kv_len;
    }
    if (!o->explicit_backends) {
        o->nbackends = attn_backend_count();
        o->backends = calloc(o->nbackends, sizeof(*o->backends));
        if (!o->backends)
            return usage_error("out of memory");
        for (size_t i = 0; i < o->nbackends; i++)
            o->backends[i] = attn_backend_get(i);
    }
    return -1;
}

int attn_cli_parse(attn_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->p = (attn_problem){ .batch = 1, .heads = 8, .seq_q = 1024, .d_k = 64 };
    o->setup = (attn_setup){ .threads = default_threads(), .seed = 1, .warmup = 1, .reps = 5 };
    bool seq_kv_set = false, dv_set = false, scale_set = false;
    int nkv = 0;

    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strncmp(arg, "--", 2) || !arg[2])
            return usage_error("unexpected argument '%s' (options start with --; see --help)", arg);
        const char *eq = strchr(arg + 2, '=');
        const size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        const struct option_def *def = NULL;
        for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
            if (strlen(options[i].name) == len && !strncmp(options[i].name, arg + 2, len))
                def = &options[i];
        if (!def)
            return usage_error("unknown option '%.*s' (see --help)", (int)len + 2, arg);
        const char *val = NULL;
        if (def->arg) {
            if (eq)
                val = eq + 1;
            else if (a + 1 < argc)
                val = argv[++a];
            else
                return usage_error("--%s needs a value (see --help)", def->name);
        } else if (eq) {
            return usage_error("--%s takes no value", def->name);
        }
        int rc = apply(o, def->id, def->name, val, &seq_kv_set, &dv_set, &scale_set, &nkv);
        if (rc >= 0)
            return rc;
    }
    return finish(o, seq_kv_set, dv_set, scale_set, nkv);
}

void attn_cli_free(attn_opts *o)
{
    free(o->kv_len);
    free(o->backends);
    o->kv_len = NULL;
    o->backends = NULL;
}

void attn_cli_usage(FILE *f, const char *prog)
{
    fprintf(f,
"usage: %s [options]\n"
"\n"
"Checks every selected attention backend against a double-precision reference,\n"
"then times it, and prints one comparison table (fastest first).\n"
"Options take --opt=value or --opt value.\n"
"\n"
"  --backend=NAME[,NAME...]  backends to run, or 'all' (default: every available one)\n"
"  --batch B        batch size, 1..%d (default 1)\n"
"  --heads H        heads, 1..%d (default 8)\n"
"  --seq N          query length Nq, 1..%d (default 1024)\n"
"  --seq-kv N       key/value length Nk (default: --seq)\n"
"  --dk D           query/key width, 1..%d (default 64)\n"
"  --dv D           value width (default: --dk)\n"
"  --scale S        logit scale (default 1/sqrt(dk))\n"
"  --causal         causal mask, aligned bottom-right: query i sees keys j <= i + Nk - Nq\n"
"  --kv-len L[,L..] valid keys per batch item (one value, or one per item); keys >= L masked\n"
"  --fill KIND      normal (default): N(0,1); extreme: integer Q, K in [-100,100], logits to ~1e4\n"
"  --seed S         input seed (default 1); inputs do not depend on --threads\n"
"  --threads T      threads, 1..%d (default: online cores)\n"
"  --reps R         timed runs after warm-up, 0..%d (default 5; 0: check only)\n"
"  --warmup W       untimed runs before timing, 0..%d (default 1)\n"
"  --check-rows R   rows the reference checks: auto (default: all when cheap, else a\n"
"                   seeded sample), all, or a count\n"
"  --max-mem SIZE   refuse cases needing more than SIZE (e.g. 8G); MemAvailable always applies\n"
"  --list           every registered backend, built or not, usable or not and why\n"
"  --help, --version\n"
"\n"
"exit codes: 0 all ran cases PASSED; 1 a case FAILED; 2 bad command line;\n"
"3 shape too large (size_t overflow or memory); 4 a case hit an ERROR;\n"
"5 nothing ran (every case SKIPPED)\n",
            prog, MAX_BATCH, MAX_HEADS, MAX_SEQ, MAX_DIM, MAX_THREADS, MAX_REPS, MAX_WARMUP);
}
