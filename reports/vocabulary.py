"""The names the C++ defines and the scripts share: ops, dtypes and targets.

Read from reports/vocabulary.json, which actgrad-vocabulary (tools/vocabulary)
prints from include/actgrad/types.h and kernels/variants/targets.h; ctest vocabulary.fresh fails when the file is stale. A committed
file rather than one in the build: the Python tests and bench/goals.py run
without a build.

Standard library only: bench/goals.py and scripts/bench import this module.
"""

import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vocabulary.json")) as _f:
    _VOCABULARY = json.load(_f)

OPS = tuple(_VOCABULARY["ops"])
DTYPES = tuple(_VOCABULARY["dtypes"])
FLOAT_DTYPES = tuple(_VOCABULARY["float_dtypes"])
# Targets in order of preference, widest first: all, Highway's, the hand-written AVX-512 files'.
TARGETS = tuple(_VOCABULARY["targets"])
HIGHWAY_TARGETS = tuple(_VOCABULARY["highway_targets"])
NATIVE_TARGETS = tuple(_VOCABULARY["native_targets"])
