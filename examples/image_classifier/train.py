"""Single-GPU image classifier on CIFAR-like data (synthetic here, so it runs anywhere with a GPU)."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.block = nn.Sequential(nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        self.head = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.block(self.stem(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.head(x)


def parse_args():
    parser = argparse.ArgumentParser(description="train a small classifier")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--device", default="cuda", help="device to train on")
    return parser.parse_args()


def main():
    args = parse_args()
    torch.backends.cudnn.benchmark = True
    device = torch.device(args.device if torch.cuda.is_available() else "cpu")

    images = torch.randn(1024, 3, 32, 32)
    labels = torch.randint(0, 10, (1024,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True, num_workers=2)

    model = SmallResNet().cuda()
    model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    for epoch in range(args.epochs):
        model.train()
        start = time.time()
        for step, (x, y) in enumerate(loader):
            x = x.cuda(non_blocking=True)
            y = y.to(device)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.cuda.synchronize()
        print(f"epoch {epoch} took {time.time() - start:.1f}s on cuda, "
              f"peak memory {torch.cuda.max_memory_allocated() / 2**20:.0f} MiB")

    torch.save(model.state_dict(), "classifier.pt")


if __name__ == "__main__":
    main()
