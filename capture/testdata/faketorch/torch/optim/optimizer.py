"""torch.optim.optimizer: Optimizer and its global step hooks."""

_pre, _post = {}, {}


class _Handle(object):
    def __init__(self, table, key):
        self.table, self.key = table, key

    def remove(self):
        self.table.pop(self.key, None)


def register_optimizer_step_pre_hook(fn):
    _pre[id(fn)] = fn
    return _Handle(_pre, id(fn))


def register_optimizer_step_post_hook(fn):
    _post[id(fn)] = fn
    return _Handle(_post, id(fn))


class Optimizer(object):
    def __init__(self, params):
        self.params = list(params)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def step(self):
        for fn in list(_pre.values()):
            fn(self, (), {})
        self._step()
        for fn in list(_post.values()):
            fn(self, (), {})

    def _step(self):
        pass
