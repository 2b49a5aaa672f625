#!/usr/bin/env bash
# Eighth H200 run, after the fourth round of cost work (the target walk re-reads known processes
# from their stat line, disk keeps its handles, host reads the cgroup's cpu.stat alone, NVML reads
# the power limit and link state every 5 s, the processes table repaints only changed rows): each
# collector's and each NVML call's CPU time, then gpuwatch's own cost beside nvitop, and where the
# TUI's CPU goes.
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run8.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
echo "working tree: ${COMMIT:-unknown} (the device copy's .git is stale)" >> "$R/machine.txt"
step() { echo "== $(date +%T) $*"; }

main() {
  step "CPU time per collector and per NVML call"
  timeout 90 python3 -m bench.collector_cost --device cuda --ticks 30 --out "$R/cost" > "$R/collector_cost.log" 2>&1
  tail -40 "$R/collector_cost.log"

  step "own cost beside nvitop"
  timeout 200 python3 -m bench.self --device cuda --duration 40 --alone 4 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"

  step "where the TUI's CPU goes"
  timeout 70 python3 -m bench.profile_self --device cuda --duration 25 --only tui --out "$R/profile" > "$R/profile.md" 2>&1
  tail -24 "$R/profile.md"
}

timeout 560 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
