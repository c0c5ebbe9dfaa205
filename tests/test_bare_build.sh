#!/usr/bin/env bash
# TAP: the sources that depend on an optional feature (OpenBLAS, oneDNN,
# Vulkan, MPI, OpenMP) compile in a build that has none of them, warnings
# as errors: each disabled backend still registers, reporting why it is not
# built. A syntax-only compile of those files against this build's config.h
# with every feature turned off, so it costs seconds, not a second build.
#     test_bare_build.sh SOURCE_ROOT BUILD_ROOT CC [CC ARGS...]
set -u
. "$(dirname "$0")/tap.sh"
src=$1 build=$2
shift 2
cc=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/\(ATTN_HAVE_\(MPI\|ONEDNN\|OPENBLAS\|OPENMP\|VULKAN\)\) 1/\1 0/' \
    -e 's/\(ATTN_\(MPI\|ONEDNN\|OPENBLAS\|VULKAN\)_DISABLED\) 0/\1 1/' \
    "$build/config.h" >"$tmp/config.h"
[ -f "$build/revision.h" ] && cp "$build/revision.h" "$tmp/"
flags=(-std=c11 -D_GNU_SOURCE -fopenmp-simd -fsyntax-only -Werror -Wall -Wextra -Wpedantic -Wshadow
       -Wmissing-prototypes -Wstrict-prototypes -Wno-missing-field-initializers
       -I"$tmp" -I"$src" -I"$src/include" -I"$src/backends" -I"$src/harness" -I"$src/arch")
bare() { "${cc[@]}" "${flags[@]}" "$@" 2>&1; }

result "$(yes_if grep -q 'ATTN_HAVE_VULKAN 0' "$tmp/config.h")" \
    "a config.h with every optional feature off" "$(grep ATTN_ "$tmp/config.h")"
files=$(cd "$src" && grep -lE 'ATTN_(HAVE|[A-Z]+_DISABLED)_?(OPENBLAS|ONEDNN|VULKAN|MPI|OPENMP)?' \
            -r --include='*.c' backends harness arch | sort)
result "$(yes_if [ "$(echo "$files" | wc -w)" -ge 8 ])" \
    "the files that depend on a feature are found ($(echo $files))"
for f in $files; do
    out=$(bare "$src/$f")
    result "$(yes_if [ -z "$out" ])" "$f compiles without its features" "$out"
done

# Planted: a backend's table with its header missing, as a disabled branch
# can have, is refused by the same compile.
printf '#include "config.h"\n#if ATTN_HAVE_OPENBLAS\n#include "backend.h"\n#endif\n%s\n' \
    'const attn_backend attn_backend_planted = { .name = "planted" };' >"$tmp/planted.c"
out=$(bare "$tmp/planted.c")
result "$(yes_if [ -n "$out" ])" "planted: a disabled branch that lost backend.h does not compile" \
    "$(echo "$out" | head -3)"
echo "1..$n"
