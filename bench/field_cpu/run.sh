#!/usr/bin/env bash
# Run one field script under gpuwatch: bench/field_cpu/run.sh NAME OUTDIR [WATCH_S] [script args...]
# Starts the script, waits for its ready line, watches it with `gpuwatch watch --json --record`
# for WATCH_S seconds (default 75), then writes the report of the recording and the script's own
# time split. Run from the repository root with the project's Python on PATH or in .venv.
set -euo pipefail
name=$1; out=$2; watch_s=${3:-75}; shift 3 || shift $#
py=${PYTHON:-.venv/bin/python}
mkdir -p "$out"
"$py" "bench/field_cpu/$name.py" --duration $((watch_s + 15)) "$@" >"$out/$name.truth.jsonl" 2>"$out/$name.stderr" &
job=$!
for _ in $(seq 600); do grep -q '"ready"' "$out/$name.truth.jsonl" 2>/dev/null && break; sleep 0.2; done
sleep 5   # past the first batches
"$py" -m gpuwatch watch --pid "$job" --json --duration "$watch_s" --record "$out/$name.jsonl.gz" --force \
    >"$out/$name.json" 2>"$out/$name.gpuwatch.stderr" || true
wait "$job" || true
"$py" -m gpuwatch diagnose --replay "$out/$name.jsonl.gz" -o "$out/$name.md" --force
