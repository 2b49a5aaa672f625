"""Redaction of likely secrets in command lines before they are shown, recorded or reported.

gpuwatch never reads a process's environment except RANK / LOCAL_RANK (collectors/target.py), so
command lines are the one place a secret can reach the screen, a recording or a report. What is
masked, by rule, in each argument (and in each word of an argument that holds a shell line, as in
``bash -c "HF_TOKEN=abc python train.py --key K"``):

- the value of an option, ``NAME=value`` or header (``X-Api-Key: K``) whose name says secret: any
  of its words (split at ``-``, ``_``, ``.`` and camelCase) is one of :data:`SECRET_WORDS` (key,
  token, secret, pass/pw/pwd, auth, jwt, cred, sig, cookie, session, ...);
- URL userinfo (``https://user:pw@host``, ``https://TOKEN@host``) and the values of query
  parameters with such names (``?sig=...``, ``&token=...``);
- ``Bearer`` / ``Basic`` / ``token`` authorization values;
- well-known token shapes anywhere: Hugging Face ``hf_...``, OpenAI ``sk-...``, AWS ``AKIA...``,
  GitHub ``ghp_...`` / ``github_pat_...``, Slack ``xox?-...``.

Masking an innocent value costs a little readability; leaking a secret into a shared recording
costs much more, so the name test is broad. Every rule runs in time linear in the argument: names
are bounded in length and every pattern starts at a fixed character or a word start (the previous
patterns backtracked, and a 64 KB word took 33 s). An argument longer than :data:`MAX_ARG` is cut
after it is redacted, the whole command line at :data:`MAX_CMDLINE`, and control characters are
written out (gpuwatch/untrusted.py).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from gpuwatch.untrusted import clean, cut

MASK = "***"
MAX_ARG = 512
"""Characters of one argument kept (after redaction); the rest is cut with a count."""
MAX_CMDLINE = 4096
"""Characters of a whole command line kept."""
MAX_NAME = 64
"""A longer run is not taken for an option, variable, header or query parameter name."""

SECRET_WORDS = frozenset({
    "key", "apikey", "accesskey", "secretkey", "privatekey", "sessionkey",
    "token", "authtoken", "accesstoken", "refreshtoken", "sessiontoken",
    "secret", "secrets", "pass", "passwd", "password", "passphrase", "pw", "pwd",
    "auth", "authorization", "jwt", "cred", "creds", "credential", "credentials",
    "sig", "signature", "cookie", "cookies", "session", "sessionid",
})
"""Words that make a name secret. Whole words only, so ``--max-tokens``, ``--tokenizer``,
``TOKENIZERS_PARALLELISM``, ``--passes``, ``--author`` and ``--signal`` stay."""

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")


def secret_name(name: str) -> bool:
    """Whether an option, variable, header or parameter name says its value is a secret."""
    if not name or len(name) > MAX_NAME:
        return False
    return any(w.lower() in SECRET_WORDS for w in _WORD_SPLIT.split(name) if w)


_HEADER = re.compile(rf"^\s*(?P<name>[A-Za-z][A-Za-z0-9-]{{0,{MAX_NAME}}})\s*:\s*\S")
"""``X-Api-Key: K``, ``Authorization: Bearer K``: the name anchored at the start."""
_ASSIGN = re.compile(rf"(?<![\w.-])(?P<name>-{{0,2}}[A-Za-z_][\w.-]{{0,{MAX_NAME}}})=(?P<value>[^\s'\";&|]*)")
"""``NAME=value`` / ``--name=value`` starting at a word start (bounded name: linear time)."""
_QUERY = re.compile(rf"(?P<sep>[?&;])(?P<name>[^=&;#?\s]{{1,{MAX_NAME}}})=(?P<value>[^&;#\s]*)")
_SCHEME = re.compile(r"(bearer|basic|token)\s+", re.IGNORECASE)
_AUTH_VALUE = re.compile(r"\b(?P<kind>bearer|basic|token)(?P<sep>\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_TOKEN_SHAPES = re.compile(
    r"\bhf_[A-Za-z0-9]{20,}"                   # Hugging Face user access token
    r"|\bsk-[A-Za-z0-9_-]{20,}"                # OpenAI (sk-..., sk-proj-...) and look-alikes
    r"|\b(AKIA|ASIA)[0-9A-Z]{16}\b"            # AWS access key ID (long-term, temporary)
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"           # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"         # GitHub fine-grained token
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"         # Slack tokens
)
_SPACE = re.compile(r"(\s+)")


def _mask_userinfo(arg: str) -> str:
    """``scheme://userinfo@host`` -> ``scheme://***@host``, found with str.find (no backtracking)."""
    out, pos = [], 0
    while (i := arg.find("://", pos)) >= 0:
        start = i + 3
        end = start
        n = len(arg)
        while end < n and arg[end] not in "/?#" and not arg[end].isspace():
            end += 1
        at = arg.rfind("@", start, end)
        if at > start:
            out.append(arg[pos:start] + MASK)
            pos = at
        else:
            out.append(arg[pos:end])
            pos = end
    out.append(arg[pos:])
    return "".join(out)


def _sub_assign(m: re.Match[str]) -> str:
    name = m.group("name")
    return f"{name}={MASK}" if m.group("value") and secret_name(name.lstrip("-")) else m.group(0)


def _sub_query(m: re.Match[str]) -> str:
    if m.group("value") and secret_name(m.group("name")):
        return f"{m.group('sep')}{m.group('name')}={MASK}"
    return m.group(0)


def _header(text: str) -> str | None:
    """``Name: value`` with a secret name, its value masked (an auth scheme word kept); else None."""
    h = _HEADER.match(text)
    if h is None or not secret_name(h.group("name")):
        return None
    head, value = text[:h.end() - 1], text[h.end() - 1:]
    scheme = _SCHEME.match(value)
    return head + (scheme.group(0) if scheme else "") + MASK


def redact_arg(arg: str) -> str:
    """One argument with every secret-shaped part masked (names are kept)."""
    if (h := _header(arg)) is not None:
        return h
    if "://" in arg:
        arg = _mask_userinfo(arg)
    if "=" in arg:
        arg = _QUERY.sub(_sub_query, arg)
        arg = _ASSIGN.sub(_sub_assign, arg)
    arg = _AUTH_VALUE.sub(lambda m: m.group("kind") + m.group("sep") + MASK, arg)
    return _TOKEN_SHAPES.sub(MASK, arg)


def _option_name(word: str) -> str | None:
    """The name of ``--name`` / ``-name`` (no ``=``), or None when ``word`` is not an option."""
    if word.startswith("-") and "=" not in word and len(word) <= MAX_NAME + 2:
        return word.lstrip("-")
    return None


def _redact_words(words: Sequence[str]) -> list[str]:
    """Words of a command line: ``--name VALUE`` masks VALUE when the name is secret (not when the
    next word is itself an option: the secret-named option was a flag)."""
    out: list[str] = []
    mask_next = False
    for w in words:
        if mask_next:
            mask_next = False
            if not w.startswith("--"):
                out.append(MASK)
                continue
        name = _option_name(w)
        if name is not None and secret_name(name):
            mask_next = True
            out.append(w)
            continue
        if " " in w or "\t" in w or "\n" in w:  # a shell line inside one argument: its words too
            out.append(_redact_line(w))
            continue
        out.append(redact_arg(w))
    return out


def _redact_line(text: str) -> str:
    if (h := _header(text)) is not None:
        return h
    parts = _SPACE.split(text)
    words = _redact_words(parts[0::2])
    parts[0::2] = words
    return "".join(parts)


def redact_cmdline(argv: Sequence[str]) -> str:
    """Join ``argv`` for display with likely secrets masked and long arguments cut.

    ``--token abc``, ``--api-key=abc``, ``PASSWORD=abc``, ``https://user:pw@host`` and tokens like
    ``hf_...`` lose their secret part; everything else is kept so the user still recognises the
    command. The result is :func:`gpuwatch.untrusted.clean`: no control character of the job's
    reaches a terminal or a report.
    """
    words = list(argv)
    kept = len(words)
    while kept and not words[kept - 1]:
        kept -= 1
    if len(words) - kept >= 2:
        # A process that rewrites its title (setproctitle and the like) pads /proc/PID/cmdline with
        # NULs, which read as hundreds of empty arguments: "'' '' ''..." filled a 1,794-character
        # report header (trial 33). A run of trailing empty ones is that padding; one alone may be a
        # real argument (--prefix ""), kept, as are inner ones.
        words = words[:kept]
    out = [cut(a, MAX_ARG) for a in _redact_words(words)]
    return clean(shlex.join(out), MAX_CMDLINE)
