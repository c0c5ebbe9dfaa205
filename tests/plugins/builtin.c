/* attnbench's own naive and tiled backends, compiled into a plugin from
 * the very files the executable is built from: loaded with --plugin they
 * are asplugin.naive and asplugin.tiled, whose times against the built-in
 * naive and tiled (scripts/bench-plugin) show what the plugin route costs. */
#include "backend.h"

extern const attn_backend attn_backend_naive, attn_backend_tiled;

static const attn_backend *const builtin_backends[] = { &attn_backend_naive, &attn_backend_tiled };

const attn_plugin *attnbench_plugin(void);

const attn_plugin *attnbench_plugin(void)
{
    static const attn_plugin d = ATTN_PLUGIN_DESCRIBE(
        "asplugin", "attnbench's naive and tiled, built as a plugin", builtin_backends, 2);
    return &d;
}
