"""gpuwatch's Textual TUI: shows frames and verdicts, never collects anything itself."""
