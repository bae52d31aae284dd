#!/usr/bin/env bash
# Tests of annotate and explain: named plans and plan files, meshes, hints, plugins, exit codes.
# usage: cli_plan_test.sh SHARDSEARCH HLO_DIR TMP_DIR SOURCE_DIR TEST_PLUGIN_DIR SANITIZED(0|1)
set -u
ss=$1 hlo=$2 tmp=$3 src=$4 test_plugins=$5 sanitized=$6
rm -rf "$tmp" && mkdir -p "$tmp"
maxtext="$hlo/nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"
. "$(dirname "$0")/cli_lib.sh"

# every instruction line of a generated module's computations that run (all but its reducer
# regions, region_add / region_max) has a sharding (test_propagate checks MaxText's by structure)
all_sharded() {
	local missing
	missing=$(awk '/^%?region_(add|max)/ { skip = 1 }
		/^(ENTRY|%?layers|%?main)/ { skip = 0 }
		/^}/ { next }
		!skip && / = / && !/sharding=/ { n++ } END { print n + 0 }' "$1")
	[ "$missing" = 0 ] && ok || bad "$1: $missing instructions without a sharding"
}

# usage
expect 0 "$ss" annotate --help
has "$tmp/out" "--plan NAME|FILE"
expect 0 "$ss" explain --help
has "$tmp/out" "--op NAME"
expect 2 "$ss" annotate
expect 2 "$ss" annotate x.hlo --mesh fsdp=4 -o y.hlo
expect 2 "$ss" annotate x.hlo --mesh fsdp=4 --plan fsdp
expect 2 "$ss" annotate x.hlo --bogus
expect 2 "$ss" explain x.hlo --mesh fsdp=4

# a small generated step, every named plan on 1-, 2- and 3-axis meshes
small=(--set layers=2 --set seq=64 --set batch=8 --set vocab=512)
expect 0 "$ss" gen llama3-8b "${small[@]}" -o "$tmp/l8.hlo"
expect 0 "$ss" gen llama3-8b "${small[@]}" --scan -o "$tmp/l8s.pb"
for m in "dp data=8" "fsdp fsdp=8" "tp data=2,tensor=4" "fsdp+tp fsdp=4,tensor=2" "fsdp+tp data=2,fsdp=2,tensor=2"; do
	set -- $m
	expect 0 "$ss" annotate "$tmp/l8.hlo" --mesh "$2" --plan "$1" -o "$tmp/l8-$1.hlo"
	has "$tmp/out" "annotated"
	all_sharded "$tmp/l8-$1.hlo"
	expect 0 "$ss" info "$tmp/l8-$1.hlo"
	expect 0 "$ss" annotate "$tmp/l8s.pb" --mesh "$2" --plan "$1" -o "$tmp/l8s-$1.hlo"
	all_sharded "$tmp/l8s-$1.hlo"
done
has "$tmp/l8-fsdp.hlo" "num_partitions=8"

# byte-identical output across runs
expect 0 "$ss" annotate "$tmp/l8s.pb" --mesh data=2,fsdp=2,tensor=2 --plan fsdp+tp -o "$tmp/a1.pb"
expect 0 "$ss" annotate "$tmp/l8s.pb" --mesh data=2,fsdp=2,tensor=2 --plan fsdp+tp -o "$tmp/a2.pb"
cmp -s "$tmp/a1.pb" "$tmp/a2.pb" && ok || bad "two runs of annotate differ"

# the real MaxText step: its Sharding hints stay as they were
expect 0 "$ss" annotate "$maxtext" --mesh fsdp=8 --plan fsdp -o "$tmp/maxtext-fsdp.hlo"
hints_in=$(grep -c 'custom_call_target="Sharding", sharding={devices=\[8,1,1\]<=\[8\]}' "$maxtext")
hints_out=$(grep -c 'custom_call_target="Sharding", sharding={devices=\[8,1,1\]<=\[8\]}' "$tmp/maxtext-fsdp.hlo")
[ "$hints_in" -gt 0 ] && [ "$hints_in" = "$hints_out" ] && ok || bad "MaxText hints: $hints_in in, $hints_out out"
expect 0 "$ss" annotate "$maxtext" --mesh data=2,fsdp=2,tensor=2 --plan fsdp+tp -o "$tmp/maxtext-3.pb"
expect 0 "$ss" annotate "$maxtext" --mesh fsdp=16 --plan fsdp -o "$tmp/maxtext-16.hlo"
has "$tmp/err" "Sharding hint does not fit"

# plan files
printf '{"mesh": {"fsdp": 4, "tensor": 2}, "base": "fsdp",\n "rules": [{"match": "*mlp/wo/*", "spec": [["tensor"], "fsdp"]}]}\n' >"$tmp/plan.json"
expect 0 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/plan.json" -o "$tmp/l8-file.hlo"
grep -E 'params\.layers_0\.mlp\.wo\.[0-9]+ = f32\[14336,4096\]' "$tmp/l8-file.hlo" | grep -qF 'sharding={devices=[2,4]<=[4,2]T(1,0)}' && ok || bad "plan file rule not applied"
printf '{"mesh": {"fsdp": 4}, "rules": [{"match": "*", "spec": ["tensor"]}]}\n' >"$tmp/badplan.json"
expect 2 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/badplan.json" -o "$tmp/never.hlo"
has "$tmp/err" "badplan.json"
# plan files: an unknown member (a typo: "rule"), a rule's unknown member, an axis key that
# would splice into the mesh's text, an axis nothing uses: each refused, naming it
printf '{"mesh": {"fsdp": 4}, "base": "fsdp", "rule": [{"match": "*", "spec": ["fsdp"]}]}\n' >"$tmp/typo.json"
expect 2 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/typo.json" -o "$tmp/never.hlo"
has "$tmp/err" "unknown member 'rule'"
printf '{"mesh": {"fsdp": 4}, "rules": [{"match": "*", "spec": ["fsdp"], "sepc": []}]}\n' >"$tmp/rule.json"
expect 2 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/rule.json" -o "$tmp/never.hlo"
has "$tmp/err" "unknown member 'sepc'"
printf '{"mesh": {"data=2,fsdp": 4}, "base": "fsdp"}\n' >"$tmp/splice.json"
expect 2 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/splice.json" -o "$tmp/never.hlo"
has "$tmp/err" "is no axis name"
printf '{"mesh": {"fsdp": 4, "bogus": 2}, "base": "fsdp"}\n' >"$tmp/bogus.json"
expect 2 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/bogus.json" -o "$tmp/never.hlo"
has "$tmp/err" "mesh axis 'bogus' has no role"
printf '{"mesh": {"fsdp": 4, "x": 2}, "base": "fsdp", "rules": [{"match": "*embed*", "spec": ["x", null]}]}\n' >"$tmp/named.json"
expect 0 "$ss" annotate "$tmp/l8.hlo" --plan "$tmp/named.json" -o "$tmp/named.hlo"
[ ! -e "$tmp/never.hlo" ] && ok || bad "a refused plan file left output"
expect 2 "$ss" annotate "$tmp/l8.hlo" --mesh fsdp=0 --plan fsdp -o "$tmp/never.hlo"
has "$tmp/err" "fsdp"
expect 2 "$ss" annotate "$tmp/l8.hlo" --mesh fsdp=4 --plan zero3 -o "$tmp/never.hlo"
# a named plan with hardware: its chip, and with a device count its cluster's mesh, copied whole
expect 0 "$ss" annotate "$tmp/l8.hlo" --plan fsdp --mesh fsdp=4 --hardware h100 -o "$tmp/l8-h100.hlo"
long=$(for k in 1 2 3 4 5 6 7 8; do printf 'axis_%s_of_a_mesh_named_long____=2,' "$k"; done)
expect 0 "$ss" annotate "$tmp/l8.hlo" --plan dp --mesh "${long%,}" --hardware v5p --devices 256 -o "$tmp/l8-long.hlo"
has "$tmp/out" "(256 devices)"
expect 2 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=4 --plan zero3 --op any.op
has "$tmp/err" "unknown plan"
expect 1 "$ss" annotate "$tmp/missing.hlo" --mesh fsdp=4 --plan fsdp -o "$tmp/never.hlo"
expect 1 "$ss" annotate "$tmp/l8.hlo" --mesh fsdp=4 --plan fsdp --plugins "$tmp/no-such-dir" -o "$tmp/never.hlo"
has "$tmp/err" "no-such-dir"
[ -e "$tmp/never.hlo" ] && bad "annotate left output after an error" || ok
expect 2 "$ss" annotate "$tmp/l8.hlo" --mesh fsdp=4 --plan fsdp -o "$tmp/l8.hlo"

# explain: the candidates of one dot, and what a plan gives it
dot=$(grep -m1 -oE 'dot\.[0-9]+ = bf16\[8,64,32,128\]' "$tmp/l8.hlo" | cut -d' ' -f1)
expect 0 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=4,tensor=2 --op "$dot" --limit 0
has "$tmp/out" "dot.assign"
has "$tmp/out" "candidates"
expect 0 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=4,tensor=2 --op "$dot" --plan fsdp+tp --json
has "$tmp/out" '"plan": '
# ... cheapest first where the plan puts it, the plan's choice marked, why the runner-up lost;
# by op_name too (the whole path, or its end), an op_name several instructions share refused
if command -v python3 >/dev/null; then
	python3 - "$tmp/out" <<'PY' && ok || bad "explain order: $(head -c 600 "$tmp/out")"
import json, sys
o = json.load(open(sys.argv[1]))
cost = [c["cost"]["total_s"] for c in o["candidates"]]
rank = [c["rank"] for c in o["candidates"]]
assert cost == sorted(cost) and rank == sorted(rank) and len(cost) > 1, cost
assert sum(c["chosen"] for c in o["candidates"]) == 1 and o["chosen_index"] is not None
assert o["why"] and all(k in o["candidates"][0]["cost"] for k in
                        ("compute_s", "communication_s", "reshard_s", "total_s"))
PY
fi
expect 1 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=4 --op no.such.op
has "$tmp/err" "no.such.op"
opname=$(grep -m1 "$dot = " "$tmp/l8.hlo" | sed -n 's/.*op_name="\([^"]*\)".*/\1/p')
expect 0 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=4,tensor=2 --op "$opname" --plan fsdp+tp --limit 2
has "$tmp/out" "$dot ("
has "$tmp/out" "<- the plan's choice"
has "$tmp/out" "why: "
expect 1 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=4,tensor=2 --op "${opname#*/layers_0/}"
has "$tmp/err" "give one by its HLO name"

# broken plugins are refused with their reasons; the built-ins keep working
expect 0 "$ss" annotate "$tmp/l8.hlo" --mesh fsdp=8 --plan fsdp --plugins "$test_plugins" -o "$tmp/l8-broken.hlo"
has "$tmp/err" "wrong_abi.so"
has "$tmp/err" "no_entry.so"
all_sharded "$tmp/l8-broken.hlo"

# a plugin built from the header alone, outside the build, is loaded and explained
mkdir -p "$tmp/ext"
if cc -shared -fPIC -std=c11 -Wall -Werror -I"$src/plugin/include" -o "$tmp/ext/ext.so" "$src/tests/plugins/external/ext.c"; then
	ok
	mul=$(grep -m1 -oE 'multiply\.[0-9]+ = ' "$tmp/l8.hlo" | cut -d' ' -f1)
	expect 0 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=8 --op "$mul" --plugins "$tmp/ext"
	has "$tmp/out" "ext.mul"
	SHARDSEARCH_PLUGIN_PATH="$tmp/ext" expect 0 "$ss" explain "$tmp/l8.hlo" --mesh fsdp=8 --op "$mul"
	has "$tmp/out" "ext.mul"
else
	bad "the external plugin did not build"
fi

# evaluate: a plan on a cluster; bad options give one line and exit 2
expect 0 "$ss" evaluate --help
has "$tmp/out" "--hardware NAME"
expect 0 "$ss" gen mlp-only --set layers=2 --set batch=76800 -o "$tmp/mlp.pb"
expect 0 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --topology 4x4x4 --mesh fsdp=64@xyz --plan fsdp --json
for key in step_time_s compute_s exposed_comm_s bound mfu memory_bytes_per_device hbm_bytes fits collectives; do
	has "$tmp/out" "\"$key\""
done
expect 0 "$ss" evaluate "$tmp/mlp.pb" --hardware h100 --devices 16 --mesh fsdp=16 --plan fsdp
has "$tmp/out" "step time"
# --blocking: the fsdp axis's collectives as synchronous calls, all of them exposed
expect 0 "$ss" evaluate "$tmp/mlp.pb" --hardware h100 --devices 16 --mesh fsdp=16 --plan fsdp \
	--blocking fsdp --json
awk -F': ' '/"comm_s"/ { c = $2 + 0 } /"exposed_comm_total_s"/ { x = $2 + 0 }
	END { exit !(c > 0 && x >= 0.999 * c) }' "$tmp/out" && ok || bad "--blocking fsdp hid some fsdp communication"
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware h100 --devices 16 --mesh fsdp=16 --plan fsdp --blocking
# pipeline stages: the stage axis splits the layers; the report's pipeline line and JSON
expect 0 "$ss" evaluate "$tmp/l8s.pb" --hardware h100 --devices 16 --mesh stage=2,data=8 --plan dp \
	--microbatches 4
has "$tmp/out" "pipeline        2 stages of 1 layers, 1f1b, 4 micro-batches: bubble"
expect 0 "$ss" evaluate "$tmp/l8.hlo" --hardware h100 --devices 16 --mesh stage=2,data=8 --plan dp \
	--microbatches 4 --pipeline gpipe --json
has "$tmp/out" '"schedule": "gpipe"'
has "$tmp/out" '"first_stage_in_flight": 4'
expect 2 "$ss" evaluate "$tmp/l8.hlo" --hardware h100 --devices 16 --mesh stage=2,data=8 --plan dp \
	--microbatches 4 --virtual-stages 2
has "$tmp/err" "2 layers do not split evenly into 2 stages of 2 chunks"
# --export megatron: Megatron-LM's arguments for the searched plan; the micro-batch size times
# the data parallelism (devices / (tensor x pipeline x context)) is at most the batch
expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 -o "$tmp/l8s-mg.pb" \
	--export megatron "$tmp/l8s.args"
has "$tmp/l8s.args" "--tensor-model-parallel-size "
has "$tmp/l8s.args" "--global-batch-size 8"
awk 'BEGIN { c = 1 } /^--tensor-model-parallel-size/ { t = $2 }
	/^--pipeline-model-parallel-size/ { p = $2 } /^--context-parallel-size/ { c = $2 }
	/^--micro-batch-size/ { b = $2 } END { exit !(t >= 1 && p >= 1 && b >= 1 && 8 % b == 0 &&
	(16 / (t * p * c)) * b <= 8) }' "$tmp/l8s.args" && ok || bad "export megatron: $(cat "$tmp/l8s.args")"
expect 2 "$ss" annotate "$tmp/l8s.pb" --mesh fsdp=8 --plan fsdp -o "$tmp/x.pb" --export megatron "$tmp/x.args"
has "$tmp/err" "--export needs a search"
expect 2 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 -o "$tmp/x.pb" \
	--export torch "$tmp/x.args"
# --export jax: Python that parses, whose PartitionSpecs are the annotated weights' shardings
expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 -o "$tmp/l8s-jx.pb" --json \
	--export jax "$tmp/l8s.py"
has "$tmp/l8s.py" "mesh = Mesh(devices, ("
has "$tmp/l8s.py" "param_specs = {"
if command -v python3 >/dev/null; then
	python3 - "$tmp/l8s.py" "$tmp/out" <<'PY' && ok || bad "export jax: $(head -c 600 "$tmp/l8s.py")"
import ast, json, sys
tree = ast.parse(open(sys.argv[1]).read())
weights = json.load(open(sys.argv[2]))["weights"]
specs = next(n.value for n in tree.body
             if isinstance(n, ast.Assign) and n.targets[0].id == "param_specs")
def axes(a):
    if isinstance(a, ast.Constant):
        return [] if a.value is None else [a.value]
    return [e.value for e in a.elts]
seen = 0
for key, call in zip(specs.keys, specs.values):
    got = "[" + ", ".join("{" + ",".join(axes(a)) + "}" for a in call.args) + "]"
    want = weights[key.value]["sharding"]
    assert got == want, (key.value, got, want)
    seen += 1
assert seen == len(weights) and seen > 0
PY
else
	grep -q "^    'train_step/params/" "$tmp/l8s.py" && ok || bad "export jax: no weight specs"
fi
# --export maxtext: its ici_* and dcn_* degrees multiply to the device count
expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 -o "$tmp/l8s-mx.pb" \
	--export maxtext "$tmp/l8s.yml"
has "$tmp/l8s.yml" "ici_fsdp_parallelism: "
awk -F': ' 'BEGIN { n = 1 } /^(ici|dcn)_.*_parallelism: / { n *= $2 } END { exit n != 16 }' \
	"$tmp/l8s.yml" && ok || bad "export maxtext degrees: $(cat "$tmp/l8s.yml")"
# --export torchtitan: its degrees (expert parallelism inside the sharded data parallelism)
# multiply to the device count, and the local batch times the data parallelism is the batch
expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 -o "$tmp/l8s-tt.pb" \
	--export torchtitan "$tmp/l8s.toml"
has "$tmp/l8s.toml" "[parallelism]"
awk -F' = ' '/^data_parallel_(replicate|shard)_degree/ { d *= $2 } /^(tensor|context|pipeline)_parallel_degree/ { n *= $2 }
	/^local_batch_size/ { b = $2 } /^global_batch_size/ { g = $2 }
	BEGIN { d = 1; n = 1 } END { exit !(d * n == 16 && b * d == g && g == 8) }' "$tmp/l8s.toml" &&
	ok || bad "export torchtitan: $(cat "$tmp/l8s.toml")"

# --trace: Chrome trace event JSON whose last event ends at the step time the report gives
# trace_ends FILE REPORT.json: the trace's events have the format's fields and end at the step
trace_ends() {
	if ! command -v python3 >/dev/null; then
		grep -q '"traceEvents"' "$1" && ok || bad "trace $1: no traceEvents"
		return
	fi
	python3 - "$1" "$2" <<'PY' && ok || bad "trace $1: $(head -c 400 "$1")"
import json, sys
trace, report = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
step = report["step_time_s"]
step = step if isinstance(step, (int, float)) else report["best"]["step_time_s"]
events = trace["traceEvents"]
assert all("ph" in e and "pid" in e for e in events)
slices = [e for e in events if e["ph"] == "X"]
assert slices and all(k in e for e in slices for k in ("name", "ts", "dur", "tid"))
end = max(e["ts"] + e["dur"] for e in slices) * 1e-6
assert abs(end - step) <= 1e-6 * step, (end, step)
PY
}
expect 0 "$ss" evaluate "$tmp/l8s.pb" --hardware h100 --devices 16 --mesh data=2,tensor=8 \
	--plan tp --remat full --json --trace "$tmp/l8s-trace.json"
trace_ends "$tmp/l8s-trace.json" "$tmp/out"
expect 0 "$ss" annotate "$tmp/l8.hlo" --hardware v5p --devices 16 -o "$tmp/l8-tr.hlo" --json \
	--trace "$tmp/l8-trace.json"
trace_ends "$tmp/l8-trace.json" "$tmp/out"
# the JSON schema of the man page: mesh an object everywhere, layout its text, the memory
# breakdown, members that are null rather than absent
if command -v python3 >/dev/null; then
	python3 - "$tmp/out" "$tmp/l8s-trace.json" <<'PY' && ok || bad "JSON schema: $(head -c 600 "$tmp/out")"
import json, sys
o = json.load(open(sys.argv[1]))
def mesh_ok(x):
    assert isinstance(x["mesh"], dict) and all(isinstance(v, int) for v in x["mesh"].values())
    assert isinstance(x["layout"], str) and "=" in x["layout"]
mesh_ok(o)
for c in o["runners_up"]:
    mesh_ok(c)
assert "experts" in o and "would_fit" in o and o["would_fit"] is None
m = o["memory"]
for k in ("peak_bytes", "weights_bytes", "gradients_bytes", "optimizer_bytes", "inputs_bytes",
          "gathered_bytes", "activations_and_temporaries_bytes", "hbm_bytes"):
    assert isinstance(m[k], (int, float)) and m[k] >= 0, k
assert m["peak_bytes"] == o["memory_bytes_per_device"] and m["weights_bytes"] > 0
assert sum(m[k] for k in ("weights_bytes", "optimizer_bytes", "inputs_bytes", "gradients_bytes",
           "gathered_bytes", "activations_and_temporaries_bytes")) >= m["peak_bytes"] * 0.999
PY
fi
# an output that cannot be written is refused before the search: a missing folder, an unknown
# extension, protobuf for a module with an attribute kept only as text
expect 1 "$ss" annotate "$tmp/l8.hlo" --hardware v5p --devices 16 -o "$tmp/no/such/dir/x.pb"
has "$tmp/err" "does not exist"
expect 2 "$ss" annotate "$tmp/l8.hlo" --hardware v5p --devices 16 -o "$tmp/x.out"
has "$tmp/err" "cannot tell the format"
printf 'HloModule m\nENTRY e {\n  ROOT x = f32[8] parameter(0), weird_attr=5\n}\n' >"$tmp/raw.hlo"
expect 1 "$ss" annotate "$tmp/raw.hlo" --hardware v5p --devices 8 -o "$tmp/raw.pb"
has "$tmp/err" "write HLO text instead"
[ ! -e "$tmp/raw.pb" ] && [ ! -e "$tmp/x.out" ] && ok || bad "a refused output was written"
# a trace that cannot be written: exit 1, the file named, the module not written
expect 1 "$ss" annotate "$tmp/l8.hlo" --hardware v5p --devices 16 -o "$tmp/l8-never.hlo" \
	--trace "$tmp/no/such/dir/t.json"
has "$tmp/err" "$tmp/no/such/dir/t.json"
[ ! -e "$tmp/l8-never.hlo" ] && ok || bad "annotate wrote its module with a trace it could not"
expect 2 "$ss" evaluate "$tmp/l8s.pb" --hardware h100 --devices 16 --mesh data=16 --plan dp \
	--no-overlap --trace "$tmp/never.json"
has "$tmp/err" "event schedule"

# plot: one point per plan of the table, in well-formed SVG; the HBM line drawn
expect 0 "$ss" plot "$tmp/l8s.pb" --hardware v5p --devices 16 --stages --json -o "$tmp/l8s.svg"
has "$tmp/l8s.svg" "HBM "
if command -v python3 >/dev/null; then
	python3 - "$tmp/l8s.svg" "$tmp/out" <<'PY' && ok || bad "plot: $(head -c 600 "$tmp/out")"
import json, sys, xml.etree.ElementTree as ET
svg = ET.parse(sys.argv[1]).getroot()
plans = json.load(open(sys.argv[2]))["plans"]
points = [c for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("class") == "point"]
assert len(plans) >= 5 and len(points) == len(plans), (len(points), len(plans))
assert any(p["stage"] > 1 for p in plans) and any(p["tensor"] > 1 for p in plans)
PY
else
	[ "$(grep -c 'class="point"' "$tmp/l8s.svg")" -ge 5 ] && ok || bad "plot: too few points"
fi
expect 2 "$ss" plot "$tmp/l8s.pb" --hardware v5p --devices 16 --mesh fsdp=16 -o "$tmp/never.svg"
expect 1 "$ss" plot "$tmp/l8s.pb" --hardware v5p --devices 16 -o "$tmp/no/such/dir/p.svg"
has "$tmp/err" "$tmp/no/such/dir/p.svg"

# evaluate on the layout, plan and remat a search reports reproduces its step time, on GPUs and
# on a TPU slice whose axes share physical axes (fsdp=8@xy,tensor=8@yz)
# jstr KEY: the string (or bare value) of the top-level KEY of $tmp/out
jstr() {
	sed -n -e 's/^  "'"$1"'": "\([^"]*\)",\{0,1\}$/\1/p' \
		-e 's/^  "'"$1"'": \([^",]*\),\{0,1\}$/\1/p' "$tmp/out" | head -1
}
for cl in "h100 --devices 16" "v5p --topology 4x4x4"; do
	read -r hw flag size <<<"$cl"
	expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware "$hw" "$flag" "$size" --json -o "$tmp/re.pb"
	layout=$(jstr layout) plan=$(jstr plan) remat=$(jstr remat) step=$(jstr step_time_s)
	hidden=()
	[ "$(jstr gathers_hidden)" = true ] && hidden=(--gathers-hidden)
	expect 0 "$ss" evaluate "$tmp/l8s.pb" --hardware "$hw" "$flag" "$size" --mesh "$layout" \
		--plan "$plan" --remat "$remat" "${hidden[@]}" --json
	awk -v a="$step" -v b="$(jstr step_time_s)" 'BEGIN { d = a - b; if (d < 0) d = -d
		exit !(a > 0 && d <= 1e-9 * a) }' && ok ||
		bad "evaluate on $layout ($plan, remat $remat): $(jstr step_time_s) s, reported $step s"
done

# the search with stages tries more meshes: the stage counts dividing the layers as well
expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 --json -o "$tmp/l8s-st.pb"
flat=$(sed -nE 's/^  "meshes": ([0-9]+),$/\1/p' "$tmp/out")
expect 0 "$ss" annotate "$tmp/l8s.pb" --hardware h100 --devices 16 --stages --json -o "$tmp/l8s-st.pb"
staged=$(sed -nE 's/^  "meshes": ([0-9]+),$/\1/p' "$tmp/out")
[ -n "$flat" ] && [ "${staged:-0}" -gt "$flat" ] && ok || bad "--stages tried $staged meshes, $flat without"
expect 2 "$ss" evaluate "$tmp/l8.hlo" --hardware h100 --devices 16 --mesh stage=2,data=8 --plan dp \
	--pipeline zero-bubble
has "$tmp/err" "takes 1f1b, gpipe or interleaved"
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware v9 --topology 4x4x4 --mesh fsdp=64 --plan fsdp
has "$tmp/err" "unknown hardware"
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --topology 4x4x4 --mesh fsdp=32@xyz --plan fsdp
has "$tmp/err" "64"
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --topology 4x4x4 --mesh fsdp=16@xy,tensor=4@y --plan fsdp
has "$tmp/err" "twice"
printf '{"base": "fsdp", "rules": [{"match": "*no_such_weight*", "spec": ["fsdp"]}]}\n' >"$tmp/missing-rule.json"
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --topology 4x4x4 --mesh fsdp=64@xyz --plan "$tmp/missing-rule.json"
has "$tmp/err" "matches no parameter"
[ "$(wc -l <"$tmp/err")" -le 2 ] && ok || bad "evaluate's error is not one line: $(cat "$tmp/err")"
printf '{"hardware": [{"name": "v5p", "hbm_bw": }]}\n' >"$tmp/badhw.json"
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --hardware-file "$tmp/badhw.json" --topology 4x4x4 --mesh fsdp=64 --plan fsdp
has "$tmp/err" "badhw.json:1:"
printf '{"hardware": [{"name": "v5p-fast", "base": "v5p", "ici_bw": 3.6e11}]}\n' >"$tmp/hw.json"
expect 0 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p-fast --hardware-file "$tmp/hw.json" --topology 4x4x4 --mesh fsdp=64@xyz --plan fsdp
has "$tmp/out" "v5p-fast"
expect 0 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --topology 4x4x4 --mesh fsdp=64@xyz --plan fsdp --remat full --schedule segments --prefetch 2 --no-fusion --json
has "$tmp/out" '"remat_s"'
expect 2 "$ss" evaluate "$tmp/mlp.pb" --hardware v5p --topology 4x4x4 --mesh fsdp=64 --plan fsdp --remat some

# the search: annotate without --plan
expect 2 "$ss" annotate "$tmp/mlp.pb" -o "$tmp/never.pb"
has "$tmp/err" "needs --hardware"
expect 2 "$ss" annotate "$tmp/mlp.pb" --hardware v9 --devices 8 -o "$tmp/never.pb"
has "$tmp/err" "unknown hardware"
expect 2 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --devices 8 --time-budget soon -o "$tmp/never.pb"
[ -e "$tmp/never.pb" ] && bad "a failed search left output" || ok
# nothing fits (512 sequences of 1024 tokens of a 2-layer LLaMA-3 8B on one H100, the whole
# batch at once): exit 3, no output (an existing file is left alone), the report of the closest
# plan and what would fit
expect 0 "$ss" gen llama3-8b --set layers=2 --scan --set vocab=32768 --set seq=1024 --set batch=512 -o "$tmp/nofit.pb"
expect 3 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 1 --microbatches 1 -o "$tmp/never.pb"
[ -e "$tmp/never.pb" ] && bad "a search where nothing fits left output" || ok
has "$tmp/err" "nothing fits in HBM"
has "$tmp/out" "(does not fit)"
has "$tmp/out" "what would fit"
has "$tmp/out" "  more chips    devices=2: "
has "$tmp/out" "  fewer tokens  at most about "
echo kept >"$tmp/kept.pb"
expect 3 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 1 --microbatches 1 --remat none --json -o "$tmp/kept.pb"
has "$tmp/kept.pb" "kept"
has "$tmp/out" '"would_fit": {'
has "$tmp/out" '"more_recomputation": null'
has "$tmp/out" '"fits": false'
expect 0 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 4 -o "$tmp/fit4.pb"
has "$tmp/out" "(fits"
# a mixture of experts: the report names the expert axis the plan took or not, and the best
# plan of the other kind; the fine-grained preset generates
expect 0 "$ss" gen mixtral-8x7b --scan --set layers=2 --set seq=256 --set batch=16 -o "$tmp/moe.pb"
expect 0 "$ss" annotate "$tmp/moe.pb" --hardware h100 --devices 8 -o "$tmp/moe-searched.pb"
has "$tmp/out" "experts         8 routed per layer"
expect 0 "$ss" annotate "$tmp/moe.pb" --hardware h100 --devices 8 --json -o "$tmp/moe-searched.pb"
has "$tmp/out" '"routed": 8'
expect 0 "$ss" gen deepseek-moe-16b --set layers=2 --set seq=256 --set batch=8
has "$tmp/out" "deepseek-moe-16b"
# the sequence: 10 sequences on tensor=8 split the residual stream over the sequence inside the
# tensor axis (Megatron's sequence parallelism), named in the text and JSON reports
expect 0 "$ss" gen gpt3-175b --set layers=2 --set batch=10 --set seq=512 --set d_model=512 --set heads=8 --set kv_heads=8 --set head_dim=64 --set d_ff=2048 --set vocab=1024 -o "$tmp/sp.pb"
expect 0 "$ss" evaluate "$tmp/sp.pb" --hardware h100 --devices 8 --mesh tensor=8 --plan tp
has "$tmp/out" "sequence        split over tensor (Megatron's sequence parallelism"
expect 0 "$ss" evaluate "$tmp/sp.pb" --hardware h100 --devices 8 --mesh tensor=8 --plan tp --json
has "$tmp/out" '"kind": "tensor (sequence parallelism)"'
expect 0 "$ss" annotate "$tmp/sp.pb" --hardware h100 --devices 8 -o "$tmp/sp-searched.pb"
has "$tmp/out" "sequence        "
# over a context axis: context parallelism, and how the attention kernels run (a ring at 32k
# tokens of LLaMA-3 8B's attention on 8 H100s)
expect 0 "$ss" evaluate "$tmp/sp.pb" --hardware h100 --devices 8 --mesh data=2,context=4 --plan fsdp
has "$tmp/out" "sequence        split over context (context parallelism)"
has "$tmp/out" "attention kernels: "
expect 0 "$ss" gen llama3-8b --set layers=1 --set seq=32768 --set batch=1 --set attention_kernel=cudnn -o "$tmp/long.pb"
expect 0 "$ss" evaluate "$tmp/long.pb" --hardware h100 --devices 8 --mesh context=8 --plan dp --json
has "$tmp/out" '"kind": "context"'
has "$tmp/out" '"ring": 2'
# searched with micro-batches, it fits: the count is named and each count tried, the module
# written is the loop
expect 0 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 1 -o "$tmp/fitm.hlo"
has "$tmp/out" "micro-batches   4 of 128 sequences each"
grep -q "^exposed comm .* s: data " "$tmp/out" && ok || bad "the micro-batched plan's report lost its axis names"
has "$tmp/out" "tried 1: "
has "$tmp/fitm.hlo" "microbatch.body"
expect 0 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 1 --json -o "$tmp/fitm.pb"
has "$tmp/out" '"microbatches": 4'
has "$tmp/out" '"microbatch_tries": ['
# a module already split is searched as it is
expect 0 "$ss" annotate "$tmp/fitm.hlo" --hardware h100 --devices 1 -o "$tmp/fitm2.hlo"
has "$tmp/out" "micro-batches   4 of 128"
# the same step as 8 micro-batches fits on the one H100: the module written is the loop
expect 0 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 1 --microbatches 8 -o "$tmp/fit8.hlo"
has "$tmp/out" "(fits"
has "$tmp/fit8.hlo" "microbatch.body"
expect 0 "$ss" evaluate "$tmp/nofit.pb" --hardware h100 --devices 1 --mesh data=1 --plan dp --microbatches 8
has "$tmp/out" "(fits"
expect 2 "$ss" annotate "$tmp/nofit.pb" --hardware h100 --devices 1 --microbatches 3 -o "$tmp/never3.pb"
has "$tmp/err" "does not divide into 3 micro-batches"
# LLaMA-3 8B on 64 H100s fits whole only by offloading: the counts go on past 2 micro-batches,
# which does not beat it, to 4, which needs no recomputation and does
expect 0 "$ss" gen llama3-8b --scan -o "$tmp/l8.pb"
expect 0 "$ss" annotate "$tmp/l8.pb" --hardware h100 --devices 64 -o "$tmp/l8-searched.pb"
has "$tmp/out" "plan            fsdp seeds, remat none"
grep -q "^micro-batches   4 of 256 sequences each: .*tried 1: .* 2: .* 4: " "$tmp/out" && ok ||
	bad "the micro-batch counts stopped before 4: $(grep '^micro-batches' "$tmp/out")"
[ -e "$tmp/never3.pb" ] && bad "a refused rewrite left output" || ok
expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --topology 2x2x2 -o "$tmp/searched.pb"
for key in "mesh " "plan " "step time" "memory " "exposed comm" "search " "weights" "runners-up" \
	"train_step/params/layers_0/mlp/wi/parameter"; do
	has "$tmp/out" "$key"
done
expect 0 "$ss" info "$tmp/searched.pb"
expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --topology 2x2x2 -o "$tmp/searched-again.pb"
cmp -s "$tmp/searched.pb" "$tmp/searched-again.pb" && ok || bad "two searches wrote different bytes"
expect 0 "$ss" annotate "$tmp/searched.pb" --hardware v5p --topology 2x2x2 -o "$tmp/searched-twice.pb"
cmp -s "$tmp/searched.pb" "$tmp/searched-twice.pb" && ok || bad "annotating the annotated module changed it"
expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware h100 --devices 16 --json -o "$tmp/searched.hlo"
for key in '"mesh"' '"step_time_s"' '"mfu"' '"bound"' '"memory_bytes_per_device"' '"hbm_bytes"' \
	'"fits"' '"zero_stage"' '"search_time_s"' '"load_time_s"' '"runners_up"'; do
	has "$tmp/out" "$key"
done
expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --topology 2x2x2 --time-budget 1e-9 -o "$tmp/budget.pb"
has "$tmp/out" "the best plan found so far"
expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --topology 2x2x2 --mesh fsdp=4,tensor=2 -o "$tmp/pinned.pb"
has "$tmp/out" "fsdp=4"
# a plugin built from the header alone, outside the build, offers a cheaper multiply: chosen
mkdir -p "$tmp/cheap"
if cc -shared -fPIC -std=c11 -Wall -Werror -I"$src/plugin/include" -o "$tmp/cheap/cheap.so" "$src/tests/plugins/external/cheap.c"; then
	ok
	expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --topology 2x2x2 --plugins "$tmp/cheap" --json -o "$tmp/cheap.pb"
	has "$tmp/out" '"ext.cheapmul"'
	expect 0 "$ss" annotate "$tmp/mlp.pb" --hardware v5p --topology 2x2x2 --json -o "$tmp/not-cheap.pb"
	grep -qF '"ext.cheapmul"' "$tmp/out" && bad "ext.cheapmul used without its plugin" || ok
else
	bad "the cheap plugin did not build"
fi
# the real MaxText step: 8 H100s (its Sharding hints, 8-way, kept) and 64 v5p chips (more than
# the hints' 8; under sanitizers 16, the normal build runs the 64)
expect 0 "$ss" annotate "$maxtext" --hardware h100 --devices 8 -o "$tmp/maxtext-search.hlo"
hints_out=$(grep -c 'custom_call_target="Sharding", sharding={devices=\[8,1,1\]<=\[8\]}' "$tmp/maxtext-search.hlo")
[ "$hints_in" -gt 0 ] && [ "$hints_in" = "$hints_out" ] && ok || bad "MaxText search hints: $hints_in in, $hints_out out"
expect 0 "$ss" info "$tmp/maxtext-search.hlo"
if [ "$sanitized" = 1 ]; then chips=16; else chips=64; fi
expect 0 "$ss" annotate "$maxtext" --hardware v5p --devices "$chips" -o "$tmp/maxtext-search-v5p.pb"
expect 0 "$ss" info "$tmp/maxtext-search-v5p.pb"

finish
