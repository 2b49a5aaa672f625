import sys

from gpuwatch.cli import main

sys.exit(main())
