#!/usr/bin/env python3
# bench/bench_prepare.py [--json] [--bin DIR] [--work DIR] [--threads 1,2] [--corpus bench|kjv]: how fast `archipelago prepare`
# tokenizes a real corpus, beside Hugging Face `tokenizers`' own encode_batch in the same run.
# The corpus is the benchmark corpus (data/make_bench_corpus.py: 23 MB of public-domain English from
# Debian packages) cut into documents and written as JSON lines with zstd; the tokenizer is a
# Llama-3-shaped tokenizer.json of 128,256 ids trained on it with `tokenizers`
# (tests/core/hf_big_vocab.py), so the shards are uint32. Both sides encode the same documents:
# - archipelago: the whole command, wall clock: reading and decompressing the file, parsing JSON,
#   encoding, writing train/val shards (a split by documents);
# - tokenizers: encode_batch(add_special_tokens=False) on the documents already in memory (the time to
#   read the file is not counted for it).
# MB/s is of the documents' UTF-8 text for both. The ids are checked equal, document by document.
# --corpus kjv takes the bundled Bible instead (4.3 MB, seconds: tests/bench checks the rows with it).
# Run it with the venv that has `tokenizers`: .venv/bin/python bench/bench_prepare.py
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def shard_ids(folder, split):
    ids = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(split + "_") and name.endswith(".bin"):
            raw = np.fromfile(os.path.join(folder, name), dtype="<i4", count=256)
            dtype = "<u4" if raw[0] == 20240801 else "<u2"
            ids.append(np.fromfile(os.path.join(folder, name), dtype=dtype, offset=1024).astype(np.uint32))
    return np.concatenate(ids) if ids else np.zeros(0, np.uint32)


def document_in_val(document, seed, fraction):  # core/corpus_splits.cpp's rule, for checking the split
    m = (1 << 64) - 1
    z = (seed * 0x9E3779B97F4A7C15 + document + 1) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z ^= z >> 31
    return (z >> 11) * 2.0 ** -53 < fraction


def expected_ids(path):
    raw = np.fromfile(path, dtype="<u4")
    docs, i = [], 0
    while i < len(raw):
        n = int(raw[i])
        docs.append(raw[i + 1:i + 1 + n])
        i += 1 + n
    return docs


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true", help="one JSON object a row")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-prepare"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--corpus", default="bench", choices=["bench", "kjv"])
    a = ap.parse_args()
    fixture = os.path.join(a.work, "fixture-" + a.corpus)
    if not os.path.exists(os.path.join(fixture, "expected.ids")):
        if a.corpus == "kjv":
            texts = [os.path.join(ROOT, "data", "kjv.txt.zst")]
        else:
            text_dir = os.path.join(a.work, "text")
            if not os.path.exists(os.path.join(text_dir, "SOURCES")):
                run([sys.executable, os.path.join(ROOT, "data", "make_bench_corpus.py"), text_dir])
            texts = sorted(os.path.join(text_dir, n) for n in os.listdir(text_dir) if n.endswith(".txt"))
        run([sys.executable, os.path.join(ROOT, "tests", "core", "hf_big_vocab.py"), fixture] + texts)
    corpus = os.path.join(fixture, "corpus.jsonl.zst")
    docs = expected_ids(os.path.join(fixture, "expected.ids"))
    bos = np.array([128000], np.uint32)
    train = np.concatenate([x for d, ids in enumerate(docs) if not document_in_val(d, 1, 0.02) for x in (bos, ids)])
    val = np.concatenate([x for d, ids in enumerate(docs) if document_in_val(d, 1, 0.02) for x in (bos, ids)])

    rows = []
    for threads in [int(t) for t in a.threads.split(",")]:
        out = os.path.join(a.work, f"prep-{threads}")
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        run([os.path.join(a.bin, "archipelago"), "prepare", "--input", corpus, "--tokenizer",
             os.path.join(fixture, "tokenizer.json"), "--out", out, "--threads", str(threads), "--seed", "1"])
        seconds = time.perf_counter() - start
        hf = json.loads(run([sys.executable, os.path.join(ROOT, "tests", "core", "hf_big_vocab.py"), "--threads",
                             str(threads), fixture], env=dict(os.environ, RAYON_NUM_THREADS=str(threads))).stdout)
        # The same ids: every document, after its <|begin_of_text|>, in the split its hash names, in order.
        got_train, got_val = shard_ids(out, "train"), shard_ids(out, "val")
        same = np.array_equal(got_train, train) and np.array_equal(got_val, val)
        rows.append({"tool": "archipelago prepare", "threads": threads, "mb": hf["mb"], "seconds": seconds,
                     "mb_per_s": hf["mb"] / seconds, "tokens": int(len(got_train) + len(got_val)), "same_ids": bool(same)})
        rows.append({"tool": "tokenizers encode_batch", "threads": threads, "mb": hf["mb"], "seconds": hf["seconds"],
                     "mb_per_s": hf["mb_per_s"], "tokens": hf["tokens"] + len(docs), "same_ids": bool(same)})
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return
    print(f"{a.corpus} corpus as JSON lines: {len(docs)} documents, {rows[0]['mb']:.1f} MB of text; tokenizer of 128,256 ids")
    print(f"{'tool':<26}{'threads':>8}{'seconds':>10}{'MB/s':>9}{'tokens':>11}  same ids")
    for r in rows:
        print(f"{r['tool']:<26}{r['threads']:>8}{r['seconds']:>10.2f}{r['mb_per_s']:>9.1f}{r['tokens']:>11}  "
              f"{'yes' if r['same_ids'] else 'NO'}")


if __name__ == "__main__":
    main()
