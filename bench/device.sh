#!/usr/bin/env bash
# One device run, parameterised: each argument is one step, "TOOL [ARGS...]", run as
#   python3 -m bench.TOOL ARGS --out $R/NAME   (log: $R/NAME.log; NAME is TOOL, or TOOL_2... when repeated)
# TOOL is a bench module that takes --out: accuracy, overhead, self, first_frame, collector_cost,
# profile_self. A step given without ARGS runs with the arguments behind the current figures in
# bench/RESULTS.md (DEFAULTS below), so a rerun of a figure is `bash bench/device.sh TOOL`.
# Each step is cut at STEP_S seconds (default 300) and the whole run at RUN_S (default 540, under the
# device tool's 10-minute limit), so the packing at the end always runs; results come back as
# $OUT/results.tgz with $R/machine.txt (host, driver, torch, working tree).
# Usage on the device (carry .whl, built with `pip wheel` from constraints.txt):
#   COMMIT=$(git rev-parse --short HEAD) bash bench/device.sh first_frame "self --skip nvidia-smi,py-spy" overhead
set -u
source bench/device_setup.sh || exit 1  # installs the wheels and gpuwatch; defines R (results) and step

declare -A DEFAULTS=(
  [accuracy]="--device cuda --duration 18 --phase 12"
  [overhead]="--device cuda --phase 5 --rounds 3"
  [self]="--device cuda --duration 90 --alone 4 --steady-after 30 --skip nvidia-smi,py-spy"
  [first_frame]="--device cuda --starts 5"
  [collector_cost]="--device cuda --ticks 30"
  [profile_self]="--device cuda --settle 30 --duration 40"
)

run_step() {  # $1: "TOOL [ARGS...]"
  local tool args name n=2
  read -r tool args <<< "$1"
  [ -n "$args" ] || args=${DEFAULTS[$tool]-}
  name=$tool
  while [ -e "$R/$name.log" ]; do name=${tool}_$n; n=$((n + 1)); done
  step "$tool $args"
  # shellcheck disable=SC2086  # ARGS are words on purpose
  timeout "${STEP_S:-300}" python3 -m "bench.$tool" $args --out "$R/$name" > "$R/$name.log" 2>&1
  echo "rc=$?"
  tail -15 "$R/$name.log" | grep -v "^$"
}

main() {
  local s
  for s in "$@"; do run_step "$s"; done
}

timeout "${RUN_S:-540}" bash -c "$(declare -p DEFAULTS); $(declare -f step run_step main); R=$R; STEP_S=${STEP_S:-300}; main \"\$@\"" _ "$@"
step "packing"
tar czf "$OUT/results.tgz" -C "$OUT" r && rm -rf "$R"
ls -la "$OUT"
