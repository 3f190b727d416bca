"""memscope: where did the GPU memory go, and what to change so the job fits.

    import memscope
    with memscope.record("snapshot.pickle"):
        train()
    # then: memscope summary snapshot.pickle
"""

from ._record import record, rank_path

__all__ = ["record", "rank_path"]
