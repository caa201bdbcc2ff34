#!/usr/bin/python3
r"""The SASS of one of our OpenCL C kernels for an NVIDIA GPU, on the
development machine: what the GPU host cannot show (it has no profiler and
no disassembler), as far as a compile here can tell.

  clang (OpenCL C -> PTX, target nvptx64-nvidia-nvcl)
  -> ptxas -arch=sm_90 -v (registers, spills, shared memory)
  -> nvdisasm (SASS), and a count of the instructions of each kind.

Usage:
  /usr/bin/python3 tools/extra/kernel_sass.py gemm_tiled.cl \
      "-DMR=8 -DNR=8 -DVW=4 -DUSE_LOCAL=1 -DTRANS_A=0 -DTRANS_B=1 -DWG_M=16 -DWG_N=16 \
       -DTK=32 -DA_TYPE=2 -DB_TYPE=2 -DC_TYPE=2 -DMMA=2 -DWARPS_M=2 -DMMA_STAGES=3" \
      [--kernel gemm_tiled] [--out /tmp/kernel_sass] [--arch sm_90]

The defines are the program's build options as `dlcaffe bench --kernels`
prints them. 16-bit half operands (A_TYPE=1 etc.) do not compile here:
clang's header declares vload_half for this target only under
address-space features it does not enable; bfloat16 (type 2, MMA=2) has
the same kernel structure.

What differs from the GPU host: NVIDIA's OpenCL compiles OpenCL C with its
own front end (NVVM), so the PTX is not the driver's; ptxas does the
register allocation and scheduling in both. clang leaves the OpenCL
built-ins it has no library for (libclc) as calls: the work-item functions
and barrier() are mapped to PTX special registers and bar.sync here, and
min/max (int) and fmax/fma (float) are given PTX bodies; any other call
left unresolved stops the script with its name.

Needs dlcaffe built (build/tools/dlcaffe, or $DLCAFFE: `dlcaffe kernel_source`
gives the text), clang and the CUDA toolkit's ptxas (/usr/local/cuda/bin, else PATH);
nvdisasm comes from PyPI's nvidia-cuda-nvdisasm wheel (Debian has no
package), fetched once into ${XDG_CACHE_HOME:-~/.cache}/dlcaffe/nvdisasm.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CL_DIR = os.path.join(ROOT, "src", "cl")

# Work-item functions and barrier() as the PTX special registers and
# instruction they stand for (included before the kernel source).
PRELUDE = r"""
#define DLC_PICK(d, x, y, z) ((d) == 0 ? (x) : (d) == 1 ? (y) : (z))
#define get_local_id(d) DLC_PICK(d, __nvvm_read_ptx_sreg_tid_x(), __nvvm_read_ptx_sreg_tid_y(), __nvvm_read_ptx_sreg_tid_z())
#define get_group_id(d) DLC_PICK(d, __nvvm_read_ptx_sreg_ctaid_x(), __nvvm_read_ptx_sreg_ctaid_y(), __nvvm_read_ptx_sreg_ctaid_z())
#define get_local_size(d) DLC_PICK(d, __nvvm_read_ptx_sreg_ntid_x(), __nvvm_read_ptx_sreg_ntid_y(), __nvvm_read_ptx_sreg_ntid_z())
#define get_num_groups(d) DLC_PICK(d, __nvvm_read_ptx_sreg_nctaid_x(), __nvvm_read_ptx_sreg_nctaid_y(), __nvvm_read_ptx_sreg_nctaid_z())
#define get_global_id(d) (get_group_id(d) * get_local_size(d) + get_local_id(d))
#define get_global_size(d) (get_num_groups(d) * get_local_size(d))
#define barrier(flags) __asm__ volatile("bar.sync 0;" ::: "memory")
"""

# PTX bodies for the scalar built-ins clang leaves as calls: (mangled name,
# parameter type, parameter count, the instruction on %a0.. into the result).
BUILTINS = {
    "_Z3minii": ("s32", 2, "min.s32"),
    "_Z3maxii": ("s32", 2, "max.s32"),
    "_Z4fmaxff": ("f32", 2, "max.f32"),
    "_Z4fminff": ("f32", 2, "min.f32"),
    "_Z3fmafff": ("f32", 3, "fma.rn.f32"),
}


def source_text(name):
    """The text the OpenCL compiler gets for src/cl/NAME (the shared header
    with the storage types' generated macros, every include in place), as
    `dlcaffe kernel_source` prints it from the sources in src/cl ($DLCAFFE,
    else build/tools/dlcaffe)."""
    dlcaffe = os.environ.get("DLCAFFE", os.path.join(ROOT, "build", "tools", "dlcaffe"))
    return subprocess.run([dlcaffe, "kernel_source", "--kernel_file=" + name,
                           "--options=kernel_source_dir=" + CL_DIR],
                          check=True, capture_output=True, text=True).stdout


def define_builtins(ptx):
    """Gives the declared-only built-in functions PTX bodies; stops on any
    other function that is declared without one."""
    pattern = re.compile(r"\.func\s+\(\.param \.b32 func_retval0\) (\w+)\n\(\n(.*?)\n\)\n;", re.S)

    def body(m):
        name = m.group(1)
        if name not in BUILTINS:
            sys.exit(f"kernel_sass: the PTX calls '{name}', which has no body here "
                     "(add it to BUILTINS)")
        kind, count, op = BUILTINS[name]
        loads = "".join(f"\tld.param.{kind} %a{i}, [{name}_param_{i}];\n" for i in range(count))
        operands = ", ".join(f"%a{i}" for i in range(count))
        return (f".func  (.param .b32 func_retval0) {name}\n(\n{m.group(2)}\n)\n{{\n"
                f"\t.reg .{kind} %a<{count + 1}>;\n" + loads +
                f"\t{op} %a{count}, {operands};\n\tst.param.{kind} [func_retval0+0], %a{count};\n"
                "\tret;\n}")
    return pattern.sub(body, ptx)


def nvdisasm_path():
    found = shutil.which("nvdisasm") or (
        "/usr/local/cuda/bin/nvdisasm" if os.path.exists("/usr/local/cuda/bin/nvdisasm") else None)
    if found:
        return found
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                         "dlcaffe", "nvdisasm")
    for dirpath, _, files in os.walk(cache):
        if "nvdisasm" in files:
            return os.path.join(dirpath, "nvdisasm")
    os.makedirs(cache, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", cache,
                    "nvidia-cuda-nvdisasm"], check=True, stdout=subprocess.DEVNULL)
    for wheel in os.listdir(cache):
        if wheel.endswith(".whl"):
            zipfile.ZipFile(os.path.join(cache, wheel)).extractall(cache)
    for dirpath, _, files in os.walk(cache):
        if "nvdisasm" in files:
            path = os.path.join(dirpath, "nvdisasm")
            os.chmod(path, 0o755)
            return path
    sys.exit("kernel_sass: the nvidia-cuda-nvdisasm wheel held no nvdisasm")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="?",
                   help="a kernel source in src/cl, e.g. gemm_tiled.cl")
    p.add_argument("defines", nargs="?", default="",
                   help="its build options, e.g. \"-DMR=8 -DNR=8 ...\"")
    p.add_argument("--kernel", help="the kernel function (default: the source's name)")
    p.add_argument("--driver-ptx", metavar="FILE",
                   help="the PTX NVIDIA's OpenCL compiled instead of clang's: a kernel "
                        "cache entry from the GPU host (DLCAFFE_KERNEL_CACHE=dir there, "
                        "dir/*.bin) or a PTX file; then no source is compiled")
    p.add_argument("--out", default="/tmp/kernel_sass")
    p.add_argument("--arch", default="sm_90")
    a = p.parse_args()
    if not a.source and not a.driver_ptx:
        p.error("give a source (and its defines) or --driver-ptx")
    if not a.kernel and not a.source:
        p.error("--driver-ptx needs --kernel")
    kernel = a.kernel or os.path.splitext(os.path.basename(a.source))[0]
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, kernel)
    if a.driver_ptx:
        with open(a.driver_ptx, "rb") as f:
            data = f.read()
        # A cache entry starts with its own header line (program_cache.cpp);
        # the driver's binary is the PTX text, NUL-terminated.
        if data.startswith(b"dlcaffe-cache "):
            data = data[data.index(b"\n") + 1:]
        with open(stem + ".ptx", "w") as f:
            f.write(data.replace(b"\0", b"").decode())
    else:
        compile_with_clang(a, stem)
    assemble_and_report(a, kernel, stem)


def compile_with_clang(a, stem):
    with open(stem + ".cl", "w") as f:
        f.write(PRELUDE + source_text(os.path.basename(a.source)))
    clang = next((c for c in ("clang", "clang-14", "clang-15", "clang-16") if shutil.which(c)),
                 None)
    if not clang:
        sys.exit("kernel_sass: clang is not on the PATH (scripts/install_deps.sh installs it)")
    subprocess.run([clang, "-x", "cl", "-cl-std=CL1.2", "-fgnu-keywords", "-target",
                    "nvptx64-nvidia-nvcl", "-Xclang", "-finclude-default-header", "-O2", "-S",
                    *a.defines.split(), "-o", stem + ".clang.ptx", stem + ".cl"], check=True)
    with open(stem + ".clang.ptx") as f:
        ptx = define_builtins(f.read())
    ptx = re.sub(r"^\.target .*$", f".target {a.arch}", ptx, flags=re.M)
    ptx = re.sub(r"^\.version .*$", ".version 8.0", ptx, flags=re.M)
    with open(stem + ".ptx", "w") as f:
        f.write(ptx)


def assemble_and_report(a, kernel, stem):
    ptxas = "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else "ptxas"
    info = subprocess.run([ptxas, f"-arch={a.arch}", "-v", stem + ".ptx", "-o", stem + ".cubin"],
                          check=True, capture_output=True, text=True).stderr
    lines = info.splitlines()
    for i, line in enumerate(lines):
        if f"Function properties for {kernel}" in line:
            print("\n".join(lines[i:i + 3]))
    whole = subprocess.run([nvdisasm_path(), "-c", stem + ".cubin"], check=True,
                           capture_output=True, text=True).stdout
    # The kernel's own section: from its .text header to the next section.
    start = whole.find(f".text.{kernel}:")
    if start < 0:
        sys.exit(f"kernel_sass: no function '{kernel}' in the SASS (--kernel names it)")
    end = whole.find(".section", start)
    sass = whole[start:end if end >= 0 else len(whole)]
    with open(stem + ".sass", "w") as f:
        f.write(sass)
    def opcodes(lines):
        ops = collections.Counter()
        for line in lines:
            m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
            if m:
                ops[m.group(1)] += 1
        return ops

    def report(what, ops):
        print(f"{what}: {sum(ops.values())} instructions; " +
              ", ".join(f"{op} {n}" for op, n in ops.most_common(16)))

    lines = sass.splitlines()
    report("kernel", opcodes(lines))
    # The hot loop: of the loops (a label and a later branch back to it),
    # the one with the most tensor-core (HMMA) or else FFMA instructions.
    labels = {m.group(1): i for i, l in enumerate(lines) for m in [re.match(r"(\.L_x_\d+):", l)]
              if m}
    best = None
    for i, line in enumerate(lines):
        m = re.search(r"BRA `\((\.L_x_\d+)\)", line)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            ops = opcodes(lines[labels[m.group(1)]:i + 1])
            weight = (ops["HMMA"], ops["FFMA"])
            if best is None or weight > best[0]:
                best = (weight, ops)
    if best:
        report("hot loop (one trip)", best[1])
    print(f"SASS: {stem}.sass (PTX: {stem}.ptx)")


if __name__ == "__main__":
    main()
