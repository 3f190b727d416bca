"""The memscope binary: where it is, and running it.

A wheel holds the Go binary at memscope/bin/memscope (memscope.exe on
Windows). Without it (a source checkout, python/ on sys.path) the binary
is $MEMSCOPE_BIN when set, else a memscope on PATH that is not a Python
script (pip's console script for this package would find itself).
$MEMSCOPE_BIN, when set, wins over the bundled binary.
"""

import os
import shutil
import subprocess
import sys

ENV_BIN = "MEMSCOPE_BIN"
# Set in the environment of a binary found on PATH: a PATH entry that leads
# back here (a wrapper that runs python -m memscope) then stops instead of
# recursing.
_ENV_GUARD = "_MEMSCOPE_FROM_PYTHON"

EXIT_NO_BINARY = 127  # what a shell returns for a command it cannot find
EXIT_CANNOT_RUN = 126  # and for one it cannot execute


class MemscopeError(Exception):
    """The memscope binary failed: returncode is its exit status (1: a check
    failed, 2: bad usage or unreadable input), stderr what it printed."""

    def __init__(self, message, returncode=None, stderr="", cmd=None):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.cmd = cmd


class BinaryNotFoundError(MemscopeError):
    """No memscope binary: neither in the package, nor $MEMSCOPE_BIN, nor on PATH."""


def _exe_name():
    return "memscope.exe" if os.name == "nt" else "memscope"


def bundled_path():
    """Where a wheel puts the binary (it may not be there)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", _exe_name())


def _is_python_script(path):
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]


def find_binary():
    """The path of the memscope binary to run; BinaryNotFoundError when there
    is none, saying how to get one."""
    env = os.environ.get(ENV_BIN)
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise BinaryNotFoundError("$%s is %s, which is not an executable file" % (ENV_BIN, env))
    bundled = bundled_path()
    if os.path.isfile(bundled):
        return bundled
    if not os.environ.get(_ENV_GUARD):
        for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
            found = shutil.which("memscope", path=d) if d else None
            if found and not _is_python_script(found):
                return found
    raise BinaryNotFoundError(
        "memscope: the memscope binary is not in this Python package (no %s: a source checkout?), "
        "$%s is not set, and there is no memscope binary on PATH. Build a wheel and install it "
        "(bash python/build.sh dist && pip install dist/memscope-*-<your platform>.whl), or build "
        "the binary (go build -o DIR/memscope ./cmd/memscope) and put DIR on PATH or set $%s to it"
        % (bundled, ENV_BIN, ENV_BIN))


def _child_env(binary):
    if binary == bundled_path():
        return None
    return dict(os.environ, **{_ENV_GUARD: "1"})


def run(args, **kwargs):
    """subprocess.run of the binary with args (a list of str)."""
    binary = find_binary()
    env = kwargs.pop("env", None) or _child_env(binary)
    try:
        return subprocess.run([binary] + list(args), env=env, **kwargs)
    except OSError as e:
        raise MemscopeError("memscope: cannot run %s: %s" % (binary, e), cmd=[binary] + list(args)) from e


def main(argv=None):
    """The memscope command: the binary with these arguments, its exit
    status passed through. On POSIX the binary replaces this process (so
    signals and the terminal reach it directly); on Windows it runs as a
    child."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        binary = find_binary()
    except BinaryNotFoundError as e:
        print(e, file=sys.stderr)
        return EXIT_NO_BINARY
    env = _child_env(binary)
    try:
        if os.name == "nt":
            try:
                return subprocess.run([binary] + args, env=env).returncode
            except KeyboardInterrupt:
                return 130
        sys.stdout.flush()
        sys.stderr.flush()
        if env is None:
            os.execv(binary, [binary] + args)
        os.execve(binary, [binary] + args, env)
    except OSError as e:  # not executable, or built for another platform
        print("memscope: cannot run %s: %s" % (binary, e), file=sys.stderr)
        return EXIT_CANNOT_RUN
    return 0  # not reached: exec does not return


if __name__ == "__main__":
    sys.exit(main())
