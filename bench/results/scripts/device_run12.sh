#!/usr/bin/env bash
# Twelfth H200 run, on the session's final code (stack pace relaxing from medium confidence, thinner
# relaxed worker dumps, the TUI's frame path from run 11): first frame over five starts each, and
# own cost over 90 s per observer with "steady" from 30 s on, beside nvitop. No recording.
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run12.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

main() {
  step "first frame, 5 starts each"
  timeout 150 python3 -m bench.first_frame --device cuda --starts 5 --out "$R/first_frame" > "$R/first_frame.log" 2>&1
  tail -8 "$R/first_frame.log"

  step "own cost beside nvitop, 90 s each, steady from 30 s"
  timeout 360 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"
}

timeout 540 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
