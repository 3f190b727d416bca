#!/usr/bin/env bash
# Build memscope's platform wheels into OUTDIR: the Go binary for linux
# amd64/arm64 (manylinux and musllinux wheels, one static binary), macOS
# amd64/arm64 and Windows amd64, each in its own wheel with the Python
# package (python/memscope). Offline; needs Go and python3. --host builds
# only the wheels of this machine's GOOS/GOARCH; --sdist writes the source
# distribution instead (Go sources and vendored modules, built by pip with
# Go on the installing machine).
#
#   bash python/build.sh [--host|--sdist] OUTDIR [VERSION]     # VERSION: PEP 440, default from git describe
#   pip install OUTDIR/memscope-*-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
set -euo pipefail
n=$#
if [ "${1:-}" = "--host" ] || [ "${1:-}" = "--sdist" ]; then n=$((n - 1)); fi
if [ "$n" -lt 1 ] || [ "$n" -gt 2 ]; then
	echo "usage: bash python/build.sh [--host|--sdist] OUTDIR [VERSION]" >&2
	exit 2
fi
if ! command -v python3 >/dev/null 2>&1; then
	echo "build.sh: python3 not found (the wheel writer is python/build_wheels.py, standard library only)" >&2
	exit 1
fi
exec python3 "$(dirname "$0")/build_wheels.py" "$@"
