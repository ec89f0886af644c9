# Shared by every conformance case: imports and a comparison helper.
# The harness defines SEED (fresh per run) before this file runs.
import torch
import triton
import triton.language as tl

torch.manual_seed(SEED)
DEVICE = 'cuda'


def check(name, got, want, atol=1e-5, rtol=1e-5):
    g = got.double()
    w = want.double()
    assert g.shape == w.shape, f"{name}: shape {g.shape} != {w.shape}"
    assert torch.allclose(g, w, atol=atol, rtol=rtol), f"{name}: max abs difference {torch.max(torch.abs(g - w))}"
