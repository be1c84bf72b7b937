"""Writes docs/kernel-bench.md from the harness's and the PyTorch baseline's
JSON. Usage: bench_report.py CUDA.json TORCH.json DATE > kernel-bench.md"""
import json
import sys

cu, pt, date = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
copy = cu["copy_gbs"]
p = print
p("# Kernel benchmark: Mamba1 decode state update and prefill scan\n")
p(f"Run {date} on {cu['device']} ({cu['sms']} SMs), PyTorch {pt['torch']}, by `make kernel-bench`")
p("(scripts/gpu/kernel-bench.sh: the harness scripts/gpu/kernel_bench.cu is compiled by nvcc from")
p("kernels/mamba.cu, the source of the backend's PTX; scripts/gpu/torch_baseline.py is the baseline).\n")
p(f"Ceiling: device-to-device copy (cudaMemcpy, 4 GiB) measured in the same run, **{copy:.0f} GB/s** (bytes read + written);")
p(f"for reference, a plain in-place 16-byte read-modify-write stream over the same 4 GiB ran at {cu['inplace_gbs']:.0f} GB/s.")
p("Bytes counted are the fewest each kernel must move (fp32 state read and written, per-token inputs")
p("and output once); time is the median of CUDA-event timings after warm-up. The PyTorch baseline is")
p("the same math as plain tensor operations (gather the slots, update, scatter back; the scan as a")
p("loop over tokens), timed the same way.\n")
tdec = {(d["batch"], d["d_inner"]): d["time_us"] for d in pt["decode"]}
p("## Decode: `selective_state_update` (d_state 16, one token per row, slots scattered)\n")
p("Time is per launch, events around one launch; *back to back* is the time per launch of 20 launches in a")
p("row (the steady state of consecutive decode steps). *Same-size copy* is a device-to-device copy moving")
p("the same bytes, back to back: the ceiling at this size, where launch and ramp-up costs weigh more.\n")
p("| batch | d_inner | kernel | time µs | GB/s | % of copy | back to back GB/s | % of copy | same-size copy GB/s | PyTorch µs | speed-up |")
p("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for d in cu["decode"]:
    t = tdec.get((d["batch"], d["d_inner"]))
    name = {16: "n16 (slab)", 4: "v4 (16-byte)", 1: "v1 (scalar)"}[d["vec"]]
    p(f"| {d['batch']} | {d['d_inner']} | {name} | {d['time_us']:.1f} | {d['gbs']:.0f} | {100 * d['gbs'] / copy:.0f}% | "
      f"{d['gbs_b2b']:.0f} | {100 * d['gbs_b2b'] / copy:.0f}% | {d['copy_same_gbs']:.0f} | {t:.1f} | {t / d['time_us']:.1f}× |")
tpre = {(d["rows"], d["tokens_per_row"], d["d_inner"]): d["time_us"] for d in pt["prefill"]}
p("\n## Prefill: `selective_scan_fwd_u64` (d_state 16, 64-bit state index)\n")
p("| rows | tokens/row | d_inner | time µs | GB/s | % of copy | PyTorch µs | speed-up |")
p("|---:|---:|---:|---:|---:|---:|---:|---:|")
for d in cu["prefill"]:
    t = tpre.get((d["rows"], d["tokens_per_row"], d["d_inner"]))
    p(f"| {d['rows']} | {d['tokens_per_row']} | {d['d_inner']} | {d['time_us']:.1f} | {d['gbs']:.0f} | "
      f"{100 * d['gbs'] / copy:.0f}% | {t:.1f} | {t / d['time_us']:.1f}× |")
big = [d for d in cu["decode"] if d["batch"] >= 256 and d["vec"] == 16]
p("\nTarget: decode at batch ≥ 256 at ≥ 80% of the copy bandwidth, for the kernel the backend uses at d_state 16 (n16):\n")
for d in big:
    pc, pb, ps = 100 * d["gbs"] / copy, 100 * d["gbs_b2b"] / copy, 100 * d["gbs_b2b"] / d["copy_same_gbs"]
    p(f"- batch {d['batch']}, d_inner {d['d_inner']}: {pc:.0f}% per launch, {pb:.0f}% back to back, "
      f"{ps:.0f}% of a same-size copy: {'met' if pc >= 80 else 'NOT met per launch'}.")
p("""
## How the decode kernel got here (H200, 2026-11-29, batch 256 / 1024 at d_inner 8192, per launch)

| version | % of copy | what changed, and why it mattered |
|---|---:|---|
| v4: thread per 4 states of a channel, one row per thread | 64% / 68% | 16-byte coalesced state accesses; scalar v1 ran at 23–24% |
| 4 rows per thread, loads first | 58% / 62% | more loads in flight, but 72 registers cut occupancy: no gain |
| 8 rows per block, next row's registers prefetched | 60% / 65% | latency was not the limit |
| cp.async pipeline into shared memory, 4 stages | 69% / 78% | fewer registers, loads in flight without them |
| n16: whole channel per thread, 8 KiB slab per row via cp.async, swizzled | 80% / 88% | ~3× fewer memory instructions per byte: the v4 family was bound by load/store issue (v1, with 4× the instructions, ran at a quarter of v4) |
| n16 as a persistent kernel, one even wave of (channel block, row) items | 78% / 87% | tried for batch 256 × d_inner 4096 (69% there, against 72%), best of 2–32 blocks per SM: the fill per block was not the loss; dropped |

Stages (2–4), a register cap for 4–8 resident blocks and rows per block (1–32) were swept in one call; the
grid policy (kernels.SSUGrid) takes the best: about 4 waves, at most 8 rows per block. What is left at
batch 256 × d_inner 4096 (151 MB in ~50 µs) is mostly launch and ramp-up: a device-to-device copy of the
same size runs at about 3.9 TB/s, not 4.3.

The prefill scan (`selective_scan_fwd`, one thread per channel, 16 states and A in registers, inputs of 8
tokens loaded ahead) is not memory-bound: 139 registers leave 3 blocks per multiprocessor and each token
costs 16 exponentials per channel; it runs at 20–23% of copy bandwidth, 16–86× faster than the PyTorch loop in this run.""")
