//! Reading arguments of native functions: tensors, shapes, dtypes.

use crate::tensor::Tensor;
use crate::value::{Exc, Val, R};
use std::rc::Rc;
use tilebook_tir::DType;

pub use crate::value::{to_f64, to_int, Args};

pub fn shape_val(shape: &[usize]) -> Val {
    Val::tuple(shape.iter().map(|&d| Val::Int(d as i64)).collect())
}

pub fn reverse_dims(t: &Tensor) -> Tensor {
    let mut r = t.clone();
    r.shape.reverse();
    r.strides.reverse();
    r
}

pub fn to_tensor(v: &Val) -> R<Rc<Tensor>> {
    match v {
        Val::Tensor(t) => Ok(t.clone()),
        other => Err(Exc::type_error(format!(
            "expected a tensor, got {}",
            other.type_name()
        ))),
    }
}

/// A shape from `(2, 3)`, `[2, 3]` or positional `2, 3`.
pub fn shape_args(vals: &[Val]) -> R<Vec<usize>> {
    if vals.len() == 1 {
        if let Val::Tuple(_) | Val::List(_) = &vals[0] {
            let items: Vec<Val> = match &vals[0] {
                Val::Tuple(t) => t.to_vec(),
                Val::List(l) => l.borrow().clone(),
                _ => vec![],
            };
            return shape_args(&items);
        }
    }
    let shape = vals
        .iter()
        .map(|v| {
            let i = to_int(v)?;
            if i < 0 {
                return Err(Exc::new("RuntimeError", format!("negative dimension {i}")));
            }
            usize::try_from(i)
                .map_err(|_| Exc::new("RuntimeError", format!("dimension {i} is too large")))
        })
        .collect::<R<Vec<usize>>>()?;
    crate::tensor::checked_numel(&shape).map_err(|m| Exc::new("RuntimeError", m))?;
    Ok(shape)
}

pub fn dtype_arg(v: Option<Val>, default: DType) -> R<DType> {
    match v {
        None | Some(Val::None) => Ok(default),
        Some(Val::DType(d, _)) => Ok(d),
        Some(other) => Err(Exc::type_error(format!(
            "dtype must be a torch dtype, got {}",
            other.type_name()
        ))),
    }
}

pub fn tensor_arg(v: &Val, what: &str) -> R<Rc<Tensor>> {
    match v {
        Val::Tensor(t) => Ok(t.clone()),
        other => Err(Exc::type_error(format!(
            "{what}: expected a tensor, got {}",
            other.type_name()
        ))),
    }
}
