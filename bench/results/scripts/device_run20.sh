#!/usr/bin/env bash
# Twentieth H200 run (sixth session): run 19 again with three rounds (its --json read 0.989 over two), on the
# code of run 18 (collectors on three threads). Usage on the device (carry .whl):
#   COMMIT=<sha> bash bench/device_run20.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step
step "overhead on the job's steps"
timeout 190 python3 -m bench.overhead --device cuda --phase 5 --rounds 3 --out "$R/overhead" > "$R/overhead.log" 2>&1
tail -12 "$R/overhead.log"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
