#!/usr/bin/env bash
# Hostile plugins, in the command and in the pass: a crash, an exit(), a hang and an exit() as
# it is loaded each name the plugin and fail, in bounded time, leaving no output; a flood of
# candidates stays in bounded memory; SHARDSEARCH_PLUGIN_PATH takes only absolute folders
# others cannot write.
# usage: hostile_test.sh SHARDSEARCH PIPELINE LIBSHARDSEARCH HOSTILE_DIR TMP_DIR SANITIZED(0|1)
set -u
ss=$1 pipeline=$2 lib=$3 hostile=$4 tmp=$5 sanitized=$6
rm -rf "$tmp" && mkdir -p "$tmp"
. "$(dirname "$0")/cli_lib.sh"

# exits NAME WANT: the last command failed (WANT: a status, or "signal") and named the plugin
fails_naming() {
	local name=$1 want=$2 got=$3
	if [ "$want" = signal ]; then
		# a crash: the signal (128 + n from the shell), or the sanitizer's report's exit 1
		if [ "$got" -gt 128 ] || { [ "$sanitized" = 1 ] && [ "$got" -ne 0 ]; }; then ok
		else bad "$name: exited $got, want a crash"; fi
	elif [ "$got" -eq "$want" ]; then ok; else bad "$name: exited $got, want $want"; fi
	has "$tmp/err" "plugin $hostile/$name.so"
}

expect 0 "$ss" gen mlp-only --set layers=1 --set d_model=256 --set d_ff=1024 --set batch=64 -o "$tmp/m.pb"

# the command: each misdeed named, the run failed, no output written
for name in crashes exits hangs exits_on_load; do
	timeout 120 "$ss" annotate "$tmp/m.pb" --hardware v5p --devices 8 --time-budget 2 \
		--plugin "$hostile/$name.so" -o "$tmp/$name.pb" >"$tmp/out" 2>"$tmp/err"
	got=$?
	case $name in
	crashes) fails_naming "$name" signal "$got"; has "$tmp/err" "in its generate of"
		has "$tmp/err" "crashed (SIGSEGV)" ;;
	exits) fails_naming "$name" 70 "$got"; has "$tmp/err" "called exit(); the run did not finish" ;;
	hangs) fails_naming "$name" 70 "$got"; has "$tmp/err" "past the time budget of 2 s" ;;
	exits_on_load) fails_naming "$name" 70 "$got"; has "$tmp/err" "in its constructors" ;;
	esac
	if [ -e "$tmp/$name.pb" ] || ls "$tmp"/.$name.pb.* >/dev/null 2>&1; then bad "$name: output left behind"; else ok; fi
done

# the pass (tools/pipeline loading libshardsearch.so): the same, named
for name in crashes exits hangs; do
	timeout 120 "$pipeline" --pass "$lib:hardware=v5p;devices=8;time-budget=2;plugin=$hostile/$name.so" \
		"$tmp/m.pb" -o "$tmp/pass-$name.pb" >"$tmp/out" 2>"$tmp/err"
	got=$?
	case $name in
	crashes) fails_naming "$name" signal "$got" ;;
	*) fails_naming "$name" 70 "$got" ;;
	esac
	if [ -e "$tmp/pass-$name.pb" ]; then bad "pass $name: output left behind"; else ok; fi
done

# a plugin offering 5000 candidates for every dot: the same plan as without it, memory bounded
# (64 chips; 8 under sanitizers, where 64 take 100 s)
if [ "$sanitized" = 1 ]; then chips=8; else chips=64; fi
expect 0 "$ss" gen llama3-8b --set layers=2 --set d_model=512 --set d_ff=1024 --set heads=8 \
	--set kv_heads=2 --set head_dim=64 --set vocab=1024 --set seq=128 --set batch=16 -o "$tmp/l.pb"
expect 0 "$ss" annotate "$tmp/l.pb" --hardware v5p --devices $chips --json -o "$tmp/plain.pb"
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$tmp/out" >"$tmp/plain.t"
expect 0 /usr/bin/time -f "%M" -o "$tmp/flood.rss" "$ss" annotate "$tmp/l.pb" --hardware v5p \
	--devices $chips --plugin "$hostile/floods.so" --json -o "$tmp/flood.pb"
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s"])' "$tmp/out" >"$tmp/flood.t"
has "$tmp/err" "floods.so: strategy hostile.idle refused: more than 256 strategies"
# its init checks that exactly the strategies past the limit were refused
! grep -q "floods.so: init failed" "$tmp/err" && ok || bad "flood: $(grep 'init failed' "$tmp/err")"
if cmp -s "$tmp/plain.t" "$tmp/flood.t"; then ok; else bad "flood changed the step time: $(cat "$tmp/plain.t") vs $(cat "$tmp/flood.t")"; fi
# 1 GB before pruning and compaction; about 50 MB without the plugin
if [ "$sanitized" = 1 ] || [ "$(tail -1 "$tmp/flood.rss")" -lt 300000 ]; then ok; else bad "flood: $(tail -1 "$tmp/flood.rss") KB"; fi

# SHARDSEARCH_PLUGIN_PATH: a relative folder and one others can write are skipped with a warning
mkdir -p "$tmp/open" "$tmp/rel"
chmod 777 "$tmp/open"
(cd "$tmp" && SHARDSEARCH_PLUGIN_PATH="rel:$tmp/open" "$ss" annotate m.pb --hardware v5p \
	--devices 8 -o env.pb >out 2>err)
if [ $? -eq 0 ]; then ok; else bad "SHARDSEARCH_PLUGIN_PATH: run failed: $(head -c 300 "$tmp/err")"; fi
has "$tmp/err" "SHARDSEARCH_PLUGIN_PATH: rel: not an absolute path; skipped"
has "$tmp/err" "SHARDSEARCH_PLUGIN_PATH: $tmp/open: writable by others; skipped"
finish
