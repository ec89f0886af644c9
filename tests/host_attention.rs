//! Tutorial 06's host surface, checked against definitions: batched
//! `torch.matmul`, `tril`/`triu`, boolean-mask indexing, `normal_`, autograd
//! through `permute`/`softmax`/batched `@`/masked assignment, and
//! `F.scaled_dot_product_attention` (forward against its formula, backward
//! against finite differences). Also the `pytest`/`tabulate` stand-ins.

use tilebook_session::Session;

fn run(cell: &str) -> String {
    let mut s = Session::new();
    s.announce = false;
    s.timing = false;
    let r = s.run_cell(cell);
    assert!(r.ok, "cell failed:\n{}", r.text());
    r.text()
}

#[test]
fn batched_matmul_keeps_each_dtype_and_every_batch_entry() {
    // Each entry is written into the output as it is made: fp16 products
    // keep fp16 (sums of small integers, exact), int64 products stay exact
    // integers, a 1-D right operand drops its dimension, and every entry of
    // a broadcast batch lands in its own place.
    let out = run(r#"
import torch
a = torch.arange(2 * 3 * 2 * 4).reshape(2, 3, 2, 4) % 7
b = torch.arange(3 * 4 * 5).reshape(3, 4, 5) % 5
c = torch.matmul(a, b)
ok = c.dtype == torch.int64 and tuple(c.shape) == (2, 3, 2, 5)
for i in range(2):
    for j in range(3):
        for r in range(2):
            for q in range(5):
                ok = ok and c[i, j, r, q].item() == sum(a[i, j, r, t].item() * b[j, t, q].item() for t in range(4))
print("int64", ok)
h = torch.matmul(a.to(torch.float16), b.to(torch.float16))
print("fp16", h.dtype, torch.equal(h.to(torch.int64), c))
v = torch.arange(4) - 2
w = a @ v
print("vector", tuple(w.shape), all(w[i, j, r].item() == sum(a[i, j, r, t].item() * (t - 2) for t in range(4))
                                   for i in range(2) for j in range(3) for r in range(2)))
"#);
    assert_eq!(
        out.trim(),
        "int64 True\nfp16 torch.float16 True\nvector (2, 3, 2) True",
        "{out}"
    );
}

#[test]
fn batched_matmul_masks_and_triangles_match_their_definitions() {
    let out = run(r#"
import torch
torch.manual_seed(1)
a = torch.randn(2, 3, 4, 5, dtype=torch.float64)
b = torch.randn(3, 5, 6, dtype=torch.float64)   # broadcast over the first dim
c = torch.matmul(a, b)
ok = tuple(c.shape) == (2, 3, 4, 6)
for i in range(2):
    for j in range(3):
        ok = ok and torch.allclose(c[i, j], a[i, j] @ b[j])
v = torch.randn(5, dtype=torch.float64)
ok = ok and tuple((a @ v).shape) == (2, 3, 4) and torch.allclose((a @ v)[1, 2], a[1, 2] @ v)
print("batched", ok)
try:
    torch.randn(2, 3, 4) @ torch.randn(3, 4, 6)
except RuntimeError as e:
    print("RuntimeError", "broadcast" in str(e))

m = torch.arange(20, dtype=torch.float32).reshape(4, 5)
low, up = torch.tril(m), torch.triu(m, 1)
print("tri", all(low[i, j].item() == (m[i, j].item() if j <= i else 0) and
                 up[i, j].item() == (m[i, j].item() if j >= i + 1 else 0)
                 for i in range(4) for j in range(5)))

p = torch.zeros(2, 2, 3, 3)
keep = torch.tril(torch.ones(3, 3))
p[:, :, keep == 0] = float("-inf")
print("masked set", p[1, 0, 0].tolist(), p[1, 1, 2].tolist())
sel = m[m > 14.5]
print("masked get", sel.tolist(), tuple(m[:, m[0] > 1.5].shape))
try:
    p[:, keep[0] == 0] = 1.0
except IndexError as e:
    print("IndexError", "mask" in str(e))

torch.manual_seed(3)
x = torch.empty(20000, dtype=torch.float64).normal_(mean=2.0, std=0.5)
print("normal_", abs(x.mean().item() - 2.0) < 0.02, abs(x.std().item() - 0.5) < 0.02)
u = torch.empty(20000).uniform_(-1.0, 3.0)
print("uniform_", u.min().item() >= -1.0, u.max().item() < 3.0, abs(u.mean().item() - 1.0) < 0.05)
h = torch.ones(3, dtype=torch.float16)
print("to self", h.to(torch.float16) is h, h.half() is h, h.float() is h, h.clone() is h)
print("version", torch.version.hip, torch.version.cuda)
"#);
    assert_eq!(
        out,
        "batched True\nRuntimeError True\ntri True\n\
         masked set [0.0, -inf, -inf] [0.0, 0.0, 0.0]\n\
         masked get [15.0, 16.0, 17.0, 18.0, 19.0] (4, 3)\nIndexError True\n\
         normal_ True True\nuniform_ True True True\nto self True True False False\n\
         version None None\n"
    );
}

#[test]
fn attention_gradients_match_finite_differences() {
    let program = tilebook_tests::FINITE_DIFFERENCES.to_string()
        + r#"
import math
import torch.nn.functional as F
torch.manual_seed(0)

Z, H, N, D = 1, 2, 4, 3
q = torch.randn(Z, H, N, D, dtype=torch.float64)
k = torch.randn(Z, H, N, D, dtype=torch.float64)
v = torch.randn(Z, H, N, D, dtype=torch.float64)
w = torch.randn(Z, H, N, D, dtype=torch.float64)
causal = torch.tril(torch.ones(N, N, dtype=torch.float64))

def by_hand(t):
    s = torch.matmul(t, k.transpose(2, 3)) * 0.5
    s[:, :, causal == 0] = float("-inf")
    return (torch.matmul(torch.softmax(s, dim=-1), v.permute(0, 1, 3, 2).permute(0, 1, 3, 2)) * w).sum()

def sdpa_q(t):
    return (F.scaled_dot_product_attention(t, k, v, is_causal=True, scale=0.5) * w).sum()

mask = torch.rand(N, N) > 0.3
mask[:, 0] = True

def sdpa_k(t):
    return (F.scaled_dot_product_attention(q, t, v, attn_mask=mask) * w).sum()

def sdpa_v(t):
    return (F.scaled_dot_product_attention(q, k, t) * w).sum()

for f, x in ((by_hand, q), (sdpa_q, q), (sdpa_k, k), (sdpa_v, v)):
    with torch.no_grad():
        want = numeric(f, x.clone())
    xs = x.clone().requires_grad_(True)
    f(xs).backward()
    print(f.__name__, torch.allclose(xs.grad, want, atol=1e-6, rtol=1e-5))

# The forward against the formula, and sdpa against the by-hand reference.
ref = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(D), dim=-1) @ v
print("sdpa forward", torch.allclose(F.scaled_dot_product_attention(q, k, v), ref))
print("causal", torch.allclose(by_hand(q), sdpa_q(q)))
leaf = torch.ones(3, requires_grad=True)
try:
    leaf[0] = 2.0
except RuntimeError as e:
    print("RuntimeError", "leaf" in str(e))
"#;
    let out = run(&program);
    assert_eq!(
        out,
        "by_hand True\nsdpa_q True\nsdpa_k True\nsdpa_v True\nsdpa forward True\ncausal True\nRuntimeError True\n"
    );
}

#[test]
fn pytest_and_tabulate_stand_ins_cover_what_tutorials_use() {
    let out = run(r#"
import pytest, tabulate

@pytest.mark.parametrize("a", [1, 2])
@pytest.mark.parametrize("b, c", [(3, 4), pytest.param(5, 6)])
@pytest.mark.slow
def test_sum(a, b, c, scale=1):
    if a == 2 and b == 5:
        pytest.skip("not this one")
    return (a + b + c) * scale

ran, skipped = [], 0
for kw in pytest.parameters(test_sum):
    try:
        ran.append(test_sum(**kw))
    except pytest.skip.Exception:
        skipped += 1
print(ran, skipped, [m.name for m in test_sum.pytestmark])
with pytest.raises(ZeroDivisionError, match="division"):
    1 / 0
print(0.1 + 0.2 == pytest.approx(0.3), [1.0, 2.0] == pytest.approx([1.0, 2.0000001]))
print(tabulate.tabulate([["input", 1.5, -0.25, 10], ["keep mask", 1, 0, 1]]))
print(tabulate.tabulate([[1, 2.5], [30, "4"]], headers=["n", "value"], tablefmt="github"))
print(tabulate.tabulate({"x": [1, 2], "y": ["a", None]}, headers="keys", tablefmt="grid", missingval="?"))
try:
    tabulate.tabulate([[1]], tablefmt="fancy")
except ValueError as e:
    print("ValueError", "fancy" in str(e))
"#);
    assert_eq!(
        out,
        "[8, 12, 9] 1 ['slow', 'parametrize', 'parametrize']\n\
         True True\n\
         ---------  ---  -----  --\n\
         input      1.5  -0.25  10\n\
         keep mask  1     0      1\n\
         ---------  ---  -----  --\n\
         |   n |   value |\n\
         |-----|---------|\n\
         |   1 |     2.5 |\n\
         |  30 |     4   |\n\
         +-----+-----+\n\
         |   x | y   |\n\
         +=====+=====+\n\
         |   1 | a   |\n\
         +-----+-----+\n\
         |   2 | ?   |\n\
         +-----+-----+\n\
         ValueError True\n"
    );
}
