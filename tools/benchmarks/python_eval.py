"""Times kb.eval of a small GEMM (256^3 on one PE) from Python, in process, per engine:
the typed API's call as a user makes it (BM_ApiEvalSmallGemm times the C++ side alone).

    PYTHONPATH=build-cpu/python python3 tools/benchmarks/python_eval.py [CALLS]
"""

import sys
import time

import kernbench_gpu as kb


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for engine in ("both", "batched", "reference"):
        kb.eval("gemm", m=256, n=256, k=256, engine=engine)  # the topology parsed, the caches warm
        rounds = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(calls // 5):
                kb.eval("gemm", m=256, n=256, k=256, engine=engine)
            rounds.append((time.perf_counter() - t) / (calls // 5) * 1e6)
        rounds.sort()
        print(f"kb.eval gemm 256^3 engine={engine}: median {rounds[2]:.1f} us a call (rounds: "
              + ", ".join(f"{r:.1f}" for r in rounds) + ")")


if __name__ == "__main__":
    main()
