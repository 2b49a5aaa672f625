#!/usr/bin/env bash
# Sixth H200 run, after the engine stopped losing stack samples between ticks: the verdict on the
# scenarios whose evidence includes worker stacks (decode, io) and the switch job with 25 s phases,
# then gpuwatch's own cost once more (TUI and --json, 30 s each).
# Usage on the device (carry .whl):  bash bench/device_run6.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
step() { echo "== $(date +%T) $*"; }

main() {
  step "accuracy: decode, io, healthy (20 s each)"
  timeout 150 python3 -m bench.accuracy --device cuda --scenarios decode,io,healthy --duration 20 --out "$R/acc" > "$R/accuracy.log" 2>&1
  tail -6 "$R/accuracy.log"

  step "switch scenario, 25 s phases"
  timeout 160 python3 -m bench.accuracy --device cuda --scenarios switch --phase 25 --out "$R/acc_switch" > "$R/accuracy_switch.log" 2>&1
  tail -3 "$R/accuracy_switch.log"

  step "gpuwatch's own cost"
  timeout 130 python3 -m bench.self --device cuda --duration 30 --alone 4 --skip "nvitop,nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"
}

timeout 560 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
