#!/usr/bin/env python3
r"""Load an sm_90a PTX module through NVIDIA's OpenCL and run wgmma probes.

Question answered: NVIDIA's OpenCL compiles OpenCL C to PTX `.target sm_90`,
so inline wgmma (needs sm_90a) is rejected. Its program binaries are PTX text;
does clCreateProgramWithBinary accept PTX with `.target sm_90a`, and do
wgmma kernels loaded that way run and give the right answer?

Usage (GPU host; stdlib only, no numpy):
  /usr/local/cuda/bin/nvcc -gencode=arch=compute_90a,code=sm_90a --ptx \
      -o /tmp/wgmma_probe.ptx tools/extra/wgmma_probe.cu
  python3 tools/extra/opencl_ptx_probe.py /tmp/wgmma_probe.ptx

Prints "build: ok", "fence_probe: PASS" and one "wgmma m64n8k16 ...: PASS"
line per stride setting when everything works. Without an NVIDIA OpenCL
platform it prints "not NVIDIA, skipped". Exit 0 if all that ran passed (or
was skipped), 1 otherwise.
"""
import ctypes as C
import random
import struct
import sys
from array import array

vp, sz, u32, i32 = C.c_void_p, C.c_size_t, C.c_uint32, C.c_int32
P = C.POINTER

# OpenCL constants used here (CL/cl.h).
CL_PLATFORM_NAME, CL_DEVICE_TYPE_GPU = 0x0902, 1 << 2
CL_DEVICE_NAME, CL_DRIVER_VERSION = 0x102B, 0x102D
CL_MEM_READ_WRITE, CL_MEM_COPY_HOST_PTR = 1 << 0, 1 << 5
CL_PROGRAM_BUILD_LOG, CL_INVALID_BINARY = 0x1183, -42


class CLError(Exception):
    pass


def load_cl():
    cl = C.CDLL("libOpenCL.so.1")
    sig = {  # name: (restype, argtypes); handles are opaque c_void_p
        "clGetPlatformIDs": (i32, [u32, P(vp), P(u32)]),
        "clGetPlatformInfo": (i32, [vp, u32, sz, vp, P(sz)]),
        "clGetDeviceIDs": (i32, [vp, C.c_uint64, u32, P(vp), P(u32)]),
        "clGetDeviceInfo": (i32, [vp, u32, sz, vp, P(sz)]),
        "clCreateContext": (vp, [vp, u32, P(vp), vp, vp, P(i32)]),
        "clCreateCommandQueue": (vp, [vp, vp, C.c_uint64, P(i32)]),
        "clCreateBuffer": (vp, [vp, C.c_uint64, sz, vp, P(i32)]),
        "clEnqueueWriteBuffer": (i32, [vp, vp, u32, sz, sz, vp, u32, vp, vp]),
        "clEnqueueReadBuffer": (i32, [vp, vp, u32, sz, sz, vp, u32, vp, vp]),
        "clCreateProgramWithBinary": (
            vp, [vp, u32, P(vp), P(sz), P(C.c_char_p), P(i32), P(i32)]),
        "clBuildProgram": (i32, [vp, u32, P(vp), C.c_char_p, vp, vp]),
        "clGetProgramBuildInfo": (i32, [vp, vp, u32, sz, vp, P(sz)]),
        "clCreateKernel": (vp, [vp, C.c_char_p, P(i32)]),
        "clSetKernelArg": (i32, [vp, u32, sz, vp]),
        "clEnqueueNDRangeKernel": (
            i32, [vp, vp, u32, P(sz), P(sz), P(sz), u32, vp, vp]),
        "clFinish": (i32, [vp]),
    }
    for name, (res, args) in sig.items():
        f = getattr(cl, name)
        f.restype, f.argtypes = res, args
    return cl


def check(name, code):
    if code != 0:
        raise CLError("%s failed: %d" % (name, code))


def info_str(fn, *head):
    """clGet*Info string query: size first, then the value."""
    n = sz()
    check(fn.__name__, fn(*head, 0, None, C.byref(n)))
    buf = C.create_string_buffer(n.value)
    check(fn.__name__, fn(*head, n.value, buf, None))
    return buf.value.decode(errors="replace")


def nvidia_gpu(cl):
    n = u32()
    if cl.clGetPlatformIDs(0, None, C.byref(n)) != 0 or n.value == 0:
        return None
    plats = (vp * n.value)()
    check("clGetPlatformIDs", cl.clGetPlatformIDs(n.value, plats, None))
    for p in plats:
        if "NVIDIA" in info_str(cl.clGetPlatformInfo, p, CL_PLATFORM_NAME):
            dev, nd = vp(), u32()
            if cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, C.byref(dev),
                                 C.byref(nd)) == 0 and nd.value:
                return dev
    return None


def build(cl, ctx, dev, ptx):
    """clCreateProgramWithBinary with the PTX bytes; retry with a trailing
    NUL if the driver calls the plain text an invalid binary (or its build
    fails), since NVIDIA may treat the binary as a C string."""
    for nul in (False, True):
        data = ptx + (b"\0" if nul else b"")
        blob, length = C.c_char_p(data), sz(len(data))
        st, err = i32(), i32()
        prog = cl.clCreateProgramWithBinary(ctx, 1, C.byref(dev),
                                            C.byref(length), C.byref(blob),
                                            C.byref(st), C.byref(err))
        tag = "with trailing NUL" if nul else "without trailing NUL"
        if err.value == CL_INVALID_BINARY or st.value == CL_INVALID_BINARY:
            print("clCreateProgramWithBinary %s: CL_INVALID_BINARY" % tag)
            continue
        check("clCreateProgramWithBinary", err.value)
        print("clCreateProgramWithBinary %s: accepted" % tag)
        rc = cl.clBuildProgram(prog, 1, C.byref(dev), b"", None, None)
        if rc == 0:
            print("build: ok")
            return prog
        print("build: FAILED (%d)" % rc)
        print(info_str(cl.clGetProgramBuildInfo, prog, dev,
                       CL_PROGRAM_BUILD_LOG))
    return None


def run(cl, ctx, q, prog, kname, args, out_nbytes, out_index):
    """Set args (cl_mem from bytes, ints as cl_int), launch 1x128, read back
    buffer args[out_index] as float32."""
    err = i32()
    k = cl.clCreateKernel(prog, kname.encode(), C.byref(err))
    check("clCreateKernel(%s)" % kname, err.value)
    mems = []
    for i, a in enumerate(args):
        if isinstance(a, (bytes, bytearray)):
            m = cl.clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                  len(a), bytes(a), C.byref(err))
            check("clCreateBuffer", err.value)
            mems.append(m)
            h = vp(m)
            check("clSetKernelArg", cl.clSetKernelArg(k, i, C.sizeof(h), C.byref(h)))
        else:
            v = i32(a)
            check("clSetKernelArg", cl.clSetKernelArg(k, i, 4, C.byref(v)))
            mems.append(None)
    g = sz(128)
    check("clEnqueueNDRangeKernel", cl.clEnqueueNDRangeKernel(
        q, k, 1, None, C.byref(g), C.byref(g), 0, None, None))
    check("clFinish", cl.clFinish(q))
    out = C.create_string_buffer(out_nbytes)
    check("clEnqueueReadBuffer", cl.clEnqueueReadBuffer(
        q, mems[out_index], 1, 0, out_nbytes, out, 0, None, None))
    return array("f", out.raw)


def half_bits(vals):
    return b"".join(struct.pack("<e", float(v)) for v in vals)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        cl = load_cl()
    except OSError:
        print("no libOpenCL.so.1: not NVIDIA, skipped")
        return 0
    dev = nvidia_gpu(cl)
    if dev is None:
        print("not NVIDIA, skipped")
        return 0
    print("device:", info_str(cl.clGetDeviceInfo, dev, CL_DEVICE_NAME))
    print("driver:", info_str(cl.clGetDeviceInfo, dev, CL_DRIVER_VERSION))
    err = i32()
    ctx = cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err))
    check("clCreateContext", err.value)
    q = cl.clCreateCommandQueue(ctx, dev, 0, C.byref(err))
    check("clCreateCommandQueue", err.value)
    with open(sys.argv[1], "rb") as f:
        prog = build(cl, ctx, dev, f.read())
    if prog is None:
        return 1
    ok = True
    try:  # (a) wgmma fence/commit/wait only
        out = run(cl, ctx, q, prog, "fence_probe", [bytes(512)], 512, 0)
        good = all(out[i] == i for i in range(128))
        print("fence_probe:", "PASS" if good else "FAIL")
        ok &= good
    except CLError as e:
        print("fence_probe: FAIL (%s)" % e)
        ok = False
    # (b) D = A @ B^T with small integers: exact in f16 inputs / f32 sums.
    rnd = random.Random(1234)
    A = [rnd.randint(-3, 3) for _ in range(64 * 16)]
    B = [rnd.randint(-3, 3) for _ in range(8 * 16)]  # N x K
    ref = [sum(A[r * 16 + k] * B[c * 16 + k] for k in range(16))
           for r in range(64) for c in range(8)]
    # (lbo_a, sbo_a, lbo_b, sbo_b). 1st: K-adjacent cores (CUTLASS-style).
    # 2nd: M/N-adjacent cores, K halves apart (A's 8 M-cores need lbo 1024 to
    # stay disjoint). Both PASS iff LBO = K-direction, SBO = M/N-direction.
    for la, sa, lb, sb in [(128, 256, 128, 256), (1024, 128, 256, 128)]:
        tag = "wgmma m64n8k16 lbo=%d,sbo=%d (B: lbo=%d,sbo=%d)" % (la, sa, lb, sb)
        try:
            D = run(cl, ctx, q, prog, "wgmma_m64n8k16",
                    [half_bits(A), half_bits(B), bytes(64 * 8 * 4),
                     la, sa, lb, sb], 64 * 8 * 4, 2)
        except CLError as e:
            print("%s: FAIL (%s)" % (tag, e))
            ok = False
            continue
        bad = [i for i in range(512) if D[i] != ref[i]]
        if not bad:
            print("%s: PASS" % tag)
        else:
            i = bad[0]
            print("%s: FAIL (%d of 512 wrong; first: (%d,%d) got %g expected %g)"
                  % (tag, len(bad), i // 8, i % 8, D[i], ref[i]))
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
