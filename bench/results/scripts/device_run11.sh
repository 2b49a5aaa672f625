#!/usr/bin/env bash
# Eleventh H200 run (two calls), after this session's first-frame and cost work: the first frame
# over five starts each (TUI, --json, nvitop) with byte-compiled installs (device_setup.sh now
# compiles, as pip does); own cost over 90 s per observer with "steady" from 30 s on, past the
# relaxed stack pace's onset (~15 s; runs 7-10 counted from 5 s on, half of it at full pace); and
# the switch scenario (the verdict must not have moved: relaxed worker dumps are thinner now).
# Part 1 showed the TUI's stack pace flapping on this job (GPU-bound at 0.68 <-> 0.82 around the
# relaxing threshold 0.8); part 2 runs with it at 0.6 and records both gpuwatch observers' verdicts.
# Usage on the device (carry .whl):  PART=1 COMMIT=<sha> bash bench/device_run11.sh ; then PART=2
set -u
source bench/device_setup.sh || exit 1  # also sets R and step

part1() {
  step "import time of the TUI, compiled (2 runs)"
  for i in 1 2; do python3 -X importtime -c "import gpuwatch.tui.app" 2> "$R/importtime_$i.txt"; done
  for i in 1 2; do sort -t'|' -k2 -n "$R/importtime_$i.txt" | tail -2; done

  step "first frame, 5 starts each"
  timeout 150 python3 -m bench.first_frame --device cuda --starts 5 --out "$R/first_frame" > "$R/first_frame.log" 2>&1
  tail -8 "$R/first_frame.log"

  step "own cost beside nvitop, 90 s each, steady from 30 s"
  timeout 360 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvidia-smi,py-spy" --out "$R/self" > "$R/self.log" 2>&1
  tail -12 "$R/self.log"
}

part2() {
  step "switch scenario, 25 s phases"
  timeout 170 python3 -m bench.accuracy --device cuda --scenarios switch --phase 25 --out "$R/acc_switch" > "$R/accuracy_switch.log" 2>&1
  tail -3 "$R/accuracy_switch.log"

  step "own cost again, TUI and --json recording their verdicts, 90 s, steady from 30 s"
  timeout 260 python3 -m bench.self --device cuda --duration 90 --alone 4 --steady-after 30 --skip "nvitop,nvidia-smi,py-spy" --record-dir "$R/self2/rec" --out "$R/self2" > "$R/self2.log" 2>&1
  tail -10 "$R/self2.log"
  gzip -f "$R"/self2/rec/*.jsonl
}

timeout 560 bash -c "$(declare -f step part1 part2); R=$R; part${PART:-1}"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
