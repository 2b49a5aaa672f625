#!/usr/bin/env bash
# Tenth H200 run, on the session's final code: what watching costs the job (interleaved phases,
# three rounds) and a second sample of gpuwatch's own cost and first frame beside nvitop (run 9
# read 5.8 % all in and 1.79 s; the spread between runs is what this adds).
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run10.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
echo "working tree: ${COMMIT:-unknown} (the device copy's .git is stale)" >> "$R/machine.txt"
step() { echo "== $(date +%T) $*"; }

main() {
  step "overhead on the job's steps"
  timeout 200 python3 -m bench.overhead --device cuda --phase 5 --rounds 3 --out "$R/overhead" > "$R/overhead.log" 2>&1
  tail -12 "$R/overhead.log"

  step "own cost beside nvitop"
  timeout 200 python3 -m bench.self --device cuda --duration 40 --alone 4 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"
}

timeout 450 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
