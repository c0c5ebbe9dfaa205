#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "plugin.h"

/* The plugins loaded, for --list: each one's descriptor and file. */
#define MAX_PLUGINS 64
static const attn_plugin *plugins[MAX_PLUGINS];
static const char *plugin_files[MAX_PLUGINS];
static int nplugins;

/* A name of a plugin or of one of its backends: 1 to 64 of [A-Za-z0-9_-]. */
static bool good_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 64)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return false;
    return true;
}

/* The sizes the plugin was compiled with against attnbench's. */
static bool same_sizes(const attn_plugin *d, const char *path, char *why, size_t len)
{
    const struct { const char *what; uint32_t theirs; size_t ours; } s[] = {
        { "attn_plugin", d->struct_size, sizeof(attn_plugin) },
        { "attn_backend", d->backend_size, sizeof(attn_backend) },
        { "attn_problem", d->problem_size, sizeof(attn_problem) },
        { "attn_tensors", d->tensors_size, sizeof(attn_tensors) },
        { "attn_config", d->config_size, sizeof(attn_config) },
        { "attn_ragged", d->ragged_size, sizeof(attn_ragged) },
        { "attn_allocator", d->allocator_size, sizeof(attn_allocator) },
    };
    for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
        if (s[i].theirs != s[i].ours) {
            snprintf(why, len, "%s: its %s is %u bytes, this attnbench's %zu: it was built "
                     "against another header of ABI %u (rebuild it against this attnbench's)",
                     path, s[i].what, (unsigned)s[i].theirs, s[i].ours, ATTN_ABI_VERSION);
            return false;
        }
    return true;
}

/* The file of the loaded plugin named name (its backends' NAME.), or NULL. */
static const char *loaded_from(const char *name)
{
    const size_t n = strlen(name);
    for (size_t i = 0; i < attn_backend_count(); i++) {
        const attn_backend *be = attn_backend_get(i);
        if (attn_backend_origin(be) && !strncmp(be->name, name, n) && be->name[n] == '.')
            return attn_backend_origin(be);
    }
    return NULL;
}

bool attn_plugin_load(const char *path, char *why, size_t len)
{
    /* A name without a '/' is a file here, not one the loader searches for. */
    char local[4200];
    snprintf(local, sizeof(local), "%s%s", strchr(path, '/') ? "" : "./", path);
    dlerror();
    void *lib = dlopen(local, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, len, "%s: not a loadable shared library: %s", path, e ? e : "dlopen failed");
        return false;
    }
    attn_plugin_entry *entry;
    /* The entry is a function; POSIX has dlsym return it as a void *. */
    *(void **)&entry = dlsym(lib, ATTN_PLUGIN_ENTRY);
    const attn_plugin *d = entry ? entry() : NULL;
    if (!entry) {
        snprintf(why, len, "%s: no %s function: not an attnbench plugin (docs/writing-a-backend.md)", path,
                 ATTN_PLUGIN_ENTRY);
    } else if (!d) {
        snprintf(why, len, "%s: %s returned no descriptor", path, ATTN_PLUGIN_ENTRY);
    } else if (d->abi_version != ATTN_ABI_VERSION) {
        snprintf(why, len, "%s: built against attnbench's ABI %u, this attnbench serves ABI %u "
                 "(rebuild it against this attnbench's header)", path, (unsigned)d->abi_version,
                 ATTN_ABI_VERSION);
        d = NULL;
    } else if (!same_sizes(d, path, why, len)) {
        d = NULL;
    } else if (!good_name(d->name)) {
        snprintf(why, len, "%s: the plugin's name '%s' is not 1 to 64 of A-Z, a-z, 0-9, _ and -",
                 path, d->name ? d->name : "(null)");
        d = NULL;
    } else if (loaded_from(d->name)) {
        snprintf(why, len, "%s: a plugin named %s is already loaded from %s", path, d->name,
                 loaded_from(d->name));
        d = NULL;
    } else if (!strcmp(d->name, "all") || attn_backend_find(d->name)) {
        /* --backend NAME selects a plugin's backends: it must name nothing else */
        snprintf(why, len, "%s: the plugin's name '%s' is %s", path, d->name,
                 strcmp(d->name, "all") ? "a built-in backend's" : "--backend's 'all'");
        d = NULL;
    } else if (nplugins == MAX_PLUGINS) {
        snprintf(why, len, "%s: more than %d plugins", path, MAX_PLUGINS);
        d = NULL;
    } else if (d->count < 1 || d->count > 64 || !d->backends) {
        snprintf(why, len, "%s: %d backends (1 to 64)", path, d->count);
        d = NULL;
    }
    attn_backend *copies = d ? calloc((size_t)d->count, sizeof(*copies)) : NULL;
    char *names = d ? calloc((size_t)d->count, 160) : NULL;
    if (d && (!copies || !names)) {
        snprintf(why, len, "%s: out of memory", path);
        d = NULL;
    }
    /* Every backend checked before any is registered. */
    for (int i = 0; d && i < d->count; i++) {
        const attn_backend *be = d->backends[i];
        const char *miss = !be            ? "its entry"
                           : !be->prepare ? "prepare"
                           : !be->bind    ? "bind"
                           : !be->run     ? "run"
                           : !be->read    ? "read"
                           : !be->release ? "release"
                           : !be->workspace ? "workspace"
                                            : NULL;
        char *name = names + (size_t)i * 160;
        if (be)
            snprintf(name, 160, "%s.%s", d->name, be->name ? be->name : "");
        if (be && !good_name(be->name)) {
            snprintf(why, len, "%s: backend %d's name '%s' is not 1 to 64 of A-Z, a-z, 0-9, _ "
                     "and -", path, i, be->name ? be->name : "(null)");
            d = NULL;
        } else if (miss) {
            snprintf(why, len, "%s: backend %d (%s) has no %s", path, i, be ? name : "NULL", miss);
            d = NULL;
        } else if (attn_backend_find(name)) {
            const char *from = attn_backend_origin(attn_backend_find(name));
            snprintf(why, len, "%s: backend %s is already loaded%s%s", path, name,
                     from ? " from " : "", from ? from : "");
            d = NULL;
        }
        for (int j = 0; d && j < i; j++)
            if (!strcmp(names + (size_t)j * 160, name)) {
                snprintf(why, len, "%s: backend %s is named twice", path, name);
                d = NULL;
            }
        if (d) {
            copies[i] = *be;
            copies[i].name = name;
        }
    }
    char *from = d ? strdup(path) : NULL;
    if (d && !from) {
        snprintf(why, len, "%s: out of memory", path);
        d = NULL;
    }
    if (d && !attn_backend_add(copies, d->count, from)) {
        snprintf(why, len, "%s: more plugin backends than attnbench holds (256)", path);
        d = NULL;
    }
    if (!d) {
        free(copies);
        free(names);
        free(from);
        dlclose(lib);
        return false;
    }
    plugins[nplugins] = d;
    plugin_files[nplugins++] = from;
    return true;   /* lib, copies, names and from live as long as the process */
}

int attn_plugins_from(int argc, char **argv)
{
    char why[4400];
    const char *env = getenv("ATTNBENCH_PLUGINS");
    if (env && *env) {
        char *copy = strdup(env);
        if (!copy)
            return attn_error(ATTN_EXIT_USAGE, "ATTNBENCH_PLUGINS: out of memory");
        for (char *tok = copy, *next; tok; tok = next) {
            next = strchr(tok, ':');
            if (next)
                *next++ = '\0';
            if (*tok && !attn_plugin_load(tok, why, sizeof(why))) {
                free(copy);
                return attn_error(ATTN_EXIT_USAGE, "ATTNBENCH_PLUGINS: %s", why);
            }
        }
        free(copy);
    }
    for (int i = 1; i < argc; i++) {
        const char *path = NULL;
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "--plugin") && i + 1 < argc)
            path = argv[++i];
        else if (!strncmp(argv[i], "--plugin=", 9))
            path = argv[i] + 9;
        if (path && !attn_plugin_load(path, why, sizeof(why)))
            return attn_error(ATTN_EXIT_USAGE, "--plugin %s", why);
    }
    return -1;
}

void attn_plugins_print(FILE *f)
{
    for (int i = 0; i < nplugins; i++)
        fprintf(f, "%splugin %s (%s): %s\n", i ? "" : "\n", plugins[i]->name, plugin_files[i],
                plugins[i]->summary ? plugins[i]->summary : "");
}
