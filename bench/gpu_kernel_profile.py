#!/usr/bin/env python3
"""bench/gpu_kernel_profile.py: sums an `ncu --metrics gpu__time_duration.sum --csv` log by kernel
(bench/gpu_check.sh profiles a few GPT-2 124M training steps) and prints each kernel's share of
the GPU time, largest first.
Usage: gpu_kernel_profile.py NCU.csv [--top 25]
"""
import argparse
import collections
import csv

TO_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    with open(a.csv) as f:
        rows = [r for r in csv.DictReader(line for line in f if line.startswith('"'))
                if r.get("Metric Name") == "gpu__time_duration.sum"]
    by = collections.defaultdict(lambda: [0, 0.0])
    for r in rows:
        name = r["Kernel Name"].split("(")[0][:70]
        by[name][0] += 1
        by[name][1] += float(r["Metric Value"].replace(",", "")) * TO_US[r["Metric Unit"]]
    total = sum(us for _, us in by.values())
    print(f"{len(rows)} kernels, {total / 1e3:.1f} ms of GPU time")
    print(f"{'share':>6} {'ms':>8} {'calls':>6}  kernel")
    for name, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print(f"{100 * us / total:5.1f}% {us / 1e3:8.2f} {n:6d}  {name}")


if __name__ == "__main__":
    main()
