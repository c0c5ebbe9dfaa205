/* Plugins: backends loaded at run time from shared libraries written
 * against include/attnbench/backend.h (docs/writing-a-backend.md). */
#ifndef ATTN_PLUGIN_H
#define ATTN_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Loads the plugin at path and registers its backends as "NAME.BACKEND"
 * after the built-ins (attn_backend_add). false, with why (one line naming
 * path), when it is not a shared library, has no ATTN_PLUGIN_ENTRY, was
 * built against another ABI or header, names itself or a backend outside
 * [A-Za-z0-9_-], lacks a required verb, or a name is taken; nothing of it
 * is registered then. The library stays loaded for the life of the
 * process. */
bool attn_plugin_load(const char *path, char *why, size_t len);

/* One line per plugin loaded, for --list: its name, file and summary. */
void attn_plugins_print(FILE *f);

/* --case-timeout, in seconds, of a run with a plugin's backend in it when
 * none is given: its cases run in a child process (harness/isolate.h). */
#define ATTN_PLUGIN_CASE_TIMEOUT 3600.0

/* The plugins of the environment (ATTNBENCH_PLUGINS, paths separated by
 * ':') and of the command line (--plugin PATH, --plugin=PATH, repeatable),
 * loaded in that order before the options are read, so that --backend
 * finds their backends wherever it stands. -1 when all loaded (or there
 * are none), else the exit code after the one-line message. */
int attn_plugins_from(int argc, char **argv);

#endif
