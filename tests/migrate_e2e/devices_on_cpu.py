"""Test-only: a device type (cuda or npu) that lands on the CPU, for running a training script without a device."""
import torch
import torch.distributed as dist


def map_device_to_cpu(kind, backend):
    def cpu(dev):
        if isinstance(dev, torch.device) and dev.type == kind:
            return torch.device("cpu")
        if isinstance(dev, str) and dev.split(":")[0] == kind:
            return "cpu"
        return dev

    to_t, to_m = torch.Tensor.to, torch.nn.Module.to

    def tensor_to(self, *args, **kwargs):
        return to_t(self, *[cpu(a) for a in args], **{k: cpu(v) for k, v in kwargs.items()})

    def module_to(self, *args, **kwargs):
        return to_m(self, *[cpu(a) for a in args], **{k: cpu(v) for k, v in kwargs.items()})

    torch.Tensor.to, torch.nn.Module.to = tensor_to, module_to
    setattr(torch.Tensor, kind, lambda self, *a, **k: self)
    setattr(torch.nn.Module, kind, lambda self, *a, **k: self)

    class autocast(torch.amp.autocast_mode.autocast):
        def __init__(self, device_type, *args, **kwargs):
            super().__init__("cpu" if device_type == kind else device_type, *args, **kwargs)

    torch.autocast = autocast
    init = dist.init_process_group

    def init_group(*args, **kwargs):
        b = kwargs.pop("backend", args[0] if args else None)
        args = args[1:] if args else ()
        return init("gloo" if b == backend else b, *args, **kwargs)

    dist.init_process_group = init_group
