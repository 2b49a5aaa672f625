#!/usr/bin/env bash
# Third H200 run: the 2-minute healthy run (verdict changes), the pinned-copy h2d scenario, memory
# used against nvidia-smi after the switch to NVML memory info v2, and where gpuwatch's own CPU goes
# (bench/profile_self.py: py-spy on the TUI and on --json watching the steady job with 8 workers).
# Usage on the device (carry .whl):  bash bench/device_run3.sh
set -u
git checkout -q HEAD -- tui 2>/dev/null  # profile the committed TUI (the working copy may be mid-edit)
source bench/device_setup.sh || exit 1
R=$OUT/r
step() { echo "== $(date +%T) $*"; }

main() {
  step "accuracy: healthy for 130 s, nvidia-smi beside it"
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,temperature.gpu,power.draw,clocks.sm --format=csv -lms 1000 > "$R/smi_healthy.csv" 2>&1 &
  local smi=$!
  timeout 200 python3 -m bench.accuracy --device cuda --scenarios healthy --duration 130 --out "$R/acc_long" > "$R/accuracy_long.log" 2>&1
  kill $smi 2>/dev/null
  tail -8 "$R/accuracy_long.log"

  step "accuracy: pinned-copy h2d"
  timeout 90 python3 -m bench.accuracy --device cuda --scenarios h2d_pinned --duration 25 --out "$R/acc_pinned" > "$R/accuracy_pinned.log" 2>&1
  tail -8 "$R/accuracy_pinned.log"

  step "where gpuwatch's CPU goes (py-spy on gpuwatch)"
  timeout 150 python3 -m bench.profile_self --device cuda --duration 25 --out "$R/profile" > "$R/profile.log" 2>&1
  tail -50 "$R/profile.log"
}

timeout 570 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
