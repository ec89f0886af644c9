//! What an attention reference (tutorial 06's `test_op`) does to tensors of
//! up to billions of elements beyond arithmetic: `torch.tril`/`torch.triu`,
//! softmax's backward, and the mismatch count behind
//! `torch.testing.assert_close`; computed by the stdlib kernels on a GPU
//! (`device_ops`) and here on the host.

use crate::args::{tensor_arg, to_f64, to_int, Args};
use crate::registry::Entry;
use crate::tensor::{Scalar, Tensor};
use crate::value::{Exc, Val, R};
use crate::Engine;

pub const TABLE: &[Entry] = &[
    Entry {
        name: "torch.tril",
        f: torch_triangle,
        doc: r#"torch.tril(input, diagonal=0)
The lower triangle of each trailing matrix of `input` (elements with
column - row <= diagonal); the rest zero.
"#,
    },
    Entry {
        name: "torch.triu",
        f: torch_triangle,
        doc: r#"torch.triu(input, diagonal=0)
The upper triangle of each trailing matrix of `input` (elements with
column - row >= diagonal); the rest zero.
"#,
    },
    Entry {
        name: "torch._softmax_backward",
        f: torch_softmax_backward,
        doc: r#"torch._softmax_backward(grad, output, dim)
tilebook's own: the gradient of softmax's input, output * (grad - sum(grad * output, dim)),
in one pass on a GPU; None where that kernel does not apply (autograd then composes it).
"#,
    },
    Entry {
        name: "torch._layer_norm",
        f: torch_layer_norm,
        doc: r#"torch._layer_norm(input, weight, bias, eps)
tilebook's own: layer norm over the last dimension in one pass on a GPU, as
(output, mean, rstd) with fp32 statistics per row; None where that kernel does
not apply (autograd's F.layer_norm then composes it).
"#,
    },
    Entry {
        name: "torch._layer_norm_backward",
        f: torch_layer_norm_backward,
        doc: r#"torch._layer_norm_backward(grad, input, weight, mean, rstd, need_weight_grads)
tilebook's own: layer norm's backward on a GPU from the forward's mean and rstd,
as (grad_input, grad_weight, grad_bias), the last two fp32 sums over rows (None
unless asked for); None where that kernel does not apply.
"#,
    },
    Entry {
        name: "torch._attention",
        f: torch_attention,
        doc: r#"torch._attention(query, key, value, is_causal, scale)
tilebook's own: softmax(query @ key.T * scale) @ value over the last two
dimensions in one pass on a GPU (flash attention's online softmax, the scores
never materialised; keys after each query masked when is_causal); None where
that kernel does not apply (F.scaled_dot_product_attention then composes it).
"#,
    },
    Entry {
        name: "torch._mismatches",
        f: torch_mismatches,
        doc: r#"torch._mismatches(actual, expected, rtol, atol, equal_nan=False)
tilebook's own: how many elements fail |actual - expected| <= atol + rtol * |expected|
as torch.isclose decides (equal values close, a difference must be finite, NaN
close only to NaN with equal_nan), computed in fp64;
what torch.testing.assert_close counts. Same shapes only.
"#,
    },
];

fn torch_triangle(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    let diagonal = match a.get(1, "diagonal") {
        Some(d) => to_int(&d)?,
        None => 0,
    };
    let lower = name.ends_with("tril");
    let r = t.shape.len();
    if r < 2 {
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "{}: input tensor must have at least 2 dimensions",
                if lower { "tril" } else { "triu" }
            ),
        ));
    }
    if let Some(out) = crate::device_ops::triangle(s, &t, diagonal, lower)? {
        return Ok(Val::tensor(out));
    }
    let (rows, cols) = (t.shape[r - 2], t.shape[r - 1]);
    let keep = |i: usize| {
        let c = (i % cols) as i64;
        let row = ((i / cols) % rows) as i64;
        if lower {
            c - row <= diagonal
        } else {
            c - row >= diagonal
        }
    };
    let zero = if t.dtype.is_float() {
        Scalar::F(0.0)
    } else {
        Scalar::I(0)
    };
    let values: Vec<Scalar> = t
        .values()
        .into_iter()
        .enumerate()
        .map(|(i, v)| if keep(i) { v } else { zero })
        .collect();
    Ok(Val::tensor(Tensor::from_scalars(
        &t.shape,
        t.dtype,
        t.device.clone(),
        values,
    )))
}

fn torch_mismatches(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let x = tensor_arg(&a.req(0, "actual")?, name)?;
    let y = tensor_arg(&a.req(1, "expected")?, name)?;
    let rtol = to_f64(&a.req(2, "rtol")?)?;
    let atol = to_f64(&a.req(3, "atol")?)?;
    let equal_nan = match a.get(4, "equal_nan") {
        Some(v) => v.truth()?,
        None => false,
    };
    if x.shape != y.shape {
        return Err(Exc::new(
            "RuntimeError",
            format!("{name}: shapes differ ({:?} and {:?})", x.shape, y.shape),
        ));
    }
    Ok(Val::Int(count(s, &x, &y, rtol, atol, equal_nan)?))
}

/// How many elements of `x` are not close to `y` (same shape).
pub fn count(
    s: &mut Engine,
    x: &Tensor,
    y: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> R<i64> {
    if let Some(n) = crate::device_ops::mismatches(s, x, y, rtol, atol, equal_nan)? {
        return Ok(n);
    }
    let bad = x
        .values_f64()
        .into_iter()
        .zip(y.values_f64())
        .filter(|&(p, q)| {
            let d = (p - q).abs();
            let close = p == q || (d.is_finite() && d <= atol + rtol * q.abs());
            !(close || (equal_nan && p.is_nan() && q.is_nan()))
        })
        .count();
    Ok(bad as i64)
}

fn torch_softmax_backward(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let g = tensor_arg(&a.req(0, "grad")?, name)?;
    let y = tensor_arg(&a.req(1, "output")?, name)?;
    let dim = to_int(&a.req(2, "dim")?)?;
    Ok(crate::device_ops::softmax_backward(s, &g, &y, dim)?
        .map(Val::tensor)
        .unwrap_or(Val::None))
}

fn optional_tensor(v: Option<Val>, name: &str) -> R<Option<std::rc::Rc<Tensor>>> {
    match v {
        None | Some(Val::None) => Ok(None),
        Some(t) => Ok(Some(tensor_arg(&t, name)?)),
    }
}

fn torch_layer_norm(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let x = tensor_arg(&a.req(0, "input")?, name)?;
    let w = optional_tensor(a.get(1, "weight"), name)?;
    let b = optional_tensor(a.get(2, "bias"), name)?;
    let eps = to_f64(&a.req(3, "eps")?)?;
    let out = crate::norm_ops::layer_norm(s, &x, w.as_deref(), b.as_deref(), eps)?;
    Ok(match out {
        Some((y, mean, rstd)) => {
            Val::tuple(vec![Val::tensor(y), Val::tensor(mean), Val::tensor(rstd)])
        }
        None => Val::None,
    })
}

fn torch_attention(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let q = tensor_arg(&a.req(0, "query")?, name)?;
    let k = tensor_arg(&a.req(1, "key")?, name)?;
    let v = tensor_arg(&a.req(2, "value")?, name)?;
    let causal = a.req(3, "is_causal")?.truth()?;
    let scale = to_f64(&a.req(4, "scale")?)?;
    Ok(
        crate::attention_ops::attention(s, &q, &k, &v, causal, scale)?
            .map(Val::tensor)
            .unwrap_or(Val::None),
    )
}

fn torch_layer_norm_backward(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let g = tensor_arg(&a.req(0, "grad")?, name)?;
    let x = tensor_arg(&a.req(1, "input")?, name)?;
    let w = optional_tensor(a.get(2, "weight"), name)?;
    let mean = tensor_arg(&a.req(3, "mean")?, name)?;
    let rstd = tensor_arg(&a.req(4, "rstd")?, name)?;
    let need = a.req(5, "need_weight_grads")?.truth()?;
    let out = crate::norm_ops::layer_norm_backward(s, &g, &x, w.as_deref(), &mean, &rstd, need)?;
    let opt = |t: Option<Tensor>| t.map(Val::tensor).unwrap_or(Val::None);
    Ok(match out {
        Some((dx, dw, db)) => Val::tuple(vec![Val::tensor(dx), opt(dw), opt(db)]),
        None => Val::None,
    })
}
