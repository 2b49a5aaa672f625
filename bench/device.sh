#!/usr/bin/env bash
# One device run, parameterised: each argument is one step, "TOOL [ARGS...]", run as
#   python3 -m bench.TOOL ARGS --out $R/NAME    (its log: $R/NAME.log)
# where NAME is TOOL, or TOOL_2, TOOL_3... when a tool runs twice. TOOL is a bench module:
# - accuracy, overhead, self, first_frame, startup_trace, collector_cost, profile_self, pyspy_cost write
#   into --out; given without ARGS they run with the arguments behind the current figures in
#   bench/RESULTS.md (DEFAULTS below), so rerunning a figure is `bash bench/device.sh TOOL`;
# - fixes and rescore read an earlier step's folder and print a table: their output is kept as
#   $R/NAME.md. In ARGS, @R stands for the results folder: "rescore @R/accuracy".
# The versions of the packages the scenarios use go into $R/machine.txt; recordings (*.jsonl) are
# gzipped before packing. Each step is cut at STEP_S seconds (default 300) and the whole run at RUN_S
# (default 540, under the device tool's 10-minute limit), so the packing at the end always runs;
# results come back as $OUT/results.tgz.
# Usage on the device (carry .whl):
#   COMMIT=$(git rev-parse --short HEAD) bash bench/device.sh first_frame "self --skip nvidia-smi,py-spy" overhead
#   COMMIT=... bash bench/device.sh "accuracy --device cuda --duration 30 --scenarios lightning" "fixes @R/accuracy"
set -u
source bench/device_setup.sh || exit 1  # installs the wheels and gpuwatch; defines R (results) and step

declare -A DEFAULTS=(
  [accuracy]="--device cuda --duration 18 --phase 12"
  [overhead]="--device cuda --phase 5 --rounds 3"
  [self]="--device cuda --duration 90 --alone 4 --steady-after 30 --skip nvidia-smi,py-spy"
  [first_frame]="--device cuda --starts 5"
  [startup_trace]="--device cuda --starts 3 --warmup 3"
  [collector_cost]="--device cuda --ticks 30"
  [profile_self]="--device cuda --settle 30 --duration 40"
  [pyspy_cost]="--device cuda --rounds 30"
)
PRINTS="fixes rescore"  # tools that print their result instead of writing into --out

python3 - >> "$R/machine.txt" 2>&1 <<'PY'
import importlib
for m in ("torch", "torchvision", "lightning", "tokenizers", "textual", "psutil", "pynvml"):
    try:
        print(m, getattr(importlib.import_module(m), "__version__", "?"))
    except Exception as e:  # noqa: BLE001 - a missing package is a line in machine.txt, not the end of the run
        print(m, "MISSING:", type(e).__name__, str(e)[:120])
PY

run_step() {  # $1: "TOOL [ARGS...]"
  local tool args name n=2
  read -r tool args <<< "$1"
  [ -n "$args" ] || args=${DEFAULTS[$tool]-}
  args=${args//@R/$R}
  name=$tool
  while [ -e "$R/$name.log" ]; do name=${tool}_$n; n=$((n + 1)); done
  step "$tool $args"
  # shellcheck disable=SC2086  # ARGS are words on purpose
  if [[ " $PRINTS " == *" $tool "* ]]; then
    timeout "${STEP_S:-300}" python3 -m "bench.$tool" $args > "$R/$name.md" 2> "$R/$name.log"
    echo "rc=$?"
    cat "$R/$name.md"
  else
    timeout "${STEP_S:-300}" python3 -m "bench.$tool" $args --out "$R/$name" > "$R/$name.log" 2>&1
    echo "rc=$?"
    tail -15 "$R/$name.log" | grep -v "^$"
  fi
}

main() {
  local s
  for s in "$@"; do run_step "$s"; done
}

timeout "${RUN_S:-540}" bash -c "$(declare -p DEFAULTS PRINTS); $(declare -f step run_step main); R=$R; STEP_S=${STEP_S:-300}; main \"\$@\"" _ "$@"
step "packing"
find "$R" -name "*.jsonl" -exec gzip -9 {} + 2>/dev/null
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
