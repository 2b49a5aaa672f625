from gpuwatch.startup_heap import hold
from gpuwatch.stopping import guard_startup

guard_startup()  # `python -m gpuwatch`: clean from its first instruction (gpuwatch/signals.py)
hold()  # no garbage collection while modules load (gpuwatch/startup_heap.py)

import sys  # noqa: E402

from gpuwatch.cli import main  # noqa: E402

sys.exit(main())
