#!/usr/bin/env bash
# Ninth H200 run, after the fifth round of cost work (the memory-utilization buffer beside GPM and
# per-process utilization of a job alone on its GPU read every 5 s instead of every tick; metric
# rows drawn without per-cell offset styles): each collector's and NVML call's CPU, own cost beside
# nvitop, where the TUI's CPU goes, what importing the TUI costs (the first frame), and the switch
# scenario (the verdict must not have moved).
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run9.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
echo "working tree: ${COMMIT:-unknown} (the device copy's .git is stale)" >> "$R/machine.txt"
step() { echo "== $(date +%T) $*"; }

main() {
  step "CPU time per collector and per NVML call"
  timeout 90 python3 -m bench.collector_cost --device cuda --ticks 30 --out "$R/cost" > "$R/collector_cost.log" 2>&1
  tail -28 "$R/collector_cost.log"

  step "own cost beside nvitop"
  timeout 200 python3 -m bench.self --device cuda --duration 40 --alone 4 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"

  step "where the TUI's CPU goes"
  timeout 70 python3 -m bench.profile_self --device cuda --duration 25 --only tui --out "$R/profile" > "$R/profile.md" 2>&1
  tail -18 "$R/profile.md"

  step "import time of the TUI (3 runs, cumulative us of the top modules)"
  for i in 1 2 3; do python3 -X importtime -c "import gpuwatch.tui.app" 2> "$R/importtime_$i.txt"; done
  for i in 1 2 3; do sort -t'|' -k2 -n "$R/importtime_$i.txt" | tail -3; done

  step "switch scenario, 25 s phases"
  timeout 160 python3 -m bench.accuracy --device cuda --scenarios switch --phase 25 --out "$R/acc_switch" > "$R/accuracy_switch.log" 2>&1
  tail -3 "$R/accuracy_switch.log"
}

timeout 580 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
