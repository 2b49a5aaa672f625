"""Redaction of likely secrets in command lines before they are shown, recorded or reported.

gpuwatch never reads a process's environment except RANK / LOCAL_RANK (collectors/target.py), so
command lines are the one place a secret can reach the screen, a recording or a report. What is
masked, in each argument:

- the value of an option or ``NAME=value`` whose name says secret (password, token, api key, ...),
  also inside a longer argument (``bash -c "HF_TOKEN=abc python train.py"``);
- credentials in URLs (``https://user:pw@host``) and secret query parameters (``?token=...``);
- ``Bearer`` / ``Basic`` authorization values;
- well-known token shapes anywhere: Hugging Face ``hf_...``, OpenAI ``sk-...``, AWS ``AKIA...``,
  GitHub ``ghp_...`` / ``github_pat_...``, Slack ``xox?-...``.

Masking an innocent value costs a little readability; leaking a secret into a shared recording
costs much more, so the name test is broad.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

MASK = "***"

_SECRET_WORDS = (r"pass(word|wd|phrase)?(?![a-z])|secret|token(?![a-z])|api[_-]?key|access[_-]?key|auth(?![a-z])|"
                 r"credential|private[_-]?key|session[_-]?key|signature|cookie")
"""Words that make a name secret. ``token``, ``pass`` and ``auth`` only as whole words, so that
``--max-tokens``, ``--tokenizer``, ``TOKENIZERS_PARALLELISM``, ``--passes`` and ``--author`` stay."""
_SECRET_NAME = re.compile(rf"({_SECRET_WORDS})|([_-]key$)", re.IGNORECASE)
"""An option or variable name whose value is a secret: ``--hf-token``, ``DB_PASSWORD``, ``--wandb_key``."""

_URL_CREDS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)
_QUERY_SECRET = re.compile(rf"(?P<name>[?&;][^=&;#\s]*({_SECRET_WORDS})[^=&;#\s]*=)[^&;#\s]+", re.IGNORECASE)
_INLINE_ASSIGN = re.compile(rf"(?P<name>\b[A-Za-z_][\w.-]*?({_SECRET_WORDS})[\w.-]*=)[^\s'\";&|]+", re.IGNORECASE)
"""``HF_TOKEN=abc`` inside a longer argument, as in ``bash -c "export HF_TOKEN=abc && python train.py"``."""
_AUTH_HEADER = re.compile(r"\b(?P<kind>bearer|basic|token)(?P<sep>\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_TOKEN_SHAPES = re.compile(
    r"\bhf_[A-Za-z0-9]{20,}"                   # Hugging Face user access token
    r"|\bsk-[A-Za-z0-9_-]{20,}"                # OpenAI (sk-..., sk-proj-...) and look-alikes
    r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b"            # AWS access key ID (long-term, temporary)
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"           # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"         # GitHub fine-grained token
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"         # Slack tokens
)


def redact_arg(arg: str) -> str:
    """One argument with every secret-shaped part masked (names are kept)."""
    arg = _URL_CREDS.sub(lambda m: m.group("scheme") + MASK + "@", arg)
    arg = _QUERY_SECRET.sub(lambda m: m.group("name") + MASK, arg)
    arg = _INLINE_ASSIGN.sub(lambda m: m.group("name") + MASK, arg)
    arg = _AUTH_HEADER.sub(lambda m: m.group("kind") + m.group("sep") + MASK, arg)
    return _TOKEN_SHAPES.sub(MASK, arg)


def redact_cmdline(argv: Sequence[str]) -> str:
    """Join ``argv`` for display with likely secrets masked.

    ``--token abc``, ``--api-key=abc``, ``PASSWORD=abc``, ``https://user:pw@host`` and tokens like
    ``hf_...`` lose their secret part; everything else is kept so the user still recognises the
    command.
    """
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            mask_next = False
            if not arg.startswith("--"):  # else the secret-named option was a flag without a value
                out.append(MASK)
                continue
        if "=" in arg and not arg.startswith(("http://", "https://")):
            name, _, value = arg.partition("=")
            if value and _SECRET_NAME.search(name.lstrip("-")) and " " not in name:
                out.append(f"{name}={MASK}")
                continue
        elif arg.startswith("-") and _SECRET_NAME.search(arg.lstrip("-")):
            mask_next = True
        out.append(redact_arg(arg))
    return shlex.join(out)
