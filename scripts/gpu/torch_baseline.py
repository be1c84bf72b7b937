"""PyTorch baseline for statesim's kernel benchmark: the same Mamba1 decode
state update and prefill scan written as plain PyTorch tensor operations
(gather the slots, update, scatter back; the scan as a loop over tokens),
timed with CUDA events on the same device. Usage: torch_baseline.py OUT.json"""
import json
import sys

import torch
import torch.nn.functional as F

N = 16
dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(20261129)


def rand(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape, device=dev, generator=g) * (hi - lo) + lo


def median_ms(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def model(di):
    A = -torch.arange(1, N + 1, device=dev, dtype=torch.float32).repeat(di, 1)
    return A, rand(di, lo=0, hi=0.2), rand(di, lo=-4, hi=-2)


def decode(batch, di):
    A, D, bias = model(di)
    states = rand(2 * batch + 1, di, N)
    idx = torch.randperm(2 * batch, device=dev, generator=g)[:batch] + 1
    x, dtp, z = rand(batch, di), rand(batch, di, lo=-3, hi=0), rand(batch, di, lo=-2, hi=2)
    B, C = rand(batch, N), rand(batch, N)

    def step():
        h = states[idx]
        dt = F.softplus(dtp + bias)
        h = torch.exp(A * dt[..., None]) * h + (dt * x)[..., None] * B[:, None, :]
        y = (h * C[:, None, :]).sum(-1) + D * x
        states[idx] = h
        return y * F.silu(z)

    return median_ms(step, 50)


def prefill(rows, L, di):
    A, D, bias = model(di)
    states = rand(2 * rows + 1, di, N)
    idx = torch.randperm(2 * rows, device=dev, generator=g)[:rows] + 1
    x, dtp, z = rand(rows, L, di), rand(rows, L, di, lo=-3, hi=0), rand(rows, L, di, lo=-2, hi=2)
    B, C = rand(rows, L, N), rand(rows, L, N)

    def scan():
        h = torch.zeros(rows, di, N, device=dev)
        dt = F.softplus(dtp + bias)
        ys = []
        for t in range(L):
            h = torch.exp(A * dt[:, t, :, None]) * h + (dt[:, t] * x[:, t])[..., None] * B[:, t, None, :]
            ys.append((h * C[:, t, None, :]).sum(-1))
        states[idx] = h
        return (torch.stack(ys, 1) + D * x) * F.silu(z)

    return median_ms(scan, 5)


def main():
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "decode": [], "prefill": []}
    for di in (4096, 8192):
        for batch in (64, 256, 1024):
            ms = decode(batch, di)
            out["decode"].append({"batch": batch, "d_inner": di, "time_us": round(ms * 1e3, 2)})
            print(f"torch decode batch {batch:5d} d_inner {di}: {ms * 1e3:9.1f} us", flush=True)
    for rows, L, di in ((1024, 16, 4096), (256, 64, 8192), (64, 512, 8192), (16, 2048, 4096)):
        ms = prefill(rows, L, di)
        out["prefill"].append({"rows": rows, "tokens_per_row": L, "d_inner": di, "time_us": round(ms * 1e3, 2)})
        print(f"torch prefill rows {rows:5d} x {L:5d} tokens d_inner {di}: {ms * 1e3:11.1f} us", flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
