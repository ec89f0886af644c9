//! `torch.clamp` / `torch.clip` and the tensor methods `clamp`, `clip`,
//! `clamp_`, `clip_`: each element limited to `[min, max]`, either bound a
//! number or a tensor that broadcasts with the input (the result has the
//! broadcast shape and the promoted dtype, as torch's). As torch computes
//! `min(max(x, min), max)`: NaN in the input or in a bound gives NaN, and a
//! `min` above `max` gives `max`.

use crate::args::{tensor_arg, Args};
use crate::registry::{Entry, TensorMethodFn};
use crate::tensor::{Scalar, Tensor};
use crate::value::{Exc, Val, R};
use crate::Engine;
use std::rc::Rc;
use tilebook_tir::DType;

pub const TABLE: &[Entry] = &[
    Entry {
        name: "torch.clamp",
        f: torch_clamp,
        doc: "torch.clamp(input, min=None, max=None)\nEach element of `input` limited to [min, max] (numbers or tensors that broadcast with it; at least one given). NaN stays NaN.\n",
    },
    Entry {
        name: "torch.clip",
        f: torch_clamp,
        doc: "torch.clip(input, min=None, max=None)\nThe same as torch.clamp.\n",
    },
];

pub const METHODS: &[Entry<TensorMethodFn>] = &[
    Entry {
        name: "clamp",
        f: method_clamp,
        doc:
            "Tensor.clamp(min=None, max=None): each element limited to [min, max], as a new tensor.",
    },
    Entry {
        name: "clip",
        f: method_clamp,
        doc: "Tensor.clip(min=None, max=None): the same as Tensor.clamp.",
    },
    Entry {
        name: "clamp_",
        f: method_clamp,
        doc: "Tensor.clamp_(min=None, max=None): each element limited to [min, max], in place.",
    },
    Entry {
        name: "clip_",
        f: method_clamp,
        doc: "Tensor.clip_(min=None, max=None): the same as Tensor.clamp_.",
    },
];

fn torch_clamp(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    let (lo, hi) = bounds(&a, 1, name)?;
    Ok(Val::tensor(clamp(&t, lo.as_ref(), hi.as_ref(), name)?))
}

fn method_clamp(_s: &mut Engine, t: &Rc<Tensor>, name: &str, a: Args) -> R<Val> {
    let (lo, hi) = bounds(&a, 0, name)?;
    let r = clamp(t, lo.as_ref(), hi.as_ref(), name)?;
    if !name.ends_with('_') {
        return Ok(Val::tensor(r));
    }
    if r.dtype != t.dtype {
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "{name}: result type {} can't be cast to the desired output type {}",
                crate::tensor::torch_name(r.dtype),
                crate::tensor::torch_name(t.dtype)
            ),
        ));
    }
    if r.shape != t.shape {
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "{name}: output with shape {:?} doesn't match the broadcast shape {:?}",
                t.shape, r.shape
            ),
        ));
    }
    for (o, v) in t.offsets().into_iter().zip(r.values()) {
        t.set_at(o, v);
    }
    Ok(Val::Tensor(t.clone()))
}

/// `min` and `max` (positional from `first`, or by keyword); `None` for a
/// bound not given or given as None.
fn bounds(a: &Args, first: usize, name: &str) -> R<(Option<Val>, Option<Val>)> {
    let get = |i: usize, k: &str| a.get(i, k).filter(|v| !matches!(v, Val::None));
    let (lo, hi) = (get(first, "min"), get(first + 1, "max"));
    if lo.is_none() && hi.is_none() {
        return Err(Exc::new(
            "RuntimeError",
            format!("{name}: at least one of 'min' or 'max' must not be None"),
        ));
    }
    Ok((lo, hi))
}

/// A bound as a tensor of its own dtype (a number as a 0-d tensor).
fn bound_tensor(v: &Val, t: &Tensor, name: &str) -> R<Tensor> {
    let s = match v {
        Val::Tensor(b) => return Ok((**b).clone()),
        Val::Bool(b) => Scalar::I(*b as i64),
        Val::Int(i) => Scalar::I(*i),
        Val::Float(f) => Scalar::F(*f),
        other => {
            return Err(Exc::new(
                "TypeError",
                format!(
                    "{name}: min and max must be numbers or tensors, not {}",
                    other.type_name()
                ),
            ))
        }
    };
    let d = if matches!(s, Scalar::F(_)) {
        DType::F64
    } else {
        DType::I64
    };
    Ok(Tensor::from_scalars(&[], d, t.device.clone(), [s]))
}

fn clamp(t: &Tensor, lo: Option<&Val>, hi: Option<&Val>, name: &str) -> R<Tensor> {
    if t.dtype == DType::I1 {
        return Err(Exc::new(
            "RuntimeError",
            format!("{name} is not implemented for bool tensors"),
        ));
    }
    let x = Val::tensor(t.clone());
    let mut dtype = t.dtype;
    for b in [lo, hi].into_iter().flatten() {
        dtype = crate::tensor::promote(dtype, crate::ops::result_type(&x, b)?);
    }
    let lo = lo.map(|v| bound_tensor(v, t, name)).transpose()?;
    let hi = hi.map(|v| bound_tensor(v, t, name)).transpose()?;
    let mut shape = t.shape.clone();
    for b in lo.iter().chain(&hi) {
        shape = crate::tensor::broadcast_shape(&shape, &b.shape).ok_or_else(|| {
            Exc::new(
                "RuntimeError",
                format!(
                    "{name}: the bound's shape {:?} does not broadcast with the input's {:?}",
                    b.shape, t.shape
                ),
            )
        })?;
    }
    let n = crate::tensor::checked_numel(&shape).map_err(|m| Exc::new("RuntimeError", m))?;
    crate::tensor::ensure_host_room(n, 16).map_err(|m| Exc::new("MemoryError", m))?;
    let spread = |u: &Tensor| -> R<Vec<Scalar>> {
        u.expand(&shape)
            .map(|e| e.values())
            .ok_or_else(|| Exc::new("RuntimeError", format!("{name}: shapes do not broadcast")))
    };
    let xs = spread(t)?;
    let los = lo.as_ref().map(spread).transpose()?;
    let his = hi.as_ref().map(spread).transpose()?;
    let at = |v: &Option<Vec<Scalar>>, i: usize| v.as_ref().map(|v| v[i]);
    let float = dtype.is_float();
    let vals: Vec<Scalar> = (0..n)
        .map(|i| {
            let (l, h) = (at(&los, i), at(&his, i));
            if float {
                let mut r = xs[i].f();
                if let Some(l) = l {
                    r = if r.is_nan() || l.f().is_nan() {
                        f64::NAN
                    } else {
                        r.max(l.f())
                    };
                }
                if let Some(h) = h {
                    r = if r.is_nan() || h.f().is_nan() {
                        f64::NAN
                    } else {
                        r.min(h.f())
                    };
                }
                Scalar::F(r)
            } else {
                let mut r = xs[i].i();
                if let Some(l) = l {
                    r = r.max(l.i());
                }
                if let Some(h) = h {
                    r = r.min(h.i());
                }
                Scalar::I(r)
            }
        })
        .collect();
    Ok(Tensor::from_scalars(&shape, dtype, t.device.clone(), vals))
}
