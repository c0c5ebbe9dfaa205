/* Small I/O helpers the harness files share. */
#ifndef ATTN_IO_H
#define ATTN_IO_H

#include <stdbool.h>
#include <stddef.h>

/* All n bytes to fd, through short writes and EINTR; false on an error. */
bool attn_write_all(int fd, const void *buf, size_t n);

#endif
