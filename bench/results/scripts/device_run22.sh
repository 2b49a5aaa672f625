#!/usr/bin/env bash
# Twenty-second H200 run (issue 20): the Lightning job as Lightning runs it by default
# (persistent_workers=False: run 21 found it input-bound by its workers' start-up, not GPU-bound as
# it was labelled) and with its fix (persistent workers), each watched by gpuwatch --json --record.
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/results/scripts/device_run22.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step
step "Lightning before and after persistent workers, 30 s each"
timeout 200 python3 -m bench.accuracy --device cuda --duration 30 --out "$R/field" \
  --scenarios lightning,lightning_persistent > "$R/field.log" 2>&1
grep -E "^accuracy:|^\|" "$R/field.log" | tail -8
timeout 30 python3 -m bench.fixes "$R/field" > "$R/fixes.md" 2>&1; cat "$R/fixes.md"
step "packing"
gzip -9 "$R"/field/*.jsonl 2>/dev/null
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
