import torch
import torch.nn.functional as F
dev = 'cuda'
x = torch.arange(24., device=dev).reshape(2, 3, 4)
def show(s):
    try:
        exec(s, globals())
    except Exception as e:
        print(type(e).__name__, '<-', s[:60])
show('print(x.stride(), x.transpose(0, 2).stride(), x.permute(2, 0, 1).is_contiguous(), x[:, 1].is_contiguous())')
show('print(torch.full((2,), 1).dtype, torch.full((2,), 1.5).dtype, torch.full((2,), True).dtype)')
show('print(torch.cat([x, x], 1).shape, torch.stack([x, x], -1).shape, [t.shape for t in x.split(2, 2)], [t.shape for t in x.chunk(2, 1)])')
show('print(x.flip(2)[0, 0], torch.tril(torch.ones(3, 3)), torch.triu(torch.ones(3, 3), 1))')
show('print(F.softmax(torch.tensor([[1., 2., 3.]]), dim=-1), F.relu(torch.tensor([-1., 2.])))')
show('print(F.layer_norm(torch.tensor([[1., 2., 3., 4.]]), (4,)))')
show('a = torch.ones(4, 8, dtype=torch.float16, device=dev); b = torch.ones(8, 2, dtype=torch.float16, device=dev)')
show('print((a @ b).dtype, torch.matmul(a, b)[0], (a.float() @ b.float()).sum())')
show('print(torch.allclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0001])), torch.allclose(torch.tensor([1.0]), torch.tensor([1.1])))')
show('print(x.max(), x.min(1).values.shape, x.argmin(), x.sum(-1).shape, x.prod() if False else 0, x.abs().sum(), x.exp().log().sum().round())')
show('print(torch.arange(5).float().sqrt(), torch.tensor([4., 9.]).rsqrt(), torch.sigmoid(torch.tensor([0.])), torch.tanh(torch.tensor([0.5])))')
show('print(torch.zeros(2, 3).unsqueeze(1).shape, torch.zeros(2, 1, 3).squeeze().shape, torch.zeros(2, 1, 3).squeeze(1).shape, torch.zeros(3).expand(2, 3).shape)')
show("print(torch.ones(3).reshape(1, 3).repeat(2, 1) if hasattr(torch.Tensor, 'repeat') else 'norepeat')")
show('print(torch.empty(3, 4).t().contiguous().stride(), torch.ones(2, 3).T.shape, torch.ones(2, 3).mT.shape if False else 0)')
show('print(torch.tensor([[1, 2], [3, 4]]).tolist(), torch.tensor(2.5).item(), int(torch.tensor(3)), float(torch.tensor(2)), bool(torch.tensor([1])))')
show('print(torch.tensor([3, 1, 2]).sort(descending=True), torch.tensor([1, 2, 3, 4]).view(2, 2).flatten(), torch.linspace(0, 1, 5))')
show('print(torch.zeros(4).numel(), torch.zeros(2, 3).size(), torch.zeros(2, 3).size(1), torch.zeros(2, 3).dim(), len(torch.zeros(5, 2)))')
show('print(x.to(torch.float16).dtype, x.half().float().dtype, x.to(dtype=torch.bfloat16).dtype, x.int().dtype, x.long().dtype, x.bool().sum())')
show('print(torch.manual_seed(0) is not None, torch.randn(2, 3).shape, torch.rand(5).min() >= 0, torch.randint(0, 10, (4,)).dtype)')
show('print(torch.eq(torch.tensor([1, 2]), 2), torch.tensor([1, 2]) == torch.tensor([1, 3]), (torch.tensor([1., 2.]) != 1.).any(), torch.tensor([True, False]).all())')
show("print(torch.cumsum(torch.tensor([1, 2, 3]), 0), torch.diff(torch.tensor([1, 4, 9])) if hasattr(torch, 'diff') else 'nodiff')")
show('try:\n    torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5]))\nexcept AssertionError:\n    print("AssertionError")')
show('try:\n    bool(torch.tensor([1, 2]))\nexcept RuntimeError:\n    print("RuntimeError")')
