#!/bin/bash
# Runs manifests_test.py with the system python3 (PyYAML from Debian).
py=/usr/bin/python3
[[ -x $py ]] || py=python3
exec $py tests/deploy/manifests_test.py
