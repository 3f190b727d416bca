"""memscope's PEP 517 build backend, for its source distribution.

pip (or any PEP 517 front end) calls build_wheel in the unpacked sdist;
it builds the wheel of the machine it runs on with build_wheels.py: the Go
binary from the sdist's sources and vendored modules (the go command is
$GO, else go on PATH), inside the Python package. The version is the
sdist's own, from PKG-INFO. Standard library only, no network.
"""

import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import build_wheels  # noqa: E402


def _version():
    path = os.path.join(os.path.dirname(HERE), "PKG-INFO")
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return build_wheels.default_version()


def _host_platform(go):
    """The host's wheel: on Linux the musllinux one where the C library is
    not glibc (the binary is the same static one)."""
    plats = build_wheels.host_platforms(go)
    if len(plats) > 1:
        musl = platform.libc_ver()[0] != "glibc"
        plats = [p for p in plats if ("musllinux" in p[2]) == musl] or plats[:1]
    return plats[:1]


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The wheel's METADATA and entry points, without building the binary."""
    version = _version()
    dist_info = "%s-%s.dist-info" % (build_wheels.NAME, version)
    d = os.path.join(metadata_directory, dist_info)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(build_wheels.metadata(version))
    with open(os.path.join(d, "entry_points.txt"), "w", encoding="utf-8") as f:
        f.write(build_wheels.ENTRY_POINTS)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    try:
        go = build_wheels.go_command()
        paths = build_wheels.build(wheel_directory, _version(), _host_platform(go))
    except build_wheels.BuildError as e:
        raise RuntimeError("memscope: %s" % e) from None
    return os.path.basename(paths[0])


def build_sdist(sdist_directory, config_settings=None):
    try:
        path = build_wheels.write_sdist(sdist_directory, _version())
    except build_wheels.BuildError as e:
        raise RuntimeError("memscope: %s" % e) from None
    return os.path.basename(path)
