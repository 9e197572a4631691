#!/bin/sh
exec python3 tests/tensorir_reference_test.py "$@"
