"""Writes docs/kernel-bench.md from the harness's, the PyTorch baseline's and
(optionally) the GDN benchmark's JSON, every figure and verdict from the data.
Usage: bench_report.py CUDA.json TORCH.json DATE [GDN.json] > kernel-bench.md"""
import json
import re
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
pp = [100 * d["gbs"] / copy for d in cu["prefill"]]
p(f"\nThe prefill scan (`selective_scan_fwd`) ran at {min(pp):.0f}–{max(pp):.0f}% of copy bandwidth, "
  f"{min(sp):.0f}–{max(sp):.0f}× faster than the PyTorch loop, in this run.")
if c4.get("inplace_gbs") == c4.get("inplace_gbs"):  # not NaN: the ceilings were measured
    p(f"At batch 256 × d_inner 4096 the same bytes moved by a device-to-device copy reached "
      f"{100 * c4['copy_gbs'] / copy:.0f}% per launch and by a plain in-place read-modify-write stream "
      f"{100 * c4['inplace_gbs'] / copy:.0f}% (back to back {100 * c4['inplace_gbs_b2b'] / copy:.0f}%); "
      f"n16 ran at {100 * n4['gbs'] / copy:.0f}% per launch ({100 * n4['gbs'] / c4['inplace_gbs']:.0f}% of that stream) "
      f"and {100 * n4['gbs_b2b'] / copy:.0f}% back to back, b16 at {100 * b4['gbs'] / copy:.0f}% per launch.")
p("\nHow the decode kernels reached their design, measured on 2026-11-29: docs/kernel-bench-history.md.")

if len(sys.argv) > 4:
    gd = json.load(open(sys.argv[4]))
    gcopy = gd["copy_gbs"]
    p(f"\n## GDN decode: `gdn_recurrent_decode` against a vLLM/FLA-structured Triton kernel\n")
    when = f"Run {gd['date']}; " if gd.get("date") else ""
    p(f"{when}{'same' if when else 'Same'} run, same card ({gd['device']}, {gd['sms']} SMs), Triton {gd['triton']}, PyTorch {gd['torch']}, by")
    p("scripts/gpu/gdn_bench.py: statesim's kernel is the PTX of kernels/state.cu loaded through the driver (its arguments marshalled once); the Triton")
    p("kernel has the structure of vLLM's fla `fused_recurrent_gated_delta_rule` decode (one program per value block ×")
    p("row × head, the key dimension whole, one warp, the state tile in registers, the slot widened to int64), written")
    p(f"for this benchmark, at FLA's value block of 8 and at 32. Qwen3-Next's shape: {gd['heads']} value heads, dk = dv = {gd['dk']},")
    p(f"fp32 state, one token per row, slots scattered over 2 × batch + 1. Device-to-device copy of 4 GiB in this run:")
    p(f"**{gcopy:.0f} GB/s**. Bytes: the state read and written plus the token's inputs and output.\n")
    p("| batch | kernel | time µs | GB/s | % of copy | back to back µs | GB/s | % of copy | same-size copy, back to back GB/s |")
    p("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    names = {"ours": "statesim gdn_recurrent_decode", "fla_bv8": "Triton, FLA structure, BV 8", "fla_bv32": "Triton, FLA structure, BV 32"}
    # backend: the variant the backend now builds (kernels/state.cu's defaults), when the run's
    # kernels/state.ptx was the build before it.
    ours = gd.get("backend", "ours")
    keys = ("ours", "fla_bv8", "fla_bv32")
    if ours != "ours":
        names["ours"] = "statesim gdn_recurrent_decode, the build before (kernels/state.ptx of the run)"
        names[ours] = "statesim gdn_recurrent_decode, the backend's build now"
        keys = (ours,) + keys
    for r in gd["decode"]:
        for key in keys:
            x = r[key]
            p(f"| {r['batch']} | {names[key]} | {x['time_us']:.1f} | {x['gbs']:.0f} | {100 * x['gbs'] / gcopy:.0f}% | "
              f"{x['time_b2b_us']:.1f} | {x['gbs_b2b']:.0f} | {100 * x['gbs_b2b'] / gcopy:.0f}% | {r['copy_same']['gbs_b2b']:.0f} |")
    if gd.get("variants"):
        geo = gd.get("ours_geometry")
        which = f"; the backend's is {geo[0]} × {geo[1]}, kernels/state.cu's defaults" if geo else ""
        p(f"\nThe same source at other launch geometries (warps per block × value rows per warp{which}),")
        p("back to back, % of copy:\n")
        def label(v):
            m = re.fullmatch(r"ours_w(\d+)_r(\d+)(?:_b(\d+))?((?:_(?:l0|cs|full0))*)", v)
            if not m:
                return v
            w, r, b, tags = m.groups()
            words = {"l0": ", grid order", "cs": ", streaming", "full0": ", bounds-checked"}
            return f"{w} × {r}" + (f", ≥ {b} blocks" if b else "") + "".join(words[t] for t in tags.split("_") if t)
        head = [label(v) for v in gd["variants"]]
        p("| batch | " + " | ".join(head) + " |")
        p("|---:|" + "---:|" * len(gd["variants"]))
        for r in gd["decode"]:
            p(f"| {r['batch']} | " + " | ".join(f"{100 * r[v]['gbs_b2b'] / gcopy:.0f}%" for v in gd["variants"]) + " |")
    p("\nAgainst float64 (one step from the same state; largest absolute error):\n")
    p("| batch | statesim state | statesim output | Triton state | Triton output | other slots untouched |")
    p("|---:|---:|---:|---:|---:|---|")
    for c in gd["check"]:
        p(f"| {c['batch']} | {c[ours + '_state_maxerr']:.1e} | {c[ours + '_out_maxerr']:.1e} | {c['fla_state_maxerr']:.1e} | "
          f"{c['fla_out_maxerr']:.1e} | {c['untouched_slots_equal'] and c.get(ours + '_untouched', True)} |")
    if gd.get("variants") and all(v + "_state_maxerr" in c for c in gd["check"] for v in gd["variants"]):
        es = max(c[v + "_state_maxerr"] for c in gd["check"] for v in gd["variants"])
        eo = max(c[v + "_out_maxerr"] for c in gd["check"] for v in gd["variants"])
        un = all(c[v + "_untouched"] for c in gd["check"] for v in gd["variants"])
        p(f"\nEvery variant above, checked the same way: largest state error {es:.1e}, output error {eo:.1e}, "
          f"other slots untouched: {un}.")
    p("\nTarget: at batch ≥ 256, ≥ 85% of copy bandwidth back to back and ≥ 1.0× the Triton kernel:\n")
    for r in gd["decode"]:
        if r["batch"] < 256:
            continue
        x = r[ours]
        best = min(r["fla_bv8"]["time_b2b_us"], r["fla_bv32"]["time_b2b_us"])
        pc, sp_ = 100 * x["gbs_b2b"] / gcopy, best / x["time_b2b_us"]
        ps = 100 * x["gbs_b2b"] / r["copy_same"]["gbs_b2b"]
        p(f"- batch {r['batch']}: {pc:.0f}% of copy back to back ({ps:.0f}% of a same-size copy), "
          f"{sp_:.2f}× the faster Triton variant: bandwidth {'met' if pc >= 85 else 'NOT met'}, "
          f"Triton {'met' if sp_ >= 1.0 else 'NOT met'}.")
