"""One training step of a small attention model: model, optimizer, autocast, .cuda(), DDP over nccl, flash-attn."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from flash_attn import flash_attn_func


class Block(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        y = flash_attn_func(q, k, v, dropout_p=0.1, causal=True)
        return self.out(y.reshape(b, s, d))


def main():
    dist.init_process_group(backend="nccl", rank=0, world_size=1)
    torch.manual_seed(0)
    torch.cuda.manual_seed(0)
    device = torch.device("cuda")
    model = DDP(Block().cuda())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(2, 16, 32).cuda()
    target = torch.randn(2, 16, 32).to(device)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = F.mse_loss(model(x).float(), target)
    loss.backward()
    optimizer.step()
    print(f"LOSS {loss.item():.12f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
