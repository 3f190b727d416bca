"""python -m torch.distributed.run: torchrun's start of nproc_per_node
processes of one node (--standalone), each with RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE and a MASTER_ADDR/PORT, exiting with the first
failing rank's status (0 when all succeed)."""

import os
import subprocess
import sys


def main(argv):
    nproc, i = 1, 0
    while i < len(argv) and argv[i].startswith("--"):
        opt = argv[i]
        if opt in ("--standalone",):
            i += 1
            continue
        key, _, val = opt.partition("=")
        if not val:
            val, i = argv[i + 1], i + 1
        if key in ("--nproc_per_node", "--nproc-per-node"):
            nproc = int(val)
        i += 1
    script = argv[i:]
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc),
                   LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
        procs.append(subprocess.Popen([sys.executable] + script, env=env))
    status = 0
    for p in procs:
        rc = p.wait()
        if rc != 0 and status == 0:
            status = rc
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
