# tests/core/hf_llama3_rope.py: Llama 3's rope frequency scaling for transformers 4.40, which builds
# only the default, linear and dynamic ropes. llama3_inv_freq follows transformers >= 4.43's
# _compute_llama3_parameters (fp32 tensors, as there); use_llama3_rope writes those inverse
# frequencies into every layer's rotary embedding of a LlamaForCausalLM built without rope_scaling.
# Imported by hf_make_llama.py and hf_check.py.
import math

import torch


def llama3_inv_freq(head_dim, theta, factor, low_freq_factor, high_freq_factor, original_max_position):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    low_freq_wavelen = original_max_position / low_freq_factor
    high_freq_wavelen = original_max_position / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (original_max_position / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def use_llama3_rope(model, theta, scaling):
    """scaling: config.json's rope_scaling dict (rope_type llama3)."""
    config = model.config
    inv = llama3_inv_freq(config.hidden_size // config.num_attention_heads, theta, scaling["factor"],
                          scaling["low_freq_factor"], scaling["high_freq_factor"],
                          scaling["original_max_position_embeddings"])
    for layer in model.model.layers:
        layer.self_attn.rotary_emb.inv_freq.copy_(inv)


def load_llama(folder, config_dict):
    """LlamaForCausalLM from folder whatever its rope: a llama3 rope_scaling (or rope_parameters) is
    taken out of the config transformers 4.40 sees and applied by use_llama3_rope."""
    from transformers import LlamaConfig, LlamaForCausalLM

    d = dict(config_dict)
    scaling = d.pop("rope_scaling", None)
    params = d.pop("rope_parameters", None)
    if params is not None:  # transformers 5.x's layout
        d["rope_theta"] = params.get("rope_theta", 10000.0)
        scaling = params
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind not in ("default", "llama3"):
        raise SystemExit(f"load_llama: rope type {kind} is not handled here")
    model = LlamaForCausalLM.from_pretrained(folder, config=LlamaConfig.from_dict(d))
    if kind == "llama3":
        use_llama3_rope(model, d.get("rope_theta", 10000.0), scaling)
    return model.eval()
