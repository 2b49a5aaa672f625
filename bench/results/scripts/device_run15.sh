#!/usr/bin/env bash
# Fifteenth H200 run, on the fifth session's final cost code (the drawing work of 8a2ba6d, relaxed
# main dumps at 0.75/s from 5f0955c): own cost of the TUI twice and of --json once, 90 s each,
# CPU counted from 30 s on (nvitop read 1.1-1.2 % in runs 7-13 and is left out), then first frame
# over three starts each. Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run15.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

main() {
  step "own cost: TUI and --json, 90 s each, steady from 30 s"
  timeout 260 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop" --out "$R/self" > "$R/self.log" 2>&1
  tail -10 "$R/self.log"
  step "the TUI again"
  timeout 150 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy,nvitop,gpuwatch --json" --out "$R/self_tui2" > "$R/self_tui2.log" 2>&1
  tail -8 "$R/self_tui2.log"
  step "first frame, 3 starts each"
  timeout 80 python3 -m bench.first_frame --device cuda --starts 3 --out "$R/first_frame" > "$R/first_frame.log" 2>&1
  tail -8 "$R/first_frame.log"
}

timeout 540 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
