//! Indexing of host values: `t[...]` and `t[...] = v` for tensors (ints,
//! slices, `None`, `...`, and one boolean mask over one or more dimensions
//! or one integer index tensor, as torch takes them), lists, tuples, strings and dicts.

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

fn is_ellipsis(v: &Val) -> bool {
    matches!(v, Val::Py(_)) && matches!(v.type_name().as_str(), "ellipsis" | "EllipsisType")
}

/// `...` in an index stands for as many whole slices as the dimensions the
/// other parts leave (`None` takes none, a boolean mask as many as it has).
fn expand_ellipsis(parts: Vec<Val>, rank: usize) -> R<Vec<Val>> {
    let Some(at) = parts.iter().position(is_ellipsis) else {
        return Ok(parts);
    };
    if parts[at + 1..].iter().any(is_ellipsis) {
        return Err(Exc::new(
            "IndexError",
            "an index can only have a single ellipsis ('...')",
        ));
    }
    let used: usize = parts
        .iter()
        .map(|p| match p {
            Val::None => 0,
            Val::Tensor(m) if m.dtype == DType::I1 => m.shape.len(),
            p if is_ellipsis(p) => 0,
            _ => 1,
        })
        .sum();
    let fill = rank.saturating_sub(used);
    let mut out = parts[..at].to_vec();
    out.extend(std::iter::repeat_n(Val::Slice(None, None, None), fill));
    out.extend_from_slice(&parts[at + 1..]);
    Ok(out)
}

/// The one advanced part of an index: a boolean mask over `k` dimensions
/// of the view from `at`, or an integer tensor (or list) over one. `chosen`
/// are the picked positions of those dimensions flattened, `dims` the shape
/// they become in the result (a mask's true count, an index tensor's shape).
struct Advanced {
    at: usize,
    k: usize,
    chosen: Vec<usize>,
    dims: Vec<usize>,
}

/// A tensor index resolved: the view its basic parts (ints, slices, `None`)
/// select, and the advanced part, if any.
struct Resolved {
    view: Tensor,
    mask: Option<Advanced>,
}

/// An integer tensor or a list of ints used as an index of a dimension of
/// length `n`: the positions and the shape of the index.
fn int_index(v: &Val, n: usize) -> R<Option<(Vec<usize>, Vec<usize>)>> {
    let (raw, shape): (Vec<i64>, Vec<usize>) = match v {
        Val::Tensor(ix) if ix.dtype.is_int() && ix.dtype != DType::I1 => (
            ix.values().into_iter().map(|x| x.i()).collect(),
            ix.shape.clone(),
        ),
        Val::List(l) => {
            let l = l.borrow();
            let mut raw = Vec::with_capacity(l.len());
            for x in l.iter() {
                match x {
                    Val::Int(i) => raw.push(*i),
                    _ => return Ok(None),
                }
            }
            let len = raw.len();
            (raw, vec![len])
        }
        _ => return Ok(None),
    };
    let picked = raw
        .into_iter()
        .map(|i| {
            norm_index(i, n).map_err(|_| {
                Exc::new(
                    "IndexError",
                    format!("index {i} is out of bounds for dimension with size {n}"),
                )
            })
        })
        .collect::<R<Vec<usize>>>()?;
    Ok(Some((picked, shape)))
}

fn resolve(t: &Tensor, idx: &Val) -> R<Resolved> {
    let parts = expand_ellipsis(
        match idx {
            Val::Tuple(items) => items.to_vec(),
            other => vec![other.clone()],
        },
        t.shape.len(),
    )?;
    let mut out = t.clone();
    let mut dim = 0;
    let mut mask = None;
    let too_many = || Exc::new("IndexError", "too many indices for tensor");
    let more_than_one = || {
        Exc::new(
            "NotImplementedError",
            "tensor indexing with more than one boolean mask or index tensor is not supported in tilebook",
        )
    };
    for p in parts {
        match p {
            Val::Int(i) => {
                if dim >= out.shape.len() {
                    return Err(too_many());
                }
                let j = norm_index(i, out.shape[dim])?;
                out = out.select(dim, j);
            }
            Val::Tensor(ix) if ix.shape.is_empty() && ix.dtype.is_int() && ix.dtype != DType::I1 => {
                if dim >= out.shape.len() {
                    return Err(too_many());
                }
                let j = norm_index(ix.get_at(ix.offset).i(), out.shape[dim])?;
                out = out.select(dim, j);
            }
            Val::Tensor(m) if m.dtype == DType::I1 => {
                if mask.is_some() {
                    return Err(more_than_one());
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
                let chosen: Vec<usize> = m
                    .values()
                    .into_iter()
                    .enumerate()
                    .filter(|(_, v)| v.truth())
                    .map(|(i, _)| i)
                    .collect();
                let dims = vec![chosen.len()];
                mask = Some(Advanced { at: dim, k, chosen, dims });
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
            p @ (Val::Tensor(_) | Val::List(_)) => {
                if dim >= out.shape.len() {
                    return Err(too_many());
                }
                let Some((chosen, dims)) = int_index(&p, out.shape[dim])? else {
                    return Err(Exc::new(
                        "IndexError",
                        "tensors used as indices must be long, int, byte or bool tensors",
                    ));
                };
                if mask.is_some() {
                    return Err(more_than_one());
                }
                mask = Some(Advanced { at: dim, k: 1, chosen, dims });
                dim += 1;
            }
            other if other.type_name() == "slice" => {
                return Err(Exc::type_error(
                    "slice indices must be integers or None or have an __index__ method",
                ))
            }
            other => {
                return Err(Exc::new(
                    "NotImplementedError",
                    format!("tensor indexing with {} is not supported in tilebook (use ints, slices, None, one boolean mask or one integer index tensor)", other.type_name()),
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
        let Some(adv) = &self.mask else {
            return (offs, self.view.shape.clone());
        };
        let shape = &self.view.shape;
        let (at, k) = (adv.at, adv.k);
        let pre: usize = shape[..at].iter().product();
        let m: usize = shape[at..at + k].iter().product();
        let post: usize = shape[at + k..].iter().product();
        let mut picked = Vec::with_capacity(pre * adv.chosen.len() * post);
        for p in 0..pre {
            for &c in &adv.chosen {
                for q in 0..post {
                    picked.push(offs[(p * m + c) * post + q]);
                }
            }
        }
        let mut out_shape = shape[..at].to_vec();
        out_shape.extend_from_slice(&adv.dims);
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
