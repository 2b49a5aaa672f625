"""Bad input from the user: one line on stderr and exit code 2 (gpuwatch/cli.py prints it).

A bottom module (it imports nothing of gpuwatch), so every layer that checks user input (the
commands, the report, the Prometheus exporter) can raise it without importing the command line.
"""

EXIT_USAGE = 2
"""The exit code for bad input, as argparse and most Unix tools use it."""


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit 2."""
