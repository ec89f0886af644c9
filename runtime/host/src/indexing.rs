//! Indexing of host values: `t[...]` and `t[...] = v` for tensors (ints,
//! slices, `None`, and one boolean mask over one or more dimensions, as
//! torch takes them), lists, tuples, strings and dicts.

use crate::ops::{equal, num};
use crate::tensor::{Scalar, Tensor};
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;
use tilebook_tir::DType;

pub(crate) fn norm_index(i: i64, n: usize) -> R<usize> {
    let j = if i < 0 { i + n as i64 } else { i };
    if j < 0 || j >= n as i64 {
        return Err(Exc::new(
            "IndexError",
            format!("index {i} is out of range for length {n}"),
        ));
    }
    Ok(j as usize)
}

pub(crate) fn slice_bounds(
    a: Option<i64>,
    b: Option<i64>,
    step: Option<i64>,
    n: usize,
) -> R<(usize, usize, usize)> {
    let step = step.unwrap_or(1);
    if step <= 0 {
        return Err(Exc::value_error("slice step must be positive"));
    }
    let clamp = |x: i64| -> usize {
        let x = if x < 0 { x + n as i64 } else { x };
        x.clamp(0, n as i64) as usize
    };
    let lo = a.map(clamp).unwrap_or(0);
    let hi = b.map(clamp).unwrap_or(n);
    Ok((lo, hi.max(lo), step as usize))
}

/// A tensor index resolved: the view its basic parts (ints, slices, `None`)
/// select, and the boolean mask, if any, with the view dimension it starts
/// at (it covers as many dimensions as it has).
struct Resolved {
    view: Tensor,
    mask: Option<(usize, Vec<bool>, usize)>,
}

fn resolve(t: &Tensor, idx: &Val) -> R<Resolved> {
    let parts: Vec<Val> = match idx {
        Val::Tuple(items) => items.to_vec(),
        other => vec![other.clone()],
    };
    let mut out = t.clone();
    let mut dim = 0;
    let mut mask = None;
    let too_many = || Exc::new("IndexError", "too many indices for tensor");
    for p in parts {
        match p {
            Val::Int(i) => {
                if dim >= out.shape.len() {
                    return Err(too_many());
                }
                let j = norm_index(i, out.shape[dim])?;
                out = out.select(dim, j);
            }
            Val::Tensor(ix) if ix.numel() == 1 && ix.dtype.is_int() && ix.dtype != DType::I1 => {
                if dim >= out.shape.len() {
                    return Err(too_many());
                }
                let j = norm_index(ix.get_at(ix.offset).i(), out.shape[dim])?;
                out = out.select(dim, j);
            }
            Val::Tensor(m) if m.dtype == DType::I1 => {
                if mask.is_some() {
                    return Err(Exc::new(
                        "NotImplementedError",
                        "tensor indexing with more than one boolean mask is not supported in tilebook",
                    ));
                }
                let k = m.shape.len();
                if dim + k > out.shape.len() || out.shape[dim..dim + k] != m.shape[..] {
                    return Err(Exc::new(
                        "IndexError",
                        format!(
                            "the shape of the mask {:?} does not match the shape of the indexed tensor {:?} at dimension {dim}",
                            m.shape, out.shape
                        ),
                    ));
                }
                let bits: Vec<bool> = m.values().into_iter().map(|v| v.truth()).collect();
                mask = Some((dim, bits, k));
                dim += k;
            }
            Val::Slice(a, b, s) => {
                if dim >= out.shape.len() {
                    return Err(too_many());
                }
                let (lo, hi, step) = slice_bounds(a, b, s, out.shape[dim])?;
                out = out.slice(dim, lo, hi, step);
                dim += 1;
            }
            Val::None => {
                out = out.unsqueeze(dim);
                dim += 1;
            }
            other => {
                return Err(Exc::new(
                    "NotImplementedError",
                    format!("tensor indexing with {} is not supported in tilebook (use ints, slices, None and boolean masks)", other.type_name()),
                ))
            }
        }
    }
    Ok(Resolved { view: out, mask })
}

impl Resolved {
    /// The selected storage offsets in row-major order, and the shape of
    /// the result (a mask's dimensions become one of its true count).
    fn selection(&self) -> (Vec<usize>, Vec<usize>) {
        let offs = self.view.offsets();
        let Some((at, bits, k)) = &self.mask else {
            return (offs, self.view.shape.clone());
        };
        let shape = &self.view.shape;
        let pre: usize = shape[..*at].iter().product();
        let m = bits.len();
        let post: usize = shape[at + k..].iter().product();
        let chosen: Vec<usize> = (0..m).filter(|&i| bits[i]).collect();
        let mut picked = Vec::with_capacity(pre * chosen.len() * post);
        for p in 0..pre {
            for &c in &chosen {
                for q in 0..post {
                    picked.push(offs[(p * m + c) * post + q]);
                }
            }
        }
        let mut out_shape = shape[..*at].to_vec();
        out_shape.push(chosen.len());
        out_shape.extend_from_slice(&shape[at + k..]);
        (picked, out_shape)
    }
}

fn tensor_index(t: &Tensor, idx: &Val) -> R<Tensor> {
    let r = resolve(t, idx)?;
    if r.mask.is_none() {
        return Ok(r.view);
    }
    let (offs, shape) = r.selection();
    let values: Vec<Scalar> = offs.into_iter().map(|o| r.view.get_at(o)).collect();
    Ok(Tensor::from_scalars(
        &shape,
        t.dtype,
        t.device.clone(),
        values,
    ))
}

pub fn get_item(_s: &mut Engine, base: &Val, idx: &Val) -> R<Val> {
    match (base, idx) {
        (Val::Tensor(t), i) => Ok(Val::tensor(tensor_index(t, i)?)),
        (Val::List(l), Val::Int(i)) => {
            let l = l.borrow();
            Ok(l[norm_index(*i, l.len())?].clone())
        }
        (Val::Tuple(t), Val::Int(i)) => Ok(t[norm_index(*i, t.len())?].clone()),
        (Val::Object(_), Val::Int(i)) if base.named_tuple_items().is_some() => {
            let t = base.named_tuple_items().unwrap_or_default();
            Ok(t[norm_index(*i, t.len())?].clone())
        }
        (Val::Str(s), Val::Int(i)) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(Val::str(&chars[norm_index(*i, chars.len())?].to_string()))
        }
        (Val::List(l), Val::Slice(a, b, st)) => {
            let l = l.borrow();
            let (lo, hi, step) = slice_bounds(*a, *b, *st, l.len())?;
            Ok(Val::list(l[lo..hi].iter().step_by(step).cloned().collect()))
        }
        (Val::Tuple(t), Val::Slice(a, b, st)) => {
            let (lo, hi, step) = slice_bounds(*a, *b, *st, t.len())?;
            Ok(Val::tuple(
                t[lo..hi].iter().step_by(step).cloned().collect(),
            ))
        }
        (Val::Str(s), Val::Slice(a, b, st)) => {
            let chars: Vec<char> = s.chars().collect();
            let (lo, hi, step) = slice_bounds(*a, *b, *st, chars.len())?;
            Ok(Val::str(
                &chars[lo..hi].iter().step_by(step).collect::<String>(),
            ))
        }
        (Val::Dict(d), k) => d
            .borrow()
            .iter()
            .find(|(kk, _)| equal(kk, k))
            .map(|(_, v)| v.clone())
            .ok_or_else(|| Exc::new("KeyError", k.repr())),
        (b, i) => Err(Exc::type_error(format!(
            "'{}' object is not subscriptable with {}",
            b.type_name(),
            i.type_name()
        ))),
    }
}

/// `t[:, ..., :, mask] = number` (whole leading dimensions, then one
/// boolean mask, then whole dimensions): the number of leading dimensions
/// and the mask, when the index has that form.
fn leading_mask(idx: &Val) -> Option<(usize, &Tensor)> {
    let parts: &[Val] = match idx {
        Val::Tuple(items) => items,
        other => std::slice::from_ref(other),
    };
    let whole = |p: &Val| matches!(p, Val::Slice(None, None, None | Some(1)));
    let at = parts.iter().position(|p| !whole(p))?;
    match &parts[at] {
        Val::Tensor(m) if m.dtype == DType::I1 && parts[at + 1..].iter().all(whole) => {
            Some((at, m))
        }
        _ => None,
    }
}

pub fn set_item(s: &mut Engine, base: &Val, idx: &Val, v: Val) -> R<()> {
    if let (Val::Tensor(t), Some((pre, mask)), Some(x)) = (base, leading_mask(idx), num(&v)) {
        if crate::device_ops::masked_fill(s, t, pre, mask, x.f())? {
            return Ok(());
        }
    }
    match (base, idx) {
        (Val::List(l), Val::Int(i)) => {
            let n = l.borrow().len();
            l.borrow_mut()[norm_index(*i, n)?] = v;
            Ok(())
        }
        (Val::Dict(d), k) => {
            let mut d = d.borrow_mut();
            match d.iter_mut().find(|(kk, _)| equal(kk, k)) {
                Some(slot) => slot.1 = v,
                None => d.push((k.clone(), v)),
            }
            Ok(())
        }
        (Val::Tensor(t), i) => {
            let r = resolve(t, i)?;
            let (offs, shape) = r.selection();
            let view = r.view;
            match &v {
                Val::Tensor(src) => {
                    let e = src.expand(&shape).ok_or_else(|| {
                        Exc::new(
                            "RuntimeError",
                            format!(
                                "shape mismatch: a value of shape {:?} cannot be assigned to an index of shape {shape:?}",
                                src.shape
                            ),
                        )
                    })?;
                    for (o, x) in offs.into_iter().zip(e.values()) {
                        view.set_at(o, x);
                    }
                }
                other => {
                    let x = num(other).ok_or_else(|| {
                        Exc::type_error("can only assign numbers or tensors into a tensor")
                    })?;
                    for o in offs {
                        view.set_at(o, x);
                    }
                }
            }
            Ok(())
        }
        (b, _) => Err(Exc::type_error(format!(
            "'{}' object does not support item assignment",
            b.type_name()
        ))),
    }
}
