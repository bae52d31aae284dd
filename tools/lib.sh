# Shared steps of tools/demo, tools/test and tools/bench: install what is missing, configure, build.
# Sourced, not run.

SHS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHS_DEBS="cmake make gcc pkg-config protobuf-c-compiler libprotobuf-c-dev libxxhash-dev libcunit1-dev libjansson-dev"

# Installs the Debian packages that are not installed yet (and nothing else).
shs_install_deps() {
	local missing=()
	for p in $SHS_DEBS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# shs_build DIR [cmake options...]: configures (once) and builds the project in $SHS_ROOT/DIR.
shs_build() {
	local dir="$SHS_ROOT/$1"
	shift
	cmake -S "$SHS_ROOT" -B "$dir" "$@" >/dev/null
	cmake --build "$dir" -j"$(nproc)"
}

# The real HLO modules shared with the project (read from there, never copied).
SHS_HLO=$(cd "$SHS_ROOT/../shared/hlo" 2>/dev/null && pwd || echo "$SHS_ROOT/../shared/hlo")
SHS_MAXTEXT="$SHS_HLO/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"
