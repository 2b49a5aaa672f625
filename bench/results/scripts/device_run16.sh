#!/usr/bin/env bash
# Sixteenth H200 run, on the fifth session's final code: what watching costs the job's steps,
# interleaved phases (alone / TUI / --json / fastest sampling), two rounds, 5 s each: runs 13-15's
# single 90 s phases against 4 s alone phases read 0.974-1.025, too noisy to settle 1 %.
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/device_run16.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step
step "overhead on the job's steps"
timeout 170 python3 -m bench.overhead --device cuda --phase 5 --rounds 2 --out "$R/overhead" > "$R/overhead.log" 2>&1
tail -12 "$R/overhead.log"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
