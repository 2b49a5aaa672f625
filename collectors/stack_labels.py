"""What a thread is doing, from its py-spy stack: a label and the function behind it. Pure.

Matching uses function names plus file-name suffixes, never line numbers (they move between
versions). Patterns come from reading torch 2.13's sources and from real py-spy dumps
(docs: /work/shared/docs/signals.md §5.6; fixtures: tests/data/pyspy/).

What the frames cannot tell (py-spy without ``--native`` shows Python frames only):
- ``.item()``, ``.cpu()``, ``.tolist()``, a blocking ``.to(device)`` and every torch op are C++
  calls, so the leaf is the *user line* that made the call. While the GPU works, a main thread that
  spin-waits in ``cudaStreamSynchronize`` (state R, "active") looks exactly like one dispatching
  kernels from that line. Such a thread is labelled ``dispatch`` with the line as detail; only
  Python-level sync points (``torch.cuda.synchronize``, ``Event/Stream.synchronize``, formatting or
  printing a tensor, GradScaler's found-inf check) and native frames (blocking ``--native`` dumps)
  give ``sync``. The diagnosis must weigh ``dispatch`` against GPU activity.
- Likewise H2D is seen only through library helpers (``pin_memory``, ``send_to_device``, ...);
  a bare ``x.to("cuda")`` in user code reads as ``dispatch``.
- A worker blocked inside ``__getitem__`` (not on the CPU) is labelled ``io`` only on a sign of a
  read: D state (idle to py-spy, so the caller passes the kernel state), a reading frame (READS,
  LOADS), or a hot function named for reading (READ_WORDS). Otherwise it is ``wait``: py-spy alone
  cannot tell a blocking read from a ``time.sleep`` or a lock, and a sleep is no read. The same
  name rule is what the diagnosis applies to recordings made before the ``wait`` label.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence

from gpuwatch.collectors.pyspy import FrameRecord, ThreadRecord
from gpuwatch.model.procs import ROLE_MAIN, ROLE_WORKER
from gpuwatch.model.stacks import (
    BACKWARD, CHECKPOINT, COLLECTIVE, COMPILE, DATA_IPC, DATA_WAIT, DISPATCH, H2D, INLINE_LOAD, LOOP_PREP, OPTIMIZER, OTHER, PIN_BUSY,
    PIN_IDLE, PIN_WORK_DETAIL, ROLE_MAIN_THREAD, ROLE_OTHER_THREAD, ROLE_PIN, READ_WORDS, SAMPLER, SYNC, D_STATE_DETAIL, NETWORK_DETAIL, STOPPED_DETAIL, W_BUSY,
    W_IDLE, W_IO, W_START, W_WAIT,
    ThreadStack,
)
from gpuwatch.model.stacks import ROLE_WORKER as ROLE_WORKER_THREAD

# (function, file suffix): function is "Class.method" or "func"; "" matches any function.
Pattern = tuple[str, str]

MEMO = 8192
"""Answers kept per file name (origin, file-suffix matches; functools.lru_cache): every dump of a
training loop shows the same few files, and the string work per frame and pattern was most of
labelling a dump."""

DATALOADER = "torch/utils/data/dataloader.py"
FETCH: Pattern = ("fetch", "torch/utils/data/_utils/fetch.py")
WORKER_LOOP: Pattern = ("_worker_loop", "torch/utils/data/_utils/worker.py")
"""A DataLoader worker's loop: before its first item it seeds and calls the loader's
``worker_init_fn``, the only code outside torch and the standard library it calls directly."""
ITER_START: tuple[Pattern, ...] = (
    ("_BaseDataLoaderIter.__init__", DATALOADER),
    ("_BaseDataLoaderIter._reset", DATALOADER),
)
"""Where an iterator calls iter() on its sampler: made (``__init__``) and at each epoch's start (``_reset``)."""
NEXT_INDEX: Pattern = ("_BaseDataLoaderIter._next_index", DATALOADER)
"""Where a DataLoader iterator draws the next batch's indices from its sampler, in the training
process (for every num_workers): handing indices to the workers (``_try_put_index``) and priming
them at each epoch's start (``_reset``) both call it."""
MP_LOADER_WAIT: tuple[Pattern, ...] = (
    ("_MultiProcessingDataLoaderIter._try_get_data", DATALOADER),
    ("_MultiProcessingDataLoaderIter._get_data", DATALOADER),
    ("_MultiProcessingDataLoaderIter._next_data", DATALOADER),
)
MP_LOADER_START: tuple[Pattern, ...] = (  # epoch boundaries: workers started or shut down
    ("_MultiProcessingDataLoaderIter.__init__", DATALOADER),
    ("_MultiProcessingDataLoaderIter._reset", DATALOADER),
    ("_MultiProcessingDataLoaderIter._shutdown_workers", DATALOADER),
)
# Receiving a batch (fd passing of shared storage, unpickling) or handing out indices.
IPC: tuple[Pattern, ...] = (
    ("", "torch/multiprocessing/reductions.py"),
    ("", "multiprocessing/resource_sharer.py"),
    ("recv_bytes", "multiprocessing/connection.py"),
    ("_recv_bytes", "multiprocessing/connection.py"),
    ("_recv", "multiprocessing/connection.py"),
    ("_MultiProcessingDataLoaderIter._process_data", DATALOADER),
    ("_MultiProcessingDataLoaderIter._try_put_index", DATALOADER),
)
THREAD_QUEUE_GET: tuple[Pattern, ...] = (("Queue.get", "queue.py"), ("get", "queue.py"))
"""A ``queue.Queue`` (threads of one process) read; ``get`` is how Python 3.10 and older print it."""
QUEUE_READS: tuple[Pattern, ...] = THREAD_QUEUE_GET + (
    ("Queue.get", "multiprocessing/queues.py"),
    ("SimpleQueue.get", "multiprocessing/queues.py"),
    ("IMapIterator.next", "multiprocessing/pool.py"),
    ("IMapIterator.__next__", "multiprocessing/pool.py"),
    ("ApplyResult.get", "multiprocessing/pool.py"),
    ("Future.result", "concurrent/futures/_base.py"),
    ("_ConnectionBase.recv", "multiprocessing/connection.py"),
)
"""Reads of something other threads or processes of the job produce: a queue, a Pool's results, a
future, a pipe. Called straight from the job's own code by its main thread, such a read is where the
training loop waits for its batches when it feeds itself without a DataLoader (a multiprocessing.Pool
that preprocesses into a queue)."""
QUEUE_DEPTH = 6
"""Frames searched from the leaf for a queue read: its own waits (Condition.wait, Event.wait,
Connection._recv...) sit at most a few frames under it."""
NEXT_FUNCS = ("__next__", "next")
"""An iterator's next item: a loop's ``for batch in loader`` / ``next(loader)``."""
PIN_LOOP: Pattern = ("_pin_memory_loop", "torch/utils/data/_utils/pin_memory.py")
PIN_WORK: Pattern = ("pin_memory", "torch/utils/data/_utils/pin_memory.py")
WAITS: tuple[Pattern, ...] = (
    ("Queue.get", "multiprocessing/queues.py"),
    ("Queue.get", "queue.py"),
    ("", "selectors.py"),
    ("Condition.wait", "threading.py"),
    ("Event.wait", "threading.py"),
    ("wait", "multiprocessing/connection.py"),
    ("Connection._poll", "multiprocessing/connection.py"),
)
CHECKPOINTS: tuple[Pattern, ...] = (
    ("", "torch/serialization.py"),
    ("", "torch/distributed/checkpoint/"),
    ("save_file", "safetensors/torch.py"),
    ("save_model", "safetensors/torch.py"),
)
CHECKPOINT_FUNCS = ("save_checkpoint", "_save_checkpoint", "save_pretrained", "save_state")
SYNCS: tuple[Pattern, ...] = (
    ("synchronize", "torch/cuda/__init__.py"),
    ("Stream.synchronize", "torch/cuda/streams.py"),
    ("Event.synchronize", "torch/cuda/streams.py"),
    ("Tensor.__format__", "torch/_tensor.py"),  # f"{loss:.3f}" calls .item()
    ("", "torch/_tensor_str.py"),  # printing a CUDA tensor copies it to the host
    # GradScaler.step's found-inf check: sum(v.item() for v in ...) in a generator expression.
    ("GradScaler._maybe_opt_step", "torch/amp/grad_scaler.py"),
    ("<genexpr>", "torch/amp/grad_scaler.py"),
)
NATIVE_SYNCS = ("cudaStreamSynchronize", "cuStreamSynchronize", "cudaDeviceSynchronize", "cuCtxSynchronize",
                "cudaEventSynchronize", "cuEventSynchronize", "memcpy_and_sync", "_local_scalar_dense_cuda")
H2DS: tuple[Pattern, ...] = (
    PIN_WORK,
    ("send_to_device", "accelerate/utils/operations.py"),
    ("_prepare_input", "transformers/trainer.py"),
    ("BatchEncoding.to", "transformers/tokenization_utils_base.py"),
    ("BatchFeature.to", "transformers/feature_extraction_utils.py"),
    ("_recursive_to", "torch/distributed/utils.py"),
)
NATIVE_H2DS = ("copy_kernel_cuda", "cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2")
NATIVE_LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")
"""Kernel launches (``--native`` dumps): under a transform they say it runs on the GPU."""
H2D_FUNC_WORD = "to_device"
"""Names like move_data_to_device (Lightning), batch_to_device, send_to_device (accelerate)."""
BACKWARDS: tuple[Pattern, ...] = (
    ("_engine_run_backward", "torch/autograd/graph.py"),
    ("backward", "torch/autograd/__init__.py"),
    ("grad", "torch/autograd/__init__.py"),
    ("Tensor.backward", "torch/_tensor.py"),
)
OPTIMIZERS: tuple[Pattern, ...] = (
    ("", "torch/optim/"),
    ("", "torch/amp/grad_scaler.py"),
    ("", "torch/nn/utils/clip_grad.py"),
    ("zero_grad", ""),
)
COMPILES: tuple[Pattern, ...] = (
    ("", "torch/_dynamo/convert_frame.py"),  # a cache miss: every frame Dynamo compiles enters here
    ("", "torch/_dynamo/symbolic_convert.py"),
    ("", "torch/_dynamo/output_graph.py"),
    ("", "torch/_dynamo/variables/"),
    ("", "torch/_dynamo/bytecode_transformation.py"),
    ("", "torch/_functorch/_aot_autograd/graph_compile.py"),
    ("", "torch/_functorch/_aot_autograd/dispatch_and_compile_graph.py"),
    ("", "torch/_functorch/_aot_autograd/autograd_cache.py"),
    ("", "torch/_functorch/partitioners.py"),
    ("", "torch/_inductor/graph.py"),
    ("", "torch/_inductor/scheduler.py"),
    ("", "torch/_inductor/lowering.py"),
    ("", "torch/_inductor/ir.py"),
    ("", "torch/_inductor/codegen/"),
    ("", "torch/_inductor/fx_passes/"),
    ("", "torch/_inductor/pattern_matcher.py"),
    ("", "torch/_inductor/select_algorithm.py"),
    ("", "torch/_inductor/autotune_process.py"),
    ("", "torch/_inductor/kernel/"),
    ("", "torch/_inductor/cpp_builder.py"),
    ("", "torch/_inductor/cpu_vec_isa.py"),
    ("", "torch/_inductor/async_compile.py"),
    ("", "torch/_inductor/runtime/compile_tasks.py"),
    ("", "triton/compiler/code_generator.py"),
    ("", "triton/backends/nvidia/compiler.py"),
    ("", "triton/backends/amd/compiler.py"),
    ("", "triton/runtime/build.py"),
)
"""torch.compile compiling, not running what it compiled: files that only a cache miss runs
(Dynamo's tracing, AOTAutograd's graph capture, Inductor's lowering, code generation, C++/Triton
builds and autotuning). Runtime frames of a compiled model stay out: ``eval_frame.py``'s wrapper,
AOTAutograd's ``runtime_wrappers.py`` (and ``jit_compile_runtime_wrappers.py``, which held the
compiled function's forward and backward before torch 2.5), Inductor's ``output_code.py`` and the
rest of its ``runtime/`` (the kernels' launchers), triton's ``runtime/jit.py`` and driver; so are
the threads of Inductor's compile-worker pool (``compile_worker/``: a timer and a reader that wait
all run long). Files that hold both are read by function name (COMPILE_NAMES). Read from torch
2.11's sources and from recordings of jobs compiling on the CPU
(tests/data/cpu_field/compile_start.jsonl.gz: graph.py, codecache.py, cpp_builder.py,
async_compile.py, compile_tasks.py, cpu_vec_isa.py) and on an H100 (tests/data/h100: select_algorithm,
autotune_process, triton/compiler on the autograd thread)."""
COMPILE_NAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("torch/_inductor/compile_fx.py", ("compile", "partition", "graph_passes", "codegen")),
    ("torch/_inductor/codecache.py", ("load", "compile", "build", "hash", "lookup")),
    ("torch/_inductor/runtime/triton_heuristics.py", ("precompile", "benchmark_all_configs", "autotune_to_one_config")),
    ("triton/compiler/compiler.py", ("compile",)),
)
"""(file, words): a frame of a file that also runs at every step counts as compiling only where the
last part of its function's name holds one of the words. ``compile_fx.py`` runs the CUDA-graph
replay of ``mode="reduce-overhead"`` (``cudagraphify.<locals>.run``) at every step; ``codecache.py``
held ``CompiledFxGraph.__call__`` before torch 2.6; ``triton_heuristics.py`` and triton's
``compiler.py`` launch kernels (``CachingAutotuner.run``, ``CompiledKernel.launch_metadata``)."""
DISPATCHES: tuple[Pattern, ...] = (
    ("", "torch/nn/"),
    ("", "torch/functional.py"),
    ("", "torch/_dynamo/"),
    ("", "torch/_inductor/"),
    ("", "torch/_functorch/"),
    ("", "torch/fx/"),
    ("", "torch/utils/checkpoint.py"),
    ("", "torchinductor_"),  # generated code under /tmp/torchinductor_<user>/
)
PREP_LIBS: tuple[tuple[str, str], ...] = (
    ("torchvision/transforms/", "torchvision transforms"),
    ("torchvision/io/", "torchvision decoding"),
    ("PIL/", "PIL"),
    ("albumentations/", "albumentations"),
    ("transformers/tokenization_utils", "a tokenizer"),
    ("tokenizers/", "a tokenizer"),
    ("sentencepiece/", "a tokenizer"),
    ("tiktoken/", "a tokenizer"),
)
"""(file-name fragment, the library in words): libraries that prepare data (decode, resize, augment,
tokenise). On the main thread outside a DataLoader fetch they are the training loop preparing data
itself (LOOP_PREP). GPU-first libraries (kornia, torchaudio's transforms, DALI) stay out: on the
main thread they launch kernels, which is dispatch. torchvision's own models are not matched:
``torchvision/models/detection/transform.py`` is a model's part, run on the GPU."""
PREP_NOT = ("save", "show", "write", "batch_decode", "encode_jpeg", "encode_png")
"""Function-name words of a prep library's outermost frame that are output, not preparation
(``Image.save`` of a sample grid from the main thread; a tokenizer decoding predictions for a metric;
encoding an image to log it)."""
PREP_NOT_CALLERS = ("torch/utils/tensorboard/", "wandb/", "mlflow/", "matplotlib/", "torchvision/utils.py",
                    "datasets/arrow_dataset.py", "datasets/dataset_dict.py")
"""Files outside a prep frame that make it something else: logging or plotting an image (TensorBoard,
W&B, MLflow, matplotlib, torchvision's ``save_image``), or preprocessing a whole dataset once before
training (Hugging Face ``datasets``' ``map``), not preparing the loop's next batch."""
GPU_SIDE_CALLERS = ("forward", "training_step", "validation_step", "test_step", "predict_step",
                    "on_after_batch_transfer")
"""Function names outside a prep frame that put it on the GPU side of the step: a model's forward
(a normalisation inside the model), a LightningModule's steps and its after-transfer hook, which get
the batch already on the device. A transform module's own call (``Module._call_impl`` around
``Compose.forward``) is the prep itself."""
# Reads a worker is waiting on even while on the CPU (copying from the page cache, TLS).
NETWORK_READS: tuple[Pattern, ...] = (
    ("", "socket.py"), ("", "ssl.py"), ("", "http/client.py"), ("", "urllib3/response.py"),
    ("", "botocore/response.py"), ("", "httpcore/"),
)
"""Reads over a socket (a server, an object store; a client's own socket.py too: redis-py's, pyzmq's):
marked NETWORK_DETAIL and said as loading from a server, not as reads of a local disk (trial 36:
workers fetching over HTTP were told of the local ext4 disk)."""
READS: tuple[Pattern, ...] = (
    *NETWORK_READS, ("Path.read_bytes", "pathlib.py"), ("Path.read_text", "pathlib.py"),
)
# A command the worker runs and waits for (subprocess.run, Popen.communicate): no read of its own,
# though "Popen" holds "open" (trial 35: gzip | sort per sample read as a worker reading, and Disk).
SUBPROCESS: tuple[Pattern, ...] = (("", "subprocess.py"),)
# Loaders that read and then decode: I/O when the thread sleeps, CPU when it runs.
LOADS: tuple[Pattern, ...] = (
    ("ImageFile.load", "PIL/ImageFile.py"), ("open", "PIL/Image.py"), ("load", "numpy/lib/npyio.py"),
    ("load", "numpy/lib/_npyio_impl.py"), ("load", "torch/serialization.py"), ("", "h5py/_hl/"),
    ("", "tarfile.py"), ("", "zipfile.py"),
)
# Frames that mean "this thread waits for the other ranks". (function, file suffix); "" = any function.
# Measured on tests/jobs/ddp_cpu.py (torch 2.13, gloo): the fast rank's main thread sat in
# DistributedDataParallel._distributed_broadcast_coalesced <- _default_broadcast_coalesced <-
# _sync_module_buffers <- _sync_buffers <- _pre_forward (torch/nn/parallel/distributed.py) in 30 of 30
# dumps, and in all_reduce (torch/distributed/distributed_c10d.py) for explicit collectives.
COLLECTIVE_FRAMES: tuple[tuple[str, str], ...] = (
    ("", "torch/distributed/distributed_c10d.py"),  # all_reduce, broadcast, barrier, all_gather, ...
    ("", "torch/distributed/_functional_collectives.py"),
    ("", "torch/distributed/algorithms/join.py"),
    ("", "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py"),
    ("FSDPParamGroup.wait_for_unshard", "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py"),
    ("_sync_module_states", "torch/distributed/utils.py"),
    ("_sync_params_and_buffers", "torch/distributed/utils.py"),
    ("", "deepspeed/comm/"),
    ("wait_for_everyone", "accelerate/"),
) + tuple(
    (f"DistributedDataParallel.{f}", "torch/nn/parallel/distributed.py")
    for f in ("_sync_buffers", "_sync_module_buffers", "_default_broadcast_coalesced",
              "_distributed_broadcast_coalesced", "_sync_params_and_buffers", "_find_common_rank",
              "_check_global_requires_backward_grad_sync", "_match_all_reduce_for_bwd_pass",
              "_match_unused_params_allreduce", "_check_and_sync_module_buffers", "_sync_final_model")
)
NATIVE_COLLECTIVES = ("c10d::Reducer::finalize_backward", "c10d::ProcessGroup", "c10d::Work::wait",
                      "c10d::ProcessGroupNCCL::WorkNCCL::", "gloo::", "ncclGroupEnd")
"""With ``py-spy dump --native`` (measured here: DDP's gradient all-reduce waits in
``c10d::Reducer::finalize_backward`` under ``_engine_run_backward``; without --native only the latter
shows, i.e. the wait looks like backward)."""

DETAIL_CHARS = 120


def matches(frame: FrameRecord, pattern: Pattern) -> bool:
    func, file = pattern
    if file and not _file_matches(frame, file):
        return False
    return not func or _func_matches(frame.name, func)


def any_match(frames: Sequence[FrameRecord], patterns: Sequence[Pattern]) -> int | None:
    """Index (leaf = 0) of the innermost frame matching any pattern, or None."""
    for i, f in enumerate(frames):
        if any(matches(f, p) for p in patterns):
            return i
    return None


def thread_role(t: ThreadRecord, process_role: str) -> str:
    """main (main thread of a main process), worker (a DataLoader worker's main thread), pin, other."""
    main_thread = t.tid == t.pid if t.tid else t.name == "MainThread"
    if process_role == ROLE_WORKER:
        return ROLE_WORKER_THREAD if main_thread else ROLE_OTHER_THREAD
    if process_role == ROLE_MAIN:
        if main_thread:
            return ROLE_MAIN_THREAD
        if "_pin_memory_loop" in t.name or "pt_data_pin" in t.name or any_match(t.frames, (PIN_LOOP,)) is not None:
            return ROLE_PIN
    return ROLE_OTHER_THREAD


SourceLine = Callable[[str, int], "str | None"]
"""Looks up the text of a line of the target's source: (file name, line number) -> text or None."""

SYNC_CALLS = (".item()", ".tolist()", ".cpu()", "synchronize(")
"""Calls that make the host wait for the GPU (.item() and .cpu() end in
memcpy_and_sync -> cudaStreamSynchronize). Without --native, py-spy shows only the Python line that
made the call, so a spin-waiting .item() looks like dispatch; the line's own text tells them apart."""


def classify(t: ThreadRecord, role: str, state: str | None = None,
             source_line: SourceLine | None = None) -> tuple[str, str]:
    """(label, detail) for a thread of the given stack role. ``state``: kernel state letter, if read.
    ``source_line``: reads the job's source, to tell a sync call on the leaf line from dispatch."""
    if not t.frames:
        return OTHER, "no Python frames"
    if role == ROLE_MAIN_THREAD:
        label, detail = _main(t.frames, t.active)
        if label == DISPATCH and source_line is not None:
            label = _sync_by_source(t.frames[0], source_line) or label
        if label in (DISPATCH, OTHER) and source_line is not None:
            prep = _prep_by_source(t.frames, source_line)
            label, detail = (LOOP_PREP, prep) if prep else (label, detail)
    elif role == ROLE_WORKER_THREAD:
        label, detail = _worker(t.frames, t.active, state)
        if label == W_WAIT and source_line is not None and _reads_by_source(t.frames[0], source_line):
            label = W_IO
    elif role == ROLE_PIN:
        label, detail = _pin(t.frames, t.active)
    else:
        i = _compiling(t.frames)  # Inductor's Triton builds run on the autograd engine's thread too
        label, detail = (COMPILE, short_name(t.frames[i])) if i is not None else (OTHER, short_name(t.frames[0]))
    return label, detail[:DETAIL_CHARS]


AUTOGRAD_FRAMES = ("torch/autograd/", "_aot_autograd/runtime_wrappers.py")
"""Files on the autograd engine's thread while it runs a compiled graph's backward."""


def _engine_thread(s: ThreadStack) -> bool:
    """The thread is the autograd engine's: a thread started outside Python's threading module
    (Python names such a thread ``Dummy-N``, py-spy may read no name; the engine's device threads
    are C++ threads), or one whose frames show the engine running a backward. A Python thread of the
    job's own that compiles (an evaluation or warm-up thread with its own torch.compile) holds no
    backward of the main thread."""
    return (not s.thread_name or s.thread_name.startswith("Dummy-")
            or any(a in f for f in s.frames for a in AUTOGRAD_FRAMES))


def waits_on_compiler(stacks: Sequence[ThreadStack]) -> list[ThreadStack]:
    """One process's threads of one dump, the main thread's sample read as compiling where it waits
    in backward while another of its threads compiles. On a GPU the autograd engine runs backward on
    its own device thread, so the backward graph's lazy compile and its Triton builds happen there:
    an H100 job under torch.compile (max-autotune) sat 38 s in ``_engine_run_backward`` while its
    ``Dummy-1`` thread ran ``triton/compiler`` (tests/data/h100/compile_start.jsonl.gz)."""
    other = next((s for s in stacks if s.role == ROLE_OTHER_THREAD and s.label == COMPILE and _engine_thread(s)),
                 None)
    if other is None:
        return list(stacks)
    who = other.thread_name or f"thread {other.tid}"
    said = f"{other.detail} (on {who}; the main thread waits in backward)"[:DETAIL_CHARS]
    return [dataclasses.replace(s, label=COMPILE, detail=said)
            if s.role == ROLE_MAIN_THREAD and s.label == BACKWARD and not s.active else s for s in stacks]


def short_name(f: FrameRecord) -> str:
    """``Image.convert``; a module-level function gets its module: ``Image.open``, ``serialization.save``."""
    if "." in f.name:
        return f.name
    parts = f.short_filename.removesuffix(".py").split("/")
    stem = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]  # torch/cuda/__init__ -> cuda
    return f"{stem}.{f.name}" if stem and not stem.startswith("<") else f.name


def origin(f: FrameRecord) -> str:
    """torch, lib (other installed packages), stdlib, or user (the job's own code)."""
    return _origin(f.filename, f.short_filename)


@functools.lru_cache(maxsize=MEMO)
def _origin(filename: str, short_filename: str) -> str:
    path = filename.replace("\\", "/")
    if short_filename.startswith("torch/"):
        return "torch"
    if "/site-packages/" in path or "/dist-packages/" in path:
        return "lib"
    if path.startswith("<") or "/lib/python3" in path or "/lib64/python3" in path:
        return "stdlib"
    return "user"


# -- main thread ---------------------------------------------------------------------------------

IMPORTING = ("_find_and_load", "_load_unlocked", "_call_with_frames_removed")
"""importlib's own frames (file ``<frozen importlib._bootstrap>``): the thread runs an import, so a
torch ``<module>`` frame under it is module set-up, not the training step (a job's first seconds)."""


def _importing(frames: Sequence[FrameRecord]) -> bool:
    return any(f.name in IMPORTING and "importlib" in f.filename for f in frames)


def _main(frames: Sequence[FrameRecord], active: bool) -> tuple[str, str]:
    # Context first: what the thread is inside of decides, whatever torch code runs below it.
    if _importing(frames):
        return OTHER, f"importing modules ({short_name(frames[0])})"
    i = any_match(frames, (NEXT_INDEX,))
    if i is not None:  # the sampler's own work, under the loader's wait or its epoch start (lb.SAMPLER)
        return SAMPLER, _sampler(frames, i)
    i = any_match(frames, ITER_START)
    if i is not None and i > 0 and frames[i - 1].name.endswith("__iter__") and origin(frames[i - 1]) != "torch":
        # iter(sampler) at an epoch's start: a sampler whose __iter__ does its work before it returns
        # an iterator (a list of batches built there) does it here, not under _next_index (review 45)
        return SAMPLER, _sampler(frames, i)
    i = any_match(frames, MP_LOADER_WAIT)
    if i is not None:
        j = any_match(frames[:i], IPC)
        if j is not None:
            return DATA_IPC, short_name(frames[j])
        # A non-persistent iterator shuts its workers down from inside _next_data at the end of its
        # pass (joining them): the set's stop, not a wait for a batch (trial 26: 22 % of a spawn
        # job's main-thread samples in _shutdown_workers read as waiting, and the restarts as 0 %).
        j = any_match(frames[:i], MP_LOADER_START)
        if j is not None:
            return DATA_WAIT, f"DataLoader workers starting or stopping ({short_name(frames[j])})"
        return DATA_WAIT, short_name(frames[i - 1] if i > 0 else frames[i])
    i = any_match(frames, MP_LOADER_START)
    if i is not None:
        return DATA_WAIT, f"DataLoader workers starting or stopping ({short_name(frames[i])})"
    i = _prefetch_wait(frames)
    if i is not None:
        return DATA_WAIT, f"a prefetch thread's queue ({short_name(frames[i])})"
    i = any_match(frames, (FETCH,))
    if i is not None:
        net = any_match(frames[:i], NETWORK_READS) is not None
        return INLINE_LOAD, _hot(frames, i) + (NETWORK_DETAIL if net else "")
    i = _outermost(frames, CHECKPOINTS, CHECKPOINT_FUNCS)
    if i is not None:
        return CHECKPOINT, short_name(frames[i])
    i = _collective(frames)
    if i is not None:
        return COLLECTIVE, short_name(frames[i])
    # Compiling holds the step whatever runs under it (a lazy backward compile sits under
    # Tensor.backward; tracing runs the model's forward on fake tensors): the innermost compile
    # frame names the compiler's phase.
    i = _compiling(frames)
    if i is not None:
        return COMPILE, short_name(frames[i])
    i = _queue_read(frames)
    if i is not None:
        return DATA_WAIT, (f"a queue the job fills itself ({short_name(frames[i])} at "
                           f"{frames[i + 1].short_filename}:{frames[i + 1].line})")
    i = _loop_prep(frames)
    if i is not None:
        return LOOP_PREP, f"{_prep_lib(frames[i])} from {_user_line(frames, i)}"
    # Then the innermost frame that says what it is.
    for i, f in enumerate(frames):
        if any(matches(f, p) for p in SYNCS) or _native(f.name) in NATIVE_SYNCS:
            return SYNC, _user_line(frames, i)
        if (any(matches(f, p) for p in H2DS) or _native(f.name) in NATIVE_H2DS
                or H2D_FUNC_WORD in f.name.rsplit(".", 1)[-1]):
            return H2D, short_name(f)
        if any(matches(f, p) for p in BACKWARDS):
            return BACKWARD, short_name(f)
        if any(matches(f, p) for p in OPTIMIZERS):
            return OPTIMIZER, short_name(f)
        if any(matches(f, p) for p in DISPATCHES):
            return DISPATCH, short_name(f)
    leaf = frames[0]
    if origin(leaf) in ("user", "lib") and active:
        # Running the job's own code (or model code from a library): Python dispatch, or a spin-wait
        # in a sync called from this line; see the module docstring.
        return DISPATCH, leaf.text()
    if origin(leaf) in ("user", "lib"):
        return OTHER, leaf.text()
    if origin(leaf) == "stdlib":
        # The call the job made, not the selector or lock it ends in: "subprocess.run from main
        # (train.py:52)" says what the thread waits for; "_PollLikeSelector.select" did not.
        j = 0
        while j + 1 < len(frames) and origin(frames[j + 1]) == "stdlib":
            j += 1
        caller = frames[j + 1] if j + 1 < len(frames) else None
        if caller is not None and origin(caller) == "user":
            return OTHER, f"{short_name(frames[j])} from {caller.text()}"
    return OTHER, short_name(leaf)


COMPILER_DIRS = ("_dynamo", "_functorch", "_inductor", "triton")
"""Folders every COMPILES file lies in: a frame outside them is passed over at once (the main thread
is labelled on every dump, and a training step's stack holds dozens of frames)."""


def _compiling(frames: Sequence[FrameRecord]) -> int | None:
    """Index of the innermost torch.compile frame (COMPILES, COMPILE_NAMES), or None."""
    for i, f in enumerate(frames):
        if not any(d in f.filename for d in COMPILER_DIRS):
            continue
        if any(matches(f, p) for p in COMPILES):
            return i
        last = f.name.rsplit(".", 1)[-1]
        if any(_file_matches(f, file) and any(w in last for w in words) for file, words in COMPILE_NAMES):
            return i
    return None


def _queue_read(frames: Sequence[FrameRecord]) -> int | None:
    """The outermost queue read (QUEUE_READS) near the leaf whose caller is the job's own code: the
    training loop blocked on a queue, a Pool's results or a pipe that the job's other threads or
    processes fill. Read as "other", a loop waiting 59 % of the time on a multiprocessing.Pool's
    batches looked like a main thread computing the step (CPU-bound, waiting for data 0 %)."""
    hit = None
    for i, f in enumerate(frames[:QUEUE_DEPTH]):
        if any(matches(f, p) for p in QUEUE_READS):
            hit = i
    if hit is None or hit + 1 >= len(frames) or origin(frames[hit + 1]) != "user":
        return None
    return hit


def _prep_lib(f: FrameRecord) -> str | None:
    """The data-prep library (PREP_LIBS) the frame belongs to, in words, or None. Matched from the
    start of the file's import path: a ``tokenizers/`` folder inside another package (sacrebleu's,
    NeMo's) is that package's."""
    short = f.short_filename.replace("\\", "/")
    return next((words for frag, words in PREP_LIBS if short.startswith(frag)), None)


def _loop_prep(frames: Sequence[FrameRecord]) -> int | None:
    """Index of the outermost data-prep frame (PREP_LIBS), or None: none on the stack, a sync or a
    copy to the GPU inside it (``BatchEncoding.to`` is a tokenizer file's, and is H2D), or output
    (PREP_NOT). The torch ops a transform runs (``torch/nn/functional.py`` under a resize) lie
    inside it and do not make it dispatch."""
    prep = [i for i, f in enumerate(frames) if _prep_lib(f) is not None]  # most samples: none, done
    if not prep or any(_gpu_work(f) for f in frames[:prep[0] + 1]):
        return None  # the transform syncs, copies or launches kernels (BatchEncoding.to): on the GPU
    hit = prep[-1]
    if any(w in frames[hit].name.rsplit(".", 1)[-1].lower() for w in PREP_NOT):
        return None
    return hit if _in_the_loop(frames, hit) else None


def _gpu_work(f: FrameRecord) -> bool:
    """A sync, a copy to the GPU or a kernel launch (Python or ``--native`` frames)."""
    native = _native(f.name)
    return (native in NATIVE_SYNCS or native in NATIVE_H2DS or native in NATIVE_LAUNCHES
            or H2D_FUNC_WORD in f.name.rsplit(".", 1)[-1]
            or any(matches(f, p) for p in SYNCS) or any(matches(f, p) for p in H2DS))


def _in_the_loop(frames: Sequence[FrameRecord], hit: int) -> bool:
    """Nothing outside frame ``hit`` puts it elsewhere than the training loop's data preparation:
    a model's forward or a Lightning step (GPU_SIDE_CALLERS), a copy to the device, logging or a
    one-off dataset map (PREP_NOT_CALLERS)."""
    for f in frames[hit + 1:]:
        last = f.name.rsplit(".", 1)[-1]
        if (last in GPU_SIDE_CALLERS and not _file_matches(f, "torch/nn/modules/module.py")
                or H2D_FUNC_WORD in last or any(_file_matches(f, c) for c in PREP_NOT_CALLERS)):
            return False
    return True


NATIVE_PREP_CALL = re.compile(r"(?:^|[^\w])(?:\w*_)?(?:tok|tokenizer|tokeniser)\.encode(?:_batch(?:_fast)?)?\(")
"""A line of the job's own code calling a native tokenizer (Hugging Face ``tokenizers``:
``tok.encode_batch(texts)``, ``self._tokenizer.encode(text)``, ``text_tokenizer.encode(...)``): the Rust
call leaves no Python frame, so the line is all py-spy shows while it runs, often on the tokenizer's own
thread pool with the main thread waiting (trial 31: a loop 60 % in ``encode_batch`` read as the job's
own code, "other work"). The receiver must be named for a tokenizer: ``token.encode('utf-8')`` is a
string's, ``self.tok_emb.encode(x)`` or SpeechBrain's ``encoder.encode_batch(wavs)`` a model's."""


def _prep_by_source(frames: Sequence[FrameRecord], source_line: SourceLine) -> str | None:
    """The detail of a main thread on a line of its own code that calls a native tokenizer
    (NATIVE_PREP_CALL), in the training loop (_in_the_loop); None otherwise."""
    leaf = frames[0]
    if (origin(leaf) != "user" or _importing(frames)
            or not NATIVE_PREP_CALL.search(_leaf_text(leaf, source_line).split("#", 1)[0])):
        return None  # an import's module-level code is set-up, whatever it calls
    return f"a tokenizer from {leaf.text()}" if _in_the_loop(frames, 0) else None


def _prefetch_wait(frames: Sequence[FrameRecord]) -> int | None:
    """The iterator frame of a loop waiting for its next batch from a thread of its own process: a
    ``queue.Queue`` read inside an iterator's ``__next__``/``next`` within three frames (a
    background-thread prefetcher: prefetch_generator's BackgroundGenerator, hand-written ones). Read
    as "other", a loop waiting 91 % of the time on such a thread looked like a main thread outside
    every training frame: not training, on a quiet host."""
    i = any_match(frames, THREAD_QUEUE_GET)
    if i is None:
        return None
    for j in range(i + 1, min(i + 4, len(frames))):
        if frames[j].name.rsplit(".", 1)[-1] in NEXT_FUNCS:
            return j
    return None


def _outermost(frames: Sequence[FrameRecord], patterns: Sequence[Pattern], funcs: Sequence[str]) -> int | None:
    for i in range(len(frames) - 1, -1, -1):
        f = frames[i]
        if any(matches(f, p) for p in patterns) or f.name.rsplit(".", 1)[-1] in funcs:
            return i
    return None


def _user_line(frames: Sequence[FrameRecord], start: int) -> str:
    """The job's own line that led to frame ``start``: the innermost user frame above it."""
    for f in frames[start + 1:]:
        if origin(f) == "user":
            return f.text()
    return short_name(frames[start])


# -- DataLoader workers and the pin thread ---------------------------------------------------------

def _worker(frames: Sequence[FrameRecord], active: bool, state: str | None) -> tuple[str, str]:
    i = any_match(frames, (FETCH,))
    j = any_match(frames, (WORKER_LOOP,)) if i is None else None
    if j and origin(frames[j - 1]) in ("user", "lib"):
        # In its worker_init_fn: a start-up each new worker pays before its first item (trial 41: a
        # 1.5 s sleep in it, read "idle", held a job whose workers were re-created each epoch 96 %
        # of the time, and kept workers ran it 39x faster).
        return W_START, short_name(frames[j - 1])
    if i is None:  # between items: waiting for an index, or handing the batch to data_queue.put
        detail = _stdlib_entry(frames)
        if _waiting(frames) or not active:
            return W_IDLE, detail
        return W_BUSY, detail
    hot = _hot(frames, i)
    inner = frames[:i]
    if state == "T":
        # Stopped (SIGSTOP, SIGTSTP) where it stood: not a read, even inside ImageFile.load (trial
        # 30: six samples of a stopped worker read "reading: ImageFile.load").
        return W_WAIT, hot + STOPPED_DETAIL
    if any_match(inner, SUBPROCESS) is not None:  # polling the command's pipes is waiting too
        return (W_WAIT if _waiting(frames) or not active else W_BUSY), hot
    if any_match(inner, NETWORK_READS) is not None:
        return W_IO, hot + NETWORK_DETAIL
    if any_match(inner, READS) is not None:
        return W_IO, hot
    if state == "D":
        # Blocked in the kernel under __getitem__ with no Python frame that names a read (os.preadv
        # and other C calls have none): the state is the sign of I/O (a read, a write, a swap-in),
        # and the detail says so, or the views and the diagnosis, which count I/O only where the
        # detail shows it (stacks.activity), said "waiting, no read in its stack" beside 406 MB/s
        # of reads (trial 24).
        named = any(w in hot.lower() for w in READ_WORDS)
        return W_IO, hot if named else hot + D_STATE_DETAIL
    if not active:
        # Off the CPU inside __getitem__: a read only where something names one (a loader frame,
        # a function named for reading); a sleep, a lock or an unnamed C call is a wait.
        if any_match(inner, LOADS) is not None or any(w in hot.lower() for w in READ_WORDS):
            return W_IO, hot
        return W_WAIT, hot
    return W_BUSY, hot


def _pin(frames: Sequence[FrameRecord], active: bool) -> tuple[str, str]:
    if any_match(frames, (PIN_WORK,)) is not None:
        return PIN_BUSY, PIN_WORK_DETAIL
    j = any_match(frames, IPC)
    if j is not None:  # unpacking a batch on the CPU, or off it waiting for the worker to hand it over
        return (PIN_BUSY if active else PIN_IDLE), short_name(frames[j])
    if _waiting(frames) or not active:
        return PIN_IDLE, short_name(frames[0])
    return PIN_BUSY, short_name(frames[0])


def _waiting(frames: Sequence[FrameRecord]) -> bool:
    """The leaf is a queue/selector/condition wait (py-spy may still call a just-woken thread active)."""
    for f in frames:
        if any(matches(f, p) for p in WAITS):
            return True
        if origin(f) != "stdlib":
            return False
    return False


def _stdlib_entry(frames: Sequence[FrameRecord]) -> str:
    """The outermost standard-library call of the leaf's run (``Queue.get`` for select/poll/wait)."""
    entry = frames[0]
    for f in frames:
        if origin(f) != "stdlib":
            break
        entry = f
    return short_name(entry)


def _sampler(frames: Sequence[FrameRecord], at: int) -> str:
    """The sampler's own function under the loader's frame at ``at``: the deepest frame of the job's
    code (``BalancedBatches.__iter__``, not the ``random.choices`` it calls), else the deepest
    ``__iter__`` (torch's ``BatchSampler.__iter__``, not numpy's internals a library frame would name;
    review 45), else the frame the loader called; without a comprehension's ``.<locals>.<listcomp>``."""
    inner = frames[:at]
    f = (next((f for f in inner if origin(f) == "user"), None)
         or next((f for f in inner if f.name.split(".<locals>", 1)[0].endswith("__iter__")), None)
         or (inner[-1] if inner else frames[at]))
    return short_name(f).split(".<locals>", 1)[0]


def _hot(frames: Sequence[FrameRecord], fetch_at: int) -> str:
    """The function doing the work under ``fetch``: the deepest frame outside torch, else the torch
    frame fetch called (``default_collate``), else the leaf."""
    inner = frames[:fetch_at]
    for f in inner:
        if origin(f) != "torch":
            return short_name(f)
    return short_name(inner[-1] if inner else frames[0])


# -- matching helpers ------------------------------------------------------------------------------

def _file_matches(frame: FrameRecord, suffix: str) -> bool:
    return _path_matches(frame.filename, frame.short_filename, suffix)


@functools.lru_cache(maxsize=MEMO)
def _path_matches(filename: str, short_filename: str, suffix: str) -> bool:
    short = "/" + short_filename.replace("\\", "/")
    full = filename.replace("\\", "/")
    if suffix.endswith("/") or "." not in suffix.rsplit("/", 1)[-1]:  # a folder or a name fragment
        return ("/" + suffix) in short or ("/" + suffix) in full
    return short.endswith("/" + suffix) or full.endswith("/" + suffix)


def _func_matches(name: str, func: str) -> bool:
    """``Class.method`` matches py-spy's qualified names (3.11+) and bare ones (3.10 and older)."""
    if name == func:
        return True
    last = func.rsplit(".", 1)[-1]
    if name.rsplit(".", 1)[-1] != last:
        return False
    return "." not in func or "." not in name or name.endswith("." + func)


def _native(name: str) -> str:
    """``c10::cuda::memcpy_and_sync(void*, ...)`` -> ``memcpy_and_sync`` (frames of --native dumps)."""
    return name.split("(", 1)[0].rsplit("::", 1)[-1].strip()


def _collective(frames: Sequence[FrameRecord]) -> int | None:
    """The innermost frame inside a distributed collective (gpuwatch.ranks lists them: c10d,
    DDP's buffer sync, FSDP, DeepSpeed, accelerate), or None. Checked before the torch/nn dispatch
    patterns, which would otherwise claim DDP's forward-time buffer broadcast."""
    for i, f in enumerate(frames):
        if any(n in f.name for n in NATIVE_COLLECTIVES):
            return i
        for want_func, suffix in COLLECTIVE_FRAMES:
            path = f.filename
            if (suffix in path if suffix.endswith("/") else path.endswith(suffix)) and (
                not want_func or f.name == want_func or f.name.endswith("." + want_func)
            ):
                return i
    return None


READ_CALLS = ("read(", "readinto(", "readline(", "readlines(", "recv(", "recv_into(", "fromfile(", "imread(",
              "open(", "memmap(")
"""Calls on a line of the job's own code that read (``os.pread(fd, n, off)``, ``f.readinto(buf)``,
``Image.open(p)``, ``np.fromfile``): py-spy without --native shows only that line while the thread
sits in the read, so its text is the sign of a read that no frame gives."""


def _reads_by_source(leaf: FrameRecord, source_line: SourceLine) -> bool:
    """A worker off the CPU on a line of its own code that calls a read (READ_CALLS). A trial's
    IterableDataset spent 64 % of its time in ``os.pread`` on such a line, labelled a wait with
    "no read seen" beside the worker's 29 MB/s of reads."""
    code = _leaf_text(leaf, source_line).split("#", 1)[0]
    return any(call in code for call in READ_CALLS)


def _leaf_text(leaf: FrameRecord, source_line: SourceLine) -> str:
    """The leaf frame's line of the job's source, or "" where it cannot be read (best effort: a
    failed lookup keeps the label the frames gave)."""
    try:
        return source_line(leaf.filename, leaf.line) or ""
    except Exception:  # noqa: BLE001 - the lookup is best effort
        return ""


def _sync_by_source(leaf: FrameRecord, source_line: SourceLine) -> str | None:
    """SYNC when the leaf frame's line of code calls one of SYNC_CALLS."""
    text = _leaf_text(leaf, source_line)
    return SYNC if any(call in text for call in SYNC_CALLS) else None
