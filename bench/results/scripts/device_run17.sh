#!/usr/bin/env bash
# Seventeenth H200 run (sixth session): own cost after one stray "data wait" sample stopped
# counting as a moderate share (the benchmark job's pace now stays relaxed), with gpuwatch's CPU
# split per thread (collector threads are named gw-<field>). TUI twice and --json once, 90 s each,
# CPU counted from 30 s on. Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run17.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

main() {
  step "own cost: TUI and --json, 90 s each, steady from 30 s"
  timeout 260 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop" --out "$R/self" > "$R/self.log" 2>&1
  tail -14 "$R/self.log"; grep -h "per thread" "$R/self/self.md"
  step "the TUI again"
  timeout 150 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop,gpuwatch --json" --out "$R/self_tui2" > "$R/self_tui2.log" 2>&1
  tail -8 "$R/self_tui2.log"; grep -h "per thread" "$R/self_tui2/self.md"
}

timeout 480 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
