"""Writes docs/kernel-bench.md from the harness's and the PyTorch baseline's
JSON. Usage: bench_report.py CUDA.json TORCH.json DATE > kernel-bench.md"""
import json
import sys

cu, pt, date = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
copy = cu["copy_gbs"]
# The d_state 16 kernel the backend runs at a size (kernels.SSU16Launch):
# b16 (vec 64) from batch × d_inner >= 2^21, n16 (vec 16) below.
BULK_MIN_CHANNEL_ROWS = 1 << 21


def backend_vec(batch, di):
    return 64 if batch * di >= BULK_MIN_CHANNEL_ROWS else 16


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
    name = {64: "b16 (bulk copy)", 16: "n16 (slab)", 4: "v4 (16-byte)", 1: "v1 (scalar)"}[d["vec"]]
    if d["vec"] == backend_vec(d["batch"], d["d_inner"]):
        name += " †"
    p(f"| {d['batch']} | {d['d_inner']} | {name} | {d['time_us']:.1f} | {d['gbs']:.0f} | {100 * d['gbs'] / copy:.0f}% | "
      f"{d['gbs_b2b']:.0f} | {100 * d['gbs_b2b'] / copy:.0f}% | {d['copy_same_gbs']:.0f} | {t:.1f} | {t / d['time_us']:.1f}× |")
p("\n† the kernel the backend runs at this size (kernels.SSU16Launch): b16, the bulk-copy variant, from")
p("batch × d_inner ≥ 2^21 (batch 256 × d_inner 8192 and larger), n16 below; both in kernels/mamba.cu, bitwise equal.")
ceil = {(c["batch"], c["d_inner"]): c for c in cu.get("ceilings", [])}
if ceil:
    p("\n### Ceilings at each size\n")
    p(f"Moving the decode's bytes (half read, half written) with a device-to-device copy and with a plain in-place")
    p(f"16-byte read-modify-write stream (the state update's access pattern without its math), timed like the kernels;")
    p(f"% of the 4 GiB copy. Events around an empty kernel read {cu['empty_launch_us']:.1f} µs. At batch 64 the in-place")
    p("stream's buffer (19 or 38 MB) stays in the 60 MB L2 between launches, so its figures there are no DRAM ceiling.\n")
    p("| batch | d_inner | copy per launch | back to back | in-place per launch | back to back |")
    p("|---:|---:|---:|---:|---:|---:|")
    for (b, di), c in sorted(ceil.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        p(f"| {b} | {di} | {c['copy_gbs']:.0f} GB/s ({100 * c['copy_gbs'] / copy:.0f}%) | "
          f"{c['copy_gbs_b2b']:.0f} ({100 * c['copy_gbs_b2b'] / copy:.0f}%) | "
          f"{c['inplace_gbs']:.0f} ({100 * c['inplace_gbs'] / copy:.0f}%) | "
          f"{c['inplace_gbs_b2b']:.0f} ({100 * c['inplace_gbs_b2b'] / copy:.0f}%) |")
tpre = {(d["rows"], d["tokens_per_row"], d["d_inner"]): d["time_us"] for d in pt["prefill"]}
p("\n## Prefill: `selective_scan_fwd_u64` (d_state 16, 64-bit state index)\n")
p("| rows | tokens/row | d_inner | time µs | GB/s | % of copy | PyTorch µs | speed-up |")
p("|---:|---:|---:|---:|---:|---:|---:|---:|")
for d in cu["prefill"]:
    t = tpre.get((d["rows"], d["tokens_per_row"], d["d_inner"]))
    p(f"| {d['rows']} | {d['tokens_per_row']} | {d['d_inner']} | {d['time_us']:.1f} | {d['gbs']:.0f} | "
      f"{100 * d['gbs'] / copy:.0f}% | {t:.1f} | {t / d['time_us']:.1f}× |")
p("\nTarget: decode at batch ≥ 256 at ≥ 80% of the copy bandwidth, for the kernel the backend uses at d_state 16")
p("(named first; the other d_state 16 kernel in brackets):\n")
dec = {(d["batch"], d["d_inner"], d["vec"]): d for d in cu["decode"]}
for d in [d for d in cu["decode"] if d["batch"] >= 256 and d["vec"] == backend_vec(d["batch"], d["d_inner"])]:
    kn, other = ("b16", "n16") if d["vec"] == 64 else ("n16", "b16")
    pc, pb, ps = 100 * d["gbs"] / copy, 100 * d["gbs_b2b"] / copy, 100 * d["gbs_b2b"] / d["copy_same_gbs"]
    line = (f"- batch {d['batch']}, d_inner {d['d_inner']}: {kn} {pc:.1f}% per launch, {pb:.0f}% back to back, "
            f"{ps:.0f}% of a same-size copy: {'met' if pc >= 80 else 'NOT met per launch'}")
    v = dec.get((d["batch"], d["d_inner"], 80 - d["vec"]))
    if v:
        line += f" [{other}: {100 * v['gbs'] / copy:.1f}% per launch, {100 * v['gbs_b2b'] / copy:.0f}% back to back]"
    c = ceil.get((d["batch"], d["d_inner"]))
    if c:
        line += (f"; the same bytes by copy: {100 * c['copy_gbs'] / copy:.0f}% per launch, by the in-place stream: "
                 f"{100 * c['inplace_gbs'] / copy:.0f}%")
    p(line + ".")
c4 = ceil.get((256, 4096), {"copy_gbs": float("nan"), "inplace_gbs": float("nan"), "inplace_gbs_b2b": float("nan")})
n4 = dec.get((256, 4096, 16), {"gbs": float("nan"), "gbs_b2b": float("nan")})
b4 = dec.get((256, 4096, 64), {"gbs": float("nan")})
b8 = dec.get((256, 8192, 64), {"gbs": float("nan")})
n8 = dec.get((256, 8192, 16), {"gbs": float("nan")})
sp = [tpre[(d["rows"], d["tokens_per_row"], d["d_inner"])] / d["time_us"] for d in cu["prefill"]]
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
| b16: bulk copies (cp.async.bulk, one instruction per slab) in and out, mbarrier completion, ring of 2–4 stages | 82% / 90% | one thread moves a row's slab each way; 64 channels (4 KiB) per block, 4 stages, 8 blocks per SM, ≤ 4 rows per block was best; against n16's 79% / 88% in the same run, but level with n16 at batch 256 × d_inner 4096 (71–72% per launch); in the backend from batch × d_inner ≥ 2^21 (see below) |

Stages (2–4), a register cap for 4–8 resident blocks and rows per block (1–32) were swept in one call; the
grid policy (kernels.SSUGrid) takes the best: about 4 waves, at most 8 rows per block.

The bulk-copy sweep (`kernel_bench bulk`, one call on 2026-11-29, copy 4254 GB/s in that run): slabs of 64, 128
or 256 channels, 2–4 stages, a register cap for 4–16 resident blocks, 1–16 rows per block, each timed twice; every
configuration's state and output came out bitwise equal to n16's. Best rows per block for each, µs per launch /
back to back (mean of the two timings):

| kernel | 256 × 4096 | 1024 × 4096 | 256 × 8192 | 1024 × 8192 |
|---|---:|---:|---:|---:|
| n16 (grid policy) | 49.8 / 45.7 | 168.0 / 163.6 | 90.0 / 85.6 | 322.6 / 318.6 |
| bulk, 64 channels, 4 stages, 8 blocks/SM (b16) | 49.5 / 45.8 | 164.5 / 160.8 | 87.3 / 83.2 | 315.7 / 311.1 |
| bulk, 64 channels, 2 stages, 16 blocks/SM | 50.9 / 47.2 | 165.9 / 161.8 | 87.8 / 84.5 | 315.3 / 311.3 |
| bulk, 128 channels, 4 stages, 4 blocks/SM | 50.1 / 46.2 | 167.9 / 164.1 | 88.5 / 85.5 | 323.4 / 319.2 |
| bulk, 128 channels, 3 stages, 6 blocks/SM | 50.5 / 46.7 | 167.4 / 164.1 | 88.8 / 85.8 | 323.0 / 318.9 |
| bulk, 128 channels, 2 stages, 8 blocks/SM | 51.9 / 47.8 | 169.2 / 165.5 | 90.5 / 86.5 | 324.7 / 320.1 |
| bulk, 256 channels, 2 stages, 4 blocks/SM | 52.5 / 48.7 | 170.7 / 166.8 | 92.1 / 88.2 | 323.9 / 319.9 |
| same-size device-to-device copy | 43.6 / 38.9 | 150.9 / 144.6 | 79.0 / 74.4 | 292.4 / 287.2 |

One row per block (every slab its own block, the finest balance the block scheduler can give) was the worst
setting for every configuration (52–62% of copy at batch 256 × d_inner 4096). Cutting the memory instructions per
byte, which lifted v4 to n16, gains 1–3% where the kernel is already near its ceiling and nothing at batch 256 ×
d_inner 4096: issue is no longer the limit there.

The backend runs b16 where the sweep found it faster, from batch × d_inner ≥ 2^21 (batch 256 × d_inner 8192,
batch 1024 at both widths), with the sweep's best settings (64 channels per block, 4 stages, 8 blocks per SM,
at most 4 rows per block; kernels.SSU16Launch), and n16 below, where the two were level (batch 256 × d_inner
4096) or not swept (batch 64). Its source is kernels/mamba.cu (`selective_state_update_b16`), which the
harness compiles too; its PTX comes from nvcc 13 with `.target sm_90` (the bulk copies and the mbarrier
transaction counts are sm_90 PTX, no sm_90a needed) and the driver loads it. `make confirm` passed with this
rule and again with b16 forced for every d_state 16 decode (STATESIM_SSU16=b16; the confirmation's models are
too small for the rule to pick it), with the same results to the last digit, as the kernels are bitwise equal;
`kernel_bench check` compares b16 with n16 bitwise at seven shapes, partial channel and row blocks included.
At batch 256 × d_inner 8192 b16 sits on the target line: 80.2% per launch in the run before this one (the same
day, against n16's 78.9%), """
  f"{100 * b8['gbs'] / copy:.1f}% in this one (n16: {100 * n8['gbs'] / copy:.1f}%), "
  f"{'meeting' if b8['gbs'] / copy >= 0.8 else 'missing'} the 80% per launch here; b16 led n16 there\n"
  """by 1–3 points in every run, but the 80% line is within run-to-run spread of its figure.

What is left at batch 256 × d_inner 4096 (151 MB, ~50 µs per launch) is the cost of one launch, its ramp-up and
its drain, which any kernel moving these bytes pays (the ceilings table above): events around an empty kernel
already read several µs, a device-to-device copy of the same bytes reaches """
  f"{100 * c4['copy_gbs'] / copy:.0f}% per launch, and a plain\n"
  """in-place read-modify-write stream of the same bytes, the access pattern a state update must have, reached """
  f"{100 * c4['inplace_gbs'] / copy:.0f}%\n"
  """per launch in this run (its 75 MB buffer is larger than the L2, though part of it may still hit there),
under the 80% target. n16 and b16 run at """
  f"{100 * n4['gbs'] / c4['inplace_gbs']:.0f}% and {100 * b4['gbs'] / c4['inplace_gbs']:.0f}%"
  """ of that stream per launch. So 80% per launch at this size asks
a state update, timed alone, to beat a bare in-place stream of its bytes: none of the kernels tried here comes
close. Back to back (consecutive decode steps) n16, the backend's kernel there, reaches """
  f"{100 * n4['gbs_b2b'] / copy:.0f}%, against the stream's {100 * c4['inplace_gbs_b2b'] / copy:.0f}%."
  """

The prefill scan (`selective_scan_fwd`, one thread per channel, 16 states and A in registers, inputs of 8
tokens loaded ahead) is not memory-bound: 139 registers leave 3 blocks per multiprocessor and each token
costs 16 exponentials per channel; it runs at 20–23% of copy bandwidth, """
  f"{min(sp):.0f}–{max(sp):.0f}× faster than the PyTorch loop in this run.")
