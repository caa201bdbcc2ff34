"""pip install ./python: the dlcaffe and caffe packages with the compiled
extension and libdlcaffe beside it.

The project's CMake builds everything (into python/build-pip, or the build
folder DLCAFFE_BUILD_DIR names, e.g. one `bash scripts/build.sh` made), then
`cmake --install` stages the packages and the library, which go into the
wheel: the extension finds libdlcaffe in its own folder ($ORIGIN).
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)


def run(command):
    print("setup.py:", " ".join(command), flush=True)
    subprocess.check_call(command)


class BuildWithCMake(build_py):
    """Builds the project with CMake and copies the staged packages."""

    def run(self):
        build_dir = os.environ.get("DLCAFFE_BUILD_DIR") or os.path.join(HERE, "build-pip")
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            run(["cmake", "-S", PROJECT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DDLCAFFE_BUILD_TESTS=OFF", "-DPython3_EXECUTABLE=" + sys.executable])
        # Everything: `cmake --install` installs the tools and library too.
        run(["cmake", "--build", build_dir, "-j", str(os.cpu_count() or 2)])
        stage = tempfile.mkdtemp(prefix="dlcaffe-pip-")
        try:
            run(["cmake", "--install", build_dir, "--prefix", stage])
            extension = glob.glob(os.path.join(stage, "**", "dlcaffe", "_dlcaffe*.so"),
                                  recursive=True)[0]
            packages = os.path.dirname(os.path.dirname(extension))
            for package in ("dlcaffe", "caffe"):
                target = os.path.join(self.build_lib, package)
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(os.path.join(packages, package), target, symlinks=True)
            for library in glob.glob(os.path.join(stage, "lib*", "libdlcaffe.so*")):
                shutil.copy2(library, os.path.join(self.build_lib, "dlcaffe"),
                             follow_symlinks=False)
        finally:
            shutil.rmtree(stage)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a platform wheel: the extension is compiled


setup(
    name="dlcaffe",
    version=open(os.path.join(PROJECT, "CMakeLists.txt")).read().split(
        "project(dlcaffe VERSION ", 1)[1].split()[0],
    description="Caffe-style deep learning on OpenCL, with pycaffe's API (import caffe)",
    packages=["dlcaffe", "caffe"],
    package_dir={"": "."},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    python_requires=">=3.9",
    install_requires=["numpy", "protobuf"],
)
