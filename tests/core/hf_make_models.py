#!/usr/bin/env python3
# tests/core/hf_make_models.py OUT: random Hugging Face models made by transformers, for
# test_hf_import. A GPT2LMHeadModel (seed 0, L2 C64 NH4 T32 V301, no dropout) is saved as
# OUT/gpt2-fp32 (one file), OUT/gpt2-sharded (shards and an index), OUT/gpt2-fp16 and OUT/gpt2-bf16.
# Each folder gets logits.bin: float32 logits (B, T, V) of the saved weights (the half ones widened
# back to float32) on OUT/tokens.bin (int32 B, T, then B x (T + 1) tokens: inputs and next tokens).
# OUT/gpt2-fp32/adamw_losses.txt holds the losses of 10 steps of torch's AdamW on those tokens
# (lr 1e-3, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D tensors only, gradients clipped to
# norm 1), the engine's own inner optimizer settings.
import os
import struct
import sys

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from hf_torch_adamw import write_adamw_losses

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_head=4, n_embd=64, n_positions=32, vocab_size=301,
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
model = GPT2LMHeadModel(config).eval()
B, T = 2, 16
tokens = torch.randint(0, config.vocab_size, (B, T + 1), generator=torch.Generator().manual_seed(1))
with open(f"{out}/tokens.bin", "wb") as f:
    f.write(struct.pack("<2i", B, T))
    f.write(tokens.to(torch.int32).numpy().tobytes())
inputs, targets = tokens[:, :-1], tokens[:, 1:]


def save(name, dtype, **kw):
    folder = f"{out}/{name}"
    m = GPT2LMHeadModel(config)
    m.load_state_dict(model.state_dict())
    m.to(dtype).save_pretrained(folder, safe_serialization=True, **kw)
    m = m.float().eval()  # the saved weights, widened back
    with torch.no_grad():
        m(inputs).logits.numpy().astype(np.float32).tofile(f"{folder}/logits.bin")


save("gpt2-fp32", torch.float32)
save("gpt2-sharded", torch.float32, max_shard_size="100KB")
save("gpt2-fp16", torch.float16)
save("gpt2-bf16", torch.bfloat16)

write_adamw_losses(model, inputs, targets, f"{out}/gpt2-fp32/adamw_losses.txt")
