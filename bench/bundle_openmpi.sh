#!/usr/bin/env bash
# Packs this machine's OpenMPI runtime (Debian's openmpi-bin: mpirun, its
# plugins and help texts, PMIx) for a GPU host that has no MPI, so that
# bench/scale.sh can measure `mpirun -np N dlcaffe train` there.
#
#   bench/bundle_openmpi.sh .gpu/openmpi.tar.xz
#
# OpenMPI looks for its plugins and help texts at the paths it was built
# with, so the archive holds them at those paths (under /usr/lib/<arch>/openmpi,
# /usr/lib/<arch>/pmix2, /usr/share/openmpi, /etc/openmpi), beside mpirun and
# the libraries that it and its plugins need under /opt/dlcaffe-openmpi. On
# the GPU host, as root:
#   tar -C / -xJf .gpu/openmpi.tar.xz && source /opt/dlcaffe-openmpi/env.sh
# (dlcaffe itself links libmpi: ../shared/gpu/bundle.sh packs it with the tool.)
set -euo pipefail
[ $# -eq 1 ] || { sed -n 2,15p "$0"; exit 2; }
out=$(realpath -m "$1")
command -v orterun >/dev/null || { echo "bundle_openmpi: no OpenMPI here (apt-get install openmpi-bin)" >&2; exit 1; }
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
opt=$tmp/opt/dlcaffe-openmpi
mkdir -p "$opt/bin" "$opt/lib"
# The runtime's own folders, at their paths.
for path in /usr/lib/$arch/openmpi /usr/lib/$arch/pmix2 /usr/share/openmpi /usr/share/pmix /etc/openmpi; do
  [ -e "$path" ] || continue
  mkdir -p "$tmp$(dirname "$path")"
  cp -a "$path" "$tmp$path"
done
cp -L "$(command -v orterun)" "$opt/bin/mpirun"
cp -L "$(command -v orted)" "$opt/bin/orted"
# Every library that mpirun, orted and the plugins need, except those every
# Linux host has (the same list as ../shared/gpu/bundle.sh).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libgcc_s\.|libstdc\+\+\.)'
{ echo "$opt/bin/mpirun"; echo "$opt/bin/orted"; find "$tmp/usr/lib" -name '*.so*' -type f; } |
  while read -r object; do
    ldd "$object" 2>/dev/null | awk '/=> \//{print $1" "$3}'
  done | sort -u | while read -r name path; do
    [[ $name =~ $skip ]] || cp -Ln "$path" "$opt/lib/" 2>/dev/null || true
  done
cat > "$opt/env.sh" <<'ENV'
# Sourced on the GPU host after unpacking the archive at /.
export PATH=/opt/dlcaffe-openmpi/bin${PATH:+:$PATH}
export LD_LIBRARY_PATH=/opt/dlcaffe-openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One host, shared memory between the processes; plugins for networks the
# host lacks stay quiet.
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mca_base_component_show_load_errors=0
ENV
tar -C "$tmp" -cJf "$out" .
ls -l "$out" | awk '{print "bundle_openmpi: "$5" bytes in '"$out"'"}'
