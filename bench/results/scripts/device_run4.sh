#!/usr/bin/env bash
# Fourth H200 run, after the cost work (cheaper collectors, prestart, TUI repaints, relaxed stack
# pace): gpuwatch's own cost against nvitop over 40 s (long enough for the pace to relax), what it
# costs the job, where its CPU goes now, and the switch scenario with 25 s phases (the healthy phase
# relaxes the pace before the switch to decode, so this measures the latency after a relaxed stretch).
# Usage on the device (carry .whl):  bash bench/device_run4.sh
set -u
source bench/device_setup.sh || exit 1
R=$OUT/r
step() { echo "== $(date +%T) $*"; }

main() {
  step "gpuwatch's own cost vs nvitop (nvidia-smi dmon and py-spy top: run 2)"
  timeout 200 python3 -m bench.self --device cuda --duration 40 --alone 5 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -14 "$R/self.log"

  step "overhead on the job's steps"
  timeout 130 python3 -m bench.overhead --device cuda --phase 5 --rounds 2 --out "$R/overhead" > "$R/overhead.log" 2>&1
  tail -12 "$R/overhead.log"

  step "switch scenario, 25 s phases"
  timeout 150 python3 -m bench.accuracy --device cuda --scenarios switch --phase 25 --out "$R/acc_switch" > "$R/accuracy_switch.log" 2>&1
  tail -6 "$R/accuracy_switch.log"

  step "where gpuwatch's CPU goes now"
  timeout 90 python3 -m bench.profile_self --device cuda --duration 25 --out "$R/profile" > "$R/profile.log" 2>&1
  tail -40 "$R/profile.log"
}

timeout 575 bash -c "$(declare -f step main); R=$R; main"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
