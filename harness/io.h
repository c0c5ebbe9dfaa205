/* Small I/O helpers the harness files share. */
#ifndef ATTN_IO_H
#define ATTN_IO_H

#include <stdbool.h>
#include <stddef.h>

/* All n bytes to fd, through short writes and EINTR; false on an error. */
bool attn_write_all(int fd, const void *buf, size_t n);

/* Whether a file can be written at path the way the harness writes its
 * outputs (a temporary file beside it, renamed over it): path is not a
 * folder and a file can be created in its folder, which is tried and
 * removed. Asked before any case runs, so that a sweep never runs to the
 * end only to lose its output. why: "cannot create a file in /x: Permission
 * denied". */
bool attn_output_writable(const char *path, char *why, size_t len);

/* The same for a folder that will receive files: made (with its parents)
 * when it does not exist, then a file is tried in it. */
bool attn_output_folder(const char *dir, char *why, size_t len);

#endif
