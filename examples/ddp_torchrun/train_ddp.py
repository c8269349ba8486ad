"""Data-parallel training with DistributedDataParallel.

Launch: torchrun --nproc_per_node=8 train_ddp.py --dist-backend nccl
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--dist-backend", default="nccl", type=str)
    p.add_argument("--dist-url", default="env://")
    p.add_argument("--epochs", default=3, type=int)
    return p.parse_args()


def setup(args):
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "eth0")
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url)
    torch.cuda.set_device(local_rank)
    assert dist.get_backend() in ("nccl", "gloo"), "unexpected backend"
    return local_rank


def main():
    args = get_args()
    local_rank = setup(args)
    device = torch.device(f"cuda:{local_rank}")

    data = TensorDataset(torch.randn(4096, 64), torch.randint(0, 4, (4096,)))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=64, sampler=sampler, pin_memory=True)

    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 4)).to(device)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss().cuda()

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = criterion(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        loss_t = loss.detach().clone()
        dist.all_reduce(loss_t)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {loss_t.item() / dist.get_world_size():.4f}")

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
