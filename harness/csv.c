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
    "schema,key,backend,verdict,reason,batch,heads,kv_heads,seq_q,seq_kv,d_k,d_v,causal,kv_len,"
    "lens,page,tokens,dtype,kv_dtype,pass,scale,fill,seed,threads,splits,kind,window_left,window_right,"
    "softcap,alibi,sinks,v_from_k,model,globals,random_blocks,block,"
    "features,proj,rows_checked,rows_total,max_abs,max_rel,nmse,tol,tol_class,approx_max_abs,"
    "approx_nmse,quant_max_abs,quant_nmse,dq_max_abs,dq_tol,dq_nmse,dk_max_abs,dk_tol,dk_nmse,dv_max_abs,dv_tol,dv_nmse,"
    "reps,iterations,"
    "real_median_s,real_min_s,real_mean_s,real_stddev_s,real_cv,cpu_median_s,cpu_mean_s,"
    "device_median_s,device_min_s,device_cv,upload_s,download_s,"
    "flops,flops_dense,gflops,gflops_dense,peak_gflops,pct_peak,bytes,gbs,tokens_per_s,peak_gbs,pct_bw,"
    "roofline_gbs,roofline_s,pct_roofline,bound,probe_gbs,probe_gflops,"
    "workspace_bytes,workspace_predicted_bytes,rss_peak_bytes,device_bytes,score_matrix_bytes,"
    "kv_bytes,ranks,rank_compute_s,rank_comm_s,rank_sent_bytes,rank_workspace_bytes,case_index,"
    "cases,device,repro";

const char *attn_csv_header(void)
{
    return header;
}

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

void attn_csv_put(attn_csv_row *l, const char *fmt, ...)
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
void attn_csv_text(attn_csv_row *l, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        attn_csv_put(l, ",%s", s);
        return;
    }
    attn_csv_put(l, ",\"");
    for (; *s; s++) {
        if (*s == '"')
            attn_csv_put(l, "\"\"");
        else
            attn_csv_put(l, "%c", *s == '\n' || *s == '\r' ? ' ' : *s);
    }
    attn_csv_put(l, "\"");
}

void attn_csv_num(attn_csv_row *l, bool known, double v)
{
    if (known)
        attn_csv_put(l, ",%.9g", v);
    else
        attn_csv_put(l, ",");
}

/* Byte counts are exact integers (%.9g would round those over 1e9). */
void attn_csv_bytes(attn_csv_row *l, bool known, uint64_t v)
{
    if (known)
        attn_csv_put(l, ",%" PRIu64, v);
    else
        attn_csv_put(l, ",");
}

int attn_csv_append(attn_csv *c, const attn_result *r, const attn_setup *s, const attn_peak *peak)
{
    const attn_problem *p = &r->p;
    const attn_timing *t = &r->timing;
    const bool timed = t->reps > 0;
    char key[512];
    attn_case_key(key, sizeof(key), r->be, p, s);
    attn_csv_row l = { .at = 0 };
    attn_csv_put(&l, "%d,%s,%s,%s", ATTN_CSV_SCHEMA, key, r->be->name, attn_verdict_str(r->verdict));
    attn_csv_text(&l, r->why);
    attn_csv_put(&l, ",%d,%d,%d,%d,%d,%d,%d,%d,", p->batch, p->heads, attn_kv_heads(p), p->seq_q,
        p->seq_kv, p->d_k, p->d_v, p->causal ? 1 : 0);
    for (int b = 0; p->kv_len && b < p->batch; b++)
        attn_csv_put(&l, "%s%d", b ? ";" : "", p->kv_len[b]);
    attn_csv_text(&l, p->lens ? p->lens : "");
    attn_csv_num(&l, p->ragged && p->ragged->page, p->ragged ? p->ragged->page : 0);
    attn_csv_put(&l, ",%zu", attn_q_tokens(p));
    attn_csv_put(&l, ",%s,%s,%s", attn_dtype_name(p->dtype), attn_dtype_name(p->kv_dtype),
                 attn_pass_name(p->pass));
    attn_csv_put(&l, ",%.9g,%s,%llu,%d", p->scale, attn_setup_fill_name(s), (unsigned long long)s->seed,
        s->threads);
    attn_csv_num(&l, s->splits > 0, s->splits);
    const attn_kind kind = r->be->kind;
    attn_csv_put(&l, ",%s", attn_kind_name(kind));
    const attn_mods *m = &p->mods;
    attn_csv_num(&l, m->window, m->left);
    attn_csv_num(&l, m->window, m->right);
    attn_csv_num(&l, m->softcap > 0, m->softcap);
    attn_csv_put(&l, ",%d,%d,%d", m->alibi, m->sinks, m->v_from_k);
    attn_csv_text(&l, p->model ? p->model : "");
    attn_csv_num(&l, kind == ATTN_KIND_SPARSE, p->var.globals);
    attn_csv_num(&l, kind == ATTN_KIND_SPARSE, p->var.random_blocks);
    attn_csv_num(&l, kind == ATTN_KIND_SPARSE, p->var.block);
    attn_csv_num(&l, kind == ATTN_KIND_PERFORMER, p->var.features);
    attn_csv_num(&l, kind == ATTN_KIND_LINFORMER, p->var.proj);
    attn_csv_num(&l, r->checked, (double)r->ref_rows);
    attn_csv_num(&l, r->checked, (double)r->ref_total);
    attn_csv_num(&l, r->checked, r->check.max_abs);
    attn_csv_num(&l, r->checked, r->check.max_rel);
    attn_csv_num(&l, r->checked, r->check.nmse);
    attn_csv_num(&l, r->checked, r->check.tol);
    attn_csv_put(&l, ",%s", r->checked ? r->check.tolerance->name : "");
    attn_csv_num(&l, r->approx_known, r->approx_max_abs);
    attn_csv_num(&l, r->approx_known, r->approx_nmse);
    attn_csv_num(&l, r->quant_known, r->quant_max_abs);
    attn_csv_num(&l, r->quant_known, r->quant_nmse);
    const bool grads = r->checked && attn_backward(p);
    for (int x = 0; x < 3; x++) {
        attn_csv_num(&l, grads, r->grad[x].max_abs);
        attn_csv_num(&l, grads, r->grad[x].tol);
        attn_csv_num(&l, grads, r->grad[x].nmse);
    }
    attn_csv_num(&l, timed, t->reps);
    attn_csv_num(&l, timed, (double)t->iterations);
    attn_csv_num(&l, timed, t->real_stats.median);
    attn_csv_num(&l, timed, t->real_stats.min);
    attn_csv_num(&l, timed, t->real_stats.mean);
    attn_csv_num(&l, timed, t->real_stats.stddev);
    attn_csv_num(&l, timed, t->real_stats.cv);
    attn_csv_num(&l, timed, t->cpu_stats.median);
    attn_csv_num(&l, timed, t->cpu_stats.mean);
    const bool dev_timed = timed && t->device_known;
    attn_csv_num(&l, dev_timed, t->device_stats.median);
    attn_csv_num(&l, dev_timed, t->device_stats.min);
    attn_csv_num(&l, dev_timed, t->device_stats.cv);
    const bool moved = r->device[0] && (attn_verdict_ran(r->verdict));
    attn_csv_num(&l, moved, r->upload_s);
    attn_csv_num(&l, moved, r->download_s);
    attn_csv_put(&l, ",%.17g,%.17g", r->flops, r->flops_dense);
    attn_csv_num(&l, timed, r->flops / t->real_stats.median * 1e-9);
    attn_csv_num(&l, timed, r->flops_dense / t->real_stats.median * 1e-9);
    peak = attn_case_peak(r, peak);
    const double pg = peak ? attn_case_peak_gflops(r, peak) : 0;
    attn_csv_num(&l, peak, pg);
    attn_csv_num(&l, timed && peak, peak ? 100.0 * r->flops / t->real_stats.median * 1e-9 / pg : 0);
    attn_csv_put(&l, ",%.17g", r->bytes);
    attn_csv_num(&l, timed, r->bytes / t->real_stats.median * 1e-9);
    attn_csv_num(&l, timed, (double)attn_q_tokens(p) / t->real_stats.median);
    attn_csv_num(&l, peak, peak ? peak->triad : 0);
    attn_csv_num(&l, timed && peak, peak ? 100.0 * r->bytes / t->real_stats.median * 1e-9 / peak->triad : 0);
    const attn_roofline roof = peak ? attn_case_roofline(r, peak) : (attn_roofline){ 0 };
    attn_csv_num(&l, peak, peak ? attn_case_bw(r, peak) : 0);
    attn_csv_num(&l, peak, roof.s);
    attn_csv_num(&l, timed && peak, peak ? attn_case_pct_roofline(r, peak) : 0);
    attn_csv_text(&l, !peak ? "" : roof.memory_bound ? "memory" : "compute");
    attn_csv_num(&l, attn_case_probe_gbs(r) > 0, attn_case_probe_gbs(r));
    attn_csv_num(&l, attn_case_fprobe(r) > 0, attn_case_fprobe(r));
    const bool ran = attn_verdict_ran(r->verdict);
    attn_csv_bytes(&l, ran && !r->ws_unknown, r->ws_peak);
    attn_csv_bytes(&l, r->ws_predicted > 0, r->ws_predicted);
    attn_csv_bytes(&l, ran && r->rss_known, r->rss_peak);
    attn_csv_bytes(&l, r->device_known, r->device_bytes);
    attn_csv_put(&l, ",%zu,%zu", r->score_bytes, r->kv_bytes);
    /* Scale-out backends: the largest of each figure over the ranks. */
    const bool ranked = r->ranks > 0 && ran;
    attn_csv_num(&l, r->ranks > 0, r->ranks);
    attn_csv_num(&l, ranked, r->rank_max.compute_s);
    attn_csv_num(&l, ranked, r->rank_max.comm_s);
    attn_csv_bytes(&l, ranked, r->rank_max.sent_bytes);
    attn_csv_bytes(&l, ranked, r->rank_max.workspace);
    attn_csv_num(&l, r->case_index >= 0, (double)r->case_index);
    attn_csv_num(&l, r->cases >= 0, (double)r->cases);
    attn_csv_text(&l, r->device[0] ? r->device : "host");
    attn_csv_text(&l, r->repro);
    attn_csv_put(&l, "\n");
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
