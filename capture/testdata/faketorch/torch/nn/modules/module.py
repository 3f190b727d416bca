"""torch.nn.modules.module: Module and the global forward pre-hooks."""

_hooks = {}


class _Handle(object):
    def __init__(self, key):
        self.key = key

    def remove(self):
        _hooks.pop(self.key, None)


def register_module_forward_pre_hook(fn):
    _hooks[id(fn)] = fn
    return _Handle(id(fn))


class Module(object):
    def __init__(self):
        pass

    def __call__(self, *args):
        for fn in list(_hooks.values()):
            fn(self, args)
        return self.forward(*args)

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def parameters(self):
        return []
