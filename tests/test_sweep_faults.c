/* A sweep whose backends fail in the middle: one reports a lost device on
 * the second shape, one crashes there, one hangs there. Without
 * --case-timeout the lost device is an ERROR row and the sweep goes on; with
 * it, the crash is an ERROR row naming how the process died, the hang a
 * TIMEOUT row, and every other case of every shape still runs. The CSV stays
 * whole (a header and one complete row per case) and the JSON names each. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "csv.h"
#include "sweep.h"
#include "tap.h"
#include "util.h"

extern const attn_backend attn_backend_naive;

static int bad_seq;             /* the shape on which the planted backends fail */
static int prepared_seq;

static attn_status rec_prepare(const attn_problem *p, const attn_config *cfg, void **state)
{
    prepared_seq = p->seq_q;
    return attn_backend_naive.prepare(p, cfg, state);
}

static attn_status lost_run(void *state)
{
    return prepared_seq == bad_seq ? ATTN_EDEVICE : attn_backend_naive.run(state);
}

static attn_status crash_run(void *state)
{
    if (prepared_seq == bad_seq) {
        /* The default action, so that AddressSanitizer's handler does not
         * turn the planted crash into a report and an exit status. */
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    return attn_backend_naive.run(state);
}

static attn_status hang_run(void *state)
{
    while (prepared_seq == bad_seq)
        pause();
    return attn_backend_naive.run(state);
}

static attn_backend planted(const char *name, attn_status (*run)(void *))
{
    attn_backend be = attn_backend_naive;
    be.name = name;
    be.prepare = rec_prepare;
    be.run = run;
    return be;
}

/* The rows of a CSV: "backend,verdict,reason" per row, or NULL when it is
 * not a header and whole lines. */
static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
        n++;
    return n;
}

/* Runs the sweep with stdout (its report) sent to a log file. */
static int sweep(const char *args, const attn_backend **bes, size_t nbe, const char *dir,
                 const char *tag)
{
    char line[2048], csv[512], json[512], log[512];
    snprintf(csv, sizeof(csv), "%s/%s.csv", dir, tag);
    snprintf(json, sizeof(json), "%s/%s.json", dir, tag);
    snprintf(log, sizeof(log), "%s/%s.log", dir, tag);
    snprintf(line, sizeof(line), "attnbench --backend=naive --heads 1 --dk 8 --reps 0 --threads 1 "
             "--csv %s --json %s %s", csv, json, args);
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(line, " "); tok && argc < 63; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    attn_opts o;
    if (attn_cli_parse(&o, argc, argv) >= 0) {
        printf("Bail out! bad arguments: %s\n", args);
        exit(2);
    }
    free(o.backends);
    o.backends = bes;
    o.nbackends = nbe;
    attn_machine m;
    attn_machine_capture(&m, 1, NULL);
    fflush(stdout);
    const int saved = dup(STDOUT_FILENO);
    const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    const int rc = attn_sweep_run(&o, &m, "attnbench", NULL);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    o.backends = NULL;
    attn_cli_free(&o);
    return rc;
}

int main(void)
{
    char dir[] = "/tmp/attn_sweep_faults_XXXXXX";
    if (!mkdtemp(dir)) {
        printf("Bail out! mkdtemp\n");
        return 2;
    }
    bad_seq = 32;
    const attn_backend lost = planted("lost-device", lost_run);
    const attn_backend crash = planted("crash", crash_run);
    const attn_backend hang = planted("hang", hang_run);
    char path[512];

    /* In this process: a library or device error is an ERROR row. */
    {
        const attn_backend *bes[] = { &attn_backend_naive, &lost };
        const int rc = sweep("--seq 16,32,48", bes, 2, dir, "inproc");
        snprintf(path, sizeof(path), "%s/inproc.csv", dir);
        const char *csv = read_all(path);
        const bool whole = csv && !strncmp(csv, "schema,", 7) && csv[strlen(csv) - 1] == '\n';
        const int lines = csv ? count(csv, "\n") : 0;
        tap_ok(rc == ATTN_EXIT_ERROR, "a sweep with a failed case exits %d (got %d)", ATTN_EXIT_ERROR, rc);
        tap_ok(whole && lines == 7 && count(csv, ",PASSED,") == 5 &&
               count(csv, ",lost-device,ERROR,run: device error,") == 1,
               "the lost device is one ERROR row with its message; the 5 other cases PASSED "
               "after it (%d lines)", lines);
        if (csv && tap_failed)
            tap_diag("%s", csv);
    }

    /* --case-timeout: a crash and a hang do not stop the sweep. */
    {
        const attn_backend *bes[] = { &attn_backend_naive, &crash, &hang, &lost };
        const int rc = sweep("--seq 16,32,48 --case-timeout 1", bes, 4, dir, "isolated");
        snprintf(path, sizeof(path), "%s/isolated.csv", dir);
        const char *csv = read_all(path);
        const bool whole = csv && !strncmp(csv, "schema,", 7) && csv[strlen(csv) - 1] == '\n';
        const int lines = csv ? count(csv, "\n") : 0;
        tap_ok(rc == ATTN_EXIT_ERROR, "--case-timeout: the sweep exits %d (got %d)", ATTN_EXIT_ERROR, rc);
        tap_ok(whole && lines == 13, "--case-timeout: the CSV is a header and 12 whole rows (%d lines)",
               lines);
        tap_ok(csv && count(csv, ",PASSED,") == 9, "--case-timeout: the 9 cases off the bad shape PASSED");
        tap_ok(csv && count(csv, ",crash,ERROR,the case's process killed by signal 11 "
                                 "(Segmentation fault) before it finished") == 1,
               "--case-timeout: the crash is an ERROR row saying how its process died");
        tap_ok(csv && count(csv, ",hang,TIMEOUT,no result after --case-timeout 1 s") == 1,
               "--case-timeout: the hang is a TIMEOUT row");
        tap_ok(csv && count(csv, ",lost-device,ERROR,run: device error,") == 1,
               "--case-timeout: the lost device, run after them in a fresh process, is an ERROR row");
        snprintf(path, sizeof(path), "%s/isolated.json", dir);
        const char *json = read_all(path);
        tap_ok(json && count(json, "\"label\": \"TIMEOUT\"") == 1 &&
               count(json, "\"label\": \"ERROR\"") == 2 && json[strlen(json) - 2] == '}',
               "--case-timeout: the JSON holds the TIMEOUT and both ERROR cases");
        if (tap_failed) {
            if (csv)
                tap_diag("%s", csv);
            snprintf(path, sizeof(path), "%s/isolated.log", dir);
            const char *log = read_all(path);
            if (log)
                tap_diag("%s", log);
        }
    }

    const char *tags[] = { "inproc", "isolated" }, *exts[] = { "csv", "json", "log" };
    for (int t = 0; t < 2; t++)
        for (int e = 0; e < 3; e++) {
            snprintf(path, sizeof(path), "%s/%s.%s", dir, tags[t], exts[e]);
            unlink(path);
        }
    rmdir(dir);
    return tap_done();
}
