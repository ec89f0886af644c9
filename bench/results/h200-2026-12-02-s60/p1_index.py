import torch
dev = 'cuda'
x = torch.arange(12, device=dev).reshape(3, 4)
print(x[::2], x[:, ::3])
print(x[None].shape, x[..., 0], x[x > 5])
i = torch.tensor([2, 0], device=dev)
print(x[i], x[i, 1], x[:, i], x[[1, 2]])
y = x.clone(); y[i] = 0; print(y)
y = x.clone(); y[y > 5] = -1; print(y)
y = x.clone(); y[1:, 2:] = torch.tensor([10, 20], device=dev); print(y)
y = x.clone(); y[0] = 2.7; print(y)
y = x.clone(); y[:, torch.tensor([0, 2], device=dev)] = 9; print(y)
n = torch.tensor(3, device=dev)
z = torch.arange(10, device=dev)
print(z[:n], z[n], z[torch.tensor([1], device=dev)].shape, z[2:10**30], z[-10**30:2])
for f in [lambda: z[:2.5], lambda: z[torch.tensor(1.0)], lambda: z[..., ...], lambda: z[torch.tensor([10])], lambda: [0, 1][torch.tensor(1.5)]]:
    try:
        print(f())
    except (TypeError, IndexError, RuntimeError) as e:
        print(type(e).__name__)
w = torch.zeros(2, 3, 4, device=dev)
print(w[..., 1].shape, w[0, ...].shape, w[..., None].shape, w[None, ..., 0].shape)
w[..., 0] = 1
print(w.sum())
