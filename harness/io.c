#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

bool attn_write_all(int fd, const void *buf, size_t n)
{
    const char *b = buf;
    while (n) {
        const ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

/* Creates and removes a file named after probe in folder dir. */
static bool try_create(const char *dir, const char *probe, char *why, size_t len)
{
    char path[4400];
    if (snprintf(path, sizeof(path), "%s/.%s.probe.%ld", dir, probe, (long)getpid()) >=
        (int)sizeof(path)) {
        snprintf(why, len, "the path is too long");
        return false;
    }
    const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(why, len, "cannot create a file in %s: %s", dir, strerror(errno));
        return false;
    }
    close(fd);
    unlink(path);
    return true;
}

bool attn_output_writable(const char *path, char *why, size_t len)
{
    struct stat st;
    if (!path[0]) {
        snprintf(why, len, "an empty path");
        return false;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(why, len, "is a folder");
        return false;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (stat(dir, &st)) {
        snprintf(why, len, "its folder %s: %s", dir, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, len, "%s is not a folder", dir);
        return false;
    }
    const char *base = slash ? slash + 1 : path;
    return try_create(dir, base, why, len);
}

bool attn_output_folder(const char *dir, char *why, size_t len)
{
    char path[4096];
    if (!dir[0] || snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
        snprintf(why, len, dir[0] ? "the path is too long" : "an empty path");
        return false;
    }
    /* mkdir -p: each prefix in turn. */
    for (char *p = path + 1;; p++) {
        const char c = *p;
        if (c != '/' && c)
            continue;
        *p = 0;
        struct stat st;
        if (mkdir(path, 0755) && errno != EEXIST) {
            snprintf(why, len, "cannot make the folder %s: %s", path, strerror(errno));
            return false;
        }
        if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
            snprintf(why, len, "%s is not a folder", path);
            return false;
        }
        *p = c;
        if (!c)
            break;
    }
    return try_create(dir, "attnbench", why, len);
}
