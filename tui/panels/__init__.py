"""The main screen's panels, one module each."""
