"""A Static that shows its text as is: frames carry paths, command lines and error messages, and
a ``[Errno 13]`` or ``--lr [0.1]`` there must print, not be read as markup."""

from __future__ import annotations

from gpuwatch.tui.panels.lazy_static import LazyStatic


class Plain(LazyStatic):
    """Text without markup; updates as :class:`LazyStatic` (no-op when unchanged, layout only when the size changes)."""

    def __init__(self, content: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(content, markup=False, id=id, classes=classes)
