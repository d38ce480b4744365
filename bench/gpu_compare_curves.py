#!/usr/bin/env python3
"""bench/gpu_compare_curves.py: compares two `archipelago train --log-format jsonl` loss curves of the
same seed, config and data (bench/gpu_check.sh: the GPU's bf16 run against the CPU's fp32 reference).
Prints the mean train loss over each window of steps and every val loss side by side, with their
relative difference; exits 1 when a window's or a val loss's difference is over the tolerance.
Single steps are not compared: one bf16 rounding moves one batch's loss more than a window's mean.
Usage: gpu_compare_curves.py REFERENCE.jsonl RUN.jsonl [--window 25] [--tolerance 0.02]
"""
import argparse
import json
import sys


def read_curve(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                row = json.loads(line)
                if "step" in row and "loss" in row:
                    rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("run")
    ap.add_argument("--window", type=int, default=25)
    ap.add_argument("--tolerance", type=float, default=0.02)
    a = ap.parse_args()
    ref, run = read_curve(a.reference), read_curve(a.run)
    if not ref or len(ref) != len(run):
        print(f"curves differ in length: {len(ref)} reference steps, {len(run)} run steps")
        return 1
    worst = 0.0
    print(f"{'steps':>11} {'reference':>10} {'run':>10} {'rel diff':>9}")
    for start in range(0, len(ref), a.window):
        r = [x["loss"] for x in ref[start:start + a.window]]
        g = [x["loss"] for x in run[start:start + a.window]]
        mr, mg = sum(r) / len(r), sum(g) / len(g)
        d = abs(mg - mr) / mr
        worst = max(worst, d)
        print(f"{start + 1:>5}-{start + len(r):<5} {mr:>10.4f} {mg:>10.4f} {100 * d:>8.2f}%")
    for x, y in zip(ref, run):
        if "val_loss" in x and "val_loss" in y:
            d = abs(y["val_loss"] - x["val_loss"]) / x["val_loss"]
            worst = max(worst, d)
            print(f"val at step {x['step']:>4}: {x['val_loss']:.4f} against {y['val_loss']:.4f} ({100 * d:.2f}%)")
    ok = worst <= a.tolerance
    print(f"largest relative difference {100 * worst:.2f}% (tolerance {100 * a.tolerance:.0f}%): "
          f"{'within' if ok else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
