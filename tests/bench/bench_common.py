"""What both side-by-side scripts (compare_torch.py, compare_torch_train.py) start with."""
import argparse
import os
import sys


def setup(doc, min_time, min_time_help):
    """Parses --bench, --rounds and --min-time, imports torch; exits 2 with a message when
    torch or headmap-bench is missing. Returns (args, torch)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/tests/headmap-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=min_time, help=min_time_help)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: apt-get install python3-torch libopenblas0-pthread (use /usr/bin/python3).")
        sys.exit(2)
    if not os.path.exists(a.bench):
        print(f"{a.bench} not found: build first (cmake --build build --target headmap-bench).")
        sys.exit(2)
    return a, torch
