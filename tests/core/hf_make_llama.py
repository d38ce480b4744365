#!/usr/bin/env python3
# tests/core/hf_make_llama.py OUT: random LlamaForCausalLM models made by transformers, for
# test_hf_import. OUT/tokens.bin as hf_make_models.py writes it (int32 B, T, then B x (T + 1) tokens).
# - llama-gqa-fp32 (seed 0): L2 C64 NH4 KV2 F96 T32 V301, rope_theta 500000, untied lm_head, rms_norm_eps
#   1e-5; the same weights as llama-gqa-bf16 (bf16) and llama-gqa-sharded (fp32 shards and an index).
# - llama3-tied (seed 1): L2 C64 NH4 KV1 F80 T64 V301, rope_theta 10000, tied embeddings, Llama 3 rope
#   scaling (factor 8, low 1, high 4, original_max_position_embeddings 32: at T=16 the long wavelengths
#   are scaled and the middle one interpolated). transformers 4.40 does not build the "llama3" rope, so
#   hf_llama3_rope.py applies it as transformers >= 4.43 does, and config.json gets rope_scaling as
#   4.43+ writes it.
# - llama-gqa-v5 and llama3-v5: those models with config.json rewritten into transformers 5.x's layout
#   (rope_parameters holding rope_type, rope_theta and the llama3 keys; no rope_theta, rope_scaling).
#   This emulates 5.x's config.json, since transformers 5.x is not installed here.
# Each folder gets logits.bin: float32 logits (B, T, V) of the saved weights (bf16 widened back) on
# the tokens. The fp32 folders get adamw_losses.txt: 10 steps of torch's AdamW (lr 1e-3, betas
# 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D tensors only, gradients clipped to norm 1).
import json
import os
import shutil
import struct
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_llama3_rope import use_llama3_rope  # noqa: E402
from hf_torch_adamw import write_adamw_losses  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
B, T, V = 2, 16, 301
tokens = torch.randint(0, V, (B, T + 1), generator=torch.Generator().manual_seed(1))
with open(f"{out}/tokens.bin", "wb") as f:
    f.write(struct.pack("<2i", B, T))
    f.write(tokens.to(torch.int32).numpy().tobytes())
inputs, targets = tokens[:, :-1], tokens[:, 1:]

LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 32, "rope_type": "llama3"}


def build(config, scaling):
    m = LlamaForCausalLM(config)
    if scaling:
        use_llama3_rope(m, config.rope_theta, scaling)
    return m


def save(model, config, scaling, name, dtype, **kw):
    folder = f"{out}/{name}"
    m = build(config, scaling)
    m.load_state_dict(model.state_dict())
    m.to(dtype).save_pretrained(folder, safe_serialization=True, **kw)
    if scaling:  # as transformers >= 4.43 saves it
        with open(f"{folder}/config.json") as f:
            c = json.load(f)
        c["rope_scaling"] = scaling
        with open(f"{folder}/config.json", "w") as f:
            json.dump(c, f, indent=2)
    m = m.float().eval()  # the saved weights, widened back
    for mine, theirs in zip(m.model.layers, model.model.layers):  # .to(bf16) rounded the rope buffer too
        mine.self_attn.rotary_emb.inv_freq.copy_(theirs.self_attn.rotary_emb.inv_freq)
    with torch.no_grad():
        m(inputs).logits.numpy().astype(np.float32).tofile(f"{folder}/logits.bin")


def as_v5(name, v5_name):
    src, dst = f"{out}/{name}", f"{out}/{v5_name}"
    os.makedirs(dst, exist_ok=True)
    for f in ("model.safetensors", "logits.bin"):
        shutil.copy(f"{src}/{f}", f"{dst}/{f}")
    with open(f"{src}/config.json") as f:
        c = json.load(f)
    params = dict(c.pop("rope_scaling", None) or {"rope_type": "default"})
    params["rope_theta"] = c.pop("rope_theta")
    c["rope_parameters"] = params
    c["transformers_version"] = "5.0.0"
    with open(f"{dst}/config.json", "w") as f:
        json.dump(c, f, indent=2)


torch.manual_seed(0)
gqa = LlamaConfig(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                  num_hidden_layers=2, vocab_size=V, max_position_embeddings=32, rope_theta=500000.0,
                  rms_norm_eps=1e-5, tie_word_embeddings=False)
model = build(gqa, None).eval()
save(model, gqa, None, "llama-gqa-fp32", torch.float32)
save(model, gqa, None, "llama-gqa-bf16", torch.bfloat16)
save(model, gqa, None, "llama-gqa-sharded", torch.float32, max_shard_size="50KB")
as_v5("llama-gqa-fp32", "llama-gqa-v5")
write_adamw_losses(model, inputs, targets, f"{out}/llama-gqa-fp32/adamw_losses.txt")

torch.manual_seed(1)
tied = LlamaConfig(hidden_size=64, intermediate_size=80, num_attention_heads=4, num_key_value_heads=1,
                   num_hidden_layers=2, vocab_size=V, max_position_embeddings=64, rope_theta=10000.0,
                   rms_norm_eps=1e-6, tie_word_embeddings=True)
model = build(tied, LLAMA3).eval()
save(model, tied, LLAMA3, "llama3-tied", torch.float32)
as_v5("llama3-tied", "llama3-v5")
write_adamw_losses(model, inputs, targets, f"{out}/llama3-tied/adamw_losses.txt")
