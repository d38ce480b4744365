# tests/core/hf_torch_adamw.py: the reference trajectory both fixture scripts (hf_make_models.py,
# hf_make_llama.py) write: 10 steps of torch's AdamW at the engine's inner settings (lr 1e-3, betas
# 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D tensors only, gradients clipped to norm 1), the losses
# one per line, for test_hf_import to replay with the engine's own optimizer.
import torch


def write_adamw_losses(model, inputs, targets, path):
    params = list(model.parameters())  # a tied embedding appears once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    model.train()
    losses = []
    for _ in range(10):
        opt.zero_grad()
        logits = model(inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
    with open(path, "w") as f:
        f.write("\n".join(f"{x:.9g}" for x in losses) + "\n")
