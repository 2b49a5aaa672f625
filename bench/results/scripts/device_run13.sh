#!/usr/bin/env bash
# Thirteenth H200 run (fifth session): own cost after the drawing work of 8a2ba6d (43.5 -> 31.7 ms a
# frame on the CPU VM), beside --json and nvitop, then the TUI alone once more for its spread.
# 90 s per observer, CPU counted from 30 s on. No recording, no first-frame starts (met in runs 11-12).
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run13.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

main() {
  step "own cost beside --json and nvitop, 90 s each, steady from 30 s"
  timeout 380 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"
  step "the TUI again, alone"
  timeout 150 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop,gpuwatch --json" --out "$R/self_tui2" > "$R/self_tui2.log" 2>&1
  tail -8 "$R/self_tui2.log"
}

timeout 560 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
