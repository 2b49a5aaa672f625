#!/usr/bin/env bash
# Twenty-first H200 run (issue 20, field truth): the real-code scenarios (torchvision ImageFolder,
# tokenizers, Lightning, a 1 GiB checkpoint every 3 s) and the before/after pairs of each fix, each
# watched by gpuwatch --json --record (bench/accuracy.py); then estimate vs measured (bench/fixes.py)
# and the recordings replayed through the diagnosis of this commit (bench/rescore.py).
# Usage on the device (carry .whl):  COMMIT=<sha> bash bench/results/scripts/device_run21.sh
set -u
source bench/device_setup.sh || exit 1  # also sets R and step
step "packages the scenarios need (the device image's own; nothing carried for them)"
python3 - >> "$R/machine.txt" 2>&1 <<'PY'
import importlib
for m in ("torchvision", "lightning", "pytorch_lightning", "tokenizers", "textual", "psutil", "pynvml"):
    try:
        print(m, getattr(importlib.import_module(m), "__version__", "?"))
    except Exception as e:  # noqa: BLE001 - a missing package is a line in the log, not the end of the run
        print(m, "MISSING:", type(e).__name__, str(e)[:120])
PY
tail -7 "$R/machine.txt"
export GPUWATCH_BENCH_IMAGES=/tmp/gw-images  # one JPEG tree for the four imagefolder variants
step "field scenarios, 30 s each, gpuwatch --json --record beside each"
timeout 455 python3 -m bench.accuracy --device cuda --duration 30 --out "$R/field" \
  --scenarios imagefolder_epochs,imagefolder_persistent,imagefolder_few,imagefolder_gpu,checkpoint,tokenize,tokenize_workers,lightning,h2d,h2d_pinned \
  > "$R/field.log" 2>&1
grep -E "^accuracy:|^\|" "$R/field.log" | tail -24
step "estimate vs measured, and the recordings replayed through this commit's diagnosis"
timeout 40 python3 -m bench.fixes "$R/field" > "$R/fixes.md" 2>&1; cat "$R/fixes.md"
timeout 30 python3 -m bench.rescore "$R/field" > "$R/rescore.md" 2>&1
step "packing"
gzip -9 "$R"/field/*.jsonl 2>/dev/null
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
