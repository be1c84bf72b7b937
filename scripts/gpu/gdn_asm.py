"""Both GDN decode kernels as the card runs them, for comparing their code:
scripts/gpu/gdn_asm.py OUT_DIR writes the Triton kernel's PTX, cubin and
register/shared/spill counts, and the same for kernels/state.ptx (through
ptxas -v), beside gdn_bench.py's run. With a second argument, `profile`,
it only launches each kernel a few times at batch 256, for ncu:

    ncu -k regex:'gdn_recurrent_decode|fla_recurrent_gdn' --launch-skip 2 \
        --launch-count 2 python3 scripts/gpu/gdn_asm.py /tmp profile"""
import os
import subprocess
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
import gdn_bench as b  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
batch = 256
state, slots, q, k, v, gate, beta = b.inputs(batch)
o = torch.empty(batch, b.HV, b.DV, device=b.dev)
if sys.argv[2:] == ["profile"]:
    drv = b.Driver("kernels/state.ptx", 4, 8)
    seqlens = torch.arange(batch + 1, device=b.dev, dtype=torch.int32)
    for _ in range(4):
        b.ours(drv, batch, state, slots, q, k, v, gate, beta, o, seqlens)
        b.fla(batch, state, slots, q, k, v, gate, beta, o, 8)
    torch.cuda.synchronize()
    sys.exit(0)
for bv in (8, 32):
    ck = b.fla_recurrent_gdn[(triton.cdiv(b.DV, bv), batch * b.HV)](
        q, k, v, gate, beta, o, state, slots, HV=b.HV, K=b.DK, V=b.DV, BK=triton.next_power_of_2(b.DK), BV=bv,
        num_warps=1, num_stages=3)
    for key in ("ttgir", "ptx", "cubin"):
        data = ck.asm.get(key)
        if data is None:
            continue
        mode = "wb" if isinstance(data, bytes) else "w"
        with open(f"{out}/triton_bv{bv}.{key}", mode) as f:
            f.write(data)
    print(f"triton bv{bv}: registers {ck.n_regs}, spills {ck.n_spills}, shared {ck.metadata.shared}", flush=True)
nvcc = os.environ.get("NVCC", "nvcc")
ptxas = os.path.join(os.path.dirname(nvcc), "ptxas") if os.sep in nvcc else "ptxas"
r = subprocess.run([ptxas, "-arch=sm_90", "-v", "kernels/state.ptx", "-o", f"{out}/state.cubin"],
                   capture_output=True, text=True)
print(r.stdout + r.stderr, flush=True)
for name in os.listdir(out):
    if name.endswith(".cubin"):
        r = subprocess.run(["cuobjdump", "-sass", f"{out}/{name}"], capture_output=True, text=True)
        with open(f"{out}/{name[:-6]}.sass", "w") as f:
            f.write(r.stdout + r.stderr)
