#!/usr/bin/env python3
"""GDN recurrent decode benchmark: statesim's gdn_recurrent_decode (the PTX of
kernels/state.cu, loaded through the driver as the backend loads it) against
a Triton kernel with the structure of vLLM's fla fused_recurrent_gated_delta_rule
(one program per (value block of 8, row × head), the key dimension whole, one
warp, the state tile [BV, K] in registers, the state index loaded per row and
widened to int64), written here, and a device-to-device copy of the same bytes,
in one run on one card. Shapes are Qwen3-Next's: 32 value heads, head dims 128,
fp32 state, one token per row, slots scattered over a pool of 2 × batch + 1.

Usage: gdn_bench.py OUT.json PTX:WARPS:ROWS [VARIANT.ptx:WARPS:ROWS ...]
(PTX is kernels/state.ptx, the backend's; variants are the same source compiled
with other -DREC_WARPS / -DREC_ROWS / -DREC_MIN_BLOCKS / -DREC_LINEAR / -DREC_CS,
timed beside it and checked against float64 like it.)
"""
import ctypes
import json
import sys
import time

import torch
import triton
import triton.language as tl

HV, DK, DV = 32, 128, 128
dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(20261206)


@triton.jit
def fla_recurrent_gdn(q, k, v, g, beta, o, state, slots, HV: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                      BK: tl.constexpr, BV: tl.constexpr):
    # vLLM/FLA's decode structure: grid (cdiv(V, BV), rows * HV).
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // HV, i_nh % HV
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k, m_v = o_k < K, o_v < V
    m_h = m_v[:, None] & m_k[None, :]
    slot = tl.load(slots + i_n).to(tl.int64)
    p_h = state + slot * HV * V * K + i_h * V * K + o_v[:, None] * K + o_k[None, :]
    b_h = tl.load(p_h, mask=m_h, other=0.0)
    base = i_n * HV + i_h
    b_q = tl.load(q + base * K + o_k, mask=m_k, other=0.0)
    b_k = tl.load(k + base * K + o_k, mask=m_k, other=0.0)
    b_v = tl.load(v + base * V + o_v, mask=m_v, other=0.0)
    b_g = tl.load(g + base)
    b_beta = tl.load(beta + base)
    b_h *= tl.exp(b_g)
    b_v -= tl.sum(b_h * b_k[None, :], 1)
    b_v *= b_beta
    b_h += b_v[:, None] * b_k[None, :]
    b_o = tl.sum(b_h * b_q[None, :], 1)
    tl.store(o + base * V + o_v, b_o, mask=m_v)
    tl.store(p_h, b_h, mask=m_h)


class Driver:
    def __init__(self, ptx_path, warps=4, rows=4):
        self.threads, self.rows_per_block = 32 * warps, warps * rows
        self.cu = ctypes.CDLL("libcuda.so.1")
        torch.cuda.init()
        torch.zeros(1, device=dev)  # the primary context, current
        mod = ctypes.c_void_p()
        text = open(ptx_path).read().encode() + b"\0"
        self.ck(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(text)), "cuModuleLoadData")
        self.fn = ctypes.c_void_p()
        self.ck(self.cu.cuModuleGetFunction(ctypes.byref(self.fn), mod, b"gdn_recurrent_decode"), "cuModuleGetFunction")

    def ck(self, r, what):
        if r != 0:
            raise RuntimeError(f"{what}: CUDA error {r}")

    def prepare(self, grid, block, args):
        """The launch with its arguments marshalled once: timing measures the
        kernel, not ctypes (Triton's launcher marshals in C)."""
        vals, ptrs = [], []
        for a in args:
            if isinstance(a, torch.Tensor):
                x = ctypes.c_void_p(a.data_ptr())
            elif isinstance(a, tuple) and a[0] == "ll":
                x = ctypes.c_longlong(a[1])
            else:
                x = ctypes.c_int(a)
            vals.append(x)
            ptrs.append(ctypes.cast(ctypes.pointer(x), ctypes.c_void_p))
        arr = (ctypes.c_void_p * len(ptrs))(*ptrs)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        fn, launch = self.fn, self.cu.cuLaunchKernel

        def go():
            _ = vals  # the arguments live as long as the launch
            self.ck(launch(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream, arr, None),
                    "cuLaunchKernel")
        return go

    def launch(self, grid, block, args):
        self.prepare(grid, block, args)()


def rand(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape, device=dev, generator=g) * (hi - lo) + lo


def inputs(batch):
    n = 2 * batch + 1
    state = rand(n, HV, DV, DK, lo=-0.5, hi=0.5)
    slots = (torch.randperm(2 * batch, device=dev, generator=g)[:batch] + 1).to(torch.int32)
    q = torch.nn.functional.normalize(rand(batch, HV, DK), dim=-1) / DK ** 0.5
    k = torch.nn.functional.normalize(rand(batch, HV, DK), dim=-1)
    v = rand(batch, HV, DV)
    gate = -rand(batch, HV, lo=0.0, hi=0.5)
    beta = rand(batch, HV, lo=0.0, hi=1.0)
    return state, slots, q, k, v, gate, beta


def ours_launch(drv, batch, state, slots, q, k, v, gate, beta, o, seqlens, wr_stride=1):
    rpb = drv.rows_per_block
    return drv.prepare((batch, HV, (DV + rpb - 1) // rpb), (drv.threads, 1, 1),
                       [state, ("ll", HV * DV * DK), ("ll", 0), seqlens, slots, slots, wr_stride, 0, q, k, v, gate, beta,
                        0, o, HV, DK, DV])


def ours(drv, *args, **kw):
    ours_launch(drv, *args, **kw)()


def fla(batch, state, slots, q, k, v, gate, beta, o, bv):
    fla_recurrent_gdn[(triton.cdiv(DV, bv), batch * HV)](q, k, v, gate, beta, o, state, slots, HV=HV, K=DK, V=DV,
                                                           BK=triton.next_power_of_2(DK), BV=bv, num_warps=1,
                                                           num_stages=3)


def reference(state, slots, q, k, v, gate, beta):
    h = state[slots.long()].double()
    h = h * torch.exp(gate.double())[..., None, None]
    kv = (h * k.double()[:, :, None, :]).sum(-1)
    u = beta.double()[..., None] * (v.double() - kv)
    h = h + u[..., None] * k.double()[:, :, None, :]
    return h, (h * q.double()[:, :, None, :]).sum(-1)


def timed(fn, reps=30, b2b=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    one, many = [], []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        one.append(a.elapsed_time(b) * 1e3)
        a.record()
        for _ in range(b2b):
            fn()
        b.record()
        b.synchronize()
        many.append(a.elapsed_time(b) * 1e3 / b2b)
    one.sort()
    many.sort()
    return one[len(one) // 2], many[len(many) // 2]


def main():
    path, ours_w, ours_r = sys.argv[2].rsplit(":", 2)
    drv = Driver(path, int(ours_w), int(ours_r))
    variants = []
    for a in sys.argv[3:]:
        path, w, r = a.rsplit(":", 2)
        # The name is the PTX's (state_w4_r8_b8.ptx: ours_w4_r8_b8).
        name = "ours_" + path.rsplit("/", 1)[-1].removeprefix("state_").removesuffix(".ptx")
        variants.append((name, Driver(path, int(w), int(r))))
    props = torch.cuda.get_device_properties(0)
    out = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "device": torch.cuda.get_device_name(), "sms": props.multi_processor_count, "torch": torch.__version__,
           "triton": triton.__version__, "heads": HV, "dk": DK, "dv": DV, "decode": [], "check": [],
           "variants": [name for name, _ in variants], "ours_geometry": [int(ours_w), int(ours_r)]}
    big = torch.empty(1 << 30, dtype=torch.float32, device=dev)  # 4 GiB
    big2 = torch.empty_like(big)
    t, _ = timed(lambda: big2.copy_(big), reps=10, b2b=3)
    out["copy_gbs"] = 2 * big.numel() * 4 / t / 1e3
    del big, big2
    print(f"copy 4 GiB: {out['copy_gbs']:.0f} GB/s", flush=True)
    for batch in (64, 256, 1024):
        state, slots, q, k, v, gate, beta = inputs(batch)
        seqlens = torch.arange(batch + 1, device=dev, dtype=torch.int32)
        o1, o2 = torch.empty(batch, HV, DV, device=dev), torch.empty(batch, HV, DV, device=dev)
        # Correctness: one step of each from the same state, against float64.
        want_h, want_o = reference(state, slots, q, k, v, gate, beta)
        s1, s2 = state.clone(), state.clone()
        ours(drv, batch, s1, slots, q, k, v, gate, beta, o1, seqlens)
        fla(batch, s2, slots, q, k, v, gate, beta, o2, 8)
        torch.cuda.synchronize()
        idx = slots.long()
        chk = {"batch": batch,
               "ours_state_maxerr": (s1[idx].double() - want_h).abs().max().item(),
               "ours_out_maxerr": (o1.double() - want_o).abs().max().item(),
               "fla_state_maxerr": (s2[idx].double() - want_h).abs().max().item(),
               "fla_out_maxerr": (o2.double() - want_o).abs().max().item(),
               "untouched_slots_equal": bool(torch.equal(s1[0], state[0]) and torch.equal(s2[0], state[0]))}
        # Every variant is checked the same way: a faster launch must still
        # compute the update.
        for name, d in variants:
            sv, ov = state.clone(), torch.empty_like(o1)
            ours(d, batch, sv, slots, q, k, v, gate, beta, ov, seqlens)
            torch.cuda.synchronize()
            chk[name + "_state_maxerr"] = (sv[idx].double() - want_h).abs().max().item()
            chk[name + "_out_maxerr"] = (ov.double() - want_o).abs().max().item()
            chk[name + "_untouched"] = bool(torch.equal(sv[0], state[0]))
            del sv, ov
        out["check"].append(chk)
        print(f"check batch {batch}: {chk}", flush=True)
        del s1, s2, want_h
        state_bytes = 2 * batch * HV * DV * DK * 4
        io_bytes = batch * HV * (2 * DK + 2 * DV + 2) * 4
        total = state_bytes + io_bytes
        src = torch.empty(state_bytes // 8, dtype=torch.float32, device=dev)
        dst = torch.empty_like(src)
        row = {"batch": batch, "bytes": total}
        runs = [("ours", ours_launch(drv, batch, state, slots, q, k, v, gate, beta, o1, seqlens)),
                ("fla_bv8", lambda: fla(batch, state, slots, q, k, v, gate, beta, o2, 8)),
                ("fla_bv32", lambda: fla(batch, state, slots, q, k, v, gate, beta, o2, 32)),
                ("copy_same", lambda: dst.copy_(src))]
        for name, d in variants:
            runs.append((name, ours_launch(d, batch, state, slots, q, k, v, gate, beta, o1, seqlens)))
        for name, fn in runs:
            one, b2b = timed(fn)
            nbytes = state_bytes if name == "copy_same" else total
            row[name] = {"time_us": round(one, 2), "time_b2b_us": round(b2b, 2), "gbs": nbytes / one / 1e3,
                         "gbs_b2b": nbytes / b2b / 1e3}
            print(f"batch {batch:5d} {name:10s} {one:9.1f} us  {nbytes / one / 1e3:7.0f} GB/s; back to back {b2b:9.1f} us "
                  f"{nbytes / b2b / 1e3:7.0f} GB/s", flush=True)
        out["decode"].append(row)
        del state, src, dst
        torch.cuda.empty_cache()
        with open(sys.argv[1], "w") as f:  # after every batch: a run cut short keeps what it measured
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
