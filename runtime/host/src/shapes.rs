//! The shapes that `view`, `reshape` and their kin are given: sizes as
//! separate arguments or as one tuple or list, one `-1` inferred.

use crate::args::{to_int, Args};
use crate::tensor::Tensor;
use crate::value::{Exc, Val, R};

/// The shape `t.reshape(...)` or `t.view(...)` names, its `-1` inferred
/// from the element count.
pub(crate) fn reshape_shape(t: &Tensor, a: &Args) -> R<Vec<usize>> {
    let mut dims = reshape_dims(a)?;
    if let Some(&d) = dims.iter().find(|&&d| d < -1) {
        return Err(Exc::new(
            "RuntimeError",
            format!("invalid shape dimension {d}"),
        ));
    }
    if dims.iter().filter(|&&d| d == -1).count() > 1 {
        return Err(Exc::new(
            "RuntimeError",
            "only one dimension can be inferred",
        ));
    }
    let known: i64 = dims
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1i64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| {
            Exc::new(
                "RuntimeError",
                format!("shape {dims:?} has too many elements"),
            )
        })?;
    if let Some(p) = dims.iter().position(|&d| d == -1) {
        if known == 0 || t.numel() as i64 % known != 0 {
            return Err(Exc::new(
                "RuntimeError",
                format!("shape {dims:?} is invalid for input of size {}", t.numel()),
            ));
        }
        dims[p] = t.numel() as i64 / known;
    }
    let shape: Vec<usize> = dims.iter().map(|&d| d.max(0) as usize).collect();
    if crate::tensor::checked_numel(&shape).ok() != Some(t.numel()) {
        return Err(Exc::new(
            "RuntimeError",
            format!("shape {shape:?} is invalid for input of size {}", t.numel()),
        ));
    }
    Ok(shape)
}

/// The integers of a shape argument list (one tuple or list, or the
/// arguments themselves).
pub(crate) fn reshape_dims(a: &Args) -> R<Vec<i64>> {
    let vals: Vec<Val> = if a.pos.len() == 1 {
        match &a.pos[0] {
            Val::Tuple(x) => x.to_vec(),
            Val::List(l) => l.borrow().clone(),
            other => vec![other.clone()],
        }
    } else {
        a.pos.clone()
    };
    vals.iter().map(to_int).collect()
}
