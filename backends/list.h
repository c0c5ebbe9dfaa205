/* Every backend attnbench knows, in --list order: the one list that the
 * registry (registry.c) and the command-line fuzz target (tests/fuzz_cli.c)
 * are built from. ATTN_BACKEND(id, "name") names the attn_backend_<id>
 * table its file defines; a backend whose library meson did not find still
 * defines it, with not_built saying why. Adding a backend: README, "Adding
 * a backend". */
ATTN_BACKEND(naive, "naive")
ATTN_BACKEND(tiled, "tiled")
ATTN_BACKEND(blas, "blas")
ATTN_BACKEND(onednn, "onednn")
ATTN_BACKEND(ring, "ring")
ATTN_BACKEND(vulkan, "vulkan")
ATTN_BACKEND(vulkan_3pass, "vulkan-3pass")
ATTN_BACKEND(local, "local")
ATTN_BACKEND(sparse, "sparse")
ATTN_BACKEND(linear, "linear")
ATTN_BACKEND(performer, "performer")
ATTN_BACKEND(linformer, "linformer")
