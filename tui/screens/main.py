"""The main screen: header, pipeline, GPU panels, processes and the host strip."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from gpuwatch.model.verdict import PIPELINE, STAGE_TITLES
from gpuwatch.tui.panels.activity import ActivityPanel
from gpuwatch.tui.panels.gpu import GpuArea
from gpuwatch.tui.panels.header import HeaderBar
from gpuwatch.tui.panels.host import HostStrip
from gpuwatch.tui.panels.job_charts import JobCharts
from gpuwatch.tui.panels.pipeline import PipelinePanel
from gpuwatch.tui.panels.processes import ProcessPanel
from gpuwatch.tui.panels.rank_table import RankTable
from gpuwatch.tui.panels.ranks import GROUP_FROM, RankBar
from gpuwatch.tui.screens.base import WatchScreen
from gpuwatch.tui.view import View


class MainScreen(WatchScreen):
    """Everything at a glance; Enter drills into the selected stage."""

    # priority: the processes table would otherwise take left/right/enter for its own cursor.
    BINDINGS = [
        Binding("left", "move_stage(-1)", "Stage", key_display="←→", priority=True,
                tooltip="Select the previous pipeline stage."),
        Binding("right", "move_stage(1)", "Stage", show=False, priority=True,
                tooltip="Select the next pipeline stage."),
        *[
            Binding(str(i + 1), f"select_stage({i})", STAGE_TITLES[s], show=False,
                    tooltip=f"Select the {STAGE_TITLES[s]} stage.")
            for i, s in enumerate(PIPELINE)
        ],
        Binding("enter", "drill_down", "Details", priority=True,
                tooltip="Open the selected stage's evidence, history, stacks and remedies."),
        Binding("s", "stacks", "Stacks", tooltip="Hottest frames per thread role (py-spy top style)."),
    ]

    def compose(self) -> ComposeResult:
        yield HeaderBar()
        yield RankBar(id="ranks")
        yield PipelinePanel(id="pipeline")
        yield JobCharts(id="charts")
        with Horizontal(id="body"):
            yield GpuArea(id="gpus")
            with Vertical(id="side"):
                yield RankTable(min_ranks=GROUP_FROM, id="rank-table")
                yield ProcessPanel(id="processes")
                yield ActivityPanel(id="activity")
        yield HostStrip("Host: waiting for the first sample", id="host")
        yield Footer()

    @property
    def pipeline(self) -> PipelinePanel:
        return self.query_one(PipelinePanel)

    def show(self, view: View) -> None:
        self.query_one(HeaderBar).show(view)
        app = self.watch_app
        self.query_one(RankBar).show(app.rank_tick, app.shown_rank)
        self.query_one(RankTable).show(app.rank_tick, app.shown_rank)
        self.pipeline.show(view.verdict)
        self.query_one(JobCharts).show(view)
        self.query_one(GpuArea).show(view)
        gpus = view.frame.gpus
        self.set_class(not (isinstance(gpus, tuple) and gpus), "-no-gpu")  # give the GPU's room away
        self.query_one(ProcessPanel).show(view)
        self.query_one(ActivityPanel).show(view)
        self.query_one(HostStrip).show(view)

    def action_move_stage(self, step: int) -> None:
        i = PIPELINE.index(self.pipeline.selected)
        self.pipeline.pick(PIPELINE[(i + step) % len(PIPELINE)])

    def action_select_stage(self, index: int) -> None:
        self.pipeline.pick(PIPELINE[index])

    def on_pipeline_panel_stage_clicked(self, event: PipelinePanel.StageClicked) -> None:
        self.pipeline.pick(event.stage)

    def action_drill_down(self) -> None:
        from gpuwatch.tui.screens.stage import StageScreen

        self.app.push_screen(StageScreen(self.pipeline.selected))

    def action_stacks(self) -> None:
        from gpuwatch.tui.screens.stacks import StacksScreen

        self.app.push_screen(StacksScreen())
