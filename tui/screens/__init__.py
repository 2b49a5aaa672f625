"""Screens pushed over the main screen: stage drill-down, stacks, help."""
