#!/usr/bin/env bash
# Eighteenth H200 run (sixth session): own cost with the collectors grouped on two threads
# (gw-nvml: GPU and PCIe; gw-proc: procs, host, disk) instead of five, and the stack probe reading
# again after a torn read (run 17's second TUI phase watched without stacks). TUI twice and --json
# once, 90 s each, CPU from 30 s on, split per thread.
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run18.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

main() {
  step "own cost: TUI and --json, 90 s each, steady from 30 s"
  timeout 260 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop" --out "$R/self" > "$R/self.log" 2>&1
  tail -14 "$R/self.log" | grep -v "^$"
  step "the TUI again"
  timeout 150 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop,gpuwatch --json" --out "$R/self_tui2" > "$R/self_tui2.log" 2>&1
  tail -8 "$R/self_tui2.log" | grep -v "^$"
}

timeout 430 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
