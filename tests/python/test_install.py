"""The package as users install it: `cmake --install` into a prefix, and
`pip install ./python`; each imported by a fresh interpreter that must load
the installed extension and library, not the build tree's."""
import glob
import os
import subprocess
import sys

from conftest import BUILD_DIR, SOURCE_DIR

CHECK = r"""
import sys, caffe, numpy as np
assert caffe.__file__.startswith(sys.argv[1]), caffe.__file__
import caffe.io, caffe.proto.caffe_pb2
maps = open("/proc/self/maps").read()
libraries = {line.split()[-1] for line in maps.splitlines() if "libdlcaffe.so" in line}
assert libraries and all(l.startswith(sys.argv[1]) for l in libraries), libraries
net = caffe.Net(sys.argv[2], caffe.TEST)
net.blobs["x"].data[...] = 1
print("ok", net.forward()["loss"].shape)
"""

NET = """
layer { name: "x" type: "Input" top: "x" top: "t" input_param { shape { dim: 2 dim: 3 } shape { dim: 2 dim: 3 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "x" bottom: "t" top: "loss" }
"""


def run_check(package_dir, prefix, tmp_path):
    net = tmp_path / "net.prototxt"
    net.write_text(NET)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = package_dir
    result = subprocess.run([sys.executable, "-c", CHECK, str(prefix), str(net)], env=env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True)
    assert result.returncode == 0, result.stdout
    assert "ok (1,)" in result.stdout or "ok ()" in result.stdout, result.stdout


def test_cmake_install_puts_the_package_where_python_finds_it(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.check_call(["cmake", "--install", BUILD_DIR, "--prefix", str(prefix)],
                          stdout=subprocess.DEVNULL)
    found = glob.glob(str(prefix / "lib" / "python3*" / "dist-packages" / "caffe")) + \
        glob.glob(str(prefix / "lib" / "python3*" / "site-packages" / "caffe"))
    assert len(found) == 1, os.listdir(str(prefix / "lib"))
    run_check(os.path.dirname(found[0]), prefix, tmp_path)


def test_pip_install_of_the_python_folder(tmp_path):
    target = tmp_path / "site"
    env = dict(os.environ, DLCAFFE_BUILD_DIR=BUILD_DIR)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
         "--no-cache-dir", "--target", str(target), os.path.join(SOURCE_DIR, "python")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert result.returncode == 0, result.stdout
    assert glob.glob(str(target / "dlcaffe" / "libdlcaffe.so*"))
    run_check(str(target), target, tmp_path)
