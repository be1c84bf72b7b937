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
p("| batch | d_inner | kernel | time µs | GB/s | % of copy | PyTorch µs | speed-up |")
p("|---:|---:|---|---:|---:|---:|---:|---:|")
for d in cu["decode"]:
    t = tdec.get((d["batch"], d["d_inner"]))
    name = "v4 (16-byte)" if d["vec"] == 4 else "v1 (scalar)"
    p(f"| {d['batch']} | {d['d_inner']} | {name} | {d['time_us']:.1f} | {d['gbs']:.0f} | {100 * d['gbs'] / copy:.0f}% | "
      f"{t:.1f} | {t / d['time_us']:.1f}× |")
tpre = {(d["rows"], d["tokens_per_row"], d["d_inner"]): d["time_us"] for d in pt["prefill"]}
p("\n## Prefill: `selective_scan_fwd_u64` (d_state 16, 64-bit state index)\n")
p("| rows | tokens/row | d_inner | time µs | GB/s | % of copy | PyTorch µs | speed-up |")
p("|---:|---:|---:|---:|---:|---:|---:|---:|")
for d in cu["prefill"]:
    t = tpre.get((d["rows"], d["tokens_per_row"], d["d_inner"]))
    p(f"| {d['rows']} | {d['tokens_per_row']} | {d['d_inner']} | {d['time_us']:.1f} | {d['gbs']:.0f} | "
      f"{100 * d['gbs'] / copy:.0f}% | {t:.1f} | {t / d['time_us']:.1f}× |")
big = [d for d in cu["decode"] if d["batch"] >= 256 and d["vec"] == 4]
worst = min(100 * d["gbs"] / copy for d in big)
p(f"\nTarget (decode at batch ≥ 256 at ≥ 80% of copy bandwidth): worst case {worst:.0f}% — "
  f"{'met' if worst >= 80 else 'NOT met'}.")
