"""python -m memscope …: the memscope binary, as the memscope command runs it."""

import sys

from ._binary import main

if __name__ == "__main__":
    sys.exit(main())
