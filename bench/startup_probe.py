"""``gpuwatch`` with timestamps of its start-up stages, for bench/startup_trace.py.

Run as a file with gpuwatch's arguments; the stage marks go, one JSON object a line, to the file
named by ``GW_TRACE_OUT``. Each mark holds ``t`` (time.monotonic(), the clock the parent started
the process by) and ``main_cpu`` (seconds of CPU the main thread used so far, from
/proc/self/task/TID/schedstat: the interpreter's own start-up counts). Nothing in gpuwatch changes:
the marks are patched in from outside as each module finishes loading, so the product carries no
tracing code. Standard library only, so the probe itself adds next to nothing to the start-up
(the few wrapped calls time themselves with thread_time). The garbage collector's passes are
counted with their CPU (gc.callbacks). With ``GW_TRACE_PROFILE=FILE``, the main thread is also
profiled (cProfile, much slower) from the app's creation to the first painted frame, into FILE.

    GW_TRACE_OUT=/tmp/marks.jsonl python bench/startup_probe.py --pid 1234
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time

_OUT = open(os.environ.get("GW_TRACE_OUT", os.devnull), "a", buffering=1)  # noqa: SIM115 - open for the run
_MAIN_TID = threading.get_native_id()
_lock = threading.Lock()

_gc = {"n": 0, "s": 0.0, "full": 0}
_gc_started: dict[int, float] = {}


def _gc_timer(phase: str, info: dict) -> None:
    """Counts the garbage collector's passes (on any thread: each holds the GIL) and their CPU."""
    tid = threading.get_native_id()
    if phase == "start":
        _gc_started[tid] = time.thread_time()
    elif tid in _gc_started:
        _gc["s"] += time.thread_time() - _gc_started.pop(tid)
        _gc["n"] += 1
        _gc["full"] += info.get("generation") == 2


gc.callbacks.append(_gc_timer)


def _main_cpu() -> float | None:
    try:
        with open(f"/proc/self/task/{_MAIN_TID}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def mark(what: str, **extra: object) -> None:
    row = {"what": what, "t": time.monotonic(), "main_cpu": _main_cpu(), "thread": threading.current_thread().name,
           "gc_passes": _gc["n"], "gc_full": _gc["full"], "gc_cpu": round(_gc["s"], 4), **extra}
    with _lock:
        _OUT.write(json.dumps(row) + "\n")


mark("interpreter started")



# Module -> what to do once it has loaded (patch in the marks of the stages it holds).
_AFTER: dict[str, object] = {}


def after(name: str):
    def deco(fn):
        _AFTER[name] = fn
        return fn
    return deco


class _LoadedHook:
    """Marks when a watched module has finished loading, then patches it (``_AFTER``). Plain
    classes, not importlib.abc's: that module brings imports of its own that gpuwatch does not
    make (gpuwatch/_sourcetree.py)."""

    WATCH = ("gpuwatch.cli", "gpuwatch.commands", "gpuwatch.engine", "textual.app", "gpuwatch.tui.app")

    def find_spec(self, name, path, target=None):
        if name not in self.WATCH:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                loader = spec.loader
                real = loader.exec_module

                def exec_module(module, _real=real, _name=name):
                    _real(module)
                    mark(f"imported {_name}")
                    if _name in _AFTER:
                        _AFTER[_name](module)

                spec.loader = _Wrapped(loader, exec_module)
                return spec
            if spec is not None:
                return spec
        return None


class _Wrapped:
    def __init__(self, loader, exec_module) -> None:
        self._loader = loader
        self.exec_module = exec_module

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _time_first_calls(c) -> None:
    """Mark when ``c``'s probe and first sample start and end on its thread, with that thread's CPU
    seconds in the call (``thread_cpu``): a call whose wall time far exceeds its CPU waited, for
    the GIL most of all while the main thread imports."""
    for name in ("probe", "sample"):
        real = getattr(c, name)

        def timed(*a, _real=real, _name=name, **kw):
            setattr(c, _name, _real)  # the first call only
            t0 = time.thread_time()
            mark(f"{_name} starts: {c.field}")
            try:
                return _real(*a, **kw)
            finally:
                mark(f"{_name} ends: {c.field}", thread_cpu=round(time.thread_time() - t0, 4))
                if _name == "sample":
                    mark(f"first sample: {c.field}")

        setattr(c, name, timed)


@after("gpuwatch.engine")
def _patch_engine(engine) -> None:
    prestart, first_round = engine.Watch.prestart, engine.Watch._first_round

    def prestart_marked(self):
        mark("collectors prestarted")
        for c in self.collectors:
            _time_first_calls(c)
        try:
            return prestart(self)
        finally:
            mark("prestart returned")

    async def first_round_marked(self, deadline):
        mark("frames() started, waiting for the first round")
        await first_round(self, deadline)
        waited_for = [c.field for c in self.collectors if c.field not in self._stamp
                      and self._latest[c.field] is engine.PENDING]
        mark("first round in", still_pending=waited_for)

    frame = engine.Watch._frame

    def frame_marked(self, now, alive):
        f = frame(self, now, alive)
        if f.seq == 1:
            mark("first frame assembled")
        return f

    engine.Watch._frame = frame_marked
    engine.Watch.prestart = prestart_marked
    engine.Watch._first_round = first_round_marked


_spans: dict[str, list[float]] = {}
"""Main-thread CPU seconds and calls in a few of Textual's and gpuwatch's steps, up to the first
frame painted. They nest (CSS is applied inside a show, for one): each says what it costs alone,
they do not add up."""
_span_depth: dict[str, int] = {}
_first_painted = False


_reported: list[bool] = []


def _report_spans() -> None:
    if not _reported:
        _reported.append(True)
        mark("steps up to the first painted frame", spans={k: [round(v[0], 4), v[1]] for k, v in _spans.items()})


def span(owner, name: str, label: str) -> None:
    """Count the main thread's CPU in ``owner.name`` under ``label`` (the outermost call only)."""
    fn = getattr(owner, name)

    def counted(*a, **kw):
        if _first_painted or threading.get_native_id() != _MAIN_TID or _span_depth.get(label):
            return fn(*a, **kw)
        _span_depth[label] = 1
        t0 = time.thread_time()
        try:
            return fn(*a, **kw)
        finally:
            _span_depth[label] = 0
            acc = _spans.setdefault(label, [0.0, 0])
            acc[0] += time.thread_time() - t0
            acc[1] += 1
            if _first_painted and not any(_span_depth.values()):
                _report_spans()

    setattr(owner, name, counted)


@after("gpuwatch.tui.app")
def _patch_app(app_mod) -> None:
    from textual.app import App
    from textual.css.stylesheet import Stylesheet
    from textual.screen import Screen

    from gpuwatch.pipeline import Pipeline

    app_cls, main_screen = app_mod.GpuwatchApp, app_mod.MainScreen
    init, on_mount, render_latest = app_cls.__init__, app_cls.on_mount, app_cls.render_latest
    show, display = main_screen.show, App._display
    compose, screen_mount, step = main_screen.compose, main_screen.on_mount, Pipeline.step
    state = {"frame_drawn": False, "paints": 0}

    def init_marked(self, *a, **kw):
        mark("app created")
        if os.environ.get("GW_TRACE_PROFILE"):  # profile the main thread from here to the first painted frame
            import cProfile

            state["profile"] = cProfile.Profile()
            state["profile"].enable()
        init(self, *a, **kw)

    def on_mount_marked(self):
        mark("app mounted")
        return on_mount(self)

    def render_latest_marked(self):
        if self.view is None and self._latest is not None:
            mark("first frame reached the app")
        render_latest(self)

    def show_marked(self, view):
        first = not state["frame_drawn"]
        show(self, view)
        if first:
            state["frame_drawn"] = True
            mark("first frame put on the widgets")

    def compose_marked(self):
        mark("main screen compose starts")
        yield from compose(self)
        mark("main screen composed")

    def screen_mount_marked(self):
        mark("main screen mounted")
        return screen_mount(self)

    def step_marked(self, frame):
        tick = step(self, frame)
        if frame.seq == 1:
            mark("first verdict")
        return tick

    def display_marked(self, screen, renderable):
        global _first_painted
        display(self, screen, renderable)
        if renderable is None or self._batch_count or not self._running:
            return  # Textual dropped it: nothing was written
        state["paints"] += 1
        if state["frame_drawn"] and not _first_painted:
            _first_painted = True
            if "profile" in state:
                state["profile"].disable()
                state["profile"].dump_stats(os.environ["GW_TRACE_PROFILE"])
            mark("first frame with data written to the terminal", paints=state["paints"])
            if not any(_span_depth.values()):
                _report_spans()
        elif state["paints"] == 1:
            mark("first paint (no data yet)")

    for owner, name, fn in ((app_cls, "__init__", init_marked), (app_cls, "on_mount", on_mount_marked),
                            (app_cls, "render_latest", render_latest_marked), (main_screen, "show", show_marked),
                            (main_screen, "compose", compose_marked), (main_screen, "on_mount", screen_mount_marked),
                            (Pipeline, "step", step_marked), (App, "_display", display_marked)):
        setattr(owner, name, fn)
    span(Stylesheet, "parse", "CSS parse")
    span(Stylesheet, "apply", "CSS apply")
    span(Screen, "_refresh_layout", "layout")
    span(Screen, "_compositor_refresh", "render and write")
    span(main_screen, "show", "frame onto the widgets (MainScreen.show)")
    span(Pipeline, "step", "verdict (Pipeline.step)")


def main() -> int:
    sys.meta_path.insert(0, _LoadedHook())
    sys.argv = ["gpuwatch", *sys.argv[1:]]  # as the console script: gpuwatch.cli guards signals from its start
    import gpuwatch.cli

    return gpuwatch.cli.main()


if __name__ == "__main__":
    sys.exit(main())
