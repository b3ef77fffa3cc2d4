"""What the side-by-side scripts (compare_torch.py, compare_torch_train.py, compare_torch_gpt2.py,
compare_torch_families.py) share."""
import argparse
import os
import sys


def torch_and_bench(bench, target):
    """The torch module when it imports and the headmap program `bench` (CMake target `target`)
    exists; else None, after a message saying what to install or build."""
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: apt-get install python3-torch libopenblas0-pthread (use /usr/bin/python3).")
        return None
    if not os.path.exists(bench):
        print(f"{bench} not found: build first (cmake --build build --target {target}).")
        return None
    return torch


def warm(path):
    """Reads the file once, so that the page cache holds it (a warm load is what is timed)."""
    with open(path, "rb") as f:
        while f.read(16 << 20):
            pass


def setup(doc, min_time, min_time_help):
    """Parses --bench, --rounds and --min-time, imports torch; exits 2 with a message when
    torch or headmap-bench is missing. Returns (args, torch)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/tests/headmap-bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=min_time, help=min_time_help)
    a = ap.parse_args()
    torch = torch_and_bench(a.bench, "headmap-bench")
    if torch is None:
        sys.exit(2)
    return a, torch


class TorchModel:
    """What the torch models of compare_torch_gpt2.py and compare_torch_families.py end their
    forward with (each has self.t, torch, and logits(x))."""

    def maps_logits_loss(self, maps, x, ids, want_logits):
        """Every layer's maps stacked (L, H, T, T); the logits (T, V) of the last stream x and the
        mean next-token loss on ids when asked, else None, None."""
        maps = self.t.stack(maps)
        if not want_logits:
            return maps, None, None
        lg = self.logits(x)
        return maps, lg, self.t.nn.functional.cross_entropy(lg[:-1], ids[1:]).item()
