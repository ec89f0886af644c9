

# ---------------------------------------------------------------- tilebook.distributed
#
# Collectives over a list of tensors, one per device (single process, as
# NCCL's group calls take them). Tensors on several GPUs go through NCCL
# (tilebook.distributed.nccl, one communicator per list of devices); a list
# whose tensors all live on one device (one GPU, or host memory on the CPU
# backend) is copies on that device, with the same results. Results are
# what NCCL gives: all_reduce leaves the reduction in every tensor,
# all_gather concatenates the inputs in list order into every output,
# reduce_scatter leaves chunk i of the reduction in output i, broadcast
# copies the root's tensor into all.


class _Distributed:
    """tilebook.distributed: all_reduce, all_gather, reduce_scatter and
    broadcast over a list of tensors (one per device; NCCL when they are on
    several GPUs), with op 'sum', 'max', 'min' or 'avg'; bus_bandwidth(
    collective, nbytes, seconds, ranks) as nccl-tests reports it."""

    OPS = ("sum", "max", "min", "avg")

    def _check(self, name, tensors, same_shape=True):
        """Returns True when the tensors are on several devices (NCCL)."""
        import torch

        if not isinstance(tensors, (list, tuple)) or not tensors:
            raise TypeError("%s expects a non-empty list of tensors, one per device" % name)
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                raise TypeError("%s expects tensors, got %s" % (name, type(t).__name__))
        first = tensors[0]
        for i, t in enumerate(tensors):
            if t.dtype != first.dtype:
                raise TypeError("%s: tensor %d is %s, tensor 0 is %s" % (name, i, t.dtype, first.dtype))
            if same_shape and tuple(t.shape) != tuple(first.shape):
                raise ValueError("%s: tensor %d has shape %s, tensor 0 has %s"
                                 % (name, i, list(t.shape), list(first.shape)))
        devices = [str(t.device) for t in tensors]
        if len(set(devices)) == 1:
            return False
        if len(set(devices)) != len(devices):
            raise ValueError("%s: the tensors are on %s; one tensor per device, or all on one device"
                             % (name, ", ".join(devices)))
        if any(not d.startswith("cuda") for d in devices):
            raise ValueError("%s: tensors on %s; a collective across devices needs every tensor on a GPU"
                             % (name, ", ".join(devices)))
        return True

    def _op(self, name, op, dtype):
        if op not in self.OPS:
            raise ValueError("%s: op must be one of %s, got %r" % (name, ", ".join(self.OPS), op))
        if op == "avg" and not dtype.is_floating_point:
            raise TypeError("%s: op='avg' needs floating-point tensors, got %s" % (name, dtype))

    def _reduce(self, name, parts, op):
        import torch

        self._op(name, op, parts[0].dtype)
        acc = parts[0].clone()
        for p in parts[1:]:
            if op in ("sum", "avg"):
                acc = acc + p
            elif op == "max":
                acc = torch.maximum(acc, p)
            else:
                acc = torch.minimum(acc, p)
        if op == "avg":
            acc = (acc / len(parts)).to(parts[0].dtype)
        return acc

    def all_reduce(self, tensors, op="sum"):
        """all_reduce(tensors, op='sum'): every tensor becomes the reduction of all."""
        if self._check("all_reduce", tensors):
            self._op("all_reduce", op, tensors[0].dtype)
            return _nccl("all_reduce", list(tensors), list(tensors), op)
        acc = self._reduce("all_reduce", list(tensors), op)
        for t in tensors:
            t.copy_(acc)

    def broadcast(self, tensors, root=0):
        """broadcast(tensors, root=0): every tensor becomes a copy of tensors[root]."""
        several = self._check("broadcast", tensors)
        if not 0 <= root < len(tensors):
            raise IndexError("broadcast: root %d is not one of the %d tensors" % (root, len(tensors)))
        if several:
            return _nccl("broadcast", list(tensors), list(tensors), "sum", root)
        src = tensors[root].clone()
        for i, t in enumerate(tensors):
            if i != root:
                t.copy_(src)

    def all_gather(self, outputs, inputs):
        """all_gather(outputs, inputs): every output (n times an input's
        elements) becomes the inputs concatenated in list order."""
        several = self._check("all_gather", inputs)
        self._check("all_gather", outputs)
        n, k = len(inputs), inputs[0].numel()
        if len(outputs) != n:
            raise ValueError("all_gather: %d outputs for %d inputs" % (len(outputs), n))
        for i, o in enumerate(outputs):
            if o.numel() != n * k:
                raise ValueError("all_gather: output %d has %d elements, needs %d (%d inputs of %d)"
                                 % (i, o.numel(), n * k, n, k))
        if several:
            return _nccl("all_gather", list(inputs), list(outputs))
        import torch

        gathered = torch.cat([t.reshape(-1) for t in inputs])
        for o in outputs:
            o.copy_(gathered.reshape(o.shape))

    def reduce_scatter(self, outputs, inputs, op="sum"):
        """reduce_scatter(outputs, inputs, op='sum'): output i becomes chunk i
        of the reduction of the inputs (each n times an output's elements)."""
        several = self._check("reduce_scatter", inputs)
        self._check("reduce_scatter", outputs)
        n, k = len(inputs), outputs[0].numel()
        if len(outputs) != n:
            raise ValueError("reduce_scatter: %d outputs for %d inputs" % (len(outputs), n))
        if inputs[0].numel() != n * k:
            raise ValueError("reduce_scatter: inputs have %d elements, need %d (%d outputs of %d)"
                             % (inputs[0].numel(), n * k, n, k))
        if several:
            self._op("reduce_scatter", op, inputs[0].dtype)
            return _nccl("reduce_scatter", list(inputs), list(outputs), op)
        acc = self._reduce("reduce_scatter", [t.reshape(-1) for t in inputs], op)
        for i, o in enumerate(outputs):
            o.copy_(acc[i * k:(i + 1) * k].reshape(o.shape))

    def bus_bandwidth(self, collective, nbytes, seconds, ranks):
        """Bus bandwidth in GB/s as nccl-tests reports it: the algorithm
        bandwidth (nbytes / seconds) times 2(n-1)/n for all_reduce, (n-1)/n
        for all_gather and reduce_scatter, 1 for broadcast."""
        factors = {
            "all_reduce": 2.0 * (ranks - 1) / ranks,
            "all_gather": (ranks - 1) / ranks,
            "reduce_scatter": (ranks - 1) / ranks,
            "broadcast": 1.0,
        }
        if collective not in factors:
            raise ValueError("bus_bandwidth: unknown collective %r (one of %s)"
                             % (collective, ", ".join(factors)))
        if seconds <= 0:
            raise ValueError("bus_bandwidth: seconds must be positive")
        return nbytes / seconds * factors[collective] / 1e9


def _nccl(collective, inputs, outputs, op="sum", root=0):
    _tb.builtin("tilebook.distributed.nccl")(collective, inputs, outputs, op, root)


_distributed = _types.ModuleType("tilebook.distributed")
_distributed.__doc__ = _Distributed.__doc__
for _name in ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "bus_bandwidth"):
    setattr(_distributed, _name, getattr(_Distributed(), _name))
sys.modules["tilebook.distributed"] = _distributed
_EXTRA["tilebook"] = {"distributed": _distributed}
del _name
