import torch
dev = 'cuda'
x = torch.arange(0, 8, dtype=torch.float32, device=dev).reshape(2, 4)
v = x[:, 1:3]; w = v; v *= 10; v += 1; print(v is w); print(x)
t = x.T; t -= 1; print(x[0])
y = x.view(-1); y /= 2; print(x[1, 3].item())
i = torch.arange(4, device=dev); i += 2; i <<= 1; print(i)
x[0] += 100; print(x)
for f in [lambda: i.__itruediv__(2), lambda: x[0].__iadd__(torch.ones(3, 4, device=dev)), lambda: torch.ones(2, requires_grad=True).__imul__(2)]:
    try:
        f()
    except RuntimeError as e:
        print("RuntimeError")
w = torch.ones(3, requires_grad=True)
l = (w * 2).sum(); l += (w * w).sum(); l.backward(); print(w.grad)
