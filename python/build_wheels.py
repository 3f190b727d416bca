"""Build memscope's platform wheels: the Go binary cross-compiled for each
platform, inside the Python package, zipped as a wheel (PEP 427, 491).

    python3 python/build_wheels.py OUTDIR [VERSION]
    python3 python/build_wheels.py --host OUTDIR [VERSION]
    python3 python/build_wheels.py --sdist OUTDIR [VERSION]
    python3 python/build_wheels.py --print-version

Offline and standard library only: the wheel is a zip with the package,
memscope/bin/memscope[.exe] (mode 0755 in the zip), and a dist-info folder
with METADATA, WHEEL, entry_points.txt, the licences (memscope's LICENSE
and NOTICE, and those of the Go modules and the Go standard library the
binary is built from, under licenses/) and RECORD (sha256 digests, sizes).
The Go binary is static (CGO_ENABLED=0), built with -trimpath and
-ldflags "-s -w -X main.buildVersion=VERSION", once per GOOS/GOARCH: the
manylinux and musllinux wheels of an architecture hold the same binary.
--host builds only the wheels of the go command's own GOOS/GOARCH.
--sdist writes the source distribution instead, memscope-VERSION.tar.gz:
the Go sources the binary is built from (no tests, no fixtures), its Go
modules vendored (go mod vendor), the Python package and this file, and
an in-tree PEP 517 backend (python/memscope_backend.py), so that
`pip install memscope-VERSION.tar.gz` on a machine with Go and no network
builds the host's wheel with this file.
VERSION defaults to the one git describe gives (see
version_from_describe); it must be a PEP 440 version. The go command is
$GO, else go on PATH; GOCACHE and the other Go settings come from the
environment.
"""

import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

NAME = "memscope"
SUMMARY = "Where did the GPU memory go: PyTorch CUDA allocator snapshots explained"
REQUIRES_PYTHON = ">=3.8"
LICENSE = "Apache-2.0"
AUTHOR = "memscope developers"
HOME_PAGE = "https://github.com/memscope/memscope"
CLASSIFIERS = [
    "License :: OSI Approved :: Apache Software License",
    "Programming Language :: Python :: 3",
    "Environment :: GPU :: NVIDIA CUDA",
    "Topic :: Software Development :: Debuggers",
]
# The licence files of the repository that every wheel carries in its
# dist-info folder (the binary embeds ECharts: NOTICE says so, and
# LICENSE-d3 is the licence of the d3 code inside it).
LICENSE_FILES = [("LICENSE", "LICENSE"), ("NOTICE", "NOTICE"),
                 ("report/echarts/LICENSE-d3", "licenses/echarts/LICENSE-d3")]
GO_PACKAGE = "./cmd/memscope"
VERSION_VAR = "main.buildVersion"

# (GOOS, GOARCH, wheel platform tag). A compressed tag set (a.b) names
# every tag the binary satisfies; WHEEL lists each. The Linux binary is
# static, so it runs on musl (Alpine) as on glibc: musllinux_1_1 is the
# oldest musl tag pip knows.
PLATFORMS = [
    ("linux", "amd64", "manylinux_2_17_x86_64.manylinux2014_x86_64"),
    ("linux", "amd64", "musllinux_1_1_x86_64"),
    ("linux", "arm64", "manylinux_2_17_aarch64.manylinux2014_aarch64"),
    ("linux", "arm64", "musllinux_1_1_aarch64"),
    ("darwin", "amd64", "macosx_10_12_x86_64"),
    ("darwin", "arm64", "macosx_11_0_arm64"),
    ("windows", "amd64", "win_amd64"),
]

# PEP 440's canonical public version with an optional local label
# (packaging.version's VERSION_PATTERN, normalised forms only).
PEP440 = re.compile(
    r"^([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*"
    r"((a|b|rc)(0|[1-9][0-9]*))?(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?"
    r"(\+[a-z0-9]+(\.[a-z0-9]+)*)?$")

# Zip entries get this time (1980-01-02, inside every zip reader's range)
# unless SOURCE_DATE_EPOCH says otherwise, so that a build is reproducible.
DEFAULT_DATE = (1980, 1, 2, 0, 0, 0)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class BuildError(Exception):
    pass


def valid_version(v):
    return PEP440.match(v) is not None


def version_from_describe(describe, count):
    """The PEP 440 version of a checkout: describe is the output of
    `git describe --tags --long --match v[0-9]*` ("" when there is no
    tag), count the number of commits (`git rev-list --count HEAD`).

    v1.2.3-0-gSHA → 1.2.3; v1.2.3-5-gSHA → 1.2.4.dev5 (the next patch
    release, as setuptools-scm guesses); no tag → 0.0.0.devCOUNT."""
    m = re.match(r"^v(\d+(?:\.\d+)*)-(\d+)-g[0-9a-f]+$", describe.strip())
    if not m:
        return "0.0.0.dev%d" % int(count)
    release, distance = m.group(1), int(m.group(2))
    parts = [str(int(p)) for p in release.split(".")]
    if distance == 0:
        return ".".join(parts)
    parts[-1] = str(int(parts[-1]) + 1)
    return "%s.dev%d" % (".".join(parts), distance)


def _git(*args):
    try:
        r = subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def default_version():
    count = _git("rev-list", "--count", "HEAD") or "0"
    describe = _git("describe", "--tags", "--long", "--match", "v[0-9]*") or ""
    return version_from_describe(describe, count)


def record_line(path, data):
    """RECORD's row for a file: path, sha256=<urlsafe base64, no padding>, size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return [path, "sha256=" + digest, str(len(data))]


def metadata(version):
    readme = (
        "memscope reads PyTorch CUDA caching-allocator snapshots and says where the GPU memory "
        "went: the peak, the sites and categories that hold it, leaks, fragmentation, OOMs, and "
        "what to change so the job fits.\n\n"
        "This wheel holds the memscope binary (the `memscope` command and `python -m memscope`) "
        "and a small module: `memscope.record(path)` around a training loop writes a snapshot; "
        "`memscope.analyze(path)` returns typed results, with `scalars()` for W&B or MLflow and "
        "the HTML report in Jupyter.\n")
    head = [("Metadata-Version", "2.1"), ("Name", NAME), ("Version", version), ("Summary", SUMMARY),
            ("Home-page", HOME_PAGE), ("Author", AUTHOR), ("License", LICENSE)]
    head += [("Classifier", c) for c in CLASSIFIERS]
    head += [("Project-URL", "Source, " + HOME_PAGE), ("Project-URL", "Issues, " + HOME_PAGE + "/issues"),
             ("Requires-Python", REQUIRES_PYTHON), ("Description-Content-Type", "text/markdown")]
    return "".join("%s: %s\n" % kv for kv in head) + "\n" + readme


def wheel_file(platform_tag):
    lines = ["Wheel-Version: 1.0", "Generator: memscope build_wheels.py", "Root-Is-Purelib: false"]
    lines += ["Tag: py3-none-%s" % tag for tag in platform_tag.split(".")]
    return "\n".join(lines) + "\n"


ENTRY_POINTS = "[console_scripts]\nmemscope = memscope._binary:main\n"


def package_files(version):
    """The Python package's files, (path in the wheel, bytes), sorted;
    _version.py is written with the wheel's version."""
    files = []
    pkg = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(pkg)):
        if not name.endswith(".py") or name == "_version.py":
            continue
        with open(os.path.join(pkg, name), "rb") as f:
            files.append(("%s/%s" % (NAME, name), f.read()))
    files.append(("%s/_version.py" % NAME, ('__version__ = "%s"\n' % version).encode()))
    # The capture harness memscope capture runs (the binary embeds the same
    # file), so that a job can run it itself: torchrun ... -m memscope.harness run --out DIR -- train.py
    with open(os.path.join(os.path.dirname(HERE), "capture", "harness.py"), "rb") as f:
        files.append(("%s/harness.py" % NAME, f.read()))
    return sorted(files)


def _zip_date():
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if not epoch:
        return DEFAULT_DATE
    t = time.gmtime(max(int(epoch), 315619200))  # no earlier than 1980-01-02
    return t[:6]


def repo_licenses():
    """The repository's licence files every wheel carries, (path in the
    dist-info folder, bytes)."""
    out = []
    for src, dst in LICENSE_FILES:
        with open(os.path.join(REPO, src), "rb") as f:
            out.append((dst, f.read()))
    return out


def go_licenses(go):
    """The licences of what the binary is built from besides this
    repository, (path in the dist-info folder, bytes): each Go module's
    LICENSE as licenses/<module path>/LICENSE, and the Go standard
    library's as licenses/go/LICENSE."""
    r = subprocess.run([go, "list", "-deps", "-f", "{{with .Module}}{{.Path}}\t{{.Dir}}{{end}}", GO_PACKAGE],
                       cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError("go list -deps %s: exit status %d\n%s" % (GO_PACKAGE, r.returncode, r.stderr.strip()))
    dirs = {}
    for line in r.stdout.splitlines():
        path, _, d = line.partition("\t")
        if path and path != "github.com/memscope/memscope":
            # Built from vendor/ (an sdist), a module has no directory of
            # its own: go mod vendor copied its licence there.
            dirs[path] = d or os.path.join(REPO, "vendor", path)
    r = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise BuildError("go env GOROOT: exit status %d\n%s" % (r.returncode, r.stderr.strip()))
    dirs["go"] = r.stdout.strip()
    out = []
    for path, d in sorted(dirs.items()):
        for name in ("LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    out.append(("licenses/%s/LICENSE" % path, f.read()))
                break
        else:
            raise BuildError("%s (%s) has no LICENSE file: the wheel must carry the licence of what it holds" % (path, d))
    return out


def write_wheel(outdir, version, platform_tag, binary, binary_name, licenses=()):
    """Write one wheel for platform_tag holding the binary (bytes) as
    memscope/bin/<binary_name> and the licence files (path in the
    dist-info folder, bytes) besides the repository's; returns its path."""
    dist_info = "%s-%s.dist-info" % (NAME, version)
    entries = [(path, data, 0o644) for path, data in package_files(version)]
    entries.append(("%s/bin/%s" % (NAME, binary_name), binary, 0o755))
    entries += [
        ("%s/METADATA" % dist_info, metadata(version).encode(), 0o644),
        ("%s/WHEEL" % dist_info, wheel_file(platform_tag).encode(), 0o644),
        ("%s/entry_points.txt" % dist_info, ENTRY_POINTS.encode(), 0o644),
    ]
    entries += [("%s/%s" % (dist_info, p), data, 0o644) for p, data in repo_licenses() + list(licenses)]
    record = io.StringIO()
    w = csv.writer(record, lineterminator="\n")
    for path, data, _ in entries:
        w.writerow(record_line(path, data))
    w.writerow(["%s/RECORD" % dist_info, "", ""])
    entries.append(("%s/RECORD" % dist_info, record.getvalue().encode(), 0o644))

    name = "%s-%s-py3-none-%s.whl" % (NAME, version.replace("-", "_"), platform_tag)
    path = os.path.join(outdir, name)
    tmp = path + ".tmp"
    date = _zip_date()
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for p, data, mode in entries:
            info = zipfile.ZipInfo(p, date_time=date)
            info.external_attr = (0o100000 | mode) << 16  # a regular file with its permission bits
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that readers honour the mode
            z.writestr(info, data)
    os.replace(tmp, path)
    return path


# What an sdist holds besides the Go packages the binary is built from.
SDIST_FILES = ["go.mod", "go.sum", "LICENSE", "NOTICE", "README.md", "report/echarts/LICENSE-d3",
               "python/build_wheels.py", "python/build.sh", "python/memscope_backend.py", "python/README.md"]

PYPROJECT = """# The source distribution's build: python/memscope_backend.py builds the
# host's wheel with python/build_wheels.py, which needs the go command
# (go.mod names the version; $GO or go on PATH). The Go modules are
# vendored: no network is needed.
[build-system]
requires = []
build-backend = "memscope_backend"
backend-path = ["python"]
"""


def sdist_sources(go):
    """The repository's files the binary is built from, paths relative to
    the repository: every non-test .go, assembly and embedded file of the
    module's packages that ./cmd/memscope imports (every GOOS's files: go
    list names the others' as ignored), default.pgo beside main."""
    fmt = "{{if .Module}}{{if eq .Module.Path \"github.com/memscope/memscope\"}}" \
          "{{.Dir}}\t{{join .GoFiles \" \"}} {{join .IgnoredGoFiles \" \"}} {{join .SFiles \" \"}} {{join .HFiles \" \"}} " \
          "{{join .IgnoredOtherFiles \" \"}} {{join .EmbedFiles \" \"}}\n{{end}}{{end}}"
    r = subprocess.run([go, "list", "-deps", "-f", fmt, GO_PACKAGE], cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError("go list -deps %s: exit status %d\n%s" % (GO_PACKAGE, r.returncode, r.stderr.strip()))
    out = set()
    for line in r.stdout.splitlines():
        d, _, names = line.partition("\t")
        rel = os.path.relpath(d, REPO)
        for n in names.split():
            if not n.endswith("_test.go"):
                out.add(os.path.normpath(os.path.join(rel, n)))
        if os.path.isfile(os.path.join(d, "default.pgo")):
            out.add(os.path.normpath(os.path.join(rel, "default.pgo")))
    return sorted(out)


def write_sdist(outdir, version):
    """Write memscope-VERSION.tar.gz into outdir; returns its path. From a
    repository checkout it collects the sources (sdist_sources, SDIST_FILES,
    the Python package, vendor/ from go mod vendor); from an unpacked sdist
    (PKG-INFO at its root) it packs that tree again."""
    if not valid_version(version):
        raise BuildError("version %r is not a normalised PEP 440 version (e.g. 1.2.3, 0.1.0.dev4, 1.0rc1)" % version)
    os.makedirs(outdir, exist_ok=True)
    base = "%s-%s" % (NAME, version)
    files = []  # (path in the sdist, path on disk)
    with tempfile.TemporaryDirectory(prefix="memscope-sdist-") as tmp:
        if os.path.isfile(os.path.join(REPO, "PKG-INFO")):
            for d, dirs, names in os.walk(REPO):
                dirs[:] = sorted(x for x in dirs if x not in ("__pycache__",))
                for n in sorted(names):
                    p = os.path.join(d, n)
                    rel = os.path.relpath(p, REPO)
                    if rel not in ("PKG-INFO", "pyproject.toml"):
                        files.append((rel, p))
        else:
            go = go_command()
            rels = set(sdist_sources(go)) | set(SDIST_FILES)
            pkg = os.path.join(HERE, NAME)
            rels |= {os.path.join("python", NAME, n) for n in os.listdir(pkg) if n.endswith(".py") and n != "_version.py"}
            files += [(rel, os.path.join(REPO, rel)) for rel in sorted(rels)]
            vendor = os.path.join(tmp, "vendor")
            r = subprocess.run([go, "mod", "vendor", "-o", vendor], cwd=REPO, capture_output=True, text=True)
            if r.returncode != 0:
                raise BuildError("go mod vendor: exit status %d\n%s" % (r.returncode, r.stderr.strip()))
            for d, dirs, names in os.walk(vendor):
                dirs.sort()
                for n in sorted(names):
                    p = os.path.join(d, n)
                    files.append((os.path.join("vendor", os.path.relpath(p, vendor)), p))
        generated = [("PKG-INFO", metadata(version).encode()), ("pyproject.toml", PYPROJECT.encode()),
                     (os.path.join("python", NAME, "_version.py"), ('__version__ = "%s"\n' % version).encode())]
        names = {rel for rel, _ in generated}
        path = os.path.join(outdir, base + ".tar.gz")
        tmpfile = path + ".tmp"
        mtime = time.mktime(_zip_date() + (0, 0, -1))
        with open(tmpfile, "wb") as raw:
            # A fixed mtime in the gzip header and the entries: reproducible.
            import gzip
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=int(mtime)) as gz:
                with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    def add(rel, data, mode):
                        info = tarfile.TarInfo("%s/%s" % (base, rel.replace(os.sep, "/")))
                        info.size, info.mode, info.mtime = len(data), mode, int(mtime)
                        info.uname = info.gname = ""
                        tar.addfile(info, io.BytesIO(data))
                    for rel, data in generated:
                        add(rel, data, 0o644)
                    for rel, p in sorted(files):
                        if rel in names:
                            continue
                        with open(p, "rb") as f:
                            data = f.read()
                        add(rel, data, 0o755 if os.access(p, os.X_OK) and rel.endswith(".sh") else 0o644)
        os.replace(tmpfile, path)
    return path


def go_command():
    go = os.environ.get("GO") or shutil.which("go")
    if not go:
        raise BuildError("no go command: install Go (go.mod names the version) or set $GO")
    return go


def build_binary(go, goos, goarch, version, out):
    env = dict(os.environ, CGO_ENABLED="0", GOOS=goos, GOARCH=goarch)
    if goarch == "amd64":
        env.setdefault("GOAMD64", "v1")
    # -buildvcs=false: the version is the -X one, and a tarball or a
    # checkout owned by another user builds too.
    cmd = [go, "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -X %s=%s" % (VERSION_VAR, version),
           "-o", out, GO_PACKAGE]
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError("GOOS=%s GOARCH=%s %s: exit status %d\n%s" % (
            goos, goarch, " ".join(cmd), r.returncode, r.stderr.strip()))


def host_platforms(go):
    """The PLATFORMS entries of the go command's own GOOS/GOARCH."""
    r = subprocess.run([go, "env", "GOOS", "GOARCH"], capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError("go env GOOS GOARCH: exit status %d\n%s" % (r.returncode, r.stderr.strip()))
    goos, goarch = r.stdout.split()
    out = [p for p in PLATFORMS if p[:2] == (goos, goarch)]
    if not out:
        raise BuildError("no wheel platform for %s/%s (build_wheels.py PLATFORMS: %s)" % (
            goos, goarch, ", ".join("%s/%s" % p[:2] for p in PLATFORMS)))
    return out


def build(outdir, version, platforms=PLATFORMS, log=sys.stderr):
    """Write the wheels of platforms into outdir; returns their paths. Each
    GOOS/GOARCH is built once, for all of its wheels."""
    if not valid_version(version):
        raise BuildError("version %r is not a normalised PEP 440 version (e.g. 1.2.3, 0.1.0.dev4, 1.0rc1)" % version)
    go = go_command()
    os.makedirs(outdir, exist_ok=True)
    licenses = go_licenses(go)
    written, binaries = [], {}
    with tempfile.TemporaryDirectory(prefix="memscope-build-") as tmp:
        for goos, goarch, tag in platforms:
            exe = "memscope.exe" if goos == "windows" else "memscope"
            start = time.monotonic()
            took = "the %s/%s build above" % (goos, goarch)
            if (goos, goarch) not in binaries:
                out = os.path.join(tmp, "%s-%s" % (goos, goarch), exe)
                build_binary(go, goos, goarch, version, out)
                with open(out, "rb") as f:
                    binaries[goos, goarch] = f.read()
                took = "go build %.1f s" % (time.monotonic() - start)
            path = write_wheel(outdir, version, tag, binaries[goos, goarch], exe, licenses)
            written.append(path)
            print("wrote %s (%s/%s, %.1f MiB, %s)" % (
                path, goos, goarch, os.path.getsize(path) / (1 << 20), took), file=log)
    return written


def main(argv):
    p = argparse.ArgumentParser(prog="build_wheels.py", description=__doc__.split("\n\n")[0])
    p.add_argument("outdir", nargs="?", help="folder the wheels are written to")
    p.add_argument("version", nargs="?", help="the wheels' PEP 440 version (default: from git describe)")
    p.add_argument("--host", action="store_true", help="build only the wheels of the go command's GOOS/GOARCH")
    p.add_argument("--sdist", action="store_true", help="write the source distribution (memscope-VERSION.tar.gz) instead")
    p.add_argument("--print-version", action="store_true", help="print the default version and exit")
    args = p.parse_args(argv)
    if args.print_version:
        print(default_version())
        return 0
    if not args.outdir:
        p.print_usage(sys.stderr)
        print("build_wheels.py: OUTDIR is required", file=sys.stderr)
        return 2
    try:
        if args.sdist:
            path = write_sdist(args.outdir, args.version or default_version())
            print("wrote %s (%.1f MiB)" % (path, os.path.getsize(path) / (1 << 20)), file=sys.stderr)
            return 0
        platforms = host_platforms(go_command()) if args.host else PLATFORMS
        build(args.outdir, args.version or default_version(), platforms)
    except BuildError as e:
        print("build_wheels.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
