#!/usr/bin/env python3
r"""Load an sm_90a PTX module through NVIDIA's OpenCL and run wgmma probes.

Question answered: NVIDIA's OpenCL compiles OpenCL C to PTX `.target sm_90`,
so inline wgmma (needs sm_90a) is rejected. Its program binaries are PTX text;
does clCreateProgramWithBinary accept PTX with `.target sm_90a`, and do
wgmma kernels loaded that way run and give the right answer?

Usage (GPU host; stdlib only, no numpy):
  /usr/local/cuda/bin/nvcc -gencode=arch=compute_90a,code=sm_90a --ptx \
      -o /tmp/wgmma_probe.ptx tools/extra/wgmma_probe.cu
  python3 tools/extra/opencl_ptx_probe.py /tmp/wgmma_probe.ptx \
      [--dump-opencl-ptx /tmp/opencl_fence_probe.ptx]

First result (H100 80GB HBM3, driver 580.159.04, nvcc 13.0 PTX as given):
clCreateProgramWithBinary accepted the PTX without a trailing NUL and the
build was ok, but every launch, even fence_probe (wgmma fence/commit/wait
only), failed at clFinish with -36 (CL_INVALID_COMMAND_QUEUE). nvcc's PTX
differs from what NVIDIA's OpenCL itself emits in two ways: its header is
`.target sm_90a` (texmode_unified by default) where OpenCL's is
`.target sm_90, texmode_independent`, and its pointer params are plain
`.param .u64 NAME` (converted with cvta.to.global) where OpenCL's are
`.param .u64 .ptr .global .align 4 NAME`; without that annotation the driver
may not know an argument is a cl_mem to translate into a device address.

So the script now runs, in order:
  control: an OpenCL C fence_probe (plain out[i] = i, no wgmma) built from
    source with clCreateProgramWithSource and run; its program binary (PTX
    text) is read back, its `.version`/`.target` lines and `.entry` param
    declarations printed, and written whole to --dump-opencl-ptx if given.
  variant 1: the PTX as given;
  variant 2: `.target sm_90a` -> `.target sm_90a, texmode_independent`;
  variant 3: every entry's `.param .u64 NAME` that the kernel uses as a
    pointer (loaded, then cvta.to.global'd) -> `.param .u64 .ptr .global
    .align 4 NAME`;
  variant 4: both 2 and 3;
  variant 5: the control's driver-made PTX, re-loaded through
    clCreateProgramWithBinary (does the binary route work at all?);
  variant 6: variant 5 with its `.target sm_90` arch replaced by the given
    PTX's (sm_90a): is the arch-specific target by itself the problem?
Each variant is loaded, built and run in its own child process (so its own
context and queue): a faulting launch kills the context, and running it in a
separate process keeps it from poisoning the next variant. Each prints
  variant <n> (<description>): build ok|FAILED (...); fence_probe PASS|FAIL
and, where fence_probe passes and the module has wgmma_m64n8k16, one
"wgmma m64n8k16 ...: PASS|FAIL" line per stride setting.

Result (H200, driver 580.159.04, eighth session): variants 1 and 2 fail at
clFinish with -36 as before; 3 and 4 run, and both wgmma m64n8k16 stride
settings PASS; 5 and 6 run. The pointer parameters' `.ptr .global` form is
what the driver needs; the target (sm_90a) and texmode do not matter.

Without an NVIDIA OpenCL platform it prints "not NVIDIA, skipped". Exit 0 if
any variant's fence_probe passed (or all was skipped), 1 otherwise.
"""
import argparse
import ctypes as C
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
from array import array

vp, sz, u32, i32 = C.c_void_p, C.c_size_t, C.c_uint32, C.c_int32
P = C.POINTER

# OpenCL constants used here (CL/cl.h).
CL_PLATFORM_NAME, CL_DEVICE_TYPE_GPU = 0x0902, 1 << 2
CL_DEVICE_NAME, CL_DRIVER_VERSION = 0x102B, 0x102D
CL_MEM_READ_WRITE, CL_MEM_COPY_HOST_PTR = 1 << 0, 1 << 5
CL_PROGRAM_BUILD_LOG, CL_INVALID_BINARY = 0x1183, -42
CL_PROGRAM_BINARY_SIZES, CL_PROGRAM_BINARIES = 0x1165, 0x1166

# Control kernel: the same trivial write as wgmma_probe.cu's fence_probe,
# minus the wgmma instructions. It is named fence_probe too so that its
# driver-made PTX (variants 5 and 6) runs through the same check.
CONTROL_CL = b"""
__kernel void fence_probe(__global float* out) {
  out[get_global_id(0)] = (float)get_global_id(0);
}
"""


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
        "clCreateProgramWithSource": (
            vp, [vp, u32, P(C.c_char_p), P(sz), P(i32)]),
        "clCreateProgramWithBinary": (
            vp, [vp, u32, P(vp), P(sz), P(C.c_char_p), P(i32), P(i32)]),
        "clBuildProgram": (i32, [vp, u32, P(vp), C.c_char_p, vp, vp]),
        "clGetProgramBuildInfo": (i32, [vp, vp, u32, sz, vp, P(sz)]),
        "clGetProgramInfo": (i32, [vp, u32, sz, vp, P(sz)]),
        "clCreateKernel": (vp, [vp, C.c_char_p, P(i32)]),
        "clSetKernelArg": (i32, [vp, u32, sz, vp]),
        "clEnqueueNDRangeKernel": (
            i32, [vp, vp, u32, P(sz), P(sz), P(sz), u32, vp, vp]),
        "clFinish": (i32, [vp]),
        "clReleaseCommandQueue": (i32, [vp]),
        "clReleaseContext": (i32, [vp]),
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
    """(device, None), or (None, what was found instead)."""
    n = u32()
    err = cl.clGetPlatformIDs(0, None, C.byref(n))
    if err != 0 or n.value == 0:
        return None, "clGetPlatformIDs: %d, %d platforms" % (err, n.value)
    plats = (vp * n.value)()
    check("clGetPlatformIDs", cl.clGetPlatformIDs(n.value, plats, None))
    seen = []
    for p in plats:
        name = info_str(cl.clGetPlatformInfo, p, CL_PLATFORM_NAME)
        if "NVIDIA" in name:
            dev, nd = vp(), u32()
            err = cl.clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, C.byref(dev), C.byref(nd))
            if err == 0 and nd.value:
                return dev, None
            name += " (clGetDeviceIDs: %d, %d GPUs)" % (err, nd.value)
        seen.append(name)
    return None, "platforms: " + "; ".join(seen)


def open_cl():
    """(cl, dev) for the NVIDIA GPU, or (None, reason) when there is none."""
    try:
        cl = load_cl()
    except OSError:
        return None, "no libOpenCL.so.1: not NVIDIA, skipped"
    dev, found = nvidia_gpu(cl)
    return (cl, dev) if dev is not None else (None, "not NVIDIA, skipped (%s)" % found)


def new_queue(cl, dev):
    """A fresh context and in-order queue on dev."""
    err = i32()
    ctx = cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err))
    check("clCreateContext", err.value)
    q = cl.clCreateCommandQueue(ctx, dev, 0, C.byref(err))
    check("clCreateCommandQueue", err.value)
    return ctx, q


def build_log(cl, prog, dev):
    try:
        return info_str(cl.clGetProgramBuildInfo, prog, dev,
                        CL_PROGRAM_BUILD_LOG).strip()
    except CLError as e:
        return "(no build log: %s)" % e


def build_binary(cl, ctx, dev, ptx):
    """clCreateProgramWithBinary + clBuildProgram with the PTX bytes.
    Returns (prog, note, log): prog None on failure, note says why (or, on
    success, whether a trailing NUL was needed), log the last build log.
    Retries with a trailing NUL if the driver calls the plain text an
    invalid binary (or its build fails), since NVIDIA may treat the binary
    as a C string."""
    notes, log = [], ""
    for nul in (False, True):
        data = ptx + (b"\0" if nul else b"")
        blob, length = C.c_char_p(data), sz(len(data))
        st, err = i32(), i32()
        prog = cl.clCreateProgramWithBinary(ctx, 1, C.byref(dev),
                                            C.byref(length), C.byref(blob),
                                            C.byref(st), C.byref(err))
        tag = "with trailing NUL" if nul else "without trailing NUL"
        if err.value == CL_INVALID_BINARY or st.value == CL_INVALID_BINARY:
            notes.append("clCreateProgramWithBinary %s: CL_INVALID_BINARY"
                         % tag)
            continue
        if err.value != 0:
            return (None, "clCreateProgramWithBinary %s: %d" % (tag, err.value),
                    "")
        rc = cl.clBuildProgram(prog, 1, C.byref(dev), b"", None, None)
        if rc == 0:
            return prog, ("" if not nul else "needed trailing NUL"), ""
        notes.append("clBuildProgram %d, binary %s" % (rc, tag))
        log = build_log(cl, prog, dev)
    return None, "; ".join(notes), log


def build_source(cl, ctx, dev, src):
    err = i32()
    s, n = C.c_char_p(src), sz(len(src))
    prog = cl.clCreateProgramWithSource(ctx, 1, C.byref(s), C.byref(n),
                                        C.byref(err))
    check("clCreateProgramWithSource", err.value)
    rc = cl.clBuildProgram(prog, 1, C.byref(dev), b"", None, None)
    if rc != 0:
        raise CLError("clBuildProgram failed: %d\n%s"
                      % (rc, build_log(cl, prog, dev)))
    return prog


def program_binary(cl, prog):
    """CL_PROGRAM_BINARIES of a one-device program (NVIDIA: PTX text)."""
    n = sz()
    check("clGetProgramInfo(BINARY_SIZES)", cl.clGetProgramInfo(
        prog, CL_PROGRAM_BINARY_SIZES, C.sizeof(n), C.byref(n), None))
    buf = C.create_string_buffer(n.value)
    ptrs = (vp * 1)(C.cast(buf, vp))
    check("clGetProgramInfo(BINARIES)", cl.clGetProgramInfo(
        prog, CL_PROGRAM_BINARIES, C.sizeof(ptrs), ptrs, None))
    return buf.raw[:n.value]


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


def fence_probe(cl, ctx, q, prog):
    """Run fence_probe (out[i] = i over one 128-wide group): 'PASS' or
    'FAIL (...)'."""
    try:
        out = run(cl, ctx, q, prog, "fence_probe", [bytes(512)], 512, 0)
    except CLError as e:
        return "FAIL (%s)" % e
    bad = [i for i in range(128) if out[i] != i]
    if bad:
        return "FAIL (%d of 128 wrong; out[%d] = %g)" % (len(bad), bad[0],
                                                        out[bad[0]])
    return "PASS"


def half_bits(vals):
    return b"".join(struct.pack("<e", float(v)) for v in vals)


def wgmma_checks(cl, ctx, q, prog):
    """D = A @ B^T with small integers (exact in f16 inputs / f32 sums),
    one line per LBO/SBO setting. True if all passed."""
    rnd = random.Random(1234)
    A = [rnd.randint(-3, 3) for _ in range(64 * 16)]
    B = [rnd.randint(-3, 3) for _ in range(8 * 16)]  # N x K
    ref = [sum(A[r * 16 + k] * B[c * 16 + k] for k in range(16))
           for r in range(64) for c in range(8)]
    ok = True
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
    return ok


# ---- PTX text edits -------------------------------------------------------

ENTRY = re.compile(r"(\.entry\s+([\w$]+)\s*\()(.*?)(\))", re.S)
U64_PARAM = re.compile(r"\.param\s+\.u64\s+([A-Za-z_$%][\w$]*)")


def header_lines(ptx):
    return re.findall(r"^\s*\.(?:version|target)\b.*$", ptx, re.M)


def entry_params(ptx):
    """[(entry name, [param declaration lines])] -- the lines between each
    `.entry NAME(` and its `)`."""
    return [(m.group(2), [l.strip() for l in m.group(3).splitlines()
                          if l.strip()])
            for m in ENTRY.finditer(ptx)]


def texmode_independent(ptx):
    """`.target X` (no texmode) -> `.target X, texmode_independent`, as in
    the PTX NVIDIA's OpenCL compiler emits."""
    return re.sub(r"^(\s*\.target\s+[^,\s]+)\s*$",
                  r"\1, texmode_independent", ptx, flags=re.M)


def global_ptr_params(ptx):
    """Rewrite `.param .u64 NAME` -> `.param .u64 .ptr .global .align 4 NAME`
    (OpenCL's kernel-pointer form) in every .entry, for the params the body
    uses as global pointers: `ld.param.u64 %rdA, [NAME]` followed somewhere
    by `cvta.to.global.u64 %rdB, %rdA`. Returns (text, rewritten, kept)."""
    done, kept = [], []

    def is_pointer(name):
        m = re.search(r"ld\.param\.u64\s+(%rd\d+),\s*\[" + re.escape(name)
                      + r"\]", ptx)
        return bool(m and re.search(r"cvta\.to\.global\.u64\s+%rd\d+,\s*"
                                    + re.escape(m.group(1)) + ";", ptx))

    def one_param(m):
        if not is_pointer(m.group(1)):
            kept.append(m.group(1))
            return m.group(0)
        done.append(m.group(1))
        return ".param .u64 .ptr .global .align 4 " + m.group(1)

    def one_entry(m):
        return m.group(1) + U64_PARAM.sub(one_param, m.group(3)) + m.group(4)

    return ENTRY.sub(one_entry, ptx), done, kept


def retarget(ptx, arch):
    """Replace the `.target` arch (keeping any texmode after the comma)."""
    return re.sub(r"^(\s*\.target\s+)[^,\s]+", r"\g<1>" + arch, ptx,
                  flags=re.M)


def variants(ptx, driver_ptx):
    """[(n, description, PTX text or None)] in the order they run."""
    tex = texmode_independent(ptx)
    ptr, done, kept = global_ptr_params(ptx)
    ptr_desc = ".param .u64 pointers -> .ptr .global .align 4 (%d params)" % (
        len(done))
    if kept:
        ptr_desc += "; kept plain: " + ", ".join(kept)
    arch = re.search(r"^\s*\.target\s+([^,\s]+)", ptx, re.M)
    arch = arch.group(1) if arch else "sm_90a"
    return [
        (1, "as given", ptx),
        (2, ".target + texmode_independent", tex),
        (3, ptr_desc, ptr),
        (4, "2 and 3", global_ptr_params(tex)[0]),
        (5, "driver-made PTX of the OpenCL C control, via "
            "clCreateProgramWithBinary", driver_ptx),
        (6, "5 with .target arch -> %s" % arch,
         driver_ptx and retarget(driver_ptx, arch)),
    ]


# ---- one variant, in a child process ---------------------------------------

def child(n, desc, path):
    """Load, build and run one variant in a fresh context and queue. Prints
    its line (and the wgmma lines); exit 0 iff fence_probe passed."""
    cl, dev = open_cl()
    if cl is None:
        print("variant %s (%s): %s" % (n, desc, dev))
        return 1
    with open(path, "rb") as f:
        ptx = f.read()
    head = "variant %s (%s): " % (n, desc)
    try:
        ctx, q = new_queue(cl, dev)
        prog, note, log = build_binary(cl, ctx, dev, ptx)
    except CLError as e:
        print(head + "build FAILED (%s); fence_probe not run" % e)
        return 1
    if prog is None:
        print(head + "build FAILED (%s); fence_probe not run" % note)
        for line in log.splitlines()[:20]:
            print("    " + line)
        return 1
    fence = fence_probe(cl, ctx, q, prog)
    print(head + "build ok%s; fence_probe %s"
          % (" (%s)" % note if note else "", fence))
    sys.stdout.flush()
    if fence == "PASS" and b"wgmma_m64n8k16" in ptx:
        wgmma_checks(cl, ctx, q, prog)
    return 0 if fence == "PASS" else 1


# ---- control + driver ------------------------------------------------------

def control(cl, dev, dump_path):
    """Build CONTROL_CL from source, run it, and read back its PTX. Returns
    the driver-made program binary exactly as read back (bytes), or None."""
    try:
        ctx, q = new_queue(cl, dev)
        prog = build_source(cl, ctx, dev, CONTROL_CL)
    except CLError as e:
        print("control (OpenCL C from source): build FAILED (%s)" % e)
        return None
    print("control (OpenCL C from source): build ok; fence_probe %s"
          % fence_probe(cl, ctx, q, prog))
    try:
        binary = program_binary(cl, prog)
    except CLError as e:
        print("control PTX: not read (%s)" % e)
        return None
    finally:
        # The variants' processes get the device to themselves (in the
        # first run, eighth session, none of them found the NVIDIA platform
        # while this process held its context).
        cl.clFinish(q)
        cl.clReleaseCommandQueue(q)
        cl.clReleaseContext(ctx)
    ptx = binary.rstrip(b"\0")  # drop a C-string NUL for printing/dumping
    if not ptx:
        print("control PTX: empty program binary")
        return None
    text = ptx.decode(errors="replace")
    for line in header_lines(text) or ["(no .version/.target line: not PTX?)"]:
        print("control PTX:", line.strip())
    for name, params in entry_params(text):
        print("control PTX: .entry %s(" % name)
        for p in params:
            print("control PTX:     " + p)
        print("control PTX: )")
    if dump_path:
        with open(dump_path, "wb") as f:
            f.write(ptx)
        print("control PTX: %d bytes written to %s" % (len(ptx), dump_path))
    return binary


def environment_changes():
    """The C environment's entries that os.environ (the start's) lacks or
    holds with another value."""
    envp = C.POINTER(C.c_char_p).in_dll(C.CDLL(None), "environ")
    changed, i = [], 0
    while envp[i] is not None:
        key, _, value = envp[i].decode(errors="replace").partition("=")
        if os.environ.get(key) != value:
            changed.append("%s=%s" % (key, value[:120]))
        i += 1
    return changed


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ptx", help="PTX file (nvcc --ptx of wgmma_probe.cu)")
    ap.add_argument("--dump-opencl-ptx", metavar="PATH",
                    help="write the control's driver-made PTX here")
    ap.add_argument("--child", nargs=2, metavar=("N", "DESC"),
                    help=argparse.SUPPRESS)  # internal: run one variant
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], a.child[1], a.ptx)

    cl, dev = open_cl()
    if cl is None:
        print(dev)
        return 0
    with open(a.ptx, "rb") as f:
        given = f.read()
    for line in header_lines(given.decode(errors="replace")):
        print("given PTX:", line.strip())
    print("device:", info_str(cl.clGetDeviceInfo, dev, CL_DEVICE_NAME))
    print("driver:", info_str(cl.clGetDeviceInfo, dev, CL_DRIVER_VERSION))
    driver_ptx = control(cl, dev, a.dump_opencl_ptx)
    # The variants' processes found no NVIDIA platform (eighth session)
    # although they inherit this process's environment: get it from
    # os.environ, the environment as this process began, in case the driver
    # changed the process's own, and say what it changed.
    for line in environment_changes():
        print("environment set by the driver:", line)
    sys.stdout.flush()

    # Each variant in its own process: a faulting launch leaves the driver's
    # context unusable, and a separate process guarantees it can't affect
    # the next variant (its own context and queue come with it).
    any_pass = False
    with tempfile.TemporaryDirectory() as tmp:
        # latin-1: a lossless bytes <-> str round trip (PTX is ASCII).
        texts = variants(given.decode("latin-1"),
                         driver_ptx and driver_ptx.decode("latin-1"))
        for n, desc, text in texts:
            if text is None:
                print("variant %d (%s): not run (no driver-made PTX)"
                      % (n, desc))
                continue
            path = os.path.join(tmp, "variant%d.ptx" % n)
            with open(path, "wb") as f:
                f.write(text.encode("latin-1"))
            try:
                r = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), path,
                     "--child", str(n), desc], env=dict(os.environ),
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    timeout=180)
            except subprocess.TimeoutExpired:
                print("variant %d (%s): FAIL (no answer in 180 s)" % (n, desc))
                continue
            out = r.stdout.decode(errors="replace").rstrip("\n")
            if out:
                print(out)
            if r.returncode not in (0, 1):  # crashed, not a clean FAIL
                print("variant %d (%s): FAIL (child process exited with %d)"
                      % (n, desc, r.returncode))
            sys.stdout.flush()
            any_pass |= r.returncode == 0
    return 0 if any_pass else 1


if __name__ == "__main__":
    sys.exit(main())
