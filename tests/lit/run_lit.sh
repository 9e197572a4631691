#!/bin/sh
# Runs the lit suite with the system Python (see run_lit.py).
exec python3 tests/lit/run_lit.py "$@"
