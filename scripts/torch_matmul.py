"""Tier-4 workload for scripts/gpu-validate.sh: a matrix-multiply loop under
torch.profiler. Prints one JSON line: this process's pid and the CUDA
kernels the profiler saw, with their launch counts, so the script can put
them beside what the agent's cudatrace reported for the same pid."""
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
# Give the agent time to see the process (its libraries are already
# mapped: torch imports libcudart) before the measured loop.
a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()
time.sleep(2)
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(iters):
        c = a @ b
    torch.cuda.synchronize()
kernels = {}
for e in prof.key_averages():
    if e.device_type.name == "CUDA" or getattr(e, "use_device", None) == "cuda":
        kernels[e.key] = e.count
print(json.dumps({"pid": os.getpid(), "iters": iters, "kernels": kernels}), flush=True)
