#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "models.h"
#include "npy.h"
#include "variant.h"

enum {
    MAX_BATCH = 65536, MAX_HEADS = 4096, MAX_SEQ = 1 << 24, MAX_DIM = 4096,
    MAX_THREADS = 1024, MAX_WARMUP = 1000, MAX_LIST = 4096, MAX_TILE = 4096, MAX_TILE_SB = 8,
    MAX_DEVICE = 255, MAX_SPLITS = 1024,
};

typedef enum opt_id {
    O_BACKEND, O_BATCH, O_HEADS, O_SEQ, O_SEQ_KV, O_DK, O_DV, O_SCALE, O_CAUSAL, O_KV_LEN,
    O_FILL, O_SEED, O_THREADS, O_PIN, O_REPS, O_WARMUP, O_MIN_TIME, O_MAX_TIME, O_CHECK_ROWS,
    O_MAX_MEM, O_TILE, O_DEVICE, O_WINDOW, O_GLOBALS, O_RANDOM_BLOCKS, O_BLOCK,
    O_FEATURES, O_PROJ, O_CSV, O_JSON, O_RESUME, O_PEAK, O_LIST, O_HELP, O_VERSION,
    O_INPUTS, O_DUMP_OUTPUT, O_DUMP_WEIGHTS, O_CASE_TIMEOUT, O_ISA, O_DUMP_INPUTS,
    O_CHECK_OUTPUT, O_PEER, O_PEER_TIMES, O_PEER_SKIP, O_KV_HEADS, O_SPLITS, O_DTYPE,
    O_KV_DTYPE, O_SHARD, O_SOFTCAP, O_ALIBI, O_SINKS, O_V_FROM_K, O_MODEL, O_PASS,
    O_HUGE_PAGES, O_BW_PROBE, O_FMA_PROBE, O_LENS, O_PAGE, O_PLUGIN,
} opt_id;

#define ARG_NONE ATTN_ARG_NONE
#define ARG_REQUIRED ATTN_ARG_REQUIRED
#define ARG_OPTIONAL ATTN_ARG_OPTIONAL

static const attn_option options[] = {
    { "backend", O_BACKEND, ARG_REQUIRED },   { "batch", O_BATCH, ARG_REQUIRED },
    { "heads", O_HEADS, ARG_REQUIRED },       { "seq", O_SEQ, ARG_REQUIRED },
    { "seq-kv", O_SEQ_KV, ARG_REQUIRED },     { "dk", O_DK, ARG_REQUIRED },
    { "dv", O_DV, ARG_REQUIRED },             { "scale", O_SCALE, ARG_REQUIRED },
    { "causal", O_CAUSAL, ARG_OPTIONAL },     { "kv-len", O_KV_LEN, ARG_REQUIRED },
    { "lens", O_LENS, ARG_REQUIRED },         { "page", O_PAGE, ARG_REQUIRED },
    { "fill", O_FILL, ARG_REQUIRED },         { "seed", O_SEED, ARG_REQUIRED },
    { "threads", O_THREADS, ARG_REQUIRED },   { "pin", O_PIN, ARG_NONE },
    { "reps", O_REPS, ARG_REQUIRED },         { "warmup", O_WARMUP, ARG_REQUIRED },
    { "min-time", O_MIN_TIME, ARG_REQUIRED }, { "max-time", O_MAX_TIME, ARG_REQUIRED },
    { "check-rows", O_CHECK_ROWS, ARG_REQUIRED }, { "max-mem", O_MAX_MEM, ARG_REQUIRED },
    { "csv", O_CSV, ARG_REQUIRED },           { "json", O_JSON, ARG_REQUIRED },
    { "resume", O_RESUME, ARG_NONE },         { "peak", O_PEAK, ARG_NONE },
    { "list", O_LIST, ARG_NONE },             { "help", O_HELP, ARG_NONE },
    { "version", O_VERSION, ARG_NONE },       { "tile", O_TILE, ARG_REQUIRED },
    { "device", O_DEVICE, ARG_REQUIRED },     { "window", O_WINDOW, ARG_REQUIRED },
    { "globals", O_GLOBALS, ARG_REQUIRED },   { "random-blocks", O_RANDOM_BLOCKS, ARG_REQUIRED },
    { "block", O_BLOCK, ARG_REQUIRED },       { "features", O_FEATURES, ARG_REQUIRED },
    { "proj", O_PROJ, ARG_REQUIRED },         { "inputs", O_INPUTS, ARG_REQUIRED },
    { "dump-output", O_DUMP_OUTPUT, ARG_REQUIRED }, { "dump-weights", O_DUMP_WEIGHTS, ARG_REQUIRED },
    { "case-timeout", O_CASE_TIMEOUT, ARG_REQUIRED }, { "isa", O_ISA, ARG_REQUIRED },
    { "dump-inputs", O_DUMP_INPUTS, ARG_REQUIRED }, { "check-output", O_CHECK_OUTPUT, ARG_REQUIRED },
    { "peer", O_PEER, ARG_REQUIRED },         { "peer-times", O_PEER_TIMES, ARG_REQUIRED },
    { "peer-skip", O_PEER_SKIP, ARG_REQUIRED }, { "kv-heads", O_KV_HEADS, ARG_REQUIRED },
    { "splits", O_SPLITS, ARG_REQUIRED },     { "dtype", O_DTYPE, ARG_REQUIRED },
    { "kv-dtype", O_KV_DTYPE, ARG_REQUIRED }, { "shard", O_SHARD, ARG_REQUIRED },
    { "softcap", O_SOFTCAP, ARG_REQUIRED },   { "alibi", O_ALIBI, ARG_NONE },
    { "sinks", O_SINKS, ARG_NONE },           { "v-from-k", O_V_FROM_K, ARG_NONE },
    { "model", O_MODEL, ARG_REQUIRED },       { "pass", O_PASS, ARG_REQUIRED },
    { "huge-pages", O_HUGE_PAGES, ARG_REQUIRED }, { "bw-probe", O_BW_PROBE, ARG_NONE },
    { "fma-probe", O_FMA_PROBE, ARG_NONE },   { "plugin", O_PLUGIN, ARG_REQUIRED },
};

static const char *error_program = "attnbench";

void attn_error_program(const char *name)
{
    error_program = name;
}

int attn_error(int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", error_program);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

#define usage_error(...) attn_error(ATTN_EXIT_USAGE, __VA_ARGS__)

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

int attn_opt_int(const char *name, const char *val, long lo, long hi, int *dst)
{
    long v;
    if (!parse_long(val, lo, hi, &v))
        return usage_error("--%s: '%s' is not an integer in [%ld, %ld]", name, val, lo, hi);
    *dst = (int)v;
    return -1;
}

/* "BRxBC[xSB]": query and key block sizes of the tiled backend, each
 * 1..MAX_TILE, and the query blocks sharing a pass over K/V, 1..MAX_TILE_SB. */
int attn_opt_tile(const char *name, const char *val, int *tq, int *tkv, int *tsb)
{
    char buf[3][32];
    long v[3] = { 0, 0, 0 };
    int n = 0;
    for (const char *at = val;; n++) {
        const char *x = strchr(at, 'x');
        const size_t len = x ? (size_t)(x - at) : strlen(at);
        if (n == 3 || len >= sizeof(buf[0]))
            goto bad;
        memcpy(buf[n], at, len);
        buf[n][len] = '\0';
        if (!parse_long(buf[n], 1, n < 2 ? MAX_TILE : MAX_TILE_SB, &v[n]))
            goto bad;
        if (!x)
            break;
        at = x + 1;
    }
    if (n < 1)
        goto bad;
    *tq = (int)v[0];
    *tkv = (int)v[1];
    *tsb = (int)v[2];
    return -1;
bad:
    return usage_error("--%s: '%s' is not BRxBC with both in [1, %d], or BRxBCxSB with SB in "
                       "[1, %d] (e.g. 64x48 or 64x48x4)", name, val, MAX_TILE, MAX_TILE_SB);
}

int attn_opt_seed(const char *name, const char *val, uint64_t *dst)
{
    if (!*val || *val < '0' || *val > '9')
        return usage_error("--%s: '%s' is not an integer in [0, %llu]", name, val, ULLONG_MAX);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || *end)
        return usage_error("--%s: '%s' is not an integer in [0, %llu]", name, val, ULLONG_MAX);
    *dst = v;
    return -1;
}

int attn_opt_real(const char *name, const char *val, double lo, double hi, double *dst)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (!*val || isspace((unsigned char)*val) || *end || errno || !isfinite(v) || v < lo || v > hi)
        return usage_error("--%s: '%s' is not a finite number in [%g, %g]", name, val, lo, hi);
    *dst = v;
    return -1;
}

/* One item of a list: "N", or a range "A:B:xF" (geometric) or "A:B:+S". */
static int parse_item(const char *name, char *item, long lo, long hi, attn_list *out)
{
    long a, b, step = 0;
    char *c1 = strchr(item, ':');
    if (!c1) {
        if (!parse_long(item, lo, hi, &a))
            return usage_error("--%s: '%s' is not an integer in [%ld, %ld]", name, item, lo, hi);
        b = a;
    } else {
        char *c2 = strchr(c1 + 1, ':');
        if (!c2)
            return usage_error("--%s: range '%s' needs START:END:xFACTOR or START:END:+STEP",
                               name, item);
        *c1 = *c2 = '\0';
        const char *sa = item, *sb = c1 + 1, *ss = c2 + 1;
        if (!parse_long(sa, lo, hi, &a) || !parse_long(sb, lo, hi, &b)) {
            const char *bad = parse_long(sa, lo, hi, &a) ? sb : sa;
            return usage_error("--%s: '%s' in a range is not an integer in [%ld, %ld]", name, bad,
                               lo, hi);
        }
        if ((ss[0] != 'x' && ss[0] != '+') || !parse_long(ss + 1, ss[0] == 'x' ? 2 : 1, hi, &step))
            return usage_error("--%s: range step '%s' is not xF (F >= 2) or +S (S >= 1)", name, ss);
        if (a > b)
            return usage_error("--%s: range %s:%s:%s runs backwards (start > end)", name, sa, sb, ss);
        if (ss[0] == 'x')
            step = -step;   /* negative: a factor */
    }
    for (long v = a; v <= b; v = step < 0 ? v * -step : v + step) {
        if (out->n >= MAX_LIST)
            return usage_error("--%s: more than %d values", name, MAX_LIST);
        out->v[out->n++] = (int)v;
        if (step == 0)
            break;
    }
    return -1;
}

int attn_parse_list(const char *name, const char *val, long lo, long hi, attn_list *out)
{
    int *v = malloc(MAX_LIST * sizeof(int));
    char *copy = strdup(val);
    attn_list l = { .v = v };
    int rc = -1;
    if (!v || !copy) {
        rc = usage_error("--%s: out of memory", name);
        goto done;
    }
    for (char *tok = copy, *next; tok && rc < 0; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!*tok)
            rc = usage_error("--%s: empty item in '%s' (a value, a list a,b,c, or a range "
                             "START:END:xF)", name, val);
        else
            rc = parse_item(name, tok, lo, hi, &l);
    }
done:
    free(copy);
    if (rc >= 0) {
        free(v);
        return rc;
    }
    free(out->v);
    *out = l;
    return -1;
}

/* A comma list of the names of an enum's values, each once, into out; of
 * maps a name to its value (count when unknown), str back; known lists
 * them for the refusal. */
static int parse_names(const char *name, const char *val, attn_list *out, int count,
                       int (*of)(const char *), const char *(*str)(int), const char *known)
{
    free(out->v);
    *out = (attn_list){ 0 };
    if (!(out->v = malloc((size_t)count * sizeof(int))))
        return usage_error("out of memory");
    const char *at = val;
    for (;;) {
        const char *comma = strchr(at, ',');
        const size_t n = comma ? (size_t)(comma - at) : strlen(at);
        char item[16];
        int x = count;
        if (n < sizeof(item)) {
            memcpy(item, at, n);
            item[n] = '\0';
            x = of(item);
        }
        if (x == count)
            return usage_error("--%s: '%.*s' is not one of: %s", name, (int)n, at, known);
        for (size_t i = 0; i < out->n; i++)
            if (out->v[i] == x)
                return usage_error("--%s: %s is given twice", name, str(x));
        out->v[out->n++] = x;
        if (!comma)
            return -1;
        at = comma + 1;
    }
}

static int dtype_of(const char *s)
{
    return (int)attn_dtype_from_name(s);
}

static const char *dtype_str(int x)
{
    return attn_dtype_name((attn_dtype)x);
}

static int pass_of(const char *s)
{
    return (int)attn_pass_from_name(s);
}

static const char *pass_str(int x)
{
    return attn_pass_name((attn_pass)x);
}

/* --dtype: "fp32", "bf16", "fp16", "q8_0", or a comma list of them, each
 * once; --kv-dtype: those and the other quantized caches (q4_0, fp8e4m3,
 * fp8e5m2). */
static int parse_dtypes(const char *name, const char *val, attn_list *out)
{
    const bool kv = !strcmp(name, "kv-dtype");
    const int rc = parse_names(name, val, out, ATTN_DTYPE_COUNT, dtype_of, dtype_str,
                               kv ? "fp32, bf16, fp16, q8_0, q4_0, fp8e4m3, fp8e5m2"
                                  : "fp32, bf16, fp16, q8_0");
    for (size_t i = 0; rc < 0 && !kv && i < out->n; i++)
        if (attn_dtype_quantized((attn_dtype)out->v[i]) && out->v[i] != ATTN_DTYPE_Q8_0)
            return usage_error("--dtype: %s is a quantized K/V cache type: give it to "
                               "--kv-dtype (Q is fp32, bf16, fp16 or q8_0)",
                               attn_dtype_name((attn_dtype)out->v[i]));
    return rc;
}

/* --pass: "fwd", "bwd", "fwdbwd", or a comma list of them, each once. */
static int parse_passes(const char *val, attn_list *out)
{
    return parse_names("pass", val, out, ATTN_PASS_COUNT, pass_of, pass_str, "fwd, bwd, fwdbwd");
}

/* --isa: a kernel ISA this build has and this CPU runs. */
int attn_opt_isa(const char *name, const char *val, attn_isa *dst)
{
    const attn_isa isa = attn_isa_from_name(val);
    if (isa == ATTN_ISA_COUNT) {
        char known[96] = "";
        size_t at = 0;
        for (int i = 0; i < ATTN_ISA_COUNT; i++)
            at += (size_t)snprintf(known + at, sizeof(known) - at, "%s%s", i ? ", " : "",
                                   attn_isa_name((attn_isa)i));
        return usage_error("--%s: '%s' is not one of: %s", name, val, known);
    }
    if (!attn_isa_usable(isa))
        return usage_error("--%s: %s kernels are not in this build or this CPU lacks their "
                           "instructions", name, val);
    *dst = isa;
    return -1;
}

static int parse_causal(const char *val, unsigned *dst)
{
    static const struct { const char *word; unsigned set; } words[] = {
        { "both", ATTN_CAUSAL_NO | ATTN_CAUSAL_YES },
        { "yes", ATTN_CAUSAL_YES }, { "on", ATTN_CAUSAL_YES }, { "1", ATTN_CAUSAL_YES },
        { "no", ATTN_CAUSAL_NO },   { "off", ATTN_CAUSAL_NO }, { "0", ATTN_CAUSAL_NO },
    };
    if (!val) {
        *dst = ATTN_CAUSAL_YES;
        return -1;
    }
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (!strcmp(val, words[i].word)) {
            *dst = words[i].set;
            return -1;
        }
    }
    return usage_error("--causal: '%s' is not one of: yes, no, both (or --causal alone)", val);
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
        /* A plugin's name: its backends, PLUGIN.BACKEND, in the order loaded. */
        const size_t tl = strlen(tok);
        size_t of_plugin = 0;
        for (size_t i = 0; !all && !be && i < nreg; i++) {
            const char *name = attn_backend_get(i)->name;
            if (attn_backend_origin(attn_backend_get(i)) && !strncmp(name, tok, tl) &&
                name[tl] == '.') {
                bool seen = false;
                for (size_t j = 0; j < n; j++)
                    seen |= list[j] == attn_backend_get(i);
                if (!seen)
                    list[n++] = attn_backend_get(i);
                of_plugin++;
            }
        }
        if (of_plugin)
            continue;
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

/* --shard I/N, or --shard slurm: a Slurm job array's task (its
 * SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT). */
static int parse_shard(attn_opts *o, const char *name, const char *val)
{
    long i, n;
    char *end;
    if (!strcmp(val, "slurm")) {
        const char *id = getenv("SLURM_ARRAY_TASK_ID"), *count = getenv("SLURM_ARRAY_TASK_COUNT");
        const char *min = getenv("SLURM_ARRAY_TASK_MIN");
        if (!id || !count)
            return usage_error("--%s slurm: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT are "
                               "not set (run it as a task of a Slurm job array: sbatch --array)",
                               name);
        char *e1, *e2, *e3 = "";
        i = strtol(id, &e1, 10) - (min ? strtol(min, &e3, 10) : 0);
        n = strtol(count, &e2, 10);
        if (*e1 || *e2 || *e3 || !*id || !*count)
            return usage_error("--%s slurm: SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_MIN=%s, "
                               "SLURM_ARRAY_TASK_COUNT=%s are not numbers", name, id,
                               min ? min : "(unset)", count);
    } else {
        i = strtol(val, &end, 10);
        if (end == val || *end != '/' || !end[1])
            return usage_error("--%s: '%s' is not I/N (this process runs the cases whose "
                               "index is I mod N) or slurm", name, val);
        const char *d = end + 1;
        n = strtol(d, &end, 10);
        if (*end)
            return usage_error("--%s: '%s' is not I/N or slurm", name, val);
    }
    if (n < 1 || n > 1000000 || i < 0 || i >= n)
        return usage_error("--%s: shard %ld of %ld: need 0 <= I < N <= 1000000", name, i, n);
    o->shard = (int)i;
    o->shards = (int)n;
    return -1;
}

/* The CPUs this process may run on (under mpirun, its rank's binding). */
static int default_threads(void)
{
    if (!ATTN_HAVE_OPENMP)
        return 1;
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof(set), &set) ? sysconf(_SC_NPROCESSORS_ONLN)
                                                     : CPU_COUNT(&set);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* --model NAME[,NAME...] or list. */
static int parse_models(attn_opts *o, const char *val)
{
    if (!strcmp(val, "list")) {
        o->model_list = true;
        return -1;
    }
    free(o->models);
    o->models = NULL;
    o->nmodels = 0;
    char buf[1024];
    if (!*val || strlen(val) >= sizeof(buf))
        return usage_error("--model: '%s' is not a list of presets (--model list shows them)",
                           val);
    strcpy(buf, val);
    size_t n = 1;
    for (const char *c = buf; *c; c++)
        n += *c == ',';
    if (!(o->models = calloc(n, sizeof(*o->models))))
        return usage_error("out of memory");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        const attn_model *m = attn_model_find(tok);
        if (!m) {
            char known[1024] = "";
            for (size_t i = 0; i < attn_model_count(); i++)
                snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
                         i ? ", " : "", attn_model_get(i)->name);
            return usage_error("--model: '%s' is not a preset (known: %s)", tok, known);
        }
        o->models[o->nmodels++] = m;
    }
    if (!o->nmodels)
        return usage_error("--model: '%s' names no preset (--model list shows them)", val);
    return -1;
}

static int apply(void *ctx, int opt, const char *name, const char *val)
{
    attn_opts *o = ctx;
    const opt_id id = (opt_id)opt;
    double x;
    int rc;
    switch (id) {
    case O_BACKEND: o->explicit_backends = true; return parse_backends(o, val);
    case O_BATCH:   return attn_parse_list(name, val, 1, MAX_BATCH, &o->batch);
    case O_HEADS:   return attn_parse_list(name, val, 1, MAX_HEADS, &o->heads);
    case O_SEQ:     return attn_parse_list(name, val, 1, MAX_SEQ, &o->seq);
    case O_SEQ_KV:  return attn_parse_list(name, val, 1, MAX_SEQ, &o->seq_kv);
    case O_DK:      return attn_parse_list(name, val, 1, MAX_DIM, &o->dk);
    case O_DV:      return attn_parse_list(name, val, 1, MAX_DIM, &o->dv);
    case O_CAUSAL:  o->causal_set = true; return parse_causal(val, &o->causal);
    case O_KV_LEN:  return parse_kv_len(val, &o->kv_len, &o->nkv);
    case O_SEED:    return attn_opt_seed(name, val, &o->setup.seed);
    case O_THREADS: return attn_opt_int(name, val, 1, MAX_THREADS, &o->setup.threads);
    case O_REPS:    return attn_opt_int(name, val, 0, ATTN_MAX_REPS, &o->setup.timer.reps);
    case O_WARMUP:  return attn_opt_int(name, val, 1, MAX_WARMUP, &o->setup.timer.warmup);
    case O_MAX_MEM: return parse_bytes(val, &o->setup.max_mem);
    case O_TILE:    return attn_opt_tile(name, val, &o->setup.tile_q, &o->setup.tile_kv,
                                         &o->setup.tile_sb);
    case O_DEVICE:  return attn_opt_int(name, val, 0, MAX_DEVICE, &o->setup.device);
    case O_ISA:     return attn_opt_isa(name, val, &o->setup.isa);
    case O_KV_HEADS: return attn_parse_list(name, val, 1, MAX_HEADS, &o->kv_heads);
    case O_DTYPE:   return parse_dtypes(name, val, &o->dtype);
    case O_KV_DTYPE: return parse_dtypes(name, val, &o->kv_dtype);
    case O_PASS:    return parse_passes(val, &o->pass);
    case O_PAGE:    return attn_parse_list(name, val, 0, ATTN_MAX_PAGE, &o->page);
    case O_LENS: {
        char why[512];
        attn_lens_free(&o->lens);
        if (!attn_lens_parse(val, &o->lens, why, sizeof(why)))
            return usage_error("%s", why);
        return -1;
    }
    case O_SPLITS: {
        long v;
        if (!strcmp(val, "auto")) {
            o->setup.splits = 0;
            return -1;
        }
        if (!parse_long(val, 1, MAX_SPLITS, &v))
            return usage_error("--splits: '%s' is not 'auto' or an integer in [1, %d]", val,
                               MAX_SPLITS);
        o->setup.splits = (int)v;
        return -1;
    }
    case O_WINDOW:
        o->mods_set |= ATTN_MOD_WINDOW;
        return attn_parse_window(val, MAX_SEQ, &o->mods);
    case O_SOFTCAP:
        if ((rc = attn_opt_real(name, val, 0, 1e6, &x)) >= 0)
            return rc;
        if (!(x > 0))
            return usage_error("--softcap: '%s' is not a cap > 0 (scores become C tanh(s/C))",
                               val);
        o->mods.softcap = (float)x;
        o->mods_set |= ATTN_MOD_SOFTCAP;
        return -1;
    case O_ALIBI:    o->mods.alibi = true; o->mods_set |= ATTN_MOD_ALIBI; return -1;
    case O_SINKS:    o->mods.sinks = true; o->mods_set |= ATTN_MOD_SINKS; return -1;
    case O_V_FROM_K: o->mods.v_from_k = true; o->mods_set |= ATTN_MOD_V_FROM_K; return -1;
    case O_MODEL:    return parse_models(o, val);
    case O_GLOBALS: return attn_opt_int(name, val, 0, MAX_SEQ, &o->var.globals);
    case O_RANDOM_BLOCKS:
        return attn_opt_int(name, val, 0, ATTN_MAX_RANDOM_BLOCKS, &o->var.random_blocks);
    case O_BLOCK:   return attn_opt_int(name, val, 1, MAX_SEQ, &o->var.block);
    case O_FEATURES: return attn_opt_int(name, val, 1, 65536, &o->var.features);
    case O_PROJ:    return attn_opt_int(name, val, 1, MAX_SEQ, &o->var.proj);
    case O_CSV:     o->csv = val; return -1;
    case O_INPUTS:  o->setup.inputs = val; return -1;
    case O_DUMP_OUTPUT:  o->setup.dump_output = val; return -1;
    case O_DUMP_WEIGHTS: o->setup.dump_weights = val; return -1;
    case O_JSON:    o->json = val; return -1;
    case O_DUMP_INPUTS:  o->dump_inputs = val; return -1;
    case O_CHECK_OUTPUT: o->check_output = val; return -1;
    case O_PEER_TIMES:   o->peer_times = val; return -1;
    case O_PEER_SKIP:    o->peer_skip = val; return -1;
    case O_PEER:
        if (!*val || strpbrk(val, ",/ \t\n\"") || attn_backend_find(val))
            return usage_error("--peer: '%s' is not a name of its own (no spaces, commas or "
                               "slashes, and not a backend's)", val);
        o->peer = val;
        return -1;
    case O_PIN:     o->pin = true; return -1;
    case O_BW_PROBE: o->setup.bw_probe = true; return -1;
    case O_FMA_PROBE: o->setup.fma_probe = true; return -1;
    case O_HUGE_PAGES:
        if (strcmp(val, "on") && strcmp(val, "off"))
            return usage_error("--huge-pages: '%s' is not on or off", val);
        o->small_pages = !strcmp(val, "off");
        return -1;
    case O_RESUME:  o->resume = true; return -1;
    case O_PEAK:    o->peak = true; return -1;
    case O_LIST:    o->list = true; return -1;
    case O_HELP:    o->help = true; return -1;
    case O_VERSION: o->version = true; return -1;
    case O_SCALE:
        if ((rc = attn_opt_real(name, val, -1e30, 1e30, &x)) < 0) {
            o->scale = (float)x;
            o->scale_set = true;
        }
        return rc;
    case O_MIN_TIME:
        if ((rc = attn_opt_real(name, val, 1e-6, 3600, &x)) < 0)
            o->setup.timer.min_time = x;
        return rc;
    case O_SHARD: return parse_shard(o, name, val);
    case O_PLUGIN: return -1;   /* loaded before the options are read (harness/plugin.c) */
    case O_CASE_TIMEOUT:
        /* 0: in this process, even a plugin's cases */
        if ((rc = attn_opt_real(name, val, 0, 1e6, &x)) < 0) {
            o->case_timeout = x;
            o->case_timeout_set = true;
        }
        return rc;
    case O_MAX_TIME:
        if ((rc = attn_opt_real(name, val, 0, 1e6, &x)) < 0)
            o->setup.timer.max_time = x;
        return rc;
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

static int list_min(const attn_list *l)
{
    int m = l->v[0];
    for (size_t i = 1; i < l->n; i++)
        m = l->v[i] < m ? l->v[i] : m;
    return m;
}

static int default_list(attn_list *l, int value)
{
    if (l->n)
        return -1;
    free(l->v);
    if (!(l->v = malloc(sizeof(int))))
        return usage_error("out of memory");
    l->v[0] = value;
    l->n = 1;
    return -1;
}

/* --inputs without a size option: the case takes each size it was not
 * given from the files' shapes (Q [B,H,Nq,dk], K [B,Hkv,Nk,dk], V
 * [B,Hkv,Nk,dv]). A file that cannot be read, or a size out of range, is
 * left to the reading of the inputs to refuse, naming the file. */
static int shape_from_inputs(attn_opts *o)
{
    const char *name[3] = { "q", "k", "v" };
    size_t shape[3][4];
    int ndim = 0;
    for (int t = 0; t < 3; t++) {
        char path[4200], why[4400];
        attn_npy a;
        snprintf(path, sizeof(path), "%s/%s.npy", o->setup.inputs, name[t]);
        if (!attn_npy_read_header(path, &a, why, sizeof(why)) || a.ndim < 3 || a.ndim > 4 ||
            (t && a.ndim != ndim))
            return -1;
        ndim = a.ndim;
        if (ndim == 4) {
            memcpy(shape[t], a.shape, sizeof(shape[t]));
        } else {   /* [T,H,d] read as [T,H,T,d]: its heads and width */
            shape[t][0] = shape[t][2] = a.shape[0];
            shape[t][1] = a.shape[1];
            shape[t][3] = a.shape[2];
        }
    }
    /* A serving batch's packed [T,H,d]: its lengths are --lens's, the
     * rest from the files; a dense batch's files are [B,H,N,d]. */
    if (ndim == 3 && !o->lens.spec)
        return usage_error("--inputs %s: q.npy is [T,H,d], a serving batch packed: give its "
                           "lengths with --lens", o->setup.inputs);
    if (ndim == 4 && o->lens.spec)
        return usage_error("--inputs %s: q.npy is [B,H,N,d], a dense batch (a serving batch "
                           "of --lens is packed [T,H,d])", o->setup.inputs);
    const struct { attn_list *l; size_t v; size_t max; bool only_if_differs; } from[] = {
        { &o->batch, shape[0][0], MAX_BATCH, false }, { &o->heads, shape[0][1], MAX_HEADS, false },
        { &o->seq, shape[0][2], MAX_SEQ, false },     { &o->dk, shape[0][3], MAX_DIM, false },
        { &o->kv_heads, shape[1][1], MAX_HEADS, true }, { &o->seq_kv, shape[1][2], MAX_SEQ, true },
        { &o->dv, shape[2][3], MAX_DIM, true },
    };
    const size_t follows[] = { 0, 0, 0, 0, 1, 2, 3 };   /* the size each of the last three
                                                          defaults to */
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++) {
        if (from[i].l->n || from[i].v < 1 || from[i].v > from[i].max ||
            (ndim == 3 && (from[i].l == &o->batch || from[i].l == &o->seq ||
                           from[i].l == &o->seq_kv)))
            continue;
        if (from[i].only_if_differs && from[follows[i]].l->n == 1 &&
            (size_t)from[follows[i]].l->v[0] == from[i].v)
            continue;
        int rc = default_list(from[i].l, (int)from[i].v);
        if (rc >= 0)
            return rc;
    }
    return -1;
}

/* The presets against the explicit options: K/V heads dividing the heads,
 * and V read from K no wider than K, for every combination the run makes. */
static int check_models(const attn_opts *o)
{
    const size_t nm = o->nmodels ? o->nmodels : 1;
    for (size_t m = 0; m < nm; m++) {
        const attn_model *pm = o->nmodels ? o->models[m] : NULL;
        const bool vk = o->mods.v_from_k || (pm && pm->mods.v_from_k);
        for (size_t a = 0; a < o->dk.n; a++) {
            const int dk = pm && !o->dk_set ? pm->d_k : o->dk.v[a];
            for (size_t b = 0; vk && b < (o->dv.n ? o->dv.n : 1); b++) {
                const int dv = o->dv_set ? o->dv.v[b] : pm ? pm->d_v : dk;
                if (dv > dk)
                    return usage_error("--v-from-k: dv %d is wider than dk %d (V is the first "
                                       "dv columns of K)", dv, dk);
            }
        }
        if (!pm || o->kv_heads_set || !o->heads_set)
            continue;
        for (size_t h = 0; h < o->heads.n; h++)
            if (o->heads.v[h] % pm->kv_heads)
                return usage_error("--heads: %d is not a multiple of %s's %d K/V heads (give "
                                   "--kv-heads too)", o->heads.v[h], pm->name, pm->kv_heads);
    }
    if (o->nmodels && o->kv_heads_set && !o->heads_set)
        for (size_t m = 0; m < o->nmodels; m++)
            for (size_t g = 0; g < o->kv_heads.n; g++)
                if (o->kv_heads.v[g] > o->models[m]->heads ||
                    o->models[m]->heads % o->kv_heads.v[g])
                    return usage_error("--kv-heads: %d does not divide %s's %d heads",
                                       o->kv_heads.v[g], o->models[m]->name,
                                       o->models[m]->heads);
    return -1;
}

/* A serving batch (--lens, --page) against the options it replaces or
 * that do not take it yet; explicit pairs set the batch. */
static int check_serving(attn_opts *o)
{
    bool paged = false;
    for (size_t i = 0; i < o->page.n; i++)
        paged |= o->page.v[i] > 0;
    const bool lens = o->lens.spec != NULL;
    if (!lens && !paged)
        return -1;
    const char *what = lens ? "--lens" : "--page";
    if (lens && (o->seq.n || o->seq_kv.n))
        return usage_error("--lens gives each item's Nq and Nk: no --seq or --seq-kv with it");
    if (o->kv_len)
        return usage_error("%s: a serving batch has each item's own key count; --kv-len pads "
                           "dense batches (give the lengths in --lens)", what);
    if (o->setup.dump_weights || o->peer)
        return usage_error("%s: --dump-weights and the peers hold dense batches only (--inputs, "
                           "--dump-inputs and --dump-output take a serving batch packed)", what);
    for (size_t i = 0; i < o->pass.n; i++)
        if (o->pass.v[i] != ATTN_PASS_FWD)
            return usage_error("%s: a serving batch runs the forward only (no --pass %s)", what,
                               attn_pass_name((attn_pass)o->pass.v[i]));
    if (lens && o->lens.kind == ATTN_LENS_PAIRS) {
        if (o->batch.n && (o->batch.n != 1 || o->batch.v[0] != o->lens.npairs))
            return usage_error("--lens: %d pairs for --batch %s%d (one pair per item; leave "
                               "--batch out)", o->lens.npairs, o->batch.n > 1 ? "list starting " : "",
                               o->batch.v[0]);
        if (!o->batch.n) {
            int rc = default_list(&o->batch, o->lens.npairs);
            if (rc >= 0)
                return rc;
        }
        for (int x = 0; (o->causal & ATTN_CAUSAL_YES) && x < o->lens.npairs; x++)
            if (o->lens.pairs[2 * x] > o->lens.pairs[2 * x + 1])
                return usage_error("--lens: item %d has %d queries over %d keys; causal needs "
                                   "Nq <= Nk (its queries are the last Nq of its keys)", x,
                                   o->lens.pairs[2 * x], o->lens.pairs[2 * x + 1]);
    }
    return -1;
}

/* Fills in what depends on other options and checks them against each other. */
static int finish(attn_opts *o)
{
    int rc;
    if (o->setup.inputs && (rc = shape_from_inputs(o)) >= 0)
        return rc;
    if (!ATTN_HAVE_OPENMP && o->setup.threads > 1)
        return usage_error("--threads: %d, but this build has no OpenMP and runs 1 thread "
                           "(reconfigure with -Dopenmp=enabled)", o->setup.threads);
    o->heads_set = o->heads.n > 0;
    o->kv_heads_set = o->kv_heads.n > 0;
    o->dk_set = o->dk.n > 0;
    o->dv_set = o->dv.n > 0;
    /* With presets, a size not given is the preset's (attn_shapes_problem);
     * the placeholder lists of one value keep the counting the same. */
    if ((rc = check_serving(o)) >= 0)
        return rc;
    if ((rc = default_list(&o->batch, 1)) >= 0 || (rc = default_list(&o->heads, 8)) >= 0 ||
        (rc = default_list(&o->seq, 1024)) >= 0 || (rc = default_list(&o->dk, 64)) >= 0)
        return rc;
    if ((rc = check_models(o)) >= 0)
        return rc;
    const bool mods = o->mods_set || o->nmodels;
    if (mods && (o->peer || o->dump_inputs))
        return usage_error("%s: the peers compute attention without score modifiers or "
                           "presets (no --window, --softcap, --alibi, --sinks, --v-from-k, "
                           "--model)", o->peer ? "--check-output" : "--dump-inputs");
    if (o->resume && !o->csv)
        return usage_error("--resume needs --csv FILE (the sweep to continue)");
    if (o->shards && !o->csv)
        return usage_error("--shard needs --csv FILE (each shard writes its own; attnbench "
                           "merge joins them)");
    if (o->check_output && !o->peer)
        return usage_error("--check-output needs --peer NAME (whose output it is)");
    if (o->peer && !o->check_output == !o->peer_skip)
        return usage_error("--peer needs its output (--check-output FILE.npy) or why it did not "
                           "run (--peer-skip WHY), one of them");
    if (o->peer_times && !o->check_output)
        return usage_error("--peer-times needs --check-output and --peer");
    if (o->peer && (o->json || o->explicit_backends))
        return usage_error("--check-output reports one peer's row: no --backend, and --csv "
                           "rather than --json");
    for (size_t g = 0; (!o->nmodels || o->heads_set) && g < o->kv_heads.n; g++)
        for (size_t h = 0; h < o->heads.n; h++)
            if (o->kv_heads.v[g] > o->heads.v[h] || o->heads.v[h] % o->kv_heads.v[g])
                return usage_error("--kv-heads: %d does not divide --heads %d (K/V heads must "
                                   "divide the query heads: query head h reads K/V head "
                                   "h / (H/Hkv))", o->kv_heads.v[g], o->heads.v[h]);
    for (size_t t = 0; t < o->kv_dtype.n; t++) {
        const attn_dtype dt = (attn_dtype)o->kv_dtype.v[t];
        if (!attn_dtype_quantized(dt) || attn_kvq_head_scaled(attn_dtype_kvq(dt)))
            continue;
        for (int x = 0; x < 2; x++) {
            const attn_list *d = x ? &o->dv : &o->dk;
            for (size_t i = 0; i < d->n; i++)
                if (d->v[i] % ATTN_QBLOCK)
                    return usage_error("--kv-dtype %s stores K and V in blocks of %d values "
                                       "along d: --%s %d is not a multiple of %d",
                                       attn_dtype_name(dt), ATTN_QBLOCK, x ? "dv" : "dk",
                                       d->v[i], ATTN_QBLOCK);
        }
    }
    for (size_t t = 0; t < o->dtype.n; t++)
        for (size_t i = 0; o->dtype.v[t] == ATTN_DTYPE_Q8_0 && i < o->dk.n; i++)
            if (o->dk.v[i] % ATTN_QBLOCK)
                return usage_error("--dtype q8_0 stores Q in blocks of %d values along dk: --dk "
                                   "%d is not a multiple of %d", ATTN_QBLOCK, o->dk.v[i],
                                   ATTN_QBLOCK);
    if (o->kv_len) {
        if (o->nkv > 1 && (o->batch.n != 1 || o->batch.v[0] != o->nkv))
            return usage_error("--kv-len: %d values for --batch %s%d (give one per batch item, "
                               "or one for all)", o->nkv, o->batch.n > 1 ? "list starting " : "",
                               o->batch.v[0]);
        const int keys = list_min(o->seq_kv.n ? &o->seq_kv : &o->seq);
        for (int b = 0; b < o->nkv; b++)
            if (o->kv_len[b] > keys)
                return usage_error("--kv-len: %d is not in [0, %d] (the smallest key length "
                                   "of the run, --seq-kv or --seq)", o->kv_len[b], keys);
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

int attn_options_parse(const attn_option *opts, size_t n, int argc, char **argv, int first,
                       attn_option_fn fn, void *ctx)
{
    for (int a = first; a < argc; a++) {
        const char *arg = argv[a];
        if (strncmp(arg, "--", 2) || !arg[2])
            return usage_error("unexpected argument '%s' (options start with --; see --help)", arg);
        const char *eq = strchr(arg + 2, '=');
        const size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        const attn_option *def = NULL;
        for (size_t i = 0; i < n; i++)
            if (strlen(opts[i].name) == len && !strncmp(opts[i].name, arg + 2, len))
                def = &opts[i];
        if (!def)
            return usage_error("unknown option '%.*s' (see --help)", (int)len + 2, arg);
        const char *val = NULL;
        if (def->arg == ATTN_ARG_REQUIRED) {
            if (eq)
                val = eq + 1;
            else if (a + 1 < argc)
                val = argv[++a];
            else
                return usage_error("--%s needs a value (see --help)", def->name);
        } else if (def->arg == ATTN_ARG_OPTIONAL) {
            /* A value as the next word (--causal both) is not taken: say how */
            if (!eq && a + 1 < argc && strncmp(argv[a + 1], "--", 2))
                return usage_error("--%s takes its value after '=': --%s=%s, not '--%s %s'",
                                   def->name, def->name, argv[a + 1], def->name, argv[a + 1]);
            val = eq ? eq + 1 : NULL;
        } else if (eq) {
            return usage_error("--%s takes no value", def->name);
        }
        const int rc = fn(ctx, def->id, def->name, val);
        if (rc >= 0)
            return rc;
    }
    return -1;
}

int attn_cli_parse(attn_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->causal = ATTN_CAUSAL_NO;
    o->setup = (attn_setup){
        .threads = default_threads(), .seed = 1, .device = -1,
        .timer = { .warmup = 1, .reps = 5, .min_time = 0.1, .max_time = 10.0 },
    };
    o->var = attn_variant_defaults();
    /* Fault injection for tests and the curious: every case's tracking
     * allocator fails its k-th allocation, so the backend's error path runs. */
    const char *fail = getenv("ATTN_FAIL_ALLOC");
    if (fail && *fail) {
        long k;
        if (!parse_long(fail, 1, 1L << 30, &k))
            return attn_error(ATTN_EXIT_USAGE, "ATTN_FAIL_ALLOC: '%s' is not an allocation number in [1, %ld]",
                              fail, 1L << 30);
        o->setup.fail_alloc = (size_t)k;
    }

    const int rc = attn_options_parse(options, sizeof(options) / sizeof(options[0]), argc, argv,
                                      1, apply, o);
    if (rc >= 0)
        return rc;
    return finish(o);
}

void attn_cli_free(attn_opts *o)
{
    attn_list *lists[] = { &o->batch, &o->heads, &o->kv_heads, &o->seq, &o->seq_kv, &o->dk,
                           &o->dv, &o->dtype, &o->kv_dtype, &o->pass, &o->page };
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        free(lists[i]->v);
        *lists[i] = (attn_list){ 0 };
    }
    free(o->kv_len);
    attn_lens_free(&o->lens);
    free(o->backends);
    free(o->models);
    o->kv_len = NULL;
    o->backends = NULL;
    o->models = NULL;
}

void attn_cli_usage(FILE *f, const char *prog)
{
    fprintf(f,
"usage: %s [options]\n"
"       %s arch [options]   the LSTM / CNN / self-attention comparison (arch --help)\n"
"\n"
"Checks every selected attention backend against a double-precision reference,\n"
"then times it and measures its memory. One case prints a comparison table\n"
"(fastest first); lists and ranges of sizes make a sweep of their cross product.\n"
"Options take --opt=value or --opt value. SIZES is a value (64), a list (1,8,16),\n"
"a geometric range (256:16384:x2), an arithmetic range (16:64:+16), or a mix.\n"
"\n"
"  --backend=NAME[,NAME...]  backends to run, or 'all' (default: every available one)\n"
"  --plugin PATH    load a plugin's backends (a shared library built against\n"
"                   attnbench/backend.h), run as PLUGIN.BACKEND; repeatable, and\n"
"                   ATTNBENCH_PLUGINS=PATH[:PATH...] names more (docs/writing-a-backend.md)\n"
"  --batch SIZES    batch size, 1..%d (default 1)\n"
"  --heads SIZES    heads, 1..%d (default 8)\n"
"  --kv-heads SIZES K/V heads Hkv, each dividing every --heads value (default: the\n"
"                   case's heads); query head h reads K/V head h / (H/Hkv): 1 is\n"
"                   multi-query, between 1 and H grouped-query attention\n"
"  --seq SIZES      query length Nq, 1..%d (default 1024)\n"
"  --seq-kv SIZES   key/value length Nk (default: the case's Nq)\n"
"  --dk SIZES       query/key width, 1..%d (default 64)\n"
"  --dv SIZES       value width (default: the case's dk)\n"
"  --scale S        logit scale (default 1/sqrt(dk))\n"
"  --causal[=yes|no|both]  causal mask, aligned bottom-right: query i sees keys\n"
"                   j <= i + Nk - Nq (--causal alone: yes; default no)\n"
"  --pass P[,P..]   fwd (default), bwd (dQ, dK, dV from dO and the forward's O and\n"
"                   log-sum-exp, timed alone), fwdbwd (both in one timed run), or a\n"
"                   list; dO is N(0,1) from the seed, or DIR/do.npy with --inputs\n"
"  --kv-len L[,L..] valid keys per batch item (one value, or one per item); keys >= L masked\n"
"  --lens SPEC      a serving batch (docs/serving.md): each item its own Nq and Nk,\n"
"                   stored packed ([tokens,H,d]): Nq:Nk[,Nq:Nk..] (one pair per item),\n"
"                   decode:uniform:LO:HI (Nq 1, Nk uniform in [LO,HI], from --seed),\n"
"                   prefill:uniform:LO:HI (Nq = Nk), mixed:uniform:LO:HI:P:C (the\n"
"                   first P items prefill chunks of C queries, the others decode)\n"
"  --page P[,P..]   K/V of a serving batch in a pool of pages of P tokens, 1..%d\n"
"                   (shuffled; 0: packed); without --lens, the dense shape in pages\n"
"  --dtype T[,T..]  storage of the inputs: fp32 (default), bf16, fp16, or a list to\n"
"                   compare them (a table of the speedups over fp32 ends the run). The\n"
"                   fill is rounded once to it and the reference computes from the\n"
"                   rounded values; products accumulate in fp32; O is fp32\n"
"  --kv-dtype T[,T..]  storage of K and V alone (default: --dtype's), e.g. fp32 Q\n"
"                   with a 16-bit KV cache\n",
            prog, prog, MAX_BATCH, MAX_HEADS, MAX_SEQ, MAX_DIM, ATTN_MAX_PAGE);
    fprintf(f,
"  --fill KIND      normal (default): N(0,1); extreme: integer Q, K in [-100,100], logits to ~1e4\n"
"  --seed S         input seed (default 1); inputs do not depend on --threads\n"
"  --threads T      threads for every threading runtime in the build, 1..%d (default: the CPUs\n"
"                   this process may run on)\n"
"  --pin            pin the process to the first T allowed cores\n"
"  --huge-pages on|off  inputs of 4 MiB or more on 2 MiB pages, advised with\n"
"                   MADV_HUGEPAGE (default on; the context line says what the kernel\n"
"                   allows); off: 4 KiB pages, as a plain malloc gives\n"
"  --bw-probe       measure a read-only stream just before and after each case's timed\n"
"                   runs, and take the faster as its roofline's bandwidth (for machines\n"
"                   whose bandwidth moves with their neighbours' load)\n"
"  --fma-probe      measure the FMA peak just before and after each case's timed runs, and\n"
"                   take the faster as its peak (%%peak, the roofline), for machines whose\n"
"                   cores' rate moves with their neighbours' load\n"
"  --warmup W       untimed runs before timing, at least (default 1); warm-up also lasts\n"
"                   at least --min-time\n"
"  --min-time S     seconds one repetition lasts at least; runs per repetition are\n"
"                   calibrated to it (default 0.1)\n"
"  --reps R         repetitions, 0..%d (default 5; 0: check only)\n"
"  --max-time S     seconds the repetitions of a case may take: no repetition starts\n"
"                   that would end past S at the length of the last one, but never\n"
"                   fewer than 2 (default 10; 0: no budget). It does not bound the\n"
"                   reference, the checked run or the warm-up: a case whose one run\n"
"                   lasts 20 s takes a checked run, a warm-up run and 2 repetitions\n"
"                   (about 80 s); --case-timeout bounds a whole case\n"
"  --check-rows R   rows the reference checks: auto (default: all when cheap, else a\n"
"                   seeded sample), all, or a count\n"
"  --max-mem SIZE   skip cases needing more than SIZE (e.g. 8G); MemAvailable always applies\n"
"  --case-timeout S  run each shape's cases in a child process and kill a case that\n"
"                   lasts longer than S seconds (prepare, check, warm-up and timing;\n"
"                   keep it above --max-time): its row says TIMEOUT, a case that\n"
"                   crashes says ERROR, and the sweep goes on (default: no limit,\n"
"                   cases run in this process; 3600 with a plugin's backend; 0: in\n"
"                   this process)\n"
"  --tile BRxBC[xSB]  query x key block sizes for the tiled backend, for experiments,\n"
"                   and SB (1..8) query blocks sharing each pass over K/V (default:\n"
"                   chosen from d and the L1 and L2 caches; SB changes no output bit)\n"
"  --splits N       tiled, vulkan: split each query block's keys into N chunks computed\n"
"                   in parallel and merged exactly (split-KV, flash-decoding); 1: never\n"
"                   split (default auto: tiled splits when a case has fewer than 32\n"
"                   work items, as decoding with a small batch has, a fixed count, so\n"
"                   the output does not depend on --threads; vulkan on a GPU when a\n"
"                   case has fewer than 1024 workgroups)\n"
"  --isa ISA        the SIMD kernels of the backends built on them (tiled, blas's\n"
"                   softmax, local, sparse, linear, performer, linformer): c, avx2,\n"
"                   avx512, or auto (default: the widest this CPU runs)\n",
            MAX_THREADS, ATTN_MAX_REPS);
    fprintf(f,
"  --window L[,R]   a sliding window: query i sees keys i'-L..i'+R only (i' = i+Nk-Nq;\n"
"                   W alone: L = R = W); every backend that computes it, and local\n"
"                   and sparse, whose window it is (theirs by default: %d,%d)\n"
"  --softcap C      scores become C tanh(s/C), C > 0 (Gemma 2: 50)\n"
"  --alibi          ALiBi: scores minus m_h |i'-j|, Press et al.'s slopes per head\n"
"  --sinks          a seeded sink logit per head joins each row's softmax sum\n"
"  --v-from-k       latent attention: V is the first dv columns of K, stored once\n"
"  --model NAME[,NAME...]  presets of published models (H, Hkv, dk, dv, scale, causal,\n"
"                   modifiers), a sweep dimension; explicit options override them;\n"
"                   --model list prints them with their sources\n"
"  --globals G      sparse: global tokens (default %d)\n"
"  --random-blocks R  sparse: random key blocks per query block, 0 = Longformer,\n"
"                   > 0 = BigBird (default %d)\n"
"  --block BS       sparse: block size of the random blocks (default %d)\n"
"  --features M     performer: random features (default %d)\n"
"  --proj P         linformer: projected keys and values (default %d)\n"
"                   (their random structure is drawn from --seed)\n"
"  --device N       device for the device backends (vulkan), numbered as --list shows\n"
"                   (default: discrete GPU > integrated > virtual > CPU)\n"
"  --inputs DIR     read Q, K, V from DIR/q.npy, k.npy, v.npy (float32, float64,\n"
"                   float16, or uint16 holding bf16 bits with --dtype bf16; C order,\n"
"                   shapes [B,H,Nq,dk], [B,Hkv,Nk,dk], [B,Hkv,Nk,dv]) instead of the\n"
"                   seeded fill, rounded to --dtype as the fill is; a size option not\n"
"                   given is taken from the files, one given must agree with them\n"
"  --dump-output FILE.npy   one case, one backend: write its O [B,H,Nq,dv]\n"
"  --dump-inputs DIR  one case: write its Q, K, V to DIR/q.npy, k.npy, v.npy and exit\n"
"  --check-output FILE.npy --peer NAME [--peer-times FILE] [--peer-skip WHY]\n"
"                   one case: check a peer's O (scripts/peers) against the reference\n"
"                   and report, with --csv append, its row like a backend's\n"
"  --dump-weights FILE.npy  one case, one backend that can give them (naive, local,\n"
"                   sparse): write the attention weights P [B,H,Nq,Nk] (at most 1 GiB)\n",
            ATTN_DEFAULT_WINDOW, ATTN_DEFAULT_WINDOW, ATTN_DEFAULT_GLOBALS, ATTN_DEFAULT_RANDOM_BLOCKS,
            ATTN_DEFAULT_BLOCK, ATTN_DEFAULT_FEATURES, ATTN_DEFAULT_PROJ);
    fputs("  --csv FILE       append one row per finished case to FILE (flushed to disk at once)\n"
"  --resume         with --csv: skip the cases FILE already holds, append the rest\n"
"  --shard I/N      with --csv: run only the cases whose index in the sweep is I mod N\n"
"                   (0 <= I < N); --shard slurm: I and N from a Slurm job array's task.\n"
"                   attnbench merge OUT.csv SHARD.csv... joins the shards' CSVs\n"
"  --json FILE      write Google-Benchmark-shaped JSON (rewritten after every case)\n"
"  --peak           measure this machine's FMA peaks and memory bandwidth (triad and a\n"
"                   read-only stream), keep them beside the executable for %peak,\n"
"                   %bw and the roofline (%roof), and exit\n"
"  --list           every registered backend, built or not, usable or not and why, and\n"
"                   the devices of the device backends\n"
"  --help, --version\n"
"\n"
"\n"
"examples:\n"
"  attnbench                                 every backend on B=1 H=8 N=1024 d=64, one table\n"
"  attnbench --backend=vulkan --seq 4096     one backend, one sequence length\n"
"  attnbench --backend=naive,tiled --seq 256:4096:x2 --causal=both --csv out.csv\n"
"                                            a sweep; the same line with --resume finishes it\n"
"\n"
"exit codes: 0 all ran cases PASSED (or MISTRUSTED); 1 a case FAILED; 2 bad command\n"
"line, or an output that cannot be written (tried before any case runs); 3 shape\n"
"too large (size_t overflow or memory); 4 a case hit an ERROR or TIMEOUT, or an\n"
"output write failed late; 5 nothing ran (every case SKIPPED)\n", f);
}
