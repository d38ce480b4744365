# tests/bench/check_bench_json.py: runs one bench with --json and its smallest settings, and checks
# every stdout row with Python's strict json module: exactly the expected keys, in order, of the
# expected types (int is not float, bool is neither; NaN and Infinity are rejected). No timings checked.
# Usage: python3 check_bench_json.py BIN_DIR CASE   (CASE: one of CASES below; run from the source root)
import json
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT_S = 90

TRAIN_STEP = {"config": str, "B": int, "T": int, "threads": int, "ms_per_step": float, "gflops": float,
              "forward_ms": float, "backward_ms": float, "optimizer_ms": float, "sgemm_gflops": float}
CODECS = {"codec": str, "data": str, "threads": int, "ratio": float, "rel_l2_error": float,
          "encode_gbps": float, "decode_gbps": float}
ISLAND = {"device": str, "devices": int, "parallel": str, "tokens_per_s": float, "ms_per_step": float,
          "bytes_per_step": int, "state_mb_per_device": float, "params_mb": float, "grads_mb": float,
          "optimizer_mb": float, "comm_mb": float, "activations_mb": float, "workspace_mb": float}
ISLAND_SKIPPED = {"device": str, "skipped": str}
CONVERGENCE = {"name": str, "val_loss": float, "bytes": int, "peak_bytes_per_sync": int, "speedup": float,
               "speedup_capped": bool, "wall_speedup": float, "rounds": int, "wall_s": float, "wall_s_hetero": float, "epochs": float, "tokens": int,
               "steps_per_island": int, "staleness_mean": float, "staleness_max": float, "refused": int,
               "seconds": float}
GPU_TRAIN = {"attention": str, "B": int, "T": int, "ms_per_step": float, "tokens_per_s": float, "tflops": float,
             "mfu": float, "peak_gib": float}
PREPARE = {"tool": str, "threads": int, "mb": float, "seconds": float, "mb_per_s": float, "tokens": int,
           "same_ids": bool}
ROUNDS = {"params": int, "islands": int, "codec": str, "down_codec": str, "checkpoint_every": int, "host_threads": int, "moments_every": int,
          "inner_steps": str,
          "state_on_disk": bool, "joins": str, "host_rss_over_p": float, "held_deltas_over_p": float,
          "host_bound_over_p": float, "peer_rss_over_p": float, "peer_diloco_rss_over_p": float, "peer_anon_over_p": float, "peer_compute_s": float,
          "state_mb_per_s": float, "state_all_mb_per_s": float,
          "curve_ceiling_mb_per_s": float, "link_mb_per_s": float, "idle_s_per_sync": float, "idle_s_max": float, "cpu_s_per_round": float, "cores": int,
          "host_fresh_mb_per_round": float, "peer_fresh_mb_per_round": float, "host_start_s": float, "receive_s": float,
          "decode_s": float, "aggregate_encode_s": float, "outer_step_s": float, "checkpoint_s": float,
          "eval_s": float, "send_s": float}
SKIP = 77  # ctest's SKIP_RETURN_CODE for the GPU case on a machine without a usable GPU


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(bin_dir, args, expect_ok=True):
    cmd = [os.path.join(bin_dir, args[0])] + args[1:]
    if not os.access(cmd[0], os.X_OK):
        fail(f"{cmd[0]} is not built (cmake --build ... --target {args[0]})")
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    if expect_ok and p.returncode != 0:
        fail(f"{args[0]} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def reject_constant(name):
    raise ValueError(f"non-finite number {name} (not JSON)")


def check_row(row, *schemas):
    """The schema whose key list is exactly row's (in order), with every value of its type."""
    for schema in schemas:
        if list(row) != list(schema):
            continue
        for key, want in schema.items():
            value = row[key]
            if type(value) is not want:  # exact: bool is not int, int is not float
                fail(f"row {row}: '{key}' is {type(value).__name__} {value!r}, expected {want.__name__}")
        return schema
    fail(f"row keys {list(row)} match none of the expected key lists {[list(s) for s in schemas]}")


def json_rows(stdout, *schemas, only_json_lines=False):
    rows = []
    for line in stdout.splitlines():
        if only_json_lines and not line.startswith("{"):
            continue  # bench_gpu_train prints its table before the rows
        try:
            row = json.loads(line, parse_constant=reject_constant)
        except ValueError as e:
            fail(f"not a strict JSON line: {line!r} ({e})")
        if not isinstance(row, dict):
            fail(f"not a JSON object: {line!r}")
        check_row(row, *schemas)
        rows.append(row)
    if not rows:
        fail("no JSON rows on stdout")
    return rows


def expect_names(rows, key, expected):
    got = [r[key] for r in rows]
    if got != expected:
        fail(f"rows' '{key}' are {got}, expected {expected}")


def case_train_step(bin_dir):
    p = run(bin_dir, ["bench_train_step", "--json", "--steps", "1", "--config", "tiny,llama-tiny"])
    expect_names(json_rows(p.stdout, TRAIN_STEP), "config", ["tiny", "llama-tiny"])


def case_codecs(bin_dir):
    p = run(bin_dir, ["bench_codecs", "--json", "--n", "65536", "--threads", "1", "--reps", "1"])
    rows = json_rows(p.stdout, CODECS)
    if rows[0]["codec"] != "memcpy" or len(rows) < 2 or any(r["data"] != "gaussian" for r in rows[1:]):
        fail(f"expected a memcpy row then gaussian rows, got {[(r['codec'], r['data']) for r in rows]}")


def case_pseudo_grad(bin_dir):
    """make_pseudo_grad writes N floats, and bench_codecs --pseudo-grad adds rows for them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "delta.f32")
        run(bin_dir, ["make_pseudo_grad", path, "--config", "tiny", "--steps", "1", "--floats", "4096"])
        if os.path.getsize(path) != 4096 * 4:
            fail(f"{path} holds {os.path.getsize(path)} bytes, expected {4096 * 4}")
        p = run(bin_dir, ["bench_codecs", "--json", "--n", "4096", "--threads", "1", "--reps", "1",
                          "--codecs", "int8,fp4+zstd", "--pseudo-grad", path])
    rows = json_rows(p.stdout, CODECS)
    expect_names(rows, "data", ["-", "gaussian", "gaussian", "pseudo-grad", "pseudo-grad"])
    expect_names(rows, "codec", ["memcpy", "int8", "fp4+zstd", "int8", "fp4+zstd"])


def case_island(bin_dir):
    p = run(bin_dir, ["bench_island", "--json", "--steps", "1", "--batch", "1", "--seq-len", "16"])
    rows = json_rows(p.stdout, ISLAND, ISLAND_SKIPPED)
    cpu = [(r["devices"], r["parallel"]) for r in rows if r["device"] == "cpu"]
    expected = [(1, "ddp"), (2, "ddp"), (2, "zero3"), (2, "ddp+rc:attention"), (2, "ddp+rc:block"), (2, "zero3+rc:block")]
    if cpu != expected:
        fail(f"cpu rows are {cpu}, expected {expected}")
    gpu = [r for r in rows if r["device"] == "gpu"]
    if not gpu:
        fail("no GPU rows and no 'skipped' row for the GPU")
    modes = {r["parallel"] for r in gpu if "skipped" not in r}
    if modes and modes != {"ddp", "zero3", "ddp+rc:attention", "ddp+rc:block", "zero3+rc:block", "ddp+offload"}:
        fail(f"GPU rows have the modes {sorted(modes)}, not one row per mode")


def case_convergence(bin_dir):
    p = run(bin_dir, ["bench_convergence", "--json", "--corpus", "kjv", "--rounds", "3", "--H", "2", "--islands", "2",
                      "--batch", "1", "--seq-len", "16", "--eval-every", "1", "--val-batches", "2", "--step-s", "0.1",
                      "--sync-overhead-s", "1", "--auto-min-H", "1"])
    rows = json_rows(p.stdout, CONVERGENCE)
    expect_names(rows, "name", ["single", "single-same-steps", "ddp", "diloco-fp32", "diloco-int8", "diloco-fp4-ef",
                                "overlap-int8", "overlap-fp4", "overlap-fp4-late", "overlap-int8-auto",
                                "overlap-fp4-auto", "streaming-fp4", "streaming-fp4-auto", "async"])
    by_name = {r["name"]: r for r in rows}
    if by_name["single"]["speedup"] != 1.0 or by_name["single"]["wall_speedup"] != 1.0:
        fail(f"the one-island run's own speed-ups are {by_name['single']['speedup']} and "
             f"{by_name['single']['wall_speedup']}, not 1")
    # The clock: a sync run pays each of its 3 syncs (over 1 s: the link and 1 s beyond it) after its
    # round's 0.2 s of compute. An overlapped one computes the next round's first step while a sync runs
    # (H - 1 = 1 step: the update lands later than that) and its last step after the update, so it takes
    # 2 x 0.1 s less; the -late row folds the update in after both steps, 2 x 0.2 s less (wall_s is
    # rounded to 0.1 s). `stale` is the steps each of the 2 updates in flight came late: H - 1, or H for
    # -late. H from the link takes every step in one round here (a sync is longer than the 6 steps).
    late = by_name["overlap-fp4-late"]
    for codec in ["int8", "fp4"]:
        sync, overlap = by_name[f"diloco-{codec}" + ("-ef" if codec == "fp4" else "")], by_name[f"overlap-{codec}"]
        auto = by_name[f"overlap-{codec}-auto"]
        if overlap["rounds"] != 3 or overlap["steps_per_island"] != 6 or auto["steps_per_island"] != 6:
            fail(f"overlap-{codec}: {overlap['rounds']} rounds of {overlap['steps_per_island']} steps, not 3 of 6")
        if abs(overlap["wall_s"] - (sync["wall_s"] - 2 * 0.1)) > 0.15:
            fail(f"overlap-{codec} took {overlap['wall_s']} s on the clock against sync's {sync['wall_s']}")
        if overlap["staleness_mean"] != 1 or overlap["staleness_max"] != 1:
            fail(f"overlap-{codec}'s updates came {overlap['staleness_mean']}/{overlap['staleness_max']} steps late, not 1")
        if auto["rounds"] != 1 or not auto["wall_speedup"] > 0:
            fail(f"overlap-{codec}-auto: {auto['rounds']} rounds, wall speed-up {auto['wall_speedup']}")
    if abs(late["wall_s"] - (by_name["diloco-fp4-ef"]["wall_s"] - 2 * 0.2)) > 0.15 or late["staleness_max"] != 2:
        fail(f"overlap-fp4-late took {late['wall_s']} s, its updates {late['staleness_max']} steps late")
    # Streaming from the link: its fragment syncs need more steps than the run has, so one round of 6
    # steps (4 fragment syncs), the same tokens as the other rows.
    auto = by_name["streaming-fp4-auto"]
    if auto["rounds"] != 4 or auto["steps_per_island"] != 6 or auto["tokens"] != by_name["streaming-fp4"]["tokens"]:
        fail(f"streaming-fp4-auto: {auto['rounds']} fragment syncs of {auto['steps_per_island']} steps")
    for name in ["single", "ddp", "diloco-fp32", "streaming-fp4"]:
        if not 0 <= by_name[name]["epochs"] <= 1 or by_name[name]["tokens"] <= 0:
            fail(f"{name} read {by_name[name]['epochs']} epochs: the bench must read no token twice")
    if by_name["async"]["staleness_mean"] < 0:
        fail("the async row reports no staleness")


def case_rounds(bin_dir):
    """bench_rounds: a real host and 2 peer processes, 2 rounds of the tiny model; every figure measured."""
    p = run(bin_dir, ["bench_rounds", "--json", "--config", "tiny", "--islands", "2", "--rounds", "2",
                      "--ceiling-mb", "50"])
    row = json_rows(p.stdout, ROUNDS)[0]
    missing = [k for k in ["host_rss_over_p", "held_deltas_over_p", "host_bound_over_p", "cpu_s_per_round", "peer_rss_over_p", "state_mb_per_s", "state_all_mb_per_s", "curve_ceiling_mb_per_s", "link_mb_per_s",
                           "host_start_s", "receive_s", "send_s"] if not row[k] > 0]
    if missing or row["idle_s_per_sync"] < 0 or row["params"] != 7248640 or row["inner_steps"] != "real":
        fail(f"not measured: {missing}; row {row}")
    # The same with synthetic inner steps (bench_rounds_peer), the peers' state on disk and joining one
    # by one: labelled so, and every figure measured.
    p = run(bin_dir, ["bench_rounds", "--json", "--synthetic", "--state-on-disk", "--one-by-one", "--config", "tiny",
                      "--islands", "2", "--rounds", "2", "--ceiling-mb", "50"])
    row = json_rows(p.stdout, ROUNDS)[0]
    missing = [k for k in ["host_rss_over_p", "peer_rss_over_p", "peer_anon_over_p", "state_mb_per_s",
                           "host_start_s", "receive_s", "send_s"]
               if not row[k] > 0]
    if (missing or row["idle_s_per_sync"] < 0 or row["inner_steps"] != "synthetic" or not row["state_on_disk"]
            or row["joins"] != "one by one"):
        fail(f"synthetic: not measured: {missing}; row {row}")


def case_gpu_train(bin_dir):
    p = run(bin_dir, ["bench_gpu_train", "--json", "--config", "tiny", "--vocab", "4096", "--B", "4", "--T", "64",
                      "--steps", "6", "--attention", "both"])
    if p.stdout.startswith("SKIPPED:"):
        print(p.stdout.strip())
        sys.exit(SKIP)
    expect_names(json_rows(p.stdout, GPU_TRAIN, only_json_lines=True), "attention", ["fused", "unfused"])


def case_prepare(bin_dir):
    """bench/bench_prepare.py on the bundled corpus: one row for prepare, one for `tokenizers`, the same ids."""
    python = os.path.join(".venv", "bin", "python")
    if not os.access(python, os.X_OK):
        fail(f"{python} is missing: scripts/install_deps.sh makes it")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [python, "bench/bench_prepare.py", "--json", "--corpus", "kjv", "--threads", "1", "--bin", bin_dir,
               "--work", tmp]
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
        if p.returncode != 0:
            fail(f"bench_prepare.py exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    rows = json_rows(p.stdout, PREPARE)
    expect_names(rows, "tool", ["archipelago prepare", "tokenizers encode_batch"])
    if not all(r["same_ids"] for r in rows) or rows[0]["tokens"] != rows[1]["tokens"]:
        fail(f"prepare and tokenizers gave different ids: {rows}")


def case_cli(bin_dir):
    """--help exits 0 and shows defaults; a mistyped flag exits non-zero and names the flag."""
    p = run(bin_dir, ["bench_train_step", "--help"])
    if not re.search(r"--steps\b.*=5\b", p.stdout):
        fail(f"--help does not show --steps' default 5:\n{p.stdout}")
    p = run(bin_dir, ["bench_train_step", "--stepz", "3"], expect_ok=False)
    if p.returncode == 0 or "--stepz" not in p.stdout + p.stderr:
        fail(f"--stepz: exit {p.returncode}, expected non-zero and a message naming --stepz:\n{p.stdout}{p.stderr}")


CASES = {name[len("case_"):]: f for name, f in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CASES:
        sys.exit(f"usage: check_bench_json.py BIN_DIR {{{','.join(CASES)}}}")
    CASES[sys.argv[2]](sys.argv[1])
    print("ok")
