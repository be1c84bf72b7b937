#!/usr/bin/env python3
# Loads each kernels/*.ptx through the CUDA driver (cuModuleLoadData, as the
# backend's cu.LoadData does) and looks up every .visible .entry in it:
#   python3 scripts/gpu/ptx_load.py kernels/*.ptx
import ctypes, re, sys

cu = ctypes.CDLL("libcuda.so.1")


def ck(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cu.cuGetErrorString(r, ctypes.byref(s))
        sys.exit(f"{what}: error {r} {s.value.decode() if s.value else ''}")


ck(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
for path in sys.argv[1:]:
    text = open(path).read()
    target = re.search(r"(?m)^\.target (\S+)", text).group(1)
    mod = ctypes.c_void_p()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(text.encode() + b"\0")), f"cuModuleLoadData {path}")
    names = re.findall(r"(?m)^\.visible \.entry (\w+)\(", text)
    for n in names:
        f = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(f), mod, n.encode()), f"cuModuleGetFunction {n}")
    print(f"{path}: .target {target}, loaded by the driver, {len(names)} entries found: {' '.join(names)}")
