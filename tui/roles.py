"""Thread roles as the stack views name them."""

from __future__ import annotations

from gpuwatch.model.stacks import ROLE_MAIN_THREAD, ROLE_OTHER_THREAD, ROLE_PIN, ROLE_WORKER

ROLES = (
    (ROLE_MAIN_THREAD, "main thread"),
    (ROLE_WORKER, "DataLoader workers"),
    (ROLE_PIN, "pin-memory thread"),
    (ROLE_OTHER_THREAD, "other threads"),
)
"""(role, title) in the order the views list them; "other" counts only active threads."""
