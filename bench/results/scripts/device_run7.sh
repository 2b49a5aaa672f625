#!/usr/bin/env bash
# Seventh H200 run, after the third round of cost work (one GPM sample per tick, App state that no
# longer repaints the whole screen, quieter process rows, schedstat-only worker threads, a stack
# pace that relaxes on a steady GPU-bound job below saturation): the verdict on the switch job
# (the pace must come back at once when the job changes) and on h2d and healthy (PCIe rates now
# come from the shared GPM window), then gpuwatch's own cost beside nvitop, and where it goes.
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run7.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
echo "working tree: ${COMMIT:-unknown} (the device copy's .git is stale)" >> "$R/machine.txt"
step() { echo "== $(date +%T) $*"; }

main() {
  step "switch scenario, 25 s phases"
  timeout 160 python3 -m bench.accuracy --device cuda --scenarios switch --phase 25 --out "$R/acc_switch" > "$R/accuracy_switch.log" 2>&1
  tail -3 "$R/accuracy_switch.log"

  step "accuracy: h2d, healthy (20 s each)"
  timeout 100 python3 -m bench.accuracy --device cuda --scenarios h2d,healthy --duration 20 --out "$R/acc" > "$R/accuracy.log" 2>&1
  tail -5 "$R/accuracy.log"

  step "own cost beside nvitop"
  timeout 200 python3 -m bench.self --device cuda --duration 40 --alone 4 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"

  step "where the TUI's CPU goes"
  timeout 70 python3 -m bench.profile_self --device cuda --duration 25 --only tui --out "$R/profile" > "$R/profile.md" 2>&1
  tail -16 "$R/profile.md"
}

timeout 560 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
