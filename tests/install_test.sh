#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: what lands there, the example plugin built against
# that prefix only (CMake find_package and the pkg-config one-liner), the installed command
# using it, and (outside sanitizer builds) a program linked with the installed library.
# usage: install_test.sh BUILD_DIR SOURCE_DIR TMP_DIR SANITIZED(0|1)
set -u
build=$1 src=$2 tmp=$3 sanitized=$4
rm -rf "$tmp" && mkdir -p "$tmp"
. "$(dirname "$0")/cli_lib.sh"
p="$tmp/prefix"

expect 0 cmake --install "$build" --prefix "$p"
for f in bin/shardsearch include/shardsearch.h include/shardsearch_plugin.h \
	lib/libshardsearch.so lib/libshardsearch.so.0 lib/pkgconfig/shardsearch.pc \
	lib/cmake/shardsearch/shardsearchConfig.cmake lib/cmake/shardsearch/shardsearchConfigVersion.cmake \
	share/man/man1/shardsearch.1 lib/shardsearch/plugins/dot.so lib/shardsearch/plugins/elementwise.so; do
	if [ -e "$p/$f" ]; then ok; else bad "not installed: $f"; fi
done
if readelf -d "$p/lib/libshardsearch.so" | grep -q 'SONAME.*libshardsearch\.so\.0'; then ok; else bad "no SONAME libshardsearch.so.0"; fi
# the library exports exactly the functions its installed header declares
declared=$(grep -oE '^SHS_API [^(]*\(' "$p/include/shardsearch.h" | sed -E 's/.*[ *]([a-z_0-9]+)\($/\1/' | sort)
exported=$(nm -D --defined-only "$p/lib/libshardsearch.so" | awk 'NF == 3 { print $3 }' | sort)
if [ -n "$declared" ] && [ "$declared" = "$exported" ]; then ok
else bad "exports differ from shardsearch.h: $(diff <(echo "$declared") <(echo "$exported") | grep '^[<>]' | head -5 | tr '\n' ' ')"; fi
has "$p/share/man/man1/shardsearch.1" ".TH SHARDSEARCH 1"
has "$p/share/man/man1/shardsearch.1" "shardsearch annotate"

# the example plugin, against the prefix only: CMake's find_package, and one cc command
expect 0 cmake -S "$src/strategies/example" -B "$tmp/example" -DCMAKE_PREFIX_PATH="$p" \
	-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
expect 0 cmake --build "$tmp/example"
mkdir -p "$tmp/by-cc"
expect 0 sh -c "cc -shared -fPIC -std=c11 -Wall -Werror \$(PKG_CONFIG_PATH='$p/lib/pkgconfig' pkg-config --cflags shardsearch) '$src/strategies/example/fused_add.c' -o '$tmp/by-cc/fused_add.so'"

# the installed command finds its built-in plugins and uses the example where it is cheaper
expect 0 "$p/bin/shardsearch" gen mlp-only --set layers=2 --set d_model=512 --set d_ff=2048 --set batch=256 -o "$tmp/mlp.pb"
for dir in "$tmp/example" "$tmp/by-cc"; do
	expect 0 "$p/bin/shardsearch" annotate "$tmp/mlp.pb" --hardware v5p --devices 64 --plugins "$dir" --json -o "$tmp/with.pb"
	has "$tmp/out" '"example.fused-add"'
	has "$tmp/out" '"dot.assign"'
done
expect 0 "$p/bin/shardsearch" annotate "$tmp/mlp.pb" --hardware v5p --devices 64 --json -o "$tmp/without.pb"
if grep -qF '"example.fused-add"' "$tmp/out"; then bad "example.fused-add used without its plugin"; else ok; fi
has "$tmp/out" '"elementwise.same"'

# a program against the installed header and library (an ASan library needs its runtime first)
if [ "$sanitized" = 0 ]; then
	cat >"$tmp/use.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <shardsearch.h>
int main(int argc, char **argv)
{
	FILE *f = fopen(argv[1], "rb");
	static uint8_t buf[1 << 24];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0, len = 0;
	uint8_t *out = NULL;
	char *err = NULL;
	int rc = shs_pass_run(buf, n, "hardware=v5p;devices=64", &out, &len, &err);
	printf("%s %d %zu %s\n", shs_version(), rc, len, err ? err : "");
	shs_pass_free(out);
	shs_pass_free(err);
	return rc != 0 || len == 0;
}
C
	expect 0 sh -c "cc -std=c11 -Wall -Werror '$tmp/use.c' \$(PKG_CONFIG_PATH='$p/lib/pkgconfig' pkg-config --cflags --libs shardsearch) -o '$tmp/use'"
	expect 0 env LD_LIBRARY_PATH="$p/lib" "$tmp/use" "$tmp/mlp.pb"
	has "$tmp/out" "0.1.0 0 "
fi
finish
