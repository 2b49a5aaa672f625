#!/usr/bin/env bash
# Second H200 run: accuracy of every CUDA scenario (recorded, rescorable with bench/rescore.py),
# two ranks sharing the GPU, what watching costs the job (bench/overhead.py) and gpuwatch's own
# cost against nvitop, nvidia-smi dmon and py-spy top (bench/self.py).
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run2.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
step() { echo "== $(date +%T) $*"; }

main() {
  step "accuracy: every CUDA scenario, recorded"
  timeout 280 python3 -m bench.accuracy --device cuda --duration 18 --phase 12 --out "$R/acc" > "$R/accuracy.log" 2>&1
  tail -16 "$R/accuracy.log"

  step "two DDP ranks sharing the GPU, rank 1 input-bound, gpuwatch on the torchrun PID"
  python3 -m torch.distributed.run --nproc_per_node 2 bench/ddp_gpu.py --slow-rank 1 --seconds 40 > "$R/ddp_out.jsonl" 2> "$R/ddp_err.log" &
  local job=$!
  sleep 14
  timeout 30 gpuwatch --pid "$job" --json --duration 12 --record "$R/ddp_one_gpu.jsonl" > /dev/null 2> "$R/gw_ddp.err"
  echo "gpuwatch rc=$?"; kill $job 2>/dev/null; wait $job 2>/dev/null; tail -3 "$R/ddp_err.log"

  step "gpuwatch diagnose on a decode-bound job"
  python3 -m bench.scenarios.decode --device cuda --duration 40 > /dev/null 2> "$R/decode_job.err" &
  job=$!
  sleep 8
  timeout 40 gpuwatch diagnose --pid "$job" --duration 15 --format md -o "$R/diagnose_h200_decode.md" 2> "$R/diagnose.err"
  echo "diagnose rc=$?"; kill $job 2>/dev/null; wait $job 2>/dev/null

  step "overhead on the job's steps"
  timeout 120 python3 -m bench.overhead --device cuda --phase 5 --rounds 2 --out "$R/overhead" > "$R/overhead.log" 2>&1
  tail -12 "$R/overhead.log"

  step "gpuwatch's own cost vs nvitop, nvidia-smi dmon, py-spy top"
  timeout 130 python3 -m bench.self --device cuda --duration 12 --alone 4 --out "$R/self" > "$R/self.log" 2>&1
  tail -14 "$R/self.log"
}

timeout 570 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
