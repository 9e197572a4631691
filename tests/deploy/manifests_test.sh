#!/bin/bash
# Runs manifests_test.py with the system python3 (PyYAML from Debian).
exec python3 tests/deploy/manifests_test.py
