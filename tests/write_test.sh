#!/usr/bin/env bash
# Output files as CI (root) meets them, for `shardsearch convert` and tools/pipeline alike: a
# device stays a device, a full device fails with a message naming it, and a write killed
# midway leaves no output and no temporary behind.
# usage: write_test.sh SHARDSEARCH PIPELINE LIBSHARDSEARCH TMP_DIR
set -u
ss=$1 pipeline=$2 lib=$3 tmp=$4
rm -rf "$tmp" && mkdir -p "$tmp"
. "$(dirname "$0")/cli_lib.sh"

pass_options='hardware=v5p;topology=2x2x1'
limit_kib=64                      # ulimit -f for the interrupted writes (bash counts KiB)
sigxfsz_exit=$((128 + $(kill -l XFSZ)))
null_dev=1:3 full_dev=1:7         # major:minor of /dev/null and /dev/full

say() { echo "-- $*"; }

# write_with TOOL OUT: writes the test module to OUT with TOOL (convert or pipeline)
write_with() {
	case $1 in
	convert) "$ss" convert "$tmp/in.pb" "$2" --to text ;;
	pipeline) "$pipeline" --pass "$lib:$pass_options" "$tmp/in.pb" -o "$2" ;;
	esac
}

# is_device PATH MAJOR:MINOR: PATH is still that character device
is_device() {
	if [ -c "$1" ] && [ "$(stat -c '%t:%T' "$1")" = "$(printf '%x:%x' "${2%:*}" "${2#*:}")" ]; then
		ok
	else
		bad "$1 is no longer the character device $2: $(ls -ld "$1" 2>&1)"
	fi
}

# only DIR NAME...: DIR holds exactly NAME... (no output left, no .NAME.XXXXXX temporary)
only() {
	local dir=$1 got want
	shift
	got=$(cd "$dir" && ls -A | sort | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
	if [ "$got" = "$want" ]; then ok; else bad "$dir holds '$got', want '$want'"; fi
}

# killed_midway TOOL OUT: TOOL writing OUT dies of SIGXFSZ once past limit_kib (no core file)
killed_midway() {
	local got
	(ulimit -c 0 && ulimit -f "$limit_kib" && write_with "$1" "$2") >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$sigxfsz_exit" ]; then ok; else
		bad "$1: exited $got, want $sigxfsz_exit (SIGXFSZ): $(head -c 300 "$tmp/err")"
	fi
}

# private_device DIR NAME MAJOR:MINOR: makes DIR/NAME that device (root only); prints its path,
# or nothing (and a note, when root) when it cannot be made
private_device() {
	[ "$(id -u)" -eq 0 ] || return 0
	if mknod "$1/$2" c "${3%:*}" "${3#*:}" 2>"$tmp/mknod-err"; then
		echo "$1/$2"
	else
		echo "   note: mknod $1/$2: $(cat "$tmp/mknod-err"); this check and the /dev one skipped" >&2
	fi
}

say "gen: a 2-layer llama3-8b (protobuf), the input of every check"
expect 0 "$ss" gen llama3-8b --set layers=2 --set batch=16 --set seq=1024 -o "$tmp/in.pb"
[ "$(id -u)" -eq 0 ] ||
	echo "   note: not root: no private device nodes; /dev/null and /dev/full are used directly"

for tool in convert pipeline; do
	dir="$tmp/$tool"
	out=out.hlo
	[ "$tool" = pipeline ] && out=out.pb
	mkdir -p "$dir/dev" "$dir/full" "$dir/cut" "$dir/cut-old" "$dir/whole"

	say "$tool: writes a whole output (larger than the $limit_kib KiB limit used below)"
	expect 0 write_with "$tool" "$dir/whole/$out"
	size=$(stat -c %s "$dir/whole/$out" 2>/dev/null || echo 0)
	if [ "$size" -gt $((limit_kib * 1024)) ]; then ok; else
		bad "$tool: output of $size bytes is too small to be cut"
	fi
	only "$dir/whole" "$out"

	dev=$(private_device "$dir/dev" null "$null_dev")
	before=$fail
	if [ -n "$dev" ]; then
		say "$tool: a private character device node (1:3) as OUT stays that device"
		expect 0 write_with "$tool" "$dev"
		is_device "$dev" "$null_dev"
		only "$dir/dev" null
	fi
	# as root, the real device only once a private node passed: a broken writer replaces it
	if [ "$(id -u)" -ne 0 ] || { [ -n "$dev" ] && [ "$fail" -eq "$before" ]; }; then
		say "$tool: /dev/null as OUT stays a character device"
		expect 0 write_with "$tool" /dev/null
		is_device /dev/null "$null_dev"
	fi

	dev=$(private_device "$dir/full" full "$full_dev")
	before=$fail
	if [ -n "$dev" ]; then
		say "$tool: a private full device node (1:7) as OUT fails (exit 1) with a message naming it"
		expect 1 write_with "$tool" "$dev"
		has "$tmp/err" "$dev: write failed: No space left on device"
		is_device "$dev" "$full_dev"
		only "$dir/full" full
	fi
	if [ "$(id -u)" -ne 0 ] || { [ -n "$dev" ] && [ "$fail" -eq "$before" ]; }; then
		say "$tool: /dev/full as OUT fails (exit 1) with a message naming /dev/full"
		expect 1 write_with "$tool" /dev/full
		has "$tmp/err" "/dev/full: write failed: No space left on device"
		is_device /dev/full "$full_dev"
	fi

	say "$tool: killed by SIGXFSZ midway through (ulimit -f $limit_kib): no OUT, no temporary"
	killed_midway "$tool" "$dir/cut/$out"
	only "$dir/cut"

	say "$tool: killed the same way over an existing OUT: the old OUT is intact, no temporary"
	echo "old output" >"$dir/cut-old/$out"
	killed_midway "$tool" "$dir/cut-old/$out"
	if [ "$(cat "$dir/cut-old/$out")" = "old output" ]; then ok; else
		bad "$tool: the old OUT was changed"
	fi
	only "$dir/cut-old" "$out"
done
finish
