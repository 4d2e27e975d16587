"""Suite-wide test set-up: CPU threads per pytest-xdist worker.

CI runs the suite with pytest-xdist on every core (``.ci/run``: ``-n auto``). torch (and the BLAS it uses) starts
one thread per core in EVERY worker, so two workers on two cores would run four busy threads that wait on each
other. Each worker therefore gets ``cores // workers`` threads (at least 1), set before torch is imported (through
``OMP_NUM_THREADS``, which torch reads at import) and by the baseline tests' ``torch.set_num_threads(TEST_THREADS)``.
Without xdist, the tests use 2 threads, as before.
"""

from __future__ import annotations

import os

_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
#: torch threads per test process: 2 without xdist; with it, the cores shared out among the workers.
TEST_THREADS = 2 if _WORKERS <= 1 else max(1, (os.cpu_count() or 1) // _WORKERS)

if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(TEST_THREADS))
    os.environ.setdefault("MKL_NUM_THREADS", str(TEST_THREADS))
