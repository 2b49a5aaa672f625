"""Redaction of likely secrets in command lines before they are shown, recorded or reported."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_SECRET_NAME = re.compile(r"(pass(word|wd)?|secret|token|api[_-]?key|access[_-]?key|auth|credential|private[_-]?key)",
                          re.IGNORECASE)
_URL_CREDS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)
MASK = "***"


def redact_cmdline(argv: Sequence[str]) -> str:
    """Join ``argv`` for display with values of secret-looking options masked.

    ``--token abc``, ``--api-key=abc``, ``PASSWORD=abc`` and ``https://user:pw@host`` lose their
    secret part; everything else is kept so the user still recognises the command.
    """
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        arg = _URL_CREDS.sub(lambda m: m.group("scheme") + MASK + "@", arg)
        if "=" in arg:
            name, _, value = arg.partition("=")
            if _SECRET_NAME.search(name) and value:
                arg = f"{name}={MASK}"
        elif arg.startswith("-") and _SECRET_NAME.search(arg):
            mask_next = True
        out.append(arg)
    return shlex.join(out)
