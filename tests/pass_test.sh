#!/usr/bin/env bash
# The pass entry point as a compiler uses it: the C test of shs_pass_run (threads, bad input,
# the context), tools/pipeline running libshardsearch.so as a pass (same bytes as
# `shardsearch annotate`), and the library's exported symbols.
# usage: pass_test.sh SHARDSEARCH PIPELINE LIBSHARDSEARCH PASS_TESTS HLO_DIR TMP_DIR SANITIZED(0|1)
set -u
ss=$1 pipeline=$2 lib=$3 pass_tests=$4 hlo=$5 tmp=$6 sanitized=$7
rm -rf "$tmp" && mkdir -p "$tmp"
maxtext="$hlo/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"
. "$(dirname "$0")/cli_lib.sh"

# small modules for the C test: two MLPs, a 2-layer LLaMA (scanned), MaxText as an HloProto
expect 0 "$ss" gen mlp-only --set layers=2 --set d_model=512 --set d_ff=2048 --set batch=256 -o "$tmp/a.pb"
expect 0 "$ss" gen llama3-8b --set layers=2 --scan --set d_model=512 --set d_ff=1024 \
	--set heads=8 --set kv_heads=2 --set head_dim=64 --set vocab=1024 --set seq=128 --set batch=16 -o "$tmp/b.pb"
expect 0 "$ss" gen mlp-only --set layers=1 --set d_model=256 --set d_ff=1024 --set batch=64 -o "$tmp/c.pb"
expect 0 "$ss" convert "$maxtext" "$tmp/d.pb" --hlo-proto
expect 0 "$ss" gen mlp-only --set layers=1 --set d_model=256 --set d_ff=1024 --set batch=64 -o "$tmp/mlp.hlo"
# a module no plan fits on one H100 (512 sequences of 1024 tokens of a 2-layer LLaMA-3 8B)
expect 0 "$ss" gen llama3-8b --set layers=2 --scan --set vocab=32768 --set seq=1024 --set batch=512 -o "$tmp/nofit.pb"
dot=$(grep -m1 ' dot(' "$tmp/mlp.hlo" | sed 's/^ *%\{0,1\}\([^ ]*\) =.*/\1/')
expect 0 "$pass_tests" "$tmp" "$dot"
if [ "$(cat "$tmp/out")" = "" ]; then bad "pass_tests printed nothing"; fi

# the pipeline: the library as a pass gives what annotate writes, on a generated module and on
# MaxText (a bare HloModuleProto and an HloProto: each comes back as it went in)
run_both() { # IN OPTIONS ANNOTATE_ARGS...
	local in=$1 opts=$2 name
	shift 2
	name=$(basename "$in" .pb)
	expect 0 "$pipeline" --pass "$lib:$opts" "$in" -o "$tmp/$name-pass.pb"
	expect 0 "$ss" annotate "$in" "$@" --quiet -o "$tmp/$name-cli.pb"
	if cmp -s "$tmp/$name-pass.pb" "$tmp/$name-cli.pb"; then ok; else bad "$name: pipeline and annotate differ"; fi
	expect 0 "$ss" info "$tmp/$name-pass.pb"
	expect 0 "$ss" convert "$tmp/$name-pass.pb" "$tmp/$name-pass.hlo"
	has "$tmp/$name-pass.hlo" "sharding={"
}
run_both "$tmp/a.pb" "hardware=v5p;devices=64" --hardware v5p --devices 64
expect 0 "$ss" convert "$maxtext" "$tmp/maxtext.pb"
run_both "$tmp/maxtext.pb" "hardware=h100;devices=8" --hardware h100 --devices 8
# MaxText as an HloProto on 64 v5p chips (more than its 8-way hints), on 2 threads; under
# sanitizers on 16 (15 meshes against 78: the normal build runs the 64)
if [ "$sanitized" = 1 ]; then chips=16; else chips=64; fi
run_both "$tmp/d.pb" "hardware=v5p;devices=$chips;threads=2" --hardware v5p --devices "$chips" --threads 2
# HLO text in: an HloModuleProto out, as annotate writes it to a .pb
expect 0 "$pipeline" --pass "$lib:hardware=h100;devices=8" "$maxtext" -o "$tmp/text-pass.pb"
if cmp -s "$tmp/text-pass.pb" "$tmp/maxtext-cli.pb"; then ok; else bad "text input: pipeline and annotate differ"; fi
# a named plan pipelined by GPipe over stage: the pass writes the pipelined program, the same
# bytes as annotate; an unrolled module it cannot rewrite is refused, writing nothing
expect 0 "$ss" gen mlp-only --set layers=8 --set batch=4096 --set d_model=256 --set d_ff=1024 \
	--scan -o "$tmp/pp.pb"
run_both "$tmp/pp.pb" "hardware=v5p;devices=8;mesh=stage=2,data=4;plan=dp;pipeline=gpipe;microbatches=4" \
	--hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp --pipeline gpipe --microbatches 4
has "$tmp/pp-pass.hlo" "collective-permute("
expect 1 "$pipeline" --pass "$lib:hardware=v5p;devices=8;mesh=stage=2,data=4;plan=dp;pipeline=gpipe" \
	"$tmp/a.pb" -o "$tmp/no-pp.pb"
has "$tmp/err" "pipeline: not written"
if [ -e "$tmp/no-pp.pb" ]; then bad "a refused pipeline left output"; else ok; fi
# two passes in a row: the second finds the first's shardings and keeps its own search's
expect 0 "$pipeline" --pass "$lib:hardware=v5p;devices=64" --pass "$lib:hardware=v5p;devices=64" \
	"$tmp/a.pb" -o "$tmp/twice.pb"
expect 0 "$ss" info "$tmp/twice.pb"

# failures: a message naming the pass, exit 1 or 2, and no output
expect 1 "$pipeline" --pass "$lib:hardware=v5p;devices=64;remat=all" "$tmp/a.pb" -o "$tmp/no1.pb"
has "$tmp/err" "remat=all"
printf '\377\377\377 not a module' >"$tmp/junk.pb"
expect 1 "$pipeline" --pass "$lib:hardware=v5p;devices=64" "$tmp/junk.pb" -o "$tmp/no2.pb"
has "$tmp/err" "malformed protobuf"
expect 1 "$pipeline" --pass "$tmp/no-such-lib.so" "$tmp/a.pb" -o "$tmp/no3.pb"
expect 1 "$pipeline" --pass "$lib:hardware=v5p;devices=64" "$tmp/no-such.pb" -o "$tmp/no4.pb"
expect 2 "$pipeline" "$tmp/a.pb" -o "$tmp/no5.pb"
expect 2 "$pipeline" --pass "$lib" "$tmp/a.pb"
for k in 1 2 3 4 5; do
	if [ -e "$tmp/no$k.pb" ] || ls "$tmp"/.no$k.pb.* >/dev/null 2>&1; then bad "output left after failure $k"; else ok; fi
done

# the library exports its API and nothing else
syms=$(nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }')
if [ -n "$syms" ] && ! grep -qv '^shs_' <<<"$syms"; then ok; else bad "exported: $(grep -v '^shs_' <<<"$syms" | head -5)"; fi
for f in shs_pass_run shs_pass_free shs_version shs_context_new shs_context_search; do
	if grep -qx "$f" <<<"$syms"; then ok; else bad "$f not exported"; fi
done
finish
