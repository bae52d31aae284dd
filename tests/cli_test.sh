#!/usr/bin/env bash
# Tests of the shardsearch command: conversions, info, exit codes, and no output on failure.
# usage: cli_test.sh SHARDSEARCH HLO_DIR TMP_DIR
set -u
ss=$1 hlo=$2 tmp=$3
rm -rf "$tmp" && mkdir -p "$tmp"
maxtext="$hlo/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"
mha="$hlo/mha_block_1x12x128x64_bf16.hlo"
pass=0 fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect CODE CMD...: runs CMD, checks its exit code
expect() {
	local want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, want $want: $(head -c 300 "$tmp/err")"; fi
}
# has FILE TEXT: FILE contains TEXT
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2': $(head -c 300 "$1")"; fi; }

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
ls "$tmp" | grep -q '\.tmp\.' && bad "temporary files left behind" || ok

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
