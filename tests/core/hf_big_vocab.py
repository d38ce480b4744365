#!/usr/bin/env python3
# tests/core/hf_big_vocab.py OUT TEXT...: a Llama-3-shaped tokenizer.json with 128,256 ids, trained with
# the `tokenizers` library, and a JSON-lines corpus with the ids `tokenizers` gives it.
# - The BPE (Llama 3's split regex, ByteLevel without regex, ignore_merges) learns what merges the TEXT
#   files (.txt or .txt.zst) hold; its token ids are then spread over 0..127,999 by a seeded
#   permutation, so that common tokens have ids above 65,535 and only uint32 shards can hold them; the
#   ids left over hold filler tokens that no text can produce ("q123q": the split regex always cuts
#   letters from digits), since `tokenizers` wants a vocabulary without holes.
#   <|begin_of_text|> is 128,000 (the template's BOS), <|end_of_text|> 128,001, and 254 reserved
#   special tokens fill 128,002..128,255, as in Llama 3.
# - OUT/corpus.jsonl.zst: every TEXT file cut into documents at its blank-line-then-title lines (the
#   Bible's chapters), one {"text": ...} object a line.
# - OUT/expected.ids: for each document in order, its token count then its ids (uint32 little-endian),
#   from one encode_batch(add_special_tokens=False) call.
# test_prepare compares `archipelago prepare`'s uint32 shards with these ids. With --threads N OUT, only
# the speed is measured (bench/bench_prepare.py): encode_batch of OUT/corpus.jsonl.zst's documents on N
# threads, printed as one JSON object.
import json
import os
import random
import re
import subprocess
import sys
import time

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
BPE_IDS = 128000
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>"] + [f"<|reserved_special_token_{i}|>" for i in range(254)]


def read_text(path):
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dcq", path], check=True, capture_output=True).stdout.decode("utf-8")
    with open(path, encoding="utf-8") as f:
        return f.read()


def documents(text):
    # A blank line followed by a short title line starts a document ("\n\nGenesis 2\n").
    parts = re.split(r"\n\n(?=[^\s][^\n]{0,40}\n)", text)
    return [p for p in parts if p.strip()]


def train(texts):
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=BPE_IDS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    # Spread the learned ids over 0..BPE_IDS-1 and add Llama 3's special tokens after them.
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    new_ids = random.Random(1234).sample(range(BPE_IDS), len(vocab))
    spread = {t: new_ids[i] for t, i in vocab.items()}
    taken = set(spread.values())
    spread.update({f"q{i}q": i for i in range(BPE_IDS) if i not in taken})
    spec["model"]["vocab"] = spread
    spec["added_tokens"] = [{"id": BPE_IDS + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                             "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    spec["post_processor"] = json.loads(processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", BPE_IDS)]).__getstate__())
    spec["decoder"] = json.loads(decoders.ByteLevel().__getstate__())
    return Tokenizer.from_str(json.dumps(spec))


def main():
    args = sys.argv[1:]
    threads = None
    if args[:1] == ["--threads"]:
        threads, args = int(args[1]), args[2:]
    out, inputs = args[0], args[1:]
    os.makedirs(out, exist_ok=True)
    if threads is not None:  # bench_prepare: the speed of encode_batch on the corpus's documents
        os.environ["RAYON_NUM_THREADS"] = str(threads)  # read when the thread pool starts: before encode_batch
        tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
        lines = read_text(os.path.join(out, "corpus.jsonl.zst")).splitlines()
        docs = [json.loads(line)["text"] for line in lines]
        size = sum(len(d.encode("utf-8")) for d in docs)
        start = time.perf_counter()
        encodings = tok.encode_batch(docs, add_special_tokens=False)
        seconds = time.perf_counter() - start
        print(json.dumps({"threads": threads, "mb": size / 1e6, "seconds": seconds, "mb_per_s": size / 1e6 / seconds,
                          "tokens": sum(len(e.ids) for e in encodings)}))
        return
    texts = [read_text(p) for p in inputs]
    tok = train(texts)
    assert tok.get_vocab_size() == BPE_IDS + len(SPECIALS) and tok.token_to_id(SPECIALS[0]) == BPE_IDS
    tok.save(os.path.join(out, "tokenizer.json"))
    docs = [d for t in texts for d in documents(t)]
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"id": len(d), "text": d}, ensure_ascii=False) + "\n")
    subprocess.run(["zstd", "-q", "-f", "--rm", os.path.join(out, "corpus.jsonl")], check=True)
    with open(os.path.join(out, "expected.ids"), "wb") as f:
        for e in tok.encode_batch(docs, add_special_tokens=False):
            f.write(np.array([len(e.ids)] + e.ids, dtype="<u4").tobytes())
    print(f"{len(docs)} documents, vocabulary of {max(tok.get_vocab().values()) + 1} ids")


if __name__ == "__main__":
    main()
