import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


x = torch.randn(4, 6, requires_grad=True)
w = torch.rand(6, requires_grad=True)
y = torch.nn.functional.layer_norm(Scale.apply(x, 3.0), (6,), w, None, 1e-5)
(y * y).sum().backward()
print(x.grad.shape, w.grad.shape)
torch.testing.assert_close(x.grad, x.grad.clone())
