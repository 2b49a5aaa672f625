"""A job whose every name is hostile (tests/adversarial.py's corpus): its argv (given on the command
line), its process name (comm), a thread's name, a function's name and qualified name, and the file
name its code claims. It burns CPU in that function so py-spy sees it on every dump.

Usage: python hostile_names.py READY_FILE [hostile argv ...]
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time

ESC = "x\x1b]0;PWNED\x07\x1b[2J\n\n# INJECTED"
FUNC = ESC + "\x9b2J\u202e[link](http://evil.example)"
FILE = "/tmp/\x1b[31mevil\n# file\u202e.py"
THREAD = "t\x1b]0;THREAD\x07\u2066"
COMM = b"c\x1b]0;C\x07\x9b"  # the kernel keeps 15 bytes


def _set_comm(name: bytes) -> None:
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


SRC = """
def spin(stop):
    x = 0
    while not stop.is_set():
        for i in range(10000):
            x += i * i
    return x
"""


def main() -> None:
    ready = sys.argv[1]
    ns: dict = {}
    exec(compile(SRC, FILE, "exec"), ns)  # noqa: S102 - the code claims a hostile file name
    spin = ns["spin"]
    spin.__code__ = spin.__code__.replace(co_name=FUNC, co_qualname=FUNC)
    stop = threading.Event()
    t = threading.Thread(target=spin, args=(stop,), name=THREAD, daemon=True)
    t.start()
    _set_comm(COMM)
    with open(ready, "w") as f:
        f.write("ready")
    try:
        spin(stop)
    finally:
        stop.set()


if __name__ == "__main__":
    main()
