"""Input and output: exports and formats, the command line, benchmark helpers."""
