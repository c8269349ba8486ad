import os

import torch


def select_device(index):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(index)
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        return torch.device("cuda:0")
    return torch.device("cpu")


def postprocess(scores, threshold):
    flat = scores.flatten()
    keep = torch.nonzero(flat > threshold).squeeze(1)
    values, counts = torch.unique_consecutive(flat[keep], return_counts=True)
    return keep
