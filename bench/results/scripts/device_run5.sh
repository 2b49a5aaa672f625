#!/usr/bin/env bash
# Fifth H200 run, after the open-file scan was spread over ticks and the stack pace learned to wait
# for a saturated GPU: gpuwatch's own cost (TUI and --json, 40 s each, nvitop beside them), a
# recording of the steady job (the verdicts and dump counts show whether the pace relaxed), and the
# switch scenario with 25 s phases again (latency after a relaxed stretch).
# Usage on the device (carry .whl):  bash bench/device_run5.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
step() { echo "== $(date +%T) $*"; }

main() {
  step "gpuwatch's own cost vs nvitop"
  timeout 200 python3 -m bench.self --device cuda --duration 40 --alone 5 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -14 "$R/self.log"

  step "the steady job recorded for 30 s (verdicts, stack dumps per tick)"
  python3 -m bench.steady_job --device cuda --workers 8 --counter /tmp/steps > "$R/steady_job.log" 2>&1 &
  local job=$!
  sleep 12
  timeout 45 gpuwatch --pid "$job" --json --duration 30 --record "$R/steady_job.jsonl" > /dev/null 2> "$R/gw_steady.err"
  echo "gpuwatch rc=$?"; kill $job 2>/dev/null; pkill -f bench.steady_job; wait $job 2>/dev/null
  python3 - "$R/steady_job.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("type") != "tick":
        continue
    v, st = d["verdict"], d["frame"]["stacks"]
    dumps = len(st.get("dumps", [])) if isinstance(st, dict) and "dumps" in st else None
    g = d["frame"]["gpus"]
    util = g[0]["util_gpu"] if isinstance(g, list) and g else None
    print(d["frame"]["seq"], v["stage"], v["confidence"], "util", util, "dumps", dumps)
PY

  step "switch scenario, 25 s phases"
  timeout 150 python3 -m bench.accuracy --device cuda --scenarios switch --phase 25 --out "$R/acc_switch" > "$R/accuracy_switch.log" 2>&1
  tail -4 "$R/accuracy_switch.log"
}

timeout 575 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
