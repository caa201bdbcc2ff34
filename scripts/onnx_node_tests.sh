#!/usr/bin/env bash
# ONNX's backend node tests as the onnx wheel on PyPI carries them (onnx
# 1.17.0: 1,288 single-op models, opsets up to 22; Debian's libonnx-testdata
# stops at opset 17), run by build/tools/onnx_test_runner.
#
#   scripts/onnx_node_tests.sh [--fetch | --offline] [runner flags...]
#
# The wheel is downloaded once (pip download, no install, its checksum
# checked) and only its onnx/backend/test/data/node is unpacked, into
# ${XDG_CACHE_HOME:-~/.cache}/dlcaffe/onnx-1.17.0 (DLCAFFE_ONNX_NODE_TESTS
# overrides that folder). --fetch only fetches (scripts/install_deps.sh runs
# it); --offline never fetches and fails when the data are missing (the
# ctest entry runs it so). The build is ${DLCAFFE_BUILD_DIR:-build}.
#
# Prints the runner's lines, its "N passed, N failed, N skipped", then a
# table per opset: every model, the models whose operators the importer
# supports (not skipped for an unsupported operator or domain) and how those
# did, and for the opsets past Debian's data (18 and up) the skip reasons.
# Exits non-zero when a test failed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DLCAFFE_BUILD_DIR:-$root/build}"
version=1.17.0
# Every onnx wheel holds the same test data: this one is pinned by name and
# checksum whatever the machine (pip fetches it for the tags given).
wheel="onnx-$version-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
sha256=4a183c6178be001bf398260e5ac2c927dc43e7746e8638d6c05c20e321f8c949
cache="${DLCAFFE_ONNX_NODE_TESTS:-${XDG_CACHE_HOME:-$HOME/.cache}/dlcaffe/onnx-$version}"
data="$cache/onnx/backend/test/data/node"

mode=run
case "${1:-}" in
  --fetch) mode=fetch; shift ;;
  --offline) mode=offline; shift ;;
esac

python=python3
if ! python3 -m pip --version >/dev/null 2>&1 && [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; fi

fetch() {
  [ -f "$cache/complete" ] && return 0
  echo "onnx_node_tests: fetching the onnx $version wheel's node tests into $cache"
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/onnx_node_tests.XXXXXX")"
  trap 'rm -rf "$tmp"' RETURN
  "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
    --platform manylinux2014_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
    "onnx==$version"
  [ -f "$tmp/$wheel" ] || { echo "onnx_node_tests: pip did not fetch $wheel" >&2; return 1; }
  echo "$sha256  $tmp/$wheel" | sha256sum --check --quiet
  # A wheel is a zip: unpack the node tests only, then move them in whole.
  "$python" - "$tmp/$wheel" "$tmp/unpacked" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("onnx/backend/test/data/node/")])
EOF
  mkdir -p "$cache"
  rm -rf "$cache/onnx"
  mv "$tmp/unpacked/onnx" "$cache/onnx"
  touch "$cache/complete"
}

if [ "$mode" = fetch ]; then
  fetch
  exit 0
fi
if [ "$mode" = offline ]; then
  if [ ! -f "$cache/complete" ]; then
    echo "onnx_node_tests: no node tests in $cache; scripts/install_deps.sh (or" \
         "scripts/onnx_node_tests.sh --fetch) fetches them" >&2
    exit 2
  fi
else
  fetch
fi

runner="$build/tools/onnx_test_runner"
[ -x "$runner" ] || { echo "onnx_test_runner: $runner is not built (DLCAFFE_BUILD_DIR=$build)" >&2; exit 2; }

log="$(mktemp "${TMPDIR:-/tmp}/onnx_node_tests.XXXXXX")"
trap 'rm -f "$log"' EXIT
start=$(date +%s)
status=0
"$runner" "$@" "$data" | tee "$log" || status=$?
echo "onnx_node_tests: the runner took $(( $(date +%s) - start )) s"

# The table: each model's default-domain opset, read from model.onnx
# (protobuf fields, no onnx package needed).
"$python" - "$data" "$log" <<'EOF'
import collections, os, re, sys

def varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1
        r |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return r, i

def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        wire = key & 7
        if wire == 0:
            v, i = varint(b, i)
        elif wire == 1:
            v = b[i:i + 8]; i += 8
        elif wire == 5:
            v = b[i:i + 4]; i += 4
        elif wire == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        else:
            raise ValueError("wire type %d" % wire)
        yield key >> 3, v

def opset(path):
    with open(path, "rb") as f:
        model = f.read()
    version = None
    for number, value in fields(model):
        if number == 8:  # ModelProto.opset_import: domain 1, version 2
            entry = dict(fields(value))
            if entry.get(1, b"").decode() in ("", "ai.onnx"):
                version = entry.get(2, 1)
    return version

data, log = sys.argv[1], sys.argv[2]
outcome = {}
for line in open(log, errors="replace"):
    m = re.match(r"(PASS|FAIL|SKIP) (\S+?)(?::| \(|$)(.*)", line.rstrip("\n"))
    if m:
        outcome[m.group(2)] = (m.group(1), m.group(3).strip())

def unsupported_op(reason):
    return ("is not supported by the importer" in reason and (
        "operator '" in reason or "operators of domain" in reason)) or (
        "imports no version of the default ONNX opset" in reason)

def short(reason):
    # The reason without the set, file and node names, so that like ones group.
    reason = re.sub(r"^test_data_set_\d+: ", "", reason)
    reason = re.sub(r"^\S*model\.onnx: ", "", reason)
    reason = re.sub(r"^node '[^']*' \(([^)]*)\): ", r"\1: ", reason)
    reason = re.sub(r"graph input '[^']*'", "graph input", reason)
    reason = re.sub(r"output '[^']*'", "output", reason)
    reason = re.sub(r"input (\d+) \('[^']*'\)", r"input \1", reason)
    return reason

rows = collections.defaultdict(collections.Counter)
reasons = collections.defaultdict(collections.Counter)
for name in sorted(outcome):
    kind, reason = outcome[name]
    v = opset(os.path.join(data, name, "model.onnx"))
    row = rows[v if v is not None else 0]
    row["models"] += 1
    if kind == "SKIP" and unsupported_op(reason):
        continue
    row["supported"] += 1
    row[kind] += 1
    if kind == "SKIP":
        reasons[v][short(reason)] += 1

print()
print("Per opset: all models; those whose operators the importer supports, and how they did")
print("%-7s %7s %10s %7s %7s %7s" % ("opset", "models", "supported", "pass", "fail", "skip"))
total = collections.Counter()
for v in sorted(rows):
    r = rows[v]
    total.update(r)
    print("%-7s %7d %10d %7d %7d %7d" % (v or "none", r["models"], r["supported"], r["PASS"],
                                         r["FAIL"], r["SKIP"]))
print("%-7s %7d %10d %7d %7d %7d" % ("all", total["models"], total["supported"], total["PASS"],
                                     total["FAIL"], total["SKIP"]))
for v in sorted(x for x in reasons if x and x >= 18):
    print()
    print("Opset %d, skipped models of supported operators, by reason:" % v)
    for reason, n in reasons[v].most_common():
        print("  %3d  %s" % (n, reason[:160]))
EOF
exit "$status"
