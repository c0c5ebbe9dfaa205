#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io.h"
#include "isolate.h"

enum { MSG_START, MSG_RESULT };

typedef struct msg {
    int kind;
    int backend;            /* -1: the inputs and reference */
    double naive;           /* MSG_RESULT: naive's median so far, for speedups */
    attn_result r;          /* MSG_RESULT; its pointers are valid in both processes */
} msg;

void attn_isolate_start(int fd, int backend)
{
    msg m = { .kind = MSG_START, .backend = backend };
    /* A parent that is gone cannot record anything more: stop. */
    if (!attn_write_all(fd, &m, offsetof(msg, r)))
        _exit(1);
}

void attn_isolate_done(int fd, int backend, const attn_result *r, double naive)
{
    msg m = { .kind = MSG_RESULT, .backend = backend, .naive = naive, .r = *r };
    if (!attn_write_all(fd, &m, sizeof(m)))
        _exit(1);
}

static void describe_end(char *buf, size_t len, int status)
{
    if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
}

/* Reads the child's messages until it is done, dies or a case outlasts the
 * limit (then kills it). Returns the case in flight: a backend index, -1
 * for the inputs and reference, -2 between two cases. */
static int follow(double timeout, pid_t pid, int fd, bool *todo, const attn_isolate_ops *ops,
                  void *ctx, bool *timed_out)
{
    int current = -1;
    double deadline = attn_now() + timeout;
    msg m;
    size_t have = 0, want = offsetof(msg, r);
    *timed_out = false;
    for (;;) {
        const double wait = deadline - attn_now();
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        const int ready = wait > 0 ? poll(&pfd, 1, (int)(wait * 1000.0) + 1) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            *timed_out = true;
            kill(pid, SIGKILL);
            return current;
        }
        const ssize_t k = read(fd, (char *)&m + have, want - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return current;   /* the child is done, or died */
        have += (size_t)k;
        if (have < want)
            continue;
        if (m.kind == MSG_RESULT && want == offsetof(msg, r)) {
            want = sizeof(m);
            continue;
        }
        if (m.kind == MSG_START) {
            current = m.backend;
        } else {
            ops->done(ctx, (size_t)m.backend, &m.r, m.naive);
            todo[m.backend] = false;
            current = -2;   /* between cases: the next one is to blame */
        }
        deadline = attn_now() + timeout;
        have = 0;
        want = offsetof(msg, r);
    }
}

void attn_isolate_run(double timeout, bool *todo, size_t n, const attn_isolate_ops *ops,
                      void *ctx)
{
    bool header = true;
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += todo[i];
        if (!left)
            return;
        int fds[2] = { -1, -1 };
        fflush(stdout);
        fflush(stderr);
        const pid_t pid = pipe(fds) ? -1 : fork();
        if (pid < 0) {
            char why[160];
            snprintf(why, sizeof(why), "cannot start the process for the case: %s", strerror(errno));
            for (int f = 0; f < 2; f++)
                if (fds[f] >= 0)
                    close(fds[f]);
            for (size_t i = 0; i < n; i++)
                if (todo[i]) {
                    ops->lost(ctx, i, ATTN_ERROR, why);
                    todo[i] = false;
                }
            return;
        }
        if (pid == 0) {
            close(fds[0]);
            ops->work(ctx, fds[1], todo, header);
            fflush(stdout);
            fflush(stderr);
            _exit(0);
        }
        close(fds[1]);
        header = false;
        bool timed_out;
        int current = follow(timeout, pid, fds[0], todo, ops, ctx, &timed_out);
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        char why[384], how[128];
        describe_end(how, sizeof(how), status);
        if (current == -2 && (timed_out || !WIFEXITED(status) || WEXITSTATUS(status))) {
            /* Between two cases: the next one is the one that did not finish. */
            for (size_t i = 0; i < n && current < 0; i++)
                if (todo[i])
                    current = (int)i;
        }
        if (current == -1) {
            /* The inputs or the reference: no case of the shape can run. */
            if (timed_out)
                snprintf(why, sizeof(why), "the inputs and the reference took longer than "
                                           "--case-timeout %g s", timeout);
            else
                snprintf(why, sizeof(why), "the process computing the inputs and the reference %s",
                         how);
            ops->no_reference(ctx, why);
            for (size_t i = 0; i < n; i++) {
                if (todo[i]) {
                    ops->lost(ctx, i, timed_out ? ATTN_TIMEOUT : ATTN_ERROR, why);
                    todo[i] = false;
                }
            }
        } else if (current >= 0) {
            if (timed_out)
                snprintf(why, sizeof(why), "no result after --case-timeout %g s; its process "
                                           "was killed", timeout);
            else
                snprintf(why, sizeof(why), "the case's process %s before it finished", how);
            ops->lost(ctx, (size_t)current, timed_out ? ATTN_TIMEOUT : ATTN_ERROR, why);
            todo[current] = false;
        }
    }
}
