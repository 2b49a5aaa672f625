# Sourced by bench/device.sh (and the past runs' scripts in bench/results/scripts/): installs the
# carried wheels and gpuwatch itself into /tmp/site (the GPU machine has no registry access), writes
# what the machine is to $OUT/r/machine.txt, and defines R (the results folder) and step.
#   carry: [".whl"];  command: COMMIT=<sha> bash bench/device.sh STEP ...
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/gw . >/tmp/gw-install.log 2>&1 || { cat /tmp/gw-install.log; return 1; }
# Byte-compile what was just installed, as a plain `pip install` does: with --no-compile (above) and
# no cached bytecode, every Python start on the device would compile textual, rich and gpuwatch from
# source again (about 1.0 s an import of the TUI), which a user's install never does, so start-up
# and first-frame figures would measure the compiler.
python3 -m compileall -q -j 0 /tmp/site /tmp/gw >/dev/null 2>&1 || echo "compileall failed: start-up figures include compiling"
export PYTHONPATH=/tmp/gw:/tmp/site PATH=/tmp/gw/bin:/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT/r"
{
  echo "date: $(date -u +%FT%TZ)"; echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max,power.limit --format=csv
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  nproc; uname -r; which py-spy gpuwatch
} > "$OUT/r/machine.txt" 2>&1
cat "$OUT/r/machine.txt"
R=$OUT/r
echo "working tree: ${COMMIT:-unknown} (the device copy's .git is stale)" >> "$R/machine.txt"
step() { echo "== $(date +%T) $*"; }
