#!/usr/bin/env bash
# Intel's OpenCL runtime for CPUs, a second OpenCL implementation beside PoCL,
# installed without root from PyPI (Debian has no package of it):
#
#   scripts/install_intel_opencl.sh [DIR]
#
# The three wheels (intel-opencl-rt, and the libraries it links:
# intel-cmplr-lib-rt and tbb) are downloaded once, pinned by version and
# checksum, into ${XDG_CACHE_HOME:-~/.cache}/dlcaffe/wheels. Their libraries
# are unpacked into one folder, DIR/lib (default: build/opencl/intel-cpu,
# beside the build), where libintelocl.so's RUNPATH ($ORIGIN) finds the rest.
# DIR/vendors then holds an ICD file naming it and copies of the system's
# own (/etc/OpenCL/vendors: PoCL), so that with
#
#   export OCL_ICD_VENDORS=DIR/vendors
#
# every program sees both CPU implementations (`dlcaffe device_query` lists
# them). The wheel's own ICD file names a path from Intel's build machine, so
# it is not used. A second run does nothing when DIR is complete.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-${DLCAFFE_BUILD_DIR:-$root/build}/opencl/intel-cpu}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/dlcaffe/wheels"

# name, version, sha256 of the manylinux_2_28 x86_64 wheel.
wheels=(
  "intel_opencl_rt 2026.2.0 6b6215a420598b4999ee01caca6d5cbe106aa4155c46c52377619c5aafce9f67"
  "intel_cmplr_lib_rt 2026.2.0 9f713083073a820d2496a6da8e8d4f3482aba6640f74521d25ea48dcebe72748"
  "tbb 2023.2.0 7d80615b6e970f11671fa05b6eaa9483ac864fbfe525ac280271a78b37870b7c"
)

if [ -f "$dir/complete" ]; then
  echo "install_intel_opencl: present in $dir"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "install_intel_opencl: Intel's CPU runtime is for x86_64 only; skipped on $(uname -m)"
  exit 0
fi

python=python3
if ! python3 -m pip --version >/dev/null 2>&1 && [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; fi

mkdir -p "$cache"
for entry in "${wheels[@]}"; do
  read -r name version sha <<<"$entry"
  file="$cache/$name-$version-py2.py3-none-manylinux_2_28_x86_64.whl"
  if [ ! -f "$file" ] || ! echo "$sha  $file" | sha256sum --check --quiet 2>/dev/null; then
    echo "install_intel_opencl: fetching ${name//_/-} $version"
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/intel_opencl.XXXXXX")"
    "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
      --platform manylinux_2_28_x86_64 "${name//_/-}==$version"
    mv "$tmp/$(basename "$file")" "$file.part"
    rm -rf "$tmp"
    echo "$sha  $file.part" | sha256sum --check --quiet ||
      { echo "install_intel_opencl: $(basename "$file") does not match its checksum" >&2; exit 1; }
    mv "$file.part" "$file"
  fi
done

# Unpack the libraries (only the data/lib folders) into one folder, then the
# ICD files; the folder counts as installed once `complete` is written.
rm -rf "$dir"
mkdir -p "$dir/lib" "$dir/vendors"
"$python" - "$dir/lib" "$cache" <<'EOF'
import glob, os, sys, zipfile
out, cache = sys.argv[1], sys.argv[2]
for wheel in sorted(glob.glob(os.path.join(cache, "*.whl"))):
    if not os.path.basename(wheel).startswith(("intel_opencl_rt-", "intel_cmplr_lib_rt-", "tbb-")):
        continue
    written = {}  # (size, crc) -> the name first written with that content
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            # <name>.data/data/lib/<file>; the wheel's own ICD loader is left out
            if len(parts) != 4 or parts[1:3] != ["data", "lib"] or not parts[3] or \
                    parts[3].startswith("libOpenCL.so"):
                continue
            target = os.path.join(out, parts[3])
            # Wheels store a library's symbolic links (libtbb.so.12 -> ...)
            # as copies: make them links again.
            same = written.get((info.file_size, info.CRC))
            if same:
                os.symlink(same, target)
                continue
            with z.open(info) as src, open(target, "wb") as dst:
                dst.write(src.read())
            os.chmod(target, 0o755)
            written[(info.file_size, info.CRC)] = parts[3]
EOF
echo "$dir/lib/libintelocl.so" >"$dir/vendors/intel-cpu.icd"
for icd in /etc/OpenCL/vendors/*.icd; do
  [ -e "$icd" ] && cp "$icd" "$dir/vendors/"
done
touch "$dir/complete"
echo "install_intel_opencl: Intel's OpenCL CPU runtime in $dir (OCL_ICD_VENDORS=$dir/vendors)"
