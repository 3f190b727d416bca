"""torch.profiler: record_function ranges (the harness's phase markers)."""


class record_function(object):
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
