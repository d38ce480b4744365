#!/usr/bin/env python3
# tests/core/hf_tokenizers.py OUT CORPUS TEXT...: trains two byte-level BPE tokenizers with the
# `tokenizers` library on CORPUS (the bundled Bible), one with GPT-2's pre-tokenizer and one with
# Llama 3's (its split regex, ByteLevel without regex, a <|begin_of_text|> template, ignore_merges),
# and writes for each OUT/NAME/tokenizer.json plus the ids `tokenizers` gives every file named
# (CORPUS first): OUT/NAME/<i>.ids (int32, add_special_tokens=False) and OUT/NAME/<i>.special.ids
# (the default, the template applied). test_hf_tokenizer compares the engine's ids with these.
# With --write-adversarial FILE it writes tests/fixtures/tokenizer_adversarial.txt instead.
import os
import sys

import numpy as np
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def adversarial():
    parts = [
        "Plain words, then <|endoftext|>right after, <|begin_of_text|> and <|end_of_text|><|end_of_text|>.",
        "A broken one: <|endoftext| and <|endof<|endoftext|>text|>.",
        "Digits: 0 12 345 6789 " + "1234567890" * 40 + " 3.14159 1e-10 ١٢٣ ４５６ ⅷ ²³",
        "Spaces:" + " " * 300 + "end\t\t\t\ttabs\u00a0nbsp\u2003em\u3000ideographic",
        "Newlines:" + "\n" * 50 + "x\r\n\r\ny\n \n  \n   z",
        "Trailing spaces then newline    \n    leading spaces",
        "Contractions: I'm you're he's we've they'll I'd don't DON'T HE'S",
        "Unicode: naïve café Ærøskøbing Ελληνικά русский текст 中文字符 日本語のテキスト 한국어 עברית العربية",
        "Emoji: 👋🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️ 🤖🤖🤖 ✈︎",
        "Marks: e\u0301 a\u0308 \u200b zero\u200dwidth \ufeff bom \u2028 line \u2029 para",
        "Punctuation: ... !!! ??? --- ___ *** ((())) [[[]]] {{{}}} <<<>>> \"quoted\" 'single' `tick` ~~~ ^^^ ||| \\\\\\",
        "Code: def f(x):\n    return x**2  # comment\n\tif (a && b || !c) { y = a[i] + b->c; }",
        "Mixed: abc123def 123abc ABC123 a1b2c3 $100.00 50% #hashtag @user user@example.org",
        "X" * 500,
        "ab" * 300,
    ]
    return "\n".join(parts) + "\n"


def train(kind, corpus):
    if kind == "gpt2":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        specials = ["<|endoftext|>"]
    else:
        tok = Tokenizer(models.BPE(ignore_merges=True))
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=3000, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    if kind == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def main():
    if sys.argv[1] == "--write-adversarial":
        with open(sys.argv[2], "w", encoding="utf-8", newline="") as f:
            f.write(adversarial())
        return
    out, files = sys.argv[1], sys.argv[2:]
    for kind in ("gpt2", "llama3"):
        tok = train(kind, files[0])
        os.makedirs(f"{out}/{kind}", exist_ok=True)
        tok.save(f"{out}/{kind}/tokenizer.json")
        for i, path in enumerate(files):
            with open(path, encoding="utf-8", newline="") as f:  # the bytes as they are: no \r\n translation
                text = f.read()
            np.array(tok.encode(text, add_special_tokens=False).ids, dtype=np.int32).tofile(f"{out}/{kind}/{i}.ids")
            np.array(tok.encode(text).ids, dtype=np.int32).tofile(f"{out}/{kind}/{i}.special.ids")


if __name__ == "__main__":
    main()
