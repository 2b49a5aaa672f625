"""The stacks view: for each thread role, what it spends its samples on and its hottest frames."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll

from gpuwatch.diagnosis.evidence import count
from gpuwatch.model.procs import NO_WORKER_SEEN
from gpuwatch.model.procs import ROLE_WORKER as WORKER_PROCESS
from gpuwatch.model.stacks import LABEL_WORDS, ROLE_OTHER_THREAD, ROLE_PIN, ROLE_WORKER
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.hot import STACK_WINDOW, counted, label_shares, stack_samples, threads
from gpuwatch.tui.panels.footer import KeysFooter
from gpuwatch.tui.panels.header import HeaderBar
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.panels.stack_table import StackTable
from gpuwatch.tui.roles import ROLES
from gpuwatch.tui.screens.base import WatchScreen
from gpuwatch.tui.view import View

NONE_SEEN = {
    ROLE_WORKER: NO_WORKER_SEEN,
    ROLE_PIN: "no pin-memory thread seen (pin_memory=False, or no GPU to pin for)",
    ROLE_OTHER_THREAD: "no other thread was running when sampled",
}
"""What an empty section says: "no thread samples" under the pin-memory thread read as a thread that
was there and not sampled, for a job without pin_memory."""


UNSAMPLED_WORKERS = ("no stack sample of the DataLoader workers in these frames, though the process table saw "
                     "some: they are sampled one at a time, and a set that lives a few seconds may end first")
"""The worker section where the frames list workers but no sample read one: "num_workers=0, or no
DataLoader" stood over a job with 2 workers re-created each pass (review 46)."""


def _none_seen(role: str, view: View) -> str:
    if role == ROLE_WORKER and any(known(f.procs) and any(p.role == WORKER_PROCESS for p in f.procs.processes)
                                   for f in view.frames):
        return UNSAMPLED_WORKERS
    return NONE_SEEN.get(role, "no thread samples")


class StacksScreen(WatchScreen):
    """py-spy-top for each role, over the last stack samples."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back", tooltip="Back to the main screen.")]

    def compose(self) -> ComposeResult:
        yield HeaderBar()
        with VerticalScroll(id="stacks-body"):
            yield Plain("", id="stacks-status")
            for role, title in ROLES:
                # The first letter only: str.capitalize() lowers the rest ("Dataloader workers").
                yield Plain(title[:1].upper() + title[1:], classes="section", id=f"title-{role}")
                yield Plain("", classes="shares", id=f"shares-{role}")
                yield StackTable(limit=8, id=f"table-{role}")
        yield KeysFooter()

    def show(self, view: View) -> None:
        self.query_one(HeaderBar).show(view)
        samples = stack_samples(view.frames)
        status = self.query_one("#stacks-status", Plain)
        if isinstance(view.frame.stacks, Unsupported):
            status.update(f"Stacks N/A: {fmt.unprefixed(view.frame.stacks.reason)}")
        else:
            # The samples the sections below count: idle helper threads are in none of them.
            n_threads = sum(1 for s in samples for t in s.threads if counted(t))
            status.update(f"{count(len(samples), 'stack collection')} ({count(n_threads, 'thread sample')}) "
                          f"from the last {STACK_WINDOW} frames.")
        for role, _ in ROLES:
            keep = (lambda t, r=role: t.role == r and counted(t))
            mine = threads(samples, keep)
            shares = ", ".join(f"{LABEL_WORDS.get(label, label)} {share:.0%}" for label, share in label_shares(mine)[:6])
            self.query_one(f"#shares-{role}", Plain).update(
                f"{count(len(mine), 'thread sample')}: {shares}" if mine else _none_seen(role, view))
            table = self.query_one(f"#table-{role}", StackTable)
            table.show(mine)
            table.display = bool(mine)
