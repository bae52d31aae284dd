#!/usr/bin/env bash
# Tests of the shardsearch command: conversions, info, gen, exit codes, and no output on failure.
# usage: cli_test.sh SHARDSEARCH HLO_DIR TMP_DIR SANITIZED(0|1)
set -u
ss=$1 hlo=$2 tmp=$3 sanitized=$4
rm -rf "$tmp" && mkdir -p "$tmp"
maxtext="$hlo/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"
mha="$hlo/mha_block_1x12x128x64_bf16.hlo"
. "$(dirname "$0")/cli_lib.sh"

# help and usage
expect 0 "$ss" --help
has "$tmp/out" "convert IN OUT"
expect 0 "$ss" convert --help
has "$tmp/out" "--module-proto"
expect 0 "$ss" info --help
has "$tmp/out" "--json"
expect 2 "$ss"
expect 2 "$ss" frobnicate
expect 2 "$ss" convert "$mha"
expect 2 "$ss" convert "$mha" "$tmp/x.pb" --bogus
expect 2 "$ss" convert "$mha" "$tmp/x.unknown"

# conversions, both ways, lossless
expect 0 "$ss" convert "$maxtext" "$tmp/maxtext.pb"
expect 0 "$ss" convert "$tmp/maxtext.pb" "$tmp/maxtext.hlo"
expect 0 "$ss" convert "$tmp/maxtext.hlo" "$tmp/maxtext2.pb"
if cmp -s "$tmp/maxtext.pb" "$tmp/maxtext2.pb"; then ok; else bad "pb -> hlo -> pb is not byte-identical"; fi
expect 0 "$ss" convert "$mha" "$tmp/mha.pb" --hlo-proto
expect 0 "$ss" convert "$mha" "$tmp/mha-plain.hlo" --style plain
if cmp -s "$mha" "$tmp/mha-plain.hlo"; then ok; else bad "mha block does not print back identically"; fi

# info, text and JSON, same facts from text and protobuf
expect 0 "$ss" info "$maxtext"
has "$tmp/out" "instructions    1947"
has "$tmp/out" "computations    87"
expect 0 "$ss" info "$maxtext" --json
cp "$tmp/out" "$tmp/info-text.json"
for key in '"computations": 87' '"instructions": 1947' '"opcodes": {' '"parameter_bytes":' '"dot_flops":' '"distinct_computations":'; do
	has "$tmp/info-text.json" "$key"
done
expect 0 "$ss" info "$tmp/maxtext.pb" --json
sed 's/"format": "proto"/"format": "text"/' "$tmp/out" >"$tmp/info-pb.json"
if cmp -s "$tmp/info-text.json" "$tmp/info-pb.json"; then ok; else bad "info differs between text and protobuf"; fi
expect 0 "$ss" info "$mha" --json
has "$tmp/out" '"dot_flops": 50331648'

# failures: clear message, exit 1, no output file
expect 1 "$ss" info "$tmp/missing.hlo"
has "$tmp/err" "missing.hlo"
expect 1 "$ss" convert "$tmp/missing.hlo" "$tmp/never.pb"
[ -e "$tmp/never.pb" ] && bad "output written for a missing input" || ok
printf 'HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0), bogus={\n}\n' >"$tmp/broken.hlo"
expect 1 "$ss" convert "$tmp/broken.hlo" "$tmp/never.pb"
has "$tmp/err" "broken.hlo:"
[ -e "$tmp/never.pb" ] && bad "output written for a broken input" || ok
head -c 1000 "$tmp/maxtext.pb" >"$tmp/cut.pb"
expect 1 "$ss" convert "$tmp/cut.pb" "$tmp/never.hlo"
has "$tmp/err" "cut.pb"
[ -e "$tmp/never.hlo" ] && bad "output written for a truncated input" || ok
expect 1 "$ss" convert "$mha" "$tmp/no/such/dir/out.pb"
has "$tmp/err" "out.pb"
expect 2 "$ss" convert "$tmp/mha.pb" "$tmp/mha.pb"
has "$tmp/err" "overwrite"
ls -A "$tmp" | grep -q '^\.' && bad "temporary files left behind" || ok

# an already partitioned module (MaxText on 4 GPUs after SPMD partitioning): protobuf holds its
# replica groups, permutes and FFI calls, --verbose names the configuration protobuf leaves out;
# annotate and evaluate refuse it (exit 1, nothing written) unless --force
part="$hlo/partitioned/hlo_llama3_8b_cp_bf16_1x4.hlo"
expect 0 "$ss" convert "$part" "$tmp/part.pb" --verbose
has "$tmp/err" "header attribute 'num_partitions' is module configuration"
expect 0 "$ss" convert "$tmp/part.pb" "$tmp/part.hlo"
has "$tmp/part.hlo" "replica_groups=[1,4]<=[4]"
has "$tmp/part.hlo" "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"
has "$tmp/part.hlo" "api_version=API_VERSION_TYPED_FFI"
expect 1 "$ss" annotate "$part" --mesh data=4 --plan dp -o "$tmp/never.hlo"
has "$tmp/err" "already partitioned"
[ -e "$tmp/never.hlo" ] && bad "output written for a partitioned module" || ok
expect 1 "$ss" evaluate "$part" --hardware h100 --devices 4 --mesh data=4 --plan dp
has "$tmp/err" "--force"
expect 0 "$ss" evaluate "$part" --hardware h100 --devices 4 --mesh data=4 --plan dp --force --quiet

# a shard_map region (a loop of six trips, each a matmul and a permute round the ring) is the
# program's own: evaluated as each device runs it, written back {manual}, read back the same
sm="$(dirname "$0")/data/shard_map_loop.hlo"
expect 0 "$ss" info "$sm"
has "$tmp/out" "shard_map       23 instructions in manual regions"
expect 0 "$ss" evaluate "$sm" --hardware v5p --devices 4 --mesh data=4 --plan dp
has "$tmp/out" "permute        over {data} at sh:"
has "$tmp/out" "3.277e+04 bytes x 6"
expect 0 "$ss" annotate "$sm" --hardware v5p --devices 4 --mesh data=4 --plan dp -o "$tmp/sm.hlo"
has "$tmp/sm.hlo" "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}, sharding={manual}"
has "$tmp/sm.hlo" "d = f32[64,128] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding={manual}"
expect 0 "$ss" evaluate "$tmp/sm.hlo" --hardware v5p --devices 4 --mesh data=4 --plan dp
has "$tmp/out" "3.277e+04 bytes x 6"
expect 0 "$ss" explain "$sm" --mesh data=4 --op d --plan dp
has "$tmp/out" "[0] dot.assign  lhs=- rhs=- contract=-"
has "$tmp/out" "the plan's choice"
has "$tmp/out" "why: a shard_map region runs it as the program wrote it"
# a program whose regions run the stage axis by hand pipelines itself: stage is an ordinary
# axis there, not the evaluator's schedule; a search still leaves stage meshes out
expect 0 "$ss" evaluate "$sm" --hardware v5p --devices 4 --mesh stage=2,data=2 --plan dp
has "$tmp/out" "permute        over {stage,data} at sh:"
grep -q "^pipeline " "$tmp/out" && bad "a self-pipelined program got the evaluator's schedule" || ok
expect 0 "$ss" annotate "$sm" --hardware v5p --devices 4 --stages -o "$tmp/sm-stages.hlo"
has "$tmp/out" "step time"
# a region manual over only some axes (shard_map with auto axes: a loop of eight trips over
# two groups of four, each a matmul and a permute between the groups) is planned over the
# others: the batch split over data inside, the permute moving that piece over pipe; written
# back with XLA's {manual} subgroups and read back the same
au="$(dirname "$0")/data/shard_map_auto.hlo"
expect 0 "$ss" info "$au"
has "$tmp/out" "instructions in regions manual over some axes"
expect 0 "$ss" evaluate "$au" --hardware v5p --devices 8 --mesh pipe=2,data=4 --plan dp
has "$tmp/out" "permute        over {pipe} at sh:"
has "$tmp/out" "3.277e+04 bytes x 8"
has "$tmp/out" "MFU 1.3 %, HFU 1.3 %"
expect 0 "$ss" annotate "$au" --hardware v5p --devices 8 --mesh pipe=2,data=4 --plan dp \
	-o "$tmp/au.hlo"
has "$tmp/au.hlo" "rhs_contracting_dims={0}, sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dims={manual}}"
expect 0 "$ss" evaluate "$tmp/au.hlo" --hardware v5p --devices 8 --mesh pipe=2,data=4 --plan dp
has "$tmp/out" "3.277e+04 bytes x 8"
expect 0 "$ss" explain "$au" --mesh pipe=2,data=4 --op d --plan dp
has "$tmp/out" "more over the axes its shard_map region runs by hand"
grep -qF "lhs=pipe" "$tmp/out" && bad "explain offers the manual axis pipe" || ok
# a constraint inside the region (with_sharding_constraint over an auto axis) is kept: the batch
# that comes in whole is split over data where the program asks, and the permute moves a quarter
sed -e 's/custom_call_target="Sharding", sharding={devices=\[4,1,2\]<=\[2,4\]T(1,0) last_tile_dim_replicate}/custom_call_target="Sharding", sharding={replicated}/' \
	-e 's/^  t = f32\[64,512\] tanh(d)$/  t0 = f32[64,512] tanh(d)\n  t = f32[64,512] custom-call(t0), custom_call_target="Sharding", sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dims={manual}}/' \
	"$au" >"$tmp/au-pin.hlo"
expect 0 "$ss" evaluate "$tmp/au-pin.hlo" --hardware v5p --devices 8 --mesh pipe=2,data=4 --plan dp
has "$tmp/out" "3.277e+04 bytes x 8"
# Shardy's named form of the entry (manual={'pipe'}) reads the same
sed -e "s/sharding={devices=\[1,1,2,4\]<=\[8\] last_tile_dims={manual, replicated}}/sharding={mesh['pipe'=2,'data'=4], [{}, {}], manual={'pipe'}}/" \
	"$au" >"$tmp/au-named.hlo"
has "$tmp/au-named.hlo" "manual={'pipe'}"
expect 0 "$ss" evaluate "$tmp/au-named.hlo" --hardware v5p --devices 8 --mesh pipe=2,data=4 \
	--plan dp
has "$tmp/out" "3.277e+04 bytes x 8"
# the same region on a mesh that names its manual axis stage: the program's own pipeline
expect 0 "$ss" evaluate "$au" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp
has "$tmp/out" "permute        over {stage} at sh:"
has "$tmp/out" "3.277e+04 bytes x 8"
expect 2 "$ss" evaluate "$au" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp \
	--microbatches 2
has "$tmp/err" "the module pipelines itself"
expect 2 "$ss" annotate "$au" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp \
	--pipeline gpipe -o "$tmp/au-gpipe.hlo"
has "$tmp/err" "the module pipelines itself"
[ -e "$tmp/au-gpipe.hlo" ] && bad "annotate wrote a module it refused" || ok
# a scanned module annotated with a GPipe pipeline over stage is written as the pipelined
# program: two loops of micro-batches + stages - 1 trips in regions manual over stage, each
# stage's layers in an inner loop, collective-permutes between stages; it verifies, reads back
# and evaluates the same through text and protobuf
expect 0 "$ss" gen mlp-only --set layers=8 --set batch=4096 --set d_model=256 --set d_ff=1024 \
	--scan -o "$tmp/pp.pb"
expect 0 "$ss" annotate "$tmp/pp.pb" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp \
	--pipeline gpipe --microbatches 4 -o "$tmp/pp-out.hlo"
has "$tmp/out" "pipeline        written as the program runs it: GPipe over the stage axis, 4 micro-batches"
has "$tmp/pp-out.hlo" "source_target_pairs={{0,4},{1,5},{2,6},{3,7}}"
has "$tmp/pp-out.hlo" "source_target_pairs={{4,0},{5,1},{6,2},{7,3}}"
has "$tmp/pp-out.hlo" "last_tile_dims={manual"
expect 0 "$ss" info "$tmp/pp-out.hlo"
has "$tmp/out" "instructions in regions manual over some axes"
expect 0 "$ss" convert "$tmp/pp-out.hlo" "$tmp/pp-out.pb"
expect 0 "$ss" evaluate "$tmp/pp-out.hlo" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp
grep "^step time" "$tmp/out" >"$tmp/pp-text.t"
expect 0 "$ss" evaluate "$tmp/pp-out.pb" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp
grep "^step time" "$tmp/out" >"$tmp/pp-proto.t"
cmp -s "$tmp/pp-text.t" "$tmp/pp-proto.t" && ok || bad "the pipelined program: text and protobuf differ"
grep -q "^pipeline " "$tmp/out" && bad "the pipelined program got the evaluator's schedule too" || ok
# without --microbatches, the count the evaluator picks for the schedule
expect 0 "$ss" evaluate "$tmp/pp.pb" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp \
	--pipeline gpipe
m=$(sed -n 's/^pipeline        2 stages of 4 layers, gpipe, \([0-9]*\) micro-batches.*/\1/p' "$tmp/out")
expect 0 "$ss" annotate "$tmp/pp.pb" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp \
	--pipeline gpipe -o "$tmp/pp-auto.hlo"
has "$tmp/out" "GPipe over the stage axis, ${m:-?} micro-batches"
# what the rewrite does not write is said: another schedule, an unrolled module
expect 0 "$ss" annotate "$tmp/pp.pb" --hardware v5p --devices 8 --mesh stage=2,data=4 --plan dp \
	-o "$tmp/pp-1f1b.hlo"
has "$tmp/out" "pipeline        not written (the program is written for --pipeline gpipe"
expect 0 "$ss" gen mlp-only --set layers=8 --set batch=4096 --set d_model=256 --set d_ff=1024 \
	-o "$tmp/pp-unrolled.pb"
expect 0 "$ss" annotate "$tmp/pp-unrolled.pb" --hardware v5p --devices 8 --mesh stage=2,data=4 \
	--plan dp --pipeline gpipe --microbatches 4 -o "$tmp/pp-unrolled-out.hlo"
has "$tmp/out" "pipeline        not written (pipeline: main"
# a pipeline's options on a stage mesh without the cluster it runs on: refused, nothing written
expect 2 "$ss" annotate "$tmp/pp.pb" --mesh stage=2,data=4 --plan dp --pipeline gpipe \
	--microbatches 4 -o "$tmp/pp-nocluster.hlo"
has "$tmp/err" "a pipeline over the mesh's stage axis runs on a cluster"
[ -e "$tmp/pp-nocluster.hlo" ] && bad "annotate wrote a pipeline it refused" || ok
# regions manual over another axis cannot be split by the evaluator's stages: refused
expect 1 "$ss" evaluate "$au" --hardware v5p --devices 8 --mesh pipe=2,stage=4 --plan dp
has "$tmp/err" "none of them manual over the stage axis"
# the manual subgroup must be whole axes of the mesh: named when it is not
expect 2 "$ss" evaluate "$au" --hardware v5p --devices 8 --mesh data=4,pipe=2 --plan dp
has "$tmp/err" "m0: its shard_map region's manual axes are not axes of the mesh"

# jit's in and out shardings are kept as given and said so; --ignore-hints drops them
printf '%s\n' 'HloModule jit_f' '' 'ENTRY main {' \
	'  p0 = f32[8,16] parameter(0), sharding={devices=[4,1]<=[4]}' \
	'  p1 = f32[16,32] parameter(1), sharding={devices=[1,4]<=[4]}' \
	'  d = f32[8,32] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}' \
	'  ROOT n = f32[8,32] negate(d), sharding={devices=[4,1]<=[4]}' '}' >"$tmp/jit.hlo"
expect 0 "$ss" annotate "$tmp/jit.hlo" --mesh data=4 --plan dp -o "$tmp/jit-out.hlo" --quiet
has "$tmp/out" "constraints     3 of the module's kept"
has "$tmp/jit-out.hlo" "p1 = f32[16,32] parameter(1), sharding={devices=[1,4]<=[4]}"
expect 0 "$ss" annotate "$tmp/jit.hlo" --mesh data=4 --plan dp -o "$tmp/jit-out.hlo" --quiet \
	--ignore-hints
has "$tmp/out" "ignored (--ignore-hints)"
has "$tmp/jit-out.hlo" "p1 = f32[16,32] parameter(1), sharding={replicated}"

# a custom call no strategy knows is replicated, named with its target in a warning
printf '%s\n' 'HloModule m' '' 'ENTRY e {' '  p = f32[8,16] parameter(0)' \
	'  k = f32[8,16] custom-call(p), custom_call_target="my_kernel"' \
	'  ROOT n = f32[8,16] negate(k)' '}' >"$tmp/cc.hlo"
expect 0 "$ss" annotate "$tmp/cc.hlo" --mesh data=4 --plan dp -o "$tmp/cc-out.hlo"
has "$tmp/err" "k (custom call 'my_kernel'): no sharding rule for this target; replicated"

# gen: help, presets, usage errors (exit 2) and rejected values (exit 1)
presets="llama2-13b llama3-8b llama3-70b llama3-405b gpt3-175b mixtral-8x7b mlp-only"
expect 0 "$ss" gen --help
has "$tmp/out" "presets:"
has "$tmp/out" "--set KEY=VALUE"
has "$tmp/out" "capacity_factor"
for p in $presets; do has "$tmp/out" "$p"; done
expect 0 "$ss" gen --list
for p in $presets; do if grep -qx -- "$p" "$tmp/out"; then ok; else bad "gen --list lacks $p"; fi; done
[ "$(wc -l <"$tmp/out")" -eq 8 ] && ok || bad "gen --list prints $(wc -l <"$tmp/out") lines, want 8"
expect 1 "$ss" gen no-such-model
has "$tmp/err" "no-such-model"
expect 2 "$ss" gen
expect 2 "$ss" gen llama3-8b llama3-70b
expect 2 "$ss" gen llama3-8b --bogus
expect 2 "$ss" gen llama3-8b --set
expect 2 "$ss" gen llama3-8b --set layers
expect 2 "$ss" gen llama3-8b --format yaml -o "$tmp/never.pb"
expect 2 "$ss" gen llama3-8b -o "$tmp/never.unknown"
expect 1 "$ss" gen llama3-8b --set bogus=1
has "$tmp/err" "bogus"
expect 1 "$ss" gen llama3-8b --set layers=many
has "$tmp/err" "layers"
printf '{"preset": "llama3-8b", "layers": }\n' >"$tmp/broken.json"
expect 1 "$ss" gen --config "$tmp/broken.json" -o "$tmp/never.pb"
has "$tmp/err" "broken.json"
expect 1 "$ss" gen --config "$tmp/missing.json"
has "$tmp/err" "missing.json"
printf '{"layers": 2}\n' >"$tmp/nopreset.json"
expect 1 "$ss" gen --config "$tmp/nopreset.json"
has "$tmp/err" "nopreset.json: no preset named"
printf '{"preset": "llama3-8b", "wings": 2}\n' >"$tmp/badkey.json"
expect 1 "$ss" gen --config "$tmp/badkey.json"
has "$tmp/err" "wings"
[ -e "$tmp/never.pb" ] && bad "gen wrote output after an error" || ok

# gen: small models agree with info on what they hold, in both formats, unrolled and scanned
# jnum FILE KEY: the top-level number KEY of a JSON object printed with two-space indents
jnum() { sed -n "s/^  \"$2\": \([^,]*\),\{0,1\}\$/\1/p" "$1"; }
# same A B WHAT: numbers A and B agree to 1e-9 (relative)
same() {
	if [ -n "$1" ] && awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = a < 0 ? -a : a; exit !(d <= 1e-9 * m) }'; then
		ok
	else
		bad "$3: gen says '$1', info says '$2'"
	fi
}
# gen_vs_info OUT GEN-ARGS...: gen -o OUT --json, then info OUT --json, and compares them
gen_vs_info() {
	local out=$1
	shift
	expect 0 "$ss" gen "$@" -o "$out" --json
	cp "$tmp/out" "$tmp/gen.json"
	[ -s "$out" ] && ok || bad "gen $* did not write $out"
	same "$(jnum "$tmp/gen.json" output_bytes)" "$(stat -c %s "$out" 2>/dev/null)" "$out: output_bytes"
	expect 0 "$ss" info "$out" --json
	same "$(jnum "$tmp/gen.json" instructions)" "$(jnum "$tmp/out" instructions)" "$out: instructions"
	same "$(jnum "$tmp/gen.json" computations)" "$(jnum "$tmp/out" computations)" "$out: computations"
	same "$(jnum "$tmp/gen.json" flops)" "$(jnum "$tmp/out" dot_flops)" "$out: flops"
	[ "$(jnum "$tmp/gen.json" params)" -gt 0 ] 2>/dev/null && ok || bad "$out: no params in gen --json"
}
small=(--set layers=2 --set seq=128 --set batch=2 --set vocab=1000)
gen_vs_info "$tmp/small.pb" llama3-8b "${small[@]}"
has "$tmp/gen.json" '"scan": false'
has "$tmp/gen.json" '"tokens": 256'
has "$tmp/gen.json" '"layers": 2'
has "$tmp/gen.json" '"d_model": 4096'
cp "$tmp/gen.json" "$tmp/small-pb.json"
gen_vs_info "$tmp/small.hlo" llama3-8b "${small[@]}"
has "$tmp/gen.json" '"output_format": "text"'
same "$(jnum "$tmp/gen.json" instructions)" "$(jnum "$tmp/small-pb.json" instructions)" "small.hlo vs small.pb: instructions"
gen_vs_info "$tmp/small-scan.pb" llama3-8b "${small[@]}" --scan
has "$tmp/gen.json" '"scan": true'
same "$(jnum "$tmp/gen.json" flops)" "$(jnum "$tmp/small-pb.json" flops)" "scanned vs unrolled: flops"
gen_vs_info "$tmp/small-scan.hlo" llama3-8b "${small[@]}" --set scan=true --format text
gen_vs_info "$tmp/mlp.pb" mlp-only --set layers=2 --set d_model=64 --set d_ff=256 --set batch=32
has "$tmp/gen.json" '"preset": "mlp-only"'
has "$tmp/gen.json" '"tokens": 32'
printf '{"preset": "llama3-8b", "layers": 2, "seq": 128, "batch": 2, "vocab": 1000}\n' >"$tmp/small.json"
gen_vs_info "$tmp/small-config.pb" --config "$tmp/small.json"
has "$tmp/gen.json" '"preset": "llama3-8b"'
same "$(jnum "$tmp/gen.json" instructions)" "$(jnum "$tmp/small-pb.json" instructions)" "--config vs --set: instructions"
expect 0 "$ss" gen --config "$tmp/small.json" --set layers=3 --json
has "$tmp/out" '"layers": 3'
expect 0 "$ss" gen llama3-8b "${small[@]}"
has "$tmp/out" "dry run"
has "$tmp/out" "instructions"
expect 0 "$ss" gen llama3-8b "${small[@]}" -o "$tmp/summary.pb"
has "$tmp/out" "summary.pb"
expect 1 "$ss" gen llama3-8b "${small[@]}" -o "$tmp/no/such/dir/x.pb"
has "$tmp/err" "x.pb"
[ -e "$tmp/no/such/dir/x.pb" ] && bad "gen left output in a missing directory" || ok
ls -A "$tmp" | grep -q '^\.' && bad "gen left temporary files behind" || ok

# hardware: the catalog as a table, one entry in full, JSON that loads back, unknown names
expect 0 "$ss" hardware --help
has "$tmp/out" "--hardware-file"
expect 0 "$ss" --help
has "$tmp/out" "hardware [NAME]"
expect 0 "$ss" hardware
for name in v4p v5e v5p v6e 7x a100 h100 h200 b200 gb200-nvl72; do has "$tmp/out" "$name"; done
[ "$(grep -c ' [TG]PU ' "$tmp/out")" = 10 ] && ok || bad "hardware table lacks rows: $(cat "$tmp/out")"
expect 0 "$ss" hardware TPU-V5P
has "$tmp/out" "102005473280 bytes (95.00 GiB"
has "$tmp/out" "largest slice   16x16x24 (6144 chips)"
has "$tmp/out" "pod             16x20x28 (8960 chips)"
has "$tmp/out" "peak fp8        4.59e+14 FLOP/s (459 TFLOP/s), the bf16 rate"
expect 0 "$ss" hardware gb200 --json
for key in '"name": "gb200-nvl72"' '"gpu": true' '"flops_bf16": 2.5e15' '"hbm_bytes": 186000000000' \
	'"node_size": 72' '"gpu_egress":' '"node_egress":' '"dcn_bw":'; do
	has "$tmp/out" "$key"
done
# the JSON is a hardware file: renamed, it loads back as an equal entry
expect 0 "$ss" hardware v5p --json
sed 's/"name": "v5p"/"name": "v5p-copy"/' "$tmp/out" >"$tmp/hw-copy.json"
expect 0 "$ss" hardware v5p-copy --hardware-file "$tmp/hw-copy.json"
sed 's/v5p-copy/v5p/' "$tmp/out" >"$tmp/hw-copy.txt"
expect 0 "$ss" hardware v5p
if cmp -s "$tmp/out" "$tmp/hw-copy.txt"; then ok; else bad "hardware --json does not load back as the same entry"; fi
printf '{"hardware": [{"name": "v5p", "hbm_bytes": 1e11}]}\n' >"$tmp/hw-over.json"
expect 0 "$ss" hardware v5p --hardware-file "$tmp/hw-over.json" --json
has "$tmp/out" '"hbm_bytes": 100000000000'
expect 1 "$ss" hardware v9
has "$tmp/err" "unknown hardware 'v9' (known: v4p, v5e, v5p, v6e, 7x, a100, h100, h200, b200, gb200-nvl72)"
[ -s "$tmp/out" ] && bad "hardware printed output for an unknown name" || ok
expect 1 "$ss" hardware --hardware-file "$tmp/missing.json"
has "$tmp/err" "missing.json"
expect 2 "$ss" hardware v5p h100
expect 2 "$ss" hardware --bogus

# --devices: what the refusal says is what is taken
expect 2 "$ss" evaluate "$mha" --hardware v5p --devices 8192 --mesh data=8192 --plan dp
has "$tmp/err" "v5p has no standard slice of 8192 chips: standard slices are"
has "$tmp/err" "within 16x16x24"

# every preset at its published size, unrolled (protobuf) and scanned (text), agrees with info;
# under sanitizers at its published width with 3 layers (the normal build runs every layer: up
# to 126 unrolled)
sizes=()
if [ "$sanitized" = 1 ]; then sizes=(--set layers=3); fi
for preset in $("$ss" gen --list); do
	gen_vs_info "$tmp/$preset.pb" "$preset" "${sizes[@]}"
	rm -f "$tmp/$preset.pb"
	gen_vs_info "$tmp/$preset-scan.hlo" "$preset" --scan "${sizes[@]}"
	rm -f "$tmp/$preset-scan.hlo"
done

# a loop of 10^18 trips is costed at once, not trip by trip (with its trace too): in bounded
# time, its step time a billion times that of 10^9 trips
cat >"$tmp/huge-loop.hlo" <<'EOF'
HloModule huge_loop
cond {
  p = (s64[], f32[64,64]) parameter(0)
  i = s64[] get-tuple-element(p), index=0
  n = s64[] constant(1000000000000000000)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  bp = (s64[], f32[64,64]) parameter(0)
  bi = s64[] get-tuple-element(bp), index=0
  x = f32[64,64] get-tuple-element(bp), index=1
  one = s64[] constant(1)
  j = s64[] add(bi, one)
  y = f32[64,64] dot(x, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT bt = (s64[], f32[64,64]) tuple(j, y)
}
ENTRY e {
  a = f32[64,64] parameter(0)
  z = s64[] constant(0)
  et = (s64[], f32[64,64]) tuple(z, a)
  w = (s64[], f32[64,64]) while(et), condition=cond, body=body
  ROOT r = f32[64,64] get-tuple-element(w), index=1
}
EOF
sed 's/1000000000000000000/1000000000/' "$tmp/huge-loop.hlo" >"$tmp/billion-loop.hlo"
expect 0 timeout 60 "$ss" evaluate "$tmp/huge-loop.hlo" --hardware v5p --devices 8 --mesh data=8 \
	--plan dp --json --trace "$tmp/huge-loop.json"
huge=$(sed -n 's/^  "step_time_s": \([^,]*\),$/\1/p' "$tmp/out")
expect 0 timeout 60 "$ss" evaluate "$tmp/billion-loop.hlo" --hardware v5p --devices 8 \
	--mesh data=8 --plan dp --json
billion=$(sed -n 's/^  "step_time_s": \([^,]*\),$/\1/p' "$tmp/out")
awk -v h="$huge" -v b="$billion" 'BEGIN { r = h / b / 1e9; exit !(r > 0.999 && r < 1.001) }' &&
	ok || bad "a 10^18-trip loop: $huge s, against $billion s for 10^9 trips"

# 5000 nested calls: the work per computation is linear (once 14 s, quadratic in the calls)
awk 'BEGIN {
	n = 5000
	print "HloModule deep\n"
	printf "c%d {\n  p%d = f32[4] parameter(0)\n  ROOT r%d = f32[4] negate(p%d)\n}\n\n", n, n, n, n
	for (k = n - 1; k >= 0; k--)
		printf "c%d {\n  p%d = f32[4] parameter(0)\n  ROOT r%d = f32[4] call(p%d), to_apply=c%d\n}\n\n", k, k, k, k, k + 1
	print "ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT o = f32[4] call(a), to_apply=c0\n}"
}' >"$tmp/deep-calls.hlo"
expect 0 timeout 120 "$ss" annotate "$tmp/deep-calls.hlo" --hardware v5p --devices 8 -o "$tmp/deep-out.hlo"
has "$tmp/out" "step time"

# one value read by 10^6 instructions (10^5 under sanitizers): the users of each instruction
# listed in linear time (once quadratic: 10^6 took 204 s with --plan, now 15 s and 2.0 GB)
if [ "$sanitized" = 1 ]; then n=100000; else n=1000000; fi
awk -v n="$n" 'BEGIN {
	print "HloModule wide\n\nENTRY e {\n  p = f32[128,256] parameter(0)\n  a0 = f32[128,256] add(p, p)"
	for (k = 1; k < n; k++)
		printf "  a%d = f32[128,256] add(a%d, p)\n", k, k - 1
	printf "  ROOT r = f32[128,256] add(a%d, p)\n}\n", n - 1
}' >"$tmp/wide.hlo"
expect 0 timeout 90 "$ss" annotate "$tmp/wide.hlo" --mesh fsdp=8 --plan fsdp -o "$tmp/wide-out.pb"
has "$tmp/out" "annotated $((n + 2)) instructions"

# input from pipes read to the end (a process substitution, standard input); a FIFO with no
# writer reads as empty rather than blocking; an escaped NUL in metadata is refused (it would
# cut the string), not written back shortened
"$ss" gen mlp-only --set layers=1 -o "$tmp/pipe.pb" >/dev/null
expect 0 "$ss" info <(cat "$tmp/pipe.pb")
has "$tmp/out" "module          mlp-only"
expect 0 sh -c "cat '$tmp/pipe.pb' | '$ss' info /dev/stdin"
has "$tmp/out" "module          mlp-only"
rm -f "$tmp/fifo" && mkfifo "$tmp/fifo"
expect 1 timeout 20 "$ss" info "$tmp/fifo"
has "$tmp/err" "$tmp/fifo"
printf 'HloModule m\nENTRY e {\n  ROOT x = f32[8] parameter(0), metadata={op_name="x\\0yz"}\n}\n' >"$tmp/nul.hlo"
expect 1 "$ss" convert "$tmp/nul.hlo" "$tmp/nul-out.hlo"
has "$tmp/err" "NUL byte"
[ ! -e "$tmp/nul-out.hlo" ] && ok || bad "a string with a NUL was written back"

# a hardware or plan file that is not JSON is refused without echoing its bytes (a pass
# option hardware-file=/etc/passwd showed the file's first word)
printf 'secret_token_42:x:0:0\n' >"$tmp/not-json"
"$ss" annotate "$tmp/pipe.pb" --hardware-file "$tmp/not-json" --hardware v5p --devices 8 \
	-o "$tmp/never.pb" >"$tmp/out" 2>"$tmp/err" && bad "a hardware file that is no JSON was taken" || ok
has "$tmp/err" "not hardware JSON"
! grep -q secret_token "$tmp/err" && ok || bad "the hardware file's bytes echoed: $(cat "$tmp/err")"
cp "$tmp/not-json" "$tmp/not-json.json"
"$ss" annotate "$tmp/pipe.pb" --plan "$tmp/not-json.json" --mesh fsdp=8 -o "$tmp/never.pb" \
	>"$tmp/out" 2>"$tmp/err" && bad "a plan file that is no JSON was taken" || ok
! grep -q secret_token "$tmp/err" && ok || bad "the plan file's bytes echoed: $(cat "$tmp/err")"

finish
