"""python/build_backend.py - the PEP 517 build backend of `pip install .` (pyproject.toml).

It needs nothing but the standard library, so pip's isolated build
environment installs no build requirement and `pip install .` works
offline, into any Python >= 3.9 environment (a venv included). The wheel is
made by CMake: the module target alone (`txlc_python`, which builds the txlc
executable it copies for compile(emit="exe")) and the man page and
completions (`txlc_share_files`), in build-pip-<interpreter>/ under the
source (kept, so that a second install rebuilds only what changed; beside
build/ at the same depth, so that ccache finds the objects of a build/).

The wheel holds the module and its stub, txlc in the environment's bin/
(the module finds it there, python/txlc_executable.h), and the man page and
completions under the environment's share/. Its dependency is numpy: in a
venv made with --system-site-packages, Debian's python3-numpy satisfies it.

Environment: TXLC_CMAKE_ARGS (more configure arguments, shell-split),
CMAKE_BUILD_PARALLEL_LEVEL (build jobs; default: the CPUs), TXLC_BUILD_DIR
(a folder CMake configured already, with TXLC_PYTHON on and the same Python:
built there as it is, not configured again; the install test uses its own
build). ccache is used when it is on PATH.
"""

import base64
import glob
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "txlc"


def _version():
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(txlc VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: expected project(txlc VERSION x.y.z)")
    return m.group(1)


def _tag():
    """The wheel's tag for this interpreter: cp311-cp311-linux_x86_64."""
    impl = "cp%d%d" % sys.version_info[:2]
    soabi = sysconfig.get_config_var("SOABI") or ""
    m = re.match(r"cpython-(\d+)", soabi)
    abi = "cp" + m.group(1) if m else impl
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return "%s-%s-%s" % (impl, abi, platform)


def _build(tag):
    """Configures and builds the module and the share files; returns the build folder."""
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    targets = ["--target", "txlc_python", "txlc_share_files", "-j", jobs]
    if os.environ.get("TXLC_BUILD_DIR"):
        build = os.path.abspath(os.environ["TXLC_BUILD_DIR"])
        if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
            raise RuntimeError("TXLC_BUILD_DIR=%s: expected a configured CMake build folder (no CMakeCache.txt)" % build)
        subprocess.run(["cmake", "--build", build] + targets, check=True, stdout=sys.stderr)
        return build
    build = os.path.join(SOURCE, "build-pip-" + tag.split("-")[0])
    site = "lib/python%d.%d/site-packages" % sys.version_info[:2]  # where pip puts it under the env
    args = [
        "cmake", "-S", SOURCE, "-B", build,
        "-DCMAKE_BUILD_TYPE=Release",
        "-DTXLC_PYTHON=ON",
        "-DTXL_BUILD_TESTS=OFF",
        "-DPython_EXECUTABLE=" + sys.executable,
        "-DTXLC_INSTALL_PYTHONDIR=" + site,
    ]
    if shutil.which("ninja") and not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):
        args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
    args += shlex.split(os.environ.get("TXLC_CMAKE_ARGS", ""))
    subprocess.run(args, check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", build] + targets, check=True, stdout=sys.stderr)
    return build


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _metadata(version):
    return (
        "Metadata-Version: 2.1\n"
        "Name: %s\n"
        "Version: %s\n"
        "Summary: a compiler for Transformer-XL language models on oneDNN\n"
        "Requires-Python: >=3.9\n"
        "Requires-Dist: numpy\n" % (NAME, version)
    )


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    tag = _tag()
    build = _build(tag)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = glob.glob(os.path.join(build, "python", "txlc" + suffix))
    if len(modules) != 1:
        found = ", ".join(os.path.basename(p) for p in glob.glob(os.path.join(build, "python", "txlc.*.so")))
        raise RuntimeError("%s/python: expected txlc%s (the module for %s), found %s"
                           % (build, suffix, sys.executable, found or "no module"))
    data = "%s-%s.data" % (NAME, version)
    dist_info = "%s-%s.dist-info" % (NAME, version)
    # (path in the wheel, file, executable)
    files = [
        (os.path.basename(modules[0]), modules[0], False),
        ("txlc.pyi", os.path.join(build, "python", "txlc.pyi"), False),
        (data + "/scripts/txlc", os.path.join(build, "tools", "txlc"), True),
        (data + "/data/share/man/man1/txlc.1", os.path.join(build, "share/man/man1/txlc.1"), False),
        (data + "/data/share/bash-completion/completions/txlc",
         os.path.join(build, "share/bash-completion/completions/txlc"), False),
        (data + "/data/share/zsh/site-functions/_txlc", os.path.join(build, "share/zsh/site-functions/_txlc"), False),
    ]
    wheel_name = "%s-%s-%s.whl" % (NAME, version, tag)
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as whl:

        def add(path, content, executable=False):
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if executable else 0o100644) << 16  # S_IFREG: pip keeps the x bit only then
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, content)
            record.append(_record_line(path, content))

        for path, source, executable in files:
            with open(source, "rb") as f:
                add(path, f.read(), executable)
        add(dist_info + "/METADATA", _metadata(version).encode())
        add(dist_info + "/WHEEL",
            ("Wheel-Version: 1.0\nGenerator: txlc build_backend\nRoot-Is-Purelib: false\nTag: %s\n" % tag).encode())
        record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        whl.writestr(info, "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """The tracked source files (git ls-files), or the tree without build folders outside git."""
    version = _version()
    try:
        listed = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z"], check=True, capture_output=True).stdout
        paths = [p for p in listed.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for root, dirs, names in os.walk(SOURCE):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".git", "out"))]
            paths += [os.path.relpath(os.path.join(root, n), SOURCE) for n in names]
    base = "%s-%s" % (NAME, version)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for p in sorted(paths):
            full = os.path.join(SOURCE, p)
            if os.path.isfile(full):
                tar.add(full, arcname=base + "/" + p, recursive=False)
        meta = _metadata(version).encode()
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(meta)
        tar.addfile(info, io.BytesIO(meta))
    return name
