#!/usr/bin/env python3
"""bench/make_test_phases.py LOG TOTAL_S: the phase table of a stamped `make` log (bench/make_test_minutes.sh).

Each line of LOG is "<seconds since start> <text>". A phase starts at the first line matching its
pattern and ends where the next phase starts; ctest's own lines give each test's seconds."""
import re
import sys

# (name, pattern of the line that starts the phase); phases are ordered by where they start, so both
# the old layout (three trees one after another) and scripts/make_test.sh's are read.
PHASES = [
    ("configure + build (Release)", r"^cmake -S \. -B build "),
    ("build-asan/: configure (and build, before make_test.sh)", r"^cmake -S \. -B build-asan"),
    ("ctest (Release)", r"^cd build && ctest|== make_test: the tests in build/"),
    ("waiting for the background builds", r"== make_test: waiting"),
    ("ctest (sanitizers)", r"ctest .*-LE no_asan|== make_test: the tests in build-asan/"),
    ("build-fuzz/: configure (and build, before make_test.sh)", r"^CC=clang CXX=clang\+\+ cmake -S \. -B build-fuzz"),
    ("fuzzers", r"^bash scripts/run_fuzzers\.sh|== make_test: the fuzzers"),
]
TEST_LINE = re.compile(r"Test +#\d+: (\S+) \.+.*?(Passed|\*\*\*Failed|\*\*\*Skipped|Failed|Not Run|\*\*\*Timeout).*?([\d.]+) sec")


def main():
    log, total = sys.argv[1], int(sys.argv[2])
    lines = []
    for raw in open(log, errors="replace"):
        stamp, _, text = raw.rstrip("\n").partition(" ")
        lines.append((int(stamp), text))
    starts = [("set-up (deps)", 0)]
    for name, pattern in PHASES:
        rx = re.compile(pattern)
        hit = next((t for t, text in lines if rx.search(text)), None)
        if hit is not None:
            starts.append((name, hit))
    starts.sort(key=lambda s: s[1])
    starts.append(("end", total))
    print(f"{'phase':58s} {'minutes':>8s}")
    for (name, t0), (_, t1) in zip(starts, starts[1:]):
        print(f"{name:58s} {(t1 - t0) / 60:8.1f}")
    print(f"{'total':58s} {total / 60:8.1f}")
    runs, current = [], None
    for _, text in lines:
        if text.startswith("Test project "):
            current = []
            runs.append((text.split()[-1], current))
        m = TEST_LINE.search(text)
        if m and current is not None:
            current.append((float(m.group(3)), m.group(1), m.group(2)))
    for where, tests in runs:
        print(f"\n{where}: {len(tests)} tests, {sum(t for t, _, _ in tests) / 60:.1f} min; the slowest:")
        for secs, name, result in sorted(tests, reverse=True)[:15]:
            print(f"  {secs:7.1f} s  {name} ({result})")


if __name__ == "__main__":
    main()
