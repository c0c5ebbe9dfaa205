/* The sweep's CSV file: one header, one row per finished case, each row
 * written whole by one write() and fsync'ed before the next case starts. */
#ifndef ATTN_CSV_H
#define ATTN_CSV_H

#include "case.h"
#include "peak.h"

#define ATTN_CSV_SCHEMA 13

typedef struct attn_csv {
    int fd;
    char **keys;          /* cases the file held when it was opened with resume */
    size_t nkeys;
    size_t torn_bytes;    /* a partial last row dropped on resume */
} attn_csv;

/* Opens path for appending. Without resume an existing non-empty file is
 * refused (nothing is overwritten); with resume its header must be ours, its
 * rows' keys are remembered, and a torn last row is cut off. Returns -1 on
 * success, else an exit code after one line on stderr. */
int attn_csv_open(attn_csv *c, const char *path, bool resume);
/* The header line of this schema, without its newline. */
const char *attn_csv_header(void);
bool attn_csv_has(const attn_csv *c, const char *key);
/* Returns -1 on success, else ATTN_EXIT_ERROR after one line on stderr. */
/* peak: the machine's measured peak, NULL when unknown. */
int attn_csv_append(attn_csv *c, const attn_result *r, const attn_setup *s, const attn_peak *peak);
void attn_csv_close(attn_csv *c);

/* One CSV row being built, for this file and attnbench arch's: each field
 * appended after a comma (the first one by attn_csv_put alone); past the
 * buffer nothing more is added and at says by how much it overflowed. */
typedef struct attn_csv_row {
    char buf[8192];
    size_t at;
} attn_csv_row;
__attribute__((format(printf, 2, 3)))
void attn_csv_put(attn_csv_row *l, const char *fmt, ...);
/* ",text", quoted (RFC 4180) when it holds a comma, quote or newline. */
void attn_csv_text(attn_csv_row *l, const char *s);
/* ",%.9g", or "," when not known. */
void attn_csv_num(attn_csv_row *l, bool known, double v);
/* ",N" exactly (byte counts), or "," when not known. */
void attn_csv_bytes(attn_csv_row *l, bool known, uint64_t v);

#endif
