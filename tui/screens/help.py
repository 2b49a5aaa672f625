"""The help screen: every key of the screen it was opened from, what the levels mean, and where
the numbers come from.

The keys are read from the bindings themselves (the screen's, its focused widget's and the
app's, hidden ones included), so a key cannot exist without being listed here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Iterable
from dataclasses import replace

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen

from gpuwatch.diagnosis.thresholds import WINDOW_S
from gpuwatch.model.verdict import CPU_BOUND, GPU_BOUND, IDLE, PIPELINE, STAGE_TITLES, UNKNOWN
from gpuwatch.tui.chart_draw import BAND_MARK
from gpuwatch.tui.gpu_metrics import METRICS
from gpuwatch.tui.levels import LEVEL_GLYPHS, LEVEL_WORDS
from gpuwatch.tui.panels.footer import not_here
from gpuwatch.tui.panels.plain import Plain

KEY_W = 12
"""Width of the keys column."""
INDENT = "\u00a0" * (KEY_W + 1)
"""A wrapped line's indent, in no-break spaces: Textual drops ordinary leading spaces of a line."""
TEXT_W = 64
"""Width the key lines wrap at (the help box: 72 columns less border, padding and scrollbar)."""


def key_lines(app: App, nodes: Iterable[DOMNode], leave_out: Collection[str] = ()) -> list[tuple[str, str]]:
    """(keys, what they do) for every binding of ``nodes``, one line per action, in their order.

    A binding's tooltip says what it does; its description (the footer's word) stands in for one
    without. Keys bound to the same action share a line (``? f1 h``). Each key is shown as itself:
    the footer's ``key_display`` names a pair (``[ ]`` on ``]``, ``?`` on all three help keys), which
    here put ``[`` beside "forward" and hid F1 and h. Bindings whose action is in ``leave_out``
    (its name, without arguments) are not listed."""
    lines: dict[str, list[str]] = {}
    for node in nodes:
        for binding in own_bindings(node):
            if binding.action.split("(")[0] in leave_out:
                continue
            what = binding.tooltip or binding.description or binding.action
            keys = lines.setdefault(what, [])  # one line per text: ← and → share theirs
            shown = app.get_key_display(replace(binding, key_display=None))
            if shown not in keys:
                keys.append(shown)
    return [(" ".join(keys), what) for what, keys in lines.items()]


def own_bindings(node: DOMNode) -> list[Binding]:
    """The bindings gpuwatch's classes declare on ``node`` (Textual's scrolling, focus and copy
    keys are left out: they behave as in every Textual app)."""
    out: list[Binding] = []
    for cls in reversed(type(node).__mro__):
        if cls.__module__.startswith("gpuwatch.") and "BINDINGS" in cls.__dict__:
            out += [b for b in Binding.make_bindings(cls.__dict__["BINDINGS"]) if not b.system]
    return out


def help_text(lines: list[tuple[str, str]]) -> str:
    keys = "\n".join(textwrap.fill(f"{k:<{KEY_W}} {what}", TEXT_W, subsequent_indent=INDENT)
                     for k, what in lines)
    # Wrapped here, a stage whole on its line ("6 Contention", not "6" then "Contention"): textwrap
    # keeps words joined by no-break spaces, which become spaces again once it has wrapped.
    stages = textwrap.fill(" → ".join(f"{n} {STAGE_TITLES[s]}".replace(" ", "\u00a0")
                                      for n, s in enumerate(PIPELINE, start=1)), TEXT_W).replace("\u00a0", " ")
    others = ", ".join(f"{BAND_MARK[s]} {STAGE_TITLES[s]}" for s in (GPU_BOUND, CPU_BOUND, IDLE, UNKNOWN))
    levels = "   ".join(f"{LEVEL_GLYPHS[lv]} {LEVEL_WORDS[lv]}" for lv in LEVEL_GLYPHS)
    return (
        # The box covers the footer: it says itself how it closes.
        "gpuwatch: what is holding the GPU back?  (Esc or q closes this)\n\n"
        f"{keys}\n"
        + textwrap.fill(f"{'^p':<{KEY_W}} Command palette: every command by name (record, pause, stage, "
                        "process, report, theme)", TEXT_W, subsequent_indent=INDENT) + "\n\n"
        f"{stages}\n"
        f"Levels: {levels}\n"
        "The verdict names the stage that limits the job, how sure it is and how much "
        "faster the job could run if that stage were fixed.\n\n"
        "Charts: the band under the time axis is the verdict's stage at each tick: its number "
        f"(1-{len(PIPELINE)}), or {others}; its name where the run is wide enough. A chart's "
        "number is the latest tick (GPU util: NVML, copies count); the verdict's are medians over its "
        "evidence (the GPU has work: kernel time). input: the share of the training process's main-thread "
        f"stack samples over the last {WINDOW_S:.0f} s spent on its input (waiting for a batch, loading one "
        "itself or preparing one in the training loop); worker CPU: the DataLoader workers' mean CPU "
        "(100 % is one core).\n\n"
        "Verdict: its confidence (0-1) is how strongly the evidence supports the stage; \"fixing it: "
        "2.1× faster while it holds\" is the most removing that stage's time could give while the verdict "
        "stands (\"up to\" a ceiling, \"or more\" a floor its samples set), and a fix's own figure follows "
        "it; \"Also:\" names stages at warning level beside the verdict, each with why. data wait: the "
        "training process's main thread waiting for its next batch.\n\n"
        + terms() + "\n\n"
        "Processes, Latest frame: what the process ran in the latest stack sample; dimmed, "
        "from an earlier one (workers are sampled in turn). Rows marked 'outside' are GPU "
        "processes of other users or jobs (NVML's list), not part of the watched job.\n"
        "N/A: a value could not be read. The reason and the fix are shown next to it "
        "(panel notes, stage details). A stage at n/a: nothing of it could be measured "
        "(e.g. no GPU to judge)."
    )


def terms() -> str:
    """The GPU panel's rows (gpu_metrics.METRICS, each with what its number means) and the host
    strip's and process table's short words: review 36 found SM, tensor, DRAM, PSI, load and St
    unexplained anywhere a user could look."""
    gpu = "\n".join(f"\u00a0\u00a0{m.label}: {m.about}" for m in METRICS)  # no-break: Textual drops leading spaces
    return ("GPU rows (GPM: NVIDIA's GPU performance metrics, Hopper and newer):\n"
            f"{gpu}\n\n"
            "Host: CPU busy of its CPUs; load: the 1-minute load average (runnable tasks); steal: CPU time "
            "the hypervisor gave to others; PSI cpu / io / mem: the kernel's pressure stall information, the "
            "share of time some task waited for a CPU, for I/O or for memory (avg10). Processes, St: the "
            "kernel's state (R running, S sleeping, D waiting on the disk, T stopped).")


def screen_nodes(screen: Screen) -> list[DOMNode]:
    """The nodes whose bindings act on ``screen``: its focused widget and that widget's
    ancestors up to the screen, then the app."""
    nodes: list[DOMNode] = []
    node: DOMNode | None = screen.focused
    while node is not None and node is not screen:
        nodes.append(node)
        node = node.parent
    return [*nodes, screen, screen.app]


class HelpScreen(ModalScreen[None]):
    """Keys and legend."""

    BINDINGS = [
        Binding("escape", "dismiss", "Back", tooltip="Close the help."),
        Binding("question_mark,f1,h", "dismiss", "Back", show=False, tooltip="Close the help."),
        Binding("q", "dismiss", "Back", show=False, tooltip="Close the help."),
    ]

    def __init__(self, under: Screen | None = None) -> None:
        super().__init__()
        self._under = under
        """The screen whose keys are listed (the app's alone when None)."""

    def compose(self) -> ComposeResult:
        nodes = screen_nodes(self._under) if self._under is not None else [self.app]
        with VerticalScroll(id="help-body"):
            yield Plain(help_text(key_lines(self.app, nodes, not_here(self.app))), id="help-text")
