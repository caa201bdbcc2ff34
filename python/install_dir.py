"""Prints where packages for this interpreter go under an install prefix,
relative to it: the directory the interpreter searches for that prefix.

Debian's python3 searches /usr/lib/python3/dist-packages (the prefix /usr)
and /usr/local/lib/python3.X/dist-packages (any other prefix, /usr/local
the default); other interpreters use sysconfig's site-packages.
"""
import os
import sys
import sysconfig

prefix = os.path.abspath(sys.argv[1])
debian = any(p.endswith("dist-packages") for p in sys.path)
version = "python%d.%d" % sys.version_info[:2]
if debian:
    print("lib/python3/dist-packages" if prefix == "/usr" else "lib/%s/dist-packages" % version)
else:
    path = sysconfig.get_path("platlib", "posix_prefix", {"base": prefix, "platbase": prefix})
    print(os.path.relpath(path, prefix))
