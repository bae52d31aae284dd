# Shared checks of the command-line tests (sourced): counters, exit codes, file contents.
# Needs $tmp (a scratch folder). Each check counts one pass or prints FAIL and counts a failure.
pass=0 fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect CODE CMD...: runs CMD (stdout to $tmp/out, stderr to $tmp/err), checks its exit code
expect() {
	local want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, want $want: $(head -c 300 "$tmp/err")"; fi
}
# has FILE TEXT: FILE contains TEXT
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2': $(head -c 300 "$1")"; fi; }
# finish: prints the counts; the exit status of the test
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
