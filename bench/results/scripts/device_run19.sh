#!/usr/bin/env bash
# Nineteenth H200 run (sixth session): the job's steps with gpuwatch attached, interleaved, on the
# code of run 18 (collectors on three threads). Usage on the device (carry .whl):
#   COMMIT=<sha> bash bench/device_run19.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step
step "overhead on the job's steps"
timeout 170 python3 -m bench.overhead --device cuda --phase 5 --rounds 2 --out "$R/overhead" > "$R/overhead.log" 2>&1
tail -12 "$R/overhead.log"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
