#!/usr/bin/env bash
# Fourteenth H200 run: where the TUI's and --json's CPU goes after run 13 (py-spy on gpuwatch itself,
# 100 Hz, 40 s from 30 s after the first frame, so the stack pace has relaxed), and each collector's
# CPU per tick. Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run14.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

main() {
  step "profile, TUI and --json, 40 s each after 30 s"
  timeout 260 python3 -m bench.profile_self --device cuda --settle 30 --duration 40 --out "$R/profile" > "$R/profile.log" 2>&1
  tail -40 "$R/profile.log"
  step "collector cost, 30 ticks"
  timeout 90 python3 -m bench.collector_cost --device cuda --ticks 30 --out "$R/collector_cost" > "$R/collector_cost.log" 2>&1
  tail -30 "$R/collector_cost.log"
}

timeout 380 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
