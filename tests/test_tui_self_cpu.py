"""The header's own-CPU figure: measured with a frame while frames are drawn (one paint for both),
by the app's timer only while none are (paused, ended, slow frames)."""

from __future__ import annotations

from bench.draw_cost import _Analysed, _Idle, _painted, analysed
from gpuwatch.tui.app import SELF_CPU_INTERVAL
from gpuwatch.tui.panels.header import StateLine

RECORDING = "tests/data/h200/run25_lightning_persistent.jsonl.gz"


async def test_own_cpu_is_measured_with_the_frame_and_by_the_timer_only_without_frames():
    from gpuwatch.tui.app import GpuwatchApp

    ticks = analysed(RECORDING)[:3]
    readings = iter(range(1, 100))
    app = GpuwatchApp(_Idle(), analysis=_Analysed(), self_cpu=lambda: float(next(readings)))  # type: ignore[arg-type]

    def draw(i: int) -> None:
        frame, verdict = ticks[i]
        app.analysis.add(frame, verdict)
        app._latest = (frame, verdict)
        app.render_latest()

    def state() -> str:
        return app.screen.query_one(StateLine)._text

    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        assert app.self_cpu == 1.0  # on mount
        draw(0)
        await _painted(app)
        assert app.self_cpu == 1.0 and "self 1.0 % CPU" in state()  # measured moments ago: not due
        app._self_cpu_at -= SELF_CPU_INTERVAL  # due: the next frame measures, and draws it
        draw(1)
        assert app.self_cpu == 2.0 and "self 2.0 % CPU" in state()
        app._measure_self_idle()  # a frame was just drawn: the timer leaves it to the next one
        assert app.self_cpu == 2.0
        app._self_cpu_at -= SELF_CPU_INTERVAL
        app._drawn_at -= SELF_CPU_INTERVAL  # no frame for a while (paused, ended): the timer measures
        app._measure_self_idle()
        await _painted(app)
        assert app.self_cpu == 3.0 and "self 3.0 % CPU" in state()
        app.paused = True
        app._self_cpu_at -= SELF_CPU_INTERVAL
        draw(2)  # paused: nothing drawn, nothing measured; the timer goes on measuring
        assert app.self_cpu == 3.0
        app._measure_self_idle()
        assert app.self_cpu == 4.0
        app.exit()
