"""Code environments: ``arl/code.functions-v0`` (write a function, refine on test feedback) and
``arl/code.repo-v1`` (fix an injected bug in a small generated repository), on an un-foolable test harness."""
