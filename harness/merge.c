/* attnbench merge OUT.csv IN.csv...: the CSVs of a sweep's shards (--shard
 * I/N, each run wherever: a Slurm job array, GNU parallel, other machines)
 * joined into one, in the sweep's order. Refused: a file of another schema,
 * rows of different sweeps (their case counts or their keys at one index
 * differ), one case with two different results. The cases of the whole
 * sweep that no file holds are listed, and the exit code says so. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "csv.h"
#include "io.h"
#include "merge.h"

typedef struct row {
    const char *file;
    char *text;            /* the whole line, without its newline */
    char *key;
    long index, cases;
} row;

typedef struct merged {
    row *rows;
    size_t n, cap;
    char **texts;          /* the files' contents, kept for the rows */
    size_t ntexts;
    char **keys;           /* every row's key as loaded, freed at the end */
    size_t nkeys;
} merged;

/* Field `want` (0-based) of CSV line s (RFC 4180 quoting, one line), into
 * a new string; NULL if the line has fewer fields. */
static char *field(const char *s, int want)
{
    int at = 0;
    for (;;) {
        size_t cap = strlen(s) + 1, n = 0;
        char *out = at == want ? malloc(cap) : NULL;
        if (at == want && !out)
            return NULL;
        if (*s == '"') {
            for (s++; *s; s++) {
                if (*s == '"' && s[1] == '"') {
                    if (out)
                        out[n++] = '"';
                    s++;
                } else if (*s == '"') {
                    s++;
                    break;
                } else if (out) {
                    out[n++] = *s;
                }
            }
        } else {
            for (; *s && *s != ','; s++)
                if (out)
                    out[n++] = *s;
        }
        if (out) {
            out[n] = '\0';
            return out;
        }
        if (*s != ',')
            return NULL;
        s++;
        at++;
    }
}

/* The 0-based place of column name in the header. */
static int column(const char *name)
{
    const char *h = attn_csv_header();
    int at = 0;
    const size_t len = strlen(name);
    for (const char *c = h;; at++) {
        const char *e = strchr(c, ',');
        const size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == len && !strncmp(c, name, len))
            return at;
        if (!e)
            return -1;
        c = e + 1;
    }
}

static bool number(const char *s, long *v)
{
    char *end;
    if (!s || !*s)
        return false;
    errno = 0;
    *v = strtol(s, &end, 10);
    return !*end && !errno && *v >= 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        const size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n + 1 < cap)
            break;
        char *b = realloc(buf, cap *= 2);
        if (!b) {
            free(buf);
            buf = NULL;
        }
        buf = b;
    }
    const bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

#define refuse(...) attn_error(ATTN_EXIT_USAGE, "merge: " __VA_ARGS__)

static int load(merged *m, const char *path, int ci, int cc)
{
    size_t len;
    char *text = slurp(path, &len);
    if (!text)
        return refuse("%s: cannot read: %s", path, strerror(errno));
    char **t = realloc(m->texts, (m->ntexts + 1) * sizeof(*t));
    if (!t) {
        free(text);
        return refuse("out of memory");
    }
    m->texts = t;
    m->texts[m->ntexts++] = text;
    const char *h = attn_csv_header();
    const size_t hlen = strlen(h);
    if (memchr(text, '\0', len))
        return refuse("%s: a NUL byte: not an attnbench CSV", path);
    if (len < hlen + 1 || strncmp(text, h, hlen) || text[hlen] != '\n')
        return refuse("%s: not an attnbench CSV of schema %d (its header differs): merge joins "
                      "the shards of one sweep, written by this attnbench", path,
                      ATTN_CSV_SCHEMA);
    if (text[len - 1] != '\n')
        return refuse("%s: its last row is torn (a shard cut off): finish that shard with "
                      "--resume, then merge", path);
    size_t line_no = 1;
    for (char *line = text + hlen + 1; *line;) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        line_no++;
        row r = { .file = path, .text = line, .key = field(line, 1) };
        char *si = field(line, ci), *sc = field(line, cc);
        const bool ok = r.key && number(si, &r.index) && number(sc, &r.cases);
        free(si);
        free(sc);
        if (r.key) {
            char **keys = realloc(m->keys, (m->nkeys + 1) * sizeof(*keys));
            if (!keys) {
                free(r.key);
                return refuse("out of memory");
            }
            m->keys = keys;
            m->keys[m->nkeys++] = r.key;
        }
        if (!ok) {
            return refuse("%s:%zu: a row without its key, case_index or cases: not written by "
                          "a sweep", path, line_no);
        }
        if (m->n == m->cap) {
            const size_t cap = m->cap ? 2 * m->cap : 256;
            row *rows = realloc(m->rows, cap * sizeof(*rows));
            if (!rows)
                return refuse("out of memory");
            m->rows = rows;
            m->cap = cap;
        }
        m->rows[m->n++] = r;
        line = nl + 1;
    }
    return -1;
}

static int by_index(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int by_key(const void *a, const void *b)
{
    const row *x = *(const row *const *)a, *y = *(const row *const *)b;
    return strcmp(x->key, y->key);
}

/* Checks the rows against each other and drops exact repeats; -1 or an
 * exit code. */
static int reconcile(merged *m)
{
    if (!m->n)
        return -1;
    const long cases = m->rows[0].cases;
    for (size_t i = 1; i < m->n; i++)
        if (m->rows[i].cases != cases)
            return refuse("%s holds a sweep of %ld cases, %s one of %ld: they are not shards of "
                          "one sweep", m->rows[0].file, cases, m->rows[i].file,
                          m->rows[i].cases);
    qsort(m->rows, m->n, sizeof(*m->rows), by_index);
    size_t kept = 0;
    for (size_t i = 0; i < m->n; i++) {
        row *r = &m->rows[i];
        if (r->index >= cases)
            return refuse("%s: case index %ld of a sweep of %ld cases", r->file, r->index, cases);
        if (kept && m->rows[kept - 1].index == r->index) {
            const row *k = &m->rows[kept - 1];
            if (strcmp(k->key, r->key))
                return refuse("case %ld is %s in %s and %s in %s: they are not shards of one "
                              "sweep", r->index, k->key, k->file, r->key, r->file);
            if (strcmp(k->text, r->text))
                return refuse("case %s is in %s and in %s with different results; keep one "
                              "of them", r->key, k->file, r->file);
            continue;
        }
        m->rows[kept++] = *r;
    }
    m->n = kept;
    /* One key at two indices: two sweeps again. */
    const row **sorted = malloc(m->n * sizeof(*sorted));
    if (!sorted)
        return refuse("out of memory");
    for (size_t i = 0; i < m->n; i++)
        sorted[i] = &m->rows[i];
    qsort(sorted, m->n, sizeof(*sorted), by_key);
    int rc = -1;
    for (size_t i = 1; i < m->n && rc < 0; i++)
        if (!strcmp(sorted[i]->key, sorted[i - 1]->key))
            rc = refuse("case %s is case %ld in %s and case %ld in %s: they are not shards of "
                        "one sweep", sorted[i]->key, sorted[i - 1]->index, sorted[i - 1]->file,
                        sorted[i]->index, sorted[i]->file);
    free(sorted);
    return rc;
}

static int write_out(const merged *m, const char *path)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return attn_error(errno == EEXIST ? ATTN_EXIT_USAGE : ATTN_EXIT_ERROR,
                          "merge: %s: %s", path, errno == EEXIST
                              ? "the file exists; choose another (nothing is overwritten)"
                              : strerror(errno));
    const char *h = attn_csv_header();
    bool ok = attn_write_all(fd, h, strlen(h)) && attn_write_all(fd, "\n", 1);
    for (size_t i = 0; ok && i < m->n; i++)
        ok = attn_write_all(fd, m->rows[i].text, strlen(m->rows[i].text)) &&
             attn_write_all(fd, "\n", 1);
    ok = ok && !fsync(fd);
    close(fd);
    if (!ok)
        return attn_error(ATTN_EXIT_ERROR, "merge: %s: cannot write: %s", path, strerror(errno));
    return -1;
}

/* The cases of the whole sweep that no file holds, listed (the first 20). */
static size_t report_missing(const merged *m)
{
    if (!m->n)
        return 0;
    const long cases = m->rows[0].cases;
    size_t missing = 0, at = 0;
    char list[512] = "";
    size_t len = 0;
    for (long ix = 0; ix < cases; ix++) {
        while (at < m->n && m->rows[at].index < ix)
            at++;
        if (at < m->n && m->rows[at].index == ix)
            continue;
        if (missing++ < 20 && len < sizeof(list))
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%ld", len ? ", " : "", ix);
    }
    if (missing)
        fprintf(stderr, "attnbench: merge: %zu of the sweep's %ld cases are in none of the files: "
                        "index %s%s (--shard I/N runs the indices equal to I mod N)\n",
                missing, cases, list, missing > 20 ? ", ..." : "");
    return missing;
}

int attn_merge_main(int argc, char **argv)
{
    if (argc < 3 || !strcmp(argv[1], "--help")) {
        fprintf(argc < 3 ? stderr : stdout,
                "usage: attnbench merge OUT.csv IN.csv...\n"
                "  joins the CSVs of one sweep's shards (attnbench --shard I/N --csv IN.csv)\n"
                "  into OUT.csv (a new file), in the sweep's order; lists the cases none holds\n"
                "exit codes: 0 every case of the sweep is in OUT.csv; 2 refused (see the line\n"
                "on stderr); 4 OUT.csv written, but cases are missing\n");
        return argc < 3 ? ATTN_EXIT_USAGE : ATTN_EXIT_OK;
    }
    const int ci = column("case_index"), cc = column("cases");
    merged m = { 0 };
    int rc = -1;
    for (int i = 2; i < argc && rc < 0; i++)
        rc = load(&m, argv[i], ci, cc);
    if (rc < 0)
        rc = reconcile(&m);
    if (rc < 0 && !m.n)
        rc = refuse("the files hold no rows");
    if (rc < 0)
        rc = write_out(&m, argv[1]);
    if (rc < 0) {
        const size_t missing = report_missing(&m);
        printf("merged %zu case%s from %d file%s into %s: %zu of the sweep's %ld\n", m.n,
               m.n == 1 ? "" : "s", argc - 2, argc == 3 ? "" : "s", argv[1], m.n,
               m.rows[0].cases);
        rc = missing ? ATTN_EXIT_ERROR : ATTN_EXIT_OK;
    }
    for (size_t i = 0; i < m.nkeys; i++)
        free(m.keys[i]);
    free(m.keys);
    free(m.rows);
    for (size_t i = 0; i < m.ntexts; i++)
        free(m.texts[i]);
    free(m.texts);
    return rc;
}
