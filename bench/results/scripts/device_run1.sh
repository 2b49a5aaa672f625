#!/usr/bin/env bash
# First H200 run: raw NVML and py-spy captures (test fixtures), gpuwatch against nvidia-smi on a
# real job, and recordings of every CUDA scenario with ground truth (bench/accuracy.py).
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run1.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
step() { echo "== $(date +%T) $*"; }

main() {
  step "NVML raw capture"
  timeout 150 python3 bench/capture_nvml.py --out "$R/nvml_capture.json" > "$R/capture_nvml.log" 2>&1
  tail -3 "$R/capture_nvml.log"

  step "py-spy dumps of CUDA jobs"
  mkdir -p "$R/pyspy"
  timeout 150 python3 bench/capture_stacks.py --out "$R/pyspy" --label "H200 VM, torch 2.11, ${COMMIT:-?}, $(date -u +%F)" > "$R/capture_stacks.log" 2>&1
  tail -3 "$R/capture_stacks.log"

  step "gpuwatch --json vs nvidia-smi on a healthy job"
  python3 -m bench.scenarios.healthy --device cuda --duration 30 > "$R/healthy_markers.jsonl" 2> "$R/healthy_job.err" &
  local job=$!
  sleep 12
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,temperature.gpu,power.draw,clocks.sm,pcie.link.gen.current,pcie.link.width.current --format=csv -lms 1000 > "$R/smi.csv" 2>&1 &
  local smi=$!
  timeout 40 gpuwatch --pid "$job" --json --duration 10 --record "$R/healthy_h200.jsonl" > "$R/healthy_stream.jsonl" 2> "$R/gw_healthy.err"
  echo "gpuwatch rc=$?"
  kill $smi 2>/dev/null; kill $job 2>/dev/null; wait $job 2>/dev/null

  step "accuracy: every CUDA scenario, recorded"
  timeout 330 python3 -m bench.accuracy --device cuda --duration 24 --phase 15 --out "$R/acc" > "$R/accuracy.log" 2>&1
  tail -25 "$R/accuracy.log"
}

timeout 560 bash -c "$(declare -f step main); R=$R COMMIT=${COMMIT:-}; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
