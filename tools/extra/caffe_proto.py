"""caffe_pb2 for the scripts: generated from the repository's proto/caffe.proto
with protoc at first use and kept in a cache directory keyed by the schema's
and protoc's versions, so a fresh clone needs no build step.

DLCAFFE_CAFFE_PROTO names another caffe.proto (e.g. an installed copy).
"""
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile

from user_error import UserError

_DEFAULT_PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto",
                              "caffe.proto")


def _cache_roots():
    """Where to keep generated modules, the user's cache first."""
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [os.path.join(xdg, "dlcaffe", "python"),
            os.path.join(tempfile.gettempdir(), "dlcaffe-python-%d" % os.getuid())]


def _generate(proto, protoc, target):
    """Runs protoc into a fresh folder beside `target`, renamed into place."""
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(dir=parent)
    try:
        shutil.copy(proto, os.path.join(work, "caffe.proto"))
        result = subprocess.run([protoc, "--proto_path=" + work, "--python_out=" + work,
                                 os.path.join(work, "caffe.proto")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True)
        if result.returncode != 0:
            raise UserError("protoc failed on %s:\n%s" % (proto, result.stdout.strip()))
        try:
            os.rename(work, target)  # atomic: a concurrent run finds all or nothing
        except OSError:
            if not os.path.isdir(target):  # not a concurrent run's copy: a real failure
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load_caffe_pb2():
    """The caffe_pb2 module of proto/caffe.proto (a UserError if it cannot be made)."""
    proto = os.environ.get("DLCAFFE_CAFFE_PROTO") or os.path.normpath(_DEFAULT_PROTO)
    try:
        with open(proto, "rb") as f:
            schema = f.read()
    except OSError as error:
        raise UserError("cannot read the schema %s: %s" % (proto, error.strerror))
    protoc = shutil.which("protoc")
    if not protoc:
        raise UserError("protoc not found: install protobuf-compiler (it turns %s into "
                        "Python)" % proto)
    version = subprocess.run([protoc, "--version"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip()
    key = hashlib.sha256(schema + version.encode()).hexdigest()[:16]
    errors = []
    for root in _cache_roots():
        target = os.path.join(root, key)
        module_path = os.path.join(target, "caffe_pb2.py")
        try:
            if not os.path.isfile(module_path):
                _generate(proto, protoc, target)
        except OSError as error:
            errors.append("%s: %s" % (root, error.strerror))
            continue
        spec = importlib.util.spec_from_file_location("caffe_pb2", module_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    raise UserError("cannot write the generated caffe_pb2 (%s)" % "; ".join(errors))
