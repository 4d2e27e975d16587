"""The ``primes`` family of generated code tasks (``gen/primes/<difficulty>/<seed>``).

Primality (difficulty 1), the primes of a range in a drawn residue class (2), the n-th prime (3).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_primes(rng: random.Random, d: int) -> Spec:
    if d == 1:
        desc = "Return True if `n` is a prime number and False otherwise (`n` may be 0, 1 or negative)."
        ref = """
        def is_prime(n: int) -> bool:
            if n < 2:
                return False
            i = 2
            while i * i <= n:
                if n % i == 0:
                    return False
                i += 1
            return True
        """
        inputs = [(rng.randint(2, 5000),) for _ in range(N_VISIBLE + N_HIDDEN - 3)] + [(1,), (0,), (7919,)]
        return Spec(desc, "def is_prime(n: int) -> bool", "is_prime", dedent_source(ref), inputs)
    if d == 2:
        q = rng.randint(3, 9)
        r = rng.randint(1, q - 1)
        desc = f"Return the list of primes p with lo <= p <= hi and p % {q} == {r}, in increasing order."
        ref = f"""
        def primes(lo: int, hi: int) -> list:
            out = []
            for n in range(max(lo, 2), hi + 1):
                if all(n % p for p in range(2, int(n ** 0.5) + 1)) and n % {q} == {r}:
                    out.append(n)
            return out
        """
        inputs = []
        for _ in range(N_VISIBLE + N_HIDDEN - 1):
            lo = rng.randint(-5, 300)
            inputs.append((lo, lo + rng.randint(0, 200)))
        inputs.append((10, 5))
        return Spec(desc, "def primes(lo: int, hi: int) -> list", "primes", dedent_source(ref), inputs)
    desc = "Return the n-th prime number, counting from n = 1 (the 1st prime is 2). n is at most 3000."
    ref = """
    def nth_prime(n: int) -> int:
        limit = 30000
        sieve = bytearray([1]) * (limit + 1)
        sieve[0] = sieve[1] = 0
        for i in range(2, int(limit ** 0.5) + 1):
            if sieve[i]:
                sieve[i * i::i] = bytearray(len(sieve[i * i::i]))
        return [i for i, is_p in enumerate(sieve) if is_p][n - 1]
    """
    inputs = [(rng.randint(1, 3000),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [(1,), (3000,)]
    return Spec(desc, "def nth_prime(n: int) -> int", "nth_prime", dedent_source(ref), inputs)
