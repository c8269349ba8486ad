"""Mixed-precision training loop with torch.cuda.amp, gradient clipping and NVTX ranges."""
import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast


def build_model():
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=128, nhead=4, batch_first=True), num_layers=2)


def train(steps=100):
    device = "cuda"
    model = build_model().to(device)
    head = nn.Linear(128, 1).to(device)
    params = list(model.parameters()) + list(head.parameters())
    optimizer = torch.optim.Adam(params, lr=3e-4)
    scaler = GradScaler()
    torch.backends.cuda.matmul.allow_tf32 = True

    for step in range(steps):
        x = torch.randn(16, 32, 128, device=device)
        target = torch.randn(16, 1, device=device)
        torch.cuda.nvtx.range_push(f"step {step}")
        with autocast(dtype=torch.float16):
            out = head(model(x).mean(dim=1))
            loss = nn.functional.mse_loss(out, target)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        torch.cuda.nvtx.range_pop()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f} scale {scaler.get_scale()}")

    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        preds = head(model(torch.randn(4, 32, 128, device=device)).mean(dim=1))
    return preds


if __name__ == "__main__":
    if torch.cuda.get_device_capability()[0] < 7:
        raise SystemExit("needs a GPU with tensor cores")
    train()
