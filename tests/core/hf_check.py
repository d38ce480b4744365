#!/usr/bin/env python3
# tests/core/hf_check.py DIR: loads DIR (written by `archipelago export --safetensors`, or a folder
# holding a native Llama checkpoint) with Hugging Face transformers, as GPT2LMHeadModel or
# LlamaForCausalLM as its config.json says, and compares its logits with the engine's, stored by the
# C++ test in DIR/engine_logits.bin (int32 B, T, V; B*T int32 tokens; B*T*V float32 logits). Exit 0
# when every logit agrees to 1e-4 relative to the largest |logit|, else 1 with the worst difference.
# transformers 4.40 builds no Llama 3 rope: hf_llama3_rope.py applies it as 4.43+ does.
import json
import os
import struct
import sys

import numpy as np
import torch
from transformers import GPT2LMHeadModel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_llama3_rope import load_llama  # noqa: E402

folder = sys.argv[1]
with open(f"{folder}/engine_logits.bin", "rb") as f:
    B, T, V = struct.unpack("<3i", f.read(12))
    tokens = np.frombuffer(f.read(4 * B * T), dtype=np.int32).reshape(B, T)
    expected = np.frombuffer(f.read(4 * B * T * V), dtype=np.float32).reshape(B, T, V)

with open(f"{folder}/config.json") as f:
    config = json.load(f)
if config["architectures"] == ["LlamaForCausalLM"]:
    model = load_llama(folder, config)
else:
    model = GPT2LMHeadModel.from_pretrained(folder)
model.eval()
with torch.no_grad():
    logits = model(torch.tensor(tokens, dtype=torch.long)).logits.numpy()
if logits.shape != expected.shape:
    print(f"hf_check: shape {logits.shape} differs from the engine's {expected.shape}")
    sys.exit(1)
scale = float(np.abs(expected).max())
worst = float(np.abs(logits - expected).max())
print(f"hf_check {config['architectures'][0]}: max |hf - engine| = {worst:.3e}, max |logit| = {scale:.3e}, "
      f"relative {worst / scale:.3e}")
sys.exit(0 if worst <= 1e-4 * scale else 1)
