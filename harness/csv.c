#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "csv.h"
#include "io.h"
#include "variant.h"

static const char header[] =
    "schema,key,backend,verdict,reason,batch,heads,seq_q,seq_kv,d_k,d_v,causal,kv_len,scale,"
    "fill,seed,threads,kind,window,globals,random_blocks,block,features,proj,"
    "rows_checked,rows_total,max_abs,max_rel,nmse,tol,approx_max_abs,approx_nmse,reps,iterations,"
    "real_median_s,real_min_s,real_mean_s,real_stddev_s,real_cv,cpu_median_s,cpu_mean_s,"
    "device_median_s,device_min_s,device_cv,upload_s,download_s,"
    "flops,flops_dense,gflops,gflops_dense,peak_gflops,pct_peak,workspace_bytes,"
    "workspace_predicted_bytes,rss_peak_bytes,device_bytes,score_matrix_bytes,device,repro";

#define fail(...) attn_error(ATTN_EXIT_USAGE, __VA_ARGS__)

static char *read_file(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st))
        return NULL;
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = 0;
    while (buf && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

/* Remembers the key (second field) of every complete row after the header. */
static int load_keys(attn_csv *c, const char *path, char *text, size_t len)
{
    const size_t hlen = strlen(header);
    if (len < hlen + 1 || strncmp(text, header, hlen) || text[hlen] != '\n')
        return fail("--csv %s: not an attnbench CSV of schema %d (its header differs); "
                    "cannot resume it", path, ATTN_CSV_SCHEMA);
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return fail("--csv %s: a NUL byte at offset %zu; not an attnbench CSV, cannot resume it",
                    path, (size_t)(nul - text));
    size_t end = len;
    while (end > 0 && text[end - 1] != '\n')
        end--;
    c->torn_bytes = len - end;
    for (char *line = text + hlen + 1; line < text + end;) {
        char *nl = memchr(line, '\n', (size_t)(text + end - line));
        *nl = '\0';
        char *k = strchr(line, ',');
        char *k_end = k ? strchr(k + 1, ',') : NULL;
        if (!k_end)
            return fail("--csv %s: a row has no key field; cannot resume it", path);
        *k_end = '\0';
        char **keys = realloc(c->keys, (c->nkeys + 1) * sizeof(*keys));
        if (!keys || !(keys[c->nkeys] = strdup(k + 1))) {
            c->keys = keys ? keys : c->keys;
            return fail("--csv %s: out of memory", path);
        }
        c->keys = keys;
        c->nkeys++;
        line = nl + 1;
    }
    if (c->torn_bytes && ftruncate(c->fd, (off_t)end))
        return fail("--csv %s: cannot cut off its torn last row: %s", path, strerror(errno));
    return -1;
}

int attn_csv_open(attn_csv *c, const char *path, bool resume)
{
    memset(c, 0, sizeof(*c));
    c->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (c->fd < 0)
        return fail("--csv %s: cannot open: %s", path, strerror(errno));
    size_t len = 0;
    char *text = read_file(c->fd, &len);
    int rc = -1;
    if (!text) {
        rc = fail("--csv %s: cannot read: %s", path, strerror(errno));
    } else if (len && !resume) {
        rc = fail("--csv %s: the file exists; add --resume to continue it, or choose "
                  "another file", path);
    } else if (len) {
        rc = load_keys(c, path, text, len);
    } else if (!attn_write_all(c->fd, header, strlen(header)) || !attn_write_all(c->fd, "\n", 1) ||
               fsync(c->fd)) {
        rc = fail("--csv %s: cannot write: %s", path, strerror(errno));
    }
    free(text);
    if (rc >= 0)
        attn_csv_close(c);
    return rc;
}

bool attn_csv_has(const attn_csv *c, const char *key)
{
    for (size_t i = 0; i < c->nkeys; i++)
        if (!strcmp(c->keys[i], key))
            return true;
    return false;
}

typedef struct line {
    char buf[8192];
    size_t at;
} line;

__attribute__((format(printf, 2, 3)))
static void put(line *l, const char *fmt, ...)
{
    if (l->at >= sizeof(l->buf))
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->at, sizeof(l->buf) - l->at, fmt, ap);
    va_end(ap);
    l->at += n > 0 ? (size_t)n : 0;
}

/* RFC 4180: quote when needed, double the quotes inside. */
static void put_text(line *l, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        put(l, ",%s", s);
        return;
    }
    put(l, ",\"");
    for (; *s; s++) {
        if (*s == '"')
            put(l, "\"\"");
        else
            put(l, "%c", *s == '\n' || *s == '\r' ? ' ' : *s);
    }
    put(l, "\"");
}

static void put_num(line *l, bool known, double v)
{
    if (known)
        put(l, ",%.9g", v);
    else
        put(l, ",");
}

/* Byte counts are exact integers (%.9g would round those over 1e9). */
static void put_bytes(line *l, bool known, uint64_t v)
{
    if (known)
        put(l, ",%" PRIu64, v);
    else
        put(l, ",");
}

int attn_csv_append(attn_csv *c, const attn_result *r, const attn_setup *s, double peak_gflops)
{
    const attn_problem *p = &r->p;
    const attn_timing *t = &r->timing;
    const bool timed = t->reps > 0;
    char key[512];
    attn_case_key(key, sizeof(key), r->be->name, p, s);
    line l = { .at = 0 };
    put(&l, "%d,%s,%s,%s", ATTN_CSV_SCHEMA, key, r->be->name, attn_verdict_str(r->verdict));
    put_text(&l, r->why);
    put(&l, ",%d,%d,%d,%d,%d,%d,%d,", p->batch, p->heads, p->seq_q, p->seq_kv, p->d_k, p->d_v,
        p->causal ? 1 : 0);
    for (int b = 0; p->kv_len && b < p->batch; b++)
        put(&l, "%s%d", b ? ";" : "", p->kv_len[b]);
    put(&l, ",%.9g,%s,%llu,%d", p->scale, attn_setup_fill_name(s), (unsigned long long)s->seed,
        s->threads);
    const attn_kind kind = r->be->kind;
    put(&l, ",%s", attn_kind_name(kind));
    const bool win = kind == ATTN_KIND_LOCAL || kind == ATTN_KIND_SPARSE;
    put_num(&l, win, p->var.window);
    put_num(&l, kind == ATTN_KIND_SPARSE, p->var.globals);
    put_num(&l, kind == ATTN_KIND_SPARSE, p->var.random_blocks);
    put_num(&l, kind == ATTN_KIND_SPARSE, p->var.block);
    put_num(&l, kind == ATTN_KIND_PERFORMER, p->var.features);
    put_num(&l, kind == ATTN_KIND_LINFORMER, p->var.proj);
    put_num(&l, r->checked, (double)r->ref_rows);
    put_num(&l, r->checked, (double)r->ref_total);
    put_num(&l, r->checked, r->check.max_abs);
    put_num(&l, r->checked, r->check.max_rel);
    put_num(&l, r->checked, r->check.nmse);
    put_num(&l, r->checked, r->check.tol);
    put_num(&l, r->approx_known, r->approx_max_abs);
    put_num(&l, r->approx_known, r->approx_nmse);
    put_num(&l, timed, t->reps);
    put_num(&l, timed, (double)t->iterations);
    put_num(&l, timed, t->real_stats.median);
    put_num(&l, timed, t->real_stats.min);
    put_num(&l, timed, t->real_stats.mean);
    put_num(&l, timed, t->real_stats.stddev);
    put_num(&l, timed, t->real_stats.cv);
    put_num(&l, timed, t->cpu_stats.median);
    put_num(&l, timed, t->cpu_stats.mean);
    const bool dev_timed = timed && t->device_known;
    put_num(&l, dev_timed, t->device_stats.median);
    put_num(&l, dev_timed, t->device_stats.min);
    put_num(&l, dev_timed, t->device_stats.cv);
    const bool moved = r->device[0] && (attn_verdict_ran(r->verdict));
    put_num(&l, moved, r->upload_s);
    put_num(&l, moved, r->download_s);
    put(&l, ",%.17g,%.17g", r->flops, r->flops_dense);
    put_num(&l, timed, r->flops / t->real_stats.median * 1e-9);
    put_num(&l, timed, r->flops_dense / t->real_stats.median * 1e-9);
    put_num(&l, peak_gflops > 0, peak_gflops);
    put_num(&l, timed && peak_gflops > 0, 100.0 * r->flops / t->real_stats.median * 1e-9 / peak_gflops);
    const bool ran = attn_verdict_ran(r->verdict);
    put_bytes(&l, ran, r->ws_peak);
    put_bytes(&l, r->ws_predicted > 0, r->ws_predicted);
    put_bytes(&l, ran && r->rss_known, r->rss_peak);
    put_bytes(&l, r->device_known, r->device_bytes);
    put(&l, ",%zu", r->score_bytes);
    put_text(&l, r->device[0] ? r->device : "host");
    put_text(&l, r->repro);
    put(&l, "\n");
    if (l.at >= sizeof(l.buf)) {
        return attn_error(ATTN_EXIT_ERROR, "--csv: a row longer than %zu bytes was not written",
                          sizeof(l.buf));
    }
    if (!attn_write_all(c->fd, l.buf, l.at) || fsync(c->fd)) {
        return attn_error(ATTN_EXIT_ERROR, "--csv: cannot write a row: %s", strerror(errno));
    }
    return -1;
}

void attn_csv_close(attn_csv *c)
{
    if (c->fd >= 0)
        close(c->fd);
    for (size_t i = 0; i < c->nkeys; i++)
        free(c->keys[i]);
    free(c->keys);
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}
