"""Entry point of a small detection-style project: the model and its helpers live in models/."""
import torch

from models.detector import Detector
from models.utils import select_device, postprocess


def main():
    device = select_device(0)
    model = Detector(num_classes=3).to(device)
    images = torch.randn(2, 3, 64, 64, device=device)
    scores = model(images)
    keep = postprocess(scores, threshold=0.5)
    print(f"kept {keep.numel()} boxes")


if __name__ == "__main__":
    main()
