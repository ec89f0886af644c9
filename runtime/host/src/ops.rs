//! Host operators: Python semantics on numbers, strings and sequences, torch
//! semantics on tensors (broadcasting, type promotion, views by indexing).

use crate::tensor::{broadcast_shape, promote, Device, Scalar, Tensor};
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;
use ruff_python_ast::{CmpOp, Operator, UnaryOp};
use std::rc::Rc;
use tilebook_kernels::gpu_fault::GpuFault;
use tilebook_tir::DType;

fn op_symbol(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "**",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

pub(crate) fn num(v: &Val) -> Option<Scalar> {
    match v {
        Val::Bool(b) => Some(Scalar::B(*b)),
        Val::Int(i) => Some(Scalar::I(*i)),
        Val::Float(f) => Some(Scalar::F(*f)),
        _ => None,
    }
}

fn floordiv_i(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// Python arithmetic on two numbers.
fn number_op(op: Operator, a: Scalar, b: Scalar) -> R<Val> {
    let float = matches!(a, Scalar::F(_)) || matches!(b, Scalar::F(_));
    let zero_div = || Exc::new("ZeroDivisionError", "division by zero");
    if float {
        let (x, y) = (a.f(), b.f());
        return Ok(Val::Float(match op {
            Operator::Add => x + y,
            Operator::Sub => x - y,
            Operator::Mult => x * y,
            Operator::Div if y == 0.0 => {
                return Err(Exc::new("ZeroDivisionError", "float division by zero"))
            }
            Operator::Div => x / y,
            Operator::FloorDiv if y == 0.0 => return Err(zero_div()),
            Operator::FloorDiv => (x / y).floor(),
            Operator::Mod if y == 0.0 => return Err(zero_div()),
            Operator::Mod => x - y * (x / y).floor(),
            Operator::Pow => x.powf(y),
            _ => {
                return Err(Exc::type_error(format!(
                    "unsupported operand type(s) for {}: 'float'",
                    op_symbol(op)
                )))
            }
        }));
    }
    let (x, y) = (a.i(), b.i());
    let overflow = || {
        Exc::new(
            "OverflowError",
            "integer result does not fit in 64 bits (tilebook ints are 64-bit)",
        )
    };
    let bools = matches!((a, b), (Scalar::B(_), Scalar::B(_)));
    Ok(match op {
        Operator::Add => Val::Int(x.checked_add(y).ok_or_else(overflow)?),
        Operator::Sub => Val::Int(x.checked_sub(y).ok_or_else(overflow)?),
        Operator::Mult => Val::Int(x.checked_mul(y).ok_or_else(overflow)?),
        Operator::Div if y == 0 => return Err(zero_div()),
        Operator::Div => Val::Float(x as f64 / y as f64),
        Operator::FloorDiv if y == 0 => {
            return Err(Exc::new(
                "ZeroDivisionError",
                "integer division or modulo by zero",
            ))
        }
        Operator::FloorDiv => Val::Int(floordiv_i(x, y)),
        Operator::Mod if y == 0 => {
            return Err(Exc::new("ZeroDivisionError", "integer modulo by zero"))
        }
        Operator::Mod => Val::Int(x - y * floordiv_i(x, y)),
        Operator::Pow if y < 0 => Val::Float((x as f64).powf(y as f64)),
        Operator::Pow => Val::Int(
            x.checked_pow(y.min(u32::MAX as i64) as u32)
                .ok_or_else(overflow)?,
        ),
        Operator::LShift => Val::Int(x.checked_shl(y as u32).ok_or_else(overflow)?),
        Operator::RShift => Val::Int(x >> y.min(63)),
        Operator::BitAnd if bools => Val::Bool(x & y != 0),
        Operator::BitOr if bools => Val::Bool(x | y != 0),
        Operator::BitXor if bools => Val::Bool(x ^ y != 0),
        Operator::BitAnd => Val::Int(x & y),
        Operator::BitOr => Val::Int(x | y),
        Operator::BitXor => Val::Int(x ^ y),
        Operator::MatMult => {
            return Err(Exc::type_error("unsupported operand type(s) for @: 'int'"))
        }
    })
}

pub fn binary(s: &mut Engine, op: Operator, l: &Val, r: &Val) -> R<Val> {
    if matches!(l, Val::Tensor(_)) || matches!(r, Val::Tensor(_)) {
        return tensor_binary(s, op, l, r);
    }
    if let (Some(a), Some(b)) = (num(l), num(r)) {
        return number_op(op, a, b);
    }
    match (op, l, r) {
        (Operator::Add, Val::Str(a), Val::Str(b)) => Ok(Val::str(&format!("{a}{b}"))),
        (Operator::Mult, Val::Str(a), Val::Int(n)) | (Operator::Mult, Val::Int(n), Val::Str(a)) => {
            Ok(Val::str(&a.repeat((*n).max(0) as usize)))
        }
        (Operator::Mod, Val::Str(a), v) => crate::format::percent_format(a, v),
        (Operator::Add, Val::List(a), Val::List(b)) => {
            let mut v = a.borrow().clone();
            v.extend(b.borrow().iter().cloned());
            Ok(Val::list(v))
        }
        (Operator::Add, Val::Tuple(a), Val::Tuple(b)) => {
            Ok(Val::tuple(a.iter().chain(b.iter()).cloned().collect()))
        }
        (Operator::Mult, Val::List(a), Val::Int(n))
        | (Operator::Mult, Val::Int(n), Val::List(a)) => {
            let items = a.borrow();
            Ok(Val::list(
                (0..(*n).max(0))
                    .flat_map(|_| items.iter().cloned())
                    .collect(),
            ))
        }
        (Operator::BitOr, Val::Dict(a), Val::Dict(b)) => {
            // `a | b`: a new dict, b's values winning.
            let mut out = a.borrow().clone();
            for (k, v) in b.borrow().iter() {
                match out.iter_mut().find(|(x, _)| equal(x, k)) {
                    Some(slot) => slot.1 = v.clone(),
                    None => out.push((k.clone(), v.clone())),
                }
            }
            Ok(Val::Dict(std::rc::Rc::new(std::cell::RefCell::new(out))))
        }
        (Operator::Mult, Val::Tuple(a), Val::Int(n))
        | (Operator::Mult, Val::Int(n), Val::Tuple(a)) => Ok(Val::tuple(
            (0..(*n).max(0)).flat_map(|_| a.iter().cloned()).collect(),
        )),
        _ => Err(Exc::type_error(format!(
            "unsupported operand type(s) for {}: '{}' and '{}'",
            op_symbol(op),
            l.type_name(),
            r.type_name()
        ))),
    }
}

pub fn unary(op: UnaryOp, v: &Val) -> R<Val> {
    match (op, v) {
        (UnaryOp::Not, v) => Ok(Val::Bool(!v.truth()?)),
        (UnaryOp::UAdd, v) => Ok(v.clone()),
        (UnaryOp::USub, Val::Int(i)) => Ok(Val::Int(-i)),
        (UnaryOp::USub, Val::Bool(b)) => Ok(Val::Int(-(*b as i64))),
        (UnaryOp::USub, Val::Float(f)) => Ok(Val::Float(-f)),
        (UnaryOp::Invert, Val::Int(i)) => Ok(Val::Int(!i)),
        (UnaryOp::USub, Val::Tensor(t)) => Ok(Val::tensor(map_tensor(t, t.dtype, |x| match x {
            Scalar::F(f) => Scalar::F(-f),
            other => Scalar::I(-other.i()),
        }))),
        (UnaryOp::Invert, Val::Tensor(t)) if t.dtype == DType::I1 => {
            Ok(Val::tensor(map_tensor(t, t.dtype, |x| {
                Scalar::B(!x.truth())
            })))
        }
        (UnaryOp::Invert, Val::Tensor(t)) if t.dtype.is_int() => {
            Ok(Val::tensor(map_tensor(t, t.dtype, |x| Scalar::I(!x.i()))))
        }
        (op, v) => Err(Exc::type_error(format!(
            "bad operand type for unary {op:?}: '{}'",
            v.type_name()
        ))),
    }
}

pub fn equal(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::None, Val::None) => true,
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::List(x), Val::List(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| equal(a, b))
        }
        (Val::Tuple(x), Val::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| equal(a, b))
        }
        (Val::DType(x, _), Val::DType(y, _)) => x == y,
        (Val::Device(x), Val::Device(y)) => x == y,
        (Val::Device(d), Val::Str(s)) | (Val::Str(s), Val::Device(d)) => {
            d.to_string() == **s || (matches!(d, Device::Cuda(0)) && &**s == "cuda")
        }
        (Val::Kernel(x), Val::Kernel(y)) => Rc::ptr_eq(x, y),
        (Val::Py(x), Val::Py(y)) => x.same(&**y),
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => match (x, y) {
                (Scalar::F(_), _) | (_, Scalar::F(_)) => x.f() == y.f(),
                _ => x.i() == y.i(),
            },
            _ => false,
        },
    }
}

pub fn compare(s: &mut Engine, op: CmpOp, l: &Val, r: &Val) -> R<Val> {
    if let (Val::Tensor(_), _) | (_, Val::Tensor(_)) = (l, r) {
        if !matches!(op, CmpOp::Is | CmpOp::IsNot | CmpOp::In | CmpOp::NotIn) {
            return tensor_compare(s, op, l, r);
        }
    }
    use std::cmp::Ordering;
    let order = |a: &Val, b: &Val| -> R<Ordering> {
        match (a, b) {
            (Val::Str(x), Val::Str(y)) => Ok(x.cmp(y)),
            _ => match (num(a), num(b)) {
                (Some(x), Some(y)) => x
                    .f()
                    .partial_cmp(&y.f())
                    .ok_or_else(|| Exc::value_error("cannot order NaN")),
                _ => Err(Exc::type_error(format!(
                    "'<' not supported between instances of '{}' and '{}'",
                    a.type_name(),
                    b.type_name()
                ))),
            },
        }
    };
    Ok(Val::Bool(match op {
        CmpOp::Eq => equal(l, r),
        CmpOp::NotEq => !equal(l, r),
        CmpOp::Lt => order(l, r)? == Ordering::Less,
        CmpOp::LtE => order(l, r)? != Ordering::Greater,
        CmpOp::Gt => order(l, r)? == Ordering::Greater,
        CmpOp::GtE => order(l, r)? != Ordering::Less,
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (l, r) {
                (Val::None, Val::None) => true,
                (Val::Bool(a), Val::Bool(b)) => a == b,
                (Val::Tensor(a), Val::Tensor(b)) => Rc::ptr_eq(a, b),
                (Val::List(a), Val::List(b)) => Rc::ptr_eq(a, b),
                (Val::Kernel(a), Val::Kernel(b)) => Rc::ptr_eq(a, b),
                (Val::DType(a, _), Val::DType(b, _)) => a == b,
                _ => false,
            };
            same == (op == CmpOp::Is)
        }
        CmpOp::In | CmpOp::NotIn => {
            let found = match r {
                Val::List(v) => v.borrow().iter().any(|x| equal(x, l)),
                Val::Tuple(v) => v.iter().any(|x| equal(x, l)),
                Val::Dict(d) => d.borrow().iter().any(|(k, _)| equal(k, l)),
                Val::Str(h) => match l {
                    Val::Str(n) => h.contains(&**n),
                    _ => {
                        return Err(Exc::type_error(
                            "'in <string>' requires string as left operand",
                        ))
                    }
                },
                Val::Range(..) => s.iterate(r)?.iter().any(|x| equal(x, l)),
                other => {
                    return Err(Exc::type_error(format!(
                        "argument of type '{}' is not iterable",
                        other.type_name()
                    )))
                }
            };
            found == (op == CmpOp::In)
        }
    }))
}

// ---------------------------------------------------------------- tensors

/// Elementwise map into a new contiguous tensor of dtype `d`.
pub fn map_tensor(t: &Tensor, d: DType, f: impl Fn(Scalar) -> Scalar) -> Tensor {
    let vals = t.values();
    Tensor::from_scalars(&t.shape, d, t.device.clone(), vals.into_iter().map(f))
}

/// A host value as a tensor operand: tensors as they are, numbers weakly typed.
enum Operand {
    T(Rc<Tensor>),
    S(Scalar),
}

fn operand(v: &Val) -> R<Operand> {
    match v {
        Val::Tensor(t) => Ok(Operand::T(t.clone())),
        other => num(other).map(Operand::S).ok_or_else(|| {
            Exc::type_error(format!(
                "unsupported operand type for a tensor operation: '{}'",
                other.type_name()
            ))
        }),
    }
}

fn scalar_kind(s: Scalar) -> DType {
    match s {
        Scalar::B(_) => DType::I1,
        Scalar::I(_) => DType::I64,
        Scalar::F(_) => DType::F32,
    }
}

/// torch's result type of a binary op (Python scalars participate weakly).
fn result_dtype(a: &Operand, b: &Operand) -> DType {
    let cat = |d: DType| {
        if d == DType::I1 {
            0
        } else if d.is_int() {
            1
        } else {
            2
        }
    };
    match (a, b) {
        (Operand::T(x), Operand::T(y)) => {
            if x.shape.is_empty() != y.shape.is_empty() {
                // A 0-d tensor joins like a scalar of its category.
                let (dim, zero) = if x.shape.is_empty() {
                    (y.dtype, x.dtype)
                } else {
                    (x.dtype, y.dtype)
                };
                if cat(zero) <= cat(dim) {
                    return dim;
                }
            }
            promote(x.dtype, y.dtype)
        }
        (Operand::T(t), Operand::S(s)) | (Operand::S(s), Operand::T(t)) => {
            let sk = scalar_kind(*s);
            if cat(sk) <= cat(t.dtype) {
                t.dtype
            } else if cat(sk) == 2 {
                DType::F32
            } else {
                DType::I64
            }
        }
        (Operand::S(x), Operand::S(y)) => promote(scalar_kind(*x), scalar_kind(*y)),
    }
}

/// torch's result type of two host values (tensors, or Python numbers that
/// join weakly): `torch.where`'s and `torch.result_type`'s rule.
pub(crate) fn result_type(a: &Val, b: &Val) -> R<DType> {
    Ok(result_dtype(&operand(a)?, &operand(b)?))
}

fn broadcast_operands(a: &Operand, b: &Operand) -> R<(Vec<usize>, Device)> {
    let shape_of = |o: &Operand| match o {
        Operand::T(t) => t.shape.clone(),
        Operand::S(_) => vec![],
    };
    let (sa, sb) = (shape_of(a), shape_of(b));
    let shape = broadcast_shape(&sa, &sb).ok_or_else(|| {
        Exc::new("RuntimeError", format!("The size of tensor a ({:?}) must match the size of tensor b ({:?}) at a non-singleton dimension", sa, sb))
    })?;
    let n = crate::tensor::checked_numel(&shape).map_err(|m| Exc::new("RuntimeError", m))?;
    crate::tensor::ensure_host_room(n, 16).map_err(|m| Exc::new("MemoryError", m))?;
    let device = match (a, b) {
        (Operand::T(t), _) | (_, Operand::T(t)) => t.device.clone(),
        _ => Device::Cpu,
    };
    Ok((shape, device))
}

fn values_for(o: &Operand, shape: &[usize]) -> R<Vec<Scalar>> {
    match o {
        Operand::S(s) => Ok(vec![*s; shape.iter().product()]),
        Operand::T(t) => {
            let e = t
                .expand(shape)
                .ok_or_else(|| Exc::new("RuntimeError", "cannot broadcast"))?;
            Ok(e.values())
        }
    }
}

fn fast_f32(a: &Operand, b: &Operand) -> Option<(Rc<Tensor>, Rc<Tensor>)> {
    match (a, b) {
        (Operand::T(x), Operand::T(y))
            if x.dtype == DType::F32
                && y.dtype == DType::F32
                && x.shape == y.shape
                && x.is_contiguous()
                && y.is_contiguous() =>
        {
            Some((x.clone(), y.clone()))
        }
        _ => None,
    }
}

fn tensor_binary(s: &mut Engine, op: Operator, l: &Val, r: &Val) -> R<Val> {
    if op == Operator::MatMult {
        return match (l, r) {
            (Val::Tensor(a), Val::Tensor(b)) => Ok(Val::tensor(matmul(s, a, b)?)),
            _ => Err(Exc::type_error("@ needs two tensors")),
        };
    }
    let (a, b) = (operand(l)?, operand(r)?);
    let mut d = result_dtype(&a, &b);
    if op == Operator::Div && d.is_int() {
        d = DType::F32;
    }
    let (shape, device) = broadcast_operands(&a, &b)?;
    if let Some(name) = match op {
        Operator::Add => Some("add"),
        Operator::Sub => Some("sub"),
        Operator::Mult => Some("mul"),
        Operator::Div => Some("div"),
        _ => None,
    } {
        use crate::device_ops::{binary, Other};
        let done = match (&a, &b) {
            (Operand::T(x), Operand::T(y)) => {
                binary(s, name, x, Other::Tensor(y), false, &shape, d)?
            }
            (Operand::T(x), Operand::S(v)) => {
                binary(s, name, x, Other::Scalar(v.f()), false, &shape, d)?
            }
            (Operand::S(v), Operand::T(y)) => {
                binary(s, name, y, Other::Scalar(v.f()), true, &shape, d)?
            }
            _ => None,
        };
        if let Some(v) = done {
            return Ok(v);
        }
    }
    // Fast path for the common contiguous fp32 case.
    if let (Some((x, y)), true) = (
        fast_f32(&a, &b),
        matches!(
            op,
            Operator::Add | Operator::Sub | Operator::Mult | Operator::Div
        ),
    ) {
        let out = Tensor::empty(&shape, DType::F32, device);
        let n = out.numel();
        // SAFETY: all three are contiguous fp32 tensors of n elements.
        unsafe {
            let xs = std::slice::from_raw_parts((x.storage.ptr() as *const f32).add(x.offset), n);
            let ys = std::slice::from_raw_parts((y.storage.ptr() as *const f32).add(y.offset), n);
            let os = std::slice::from_raw_parts_mut(out.storage.ptr() as *mut f32, n);
            for i in 0..n {
                os[i] = match op {
                    Operator::Add => xs[i] + ys[i],
                    Operator::Sub => xs[i] - ys[i],
                    Operator::Mult => xs[i] * ys[i],
                    _ => xs[i] / ys[i],
                };
            }
        }
        return Ok(Val::tensor(out));
    }
    let va = values_for(&a, &shape)?;
    let vb = values_for(&b, &shape)?;
    let float = d.is_float();
    let mut out = Vec::with_capacity(va.len());
    for (x, y) in va.into_iter().zip(vb) {
        let v = if float {
            let (x, y) = (x.f(), y.f());
            Scalar::F(match op {
                Operator::Add => x + y,
                Operator::Sub => x - y,
                Operator::Mult => x * y,
                Operator::Div => x / y,
                Operator::Pow => x.powf(y),
                Operator::FloorDiv => (x / y).floor(),
                Operator::Mod => x - y * (x / y).floor(),
                _ => {
                    return Err(Exc::type_error(format!(
                        "operator {} needs integer tensors",
                        op_symbol(op)
                    )))
                }
            })
        } else {
            let (x, y) = (x.i(), y.i());
            let zero = || {
                Exc::new(
                    "RuntimeError",
                    "ZeroDivisionError in an integer tensor operation",
                )
            };
            let v = match op {
                Operator::Add => x.wrapping_add(y),
                Operator::Sub => x.wrapping_sub(y),
                Operator::Mult => x.wrapping_mul(y),
                Operator::FloorDiv if y == 0 => return Err(zero()),
                Operator::FloorDiv => floordiv_i(x, y),
                Operator::Mod if y == 0 => return Err(zero()),
                Operator::Mod => x - y * floordiv_i(x, y),
                Operator::Pow => x.wrapping_pow(y.max(0) as u32),
                Operator::BitAnd => x & y,
                Operator::BitOr => x | y,
                Operator::BitXor => x ^ y,
                Operator::LShift => x.wrapping_shl(y as u32),
                Operator::RShift => x >> y.clamp(0, 63),
                _ => unreachable!("division was promoted to float"),
            };
            if d == DType::I1 {
                Scalar::B(v != 0)
            } else {
                Scalar::I(v)
            }
        };
        out.push(v);
    }
    Ok(Val::tensor(Tensor::from_scalars(&shape, d, device, out)))
}

fn tensor_compare(s: &mut Engine, op: CmpOp, l: &Val, r: &Val) -> R<Val> {
    let (a, b) = (operand(l)?, operand(r)?);
    let (shape, device) = broadcast_operands(&a, &b)?;
    let name = match op {
        CmpOp::Eq => Some("eq"),
        CmpOp::NotEq => Some("ne"),
        CmpOp::Lt => Some("lt"),
        CmpOp::LtE => Some("le"),
        CmpOp::Gt => Some("gt"),
        CmpOp::GtE => Some("ge"),
        _ => None,
    };
    if let Some(name) = name {
        use crate::device_ops::{compare, Other};
        let done = match (&a, &b) {
            (Operand::T(x), Operand::T(y)) if x.dtype == y.dtype => {
                compare(s, name, x, Other::Tensor(y), false, &shape)?
            }
            (Operand::T(x), Operand::S(v)) => {
                compare(s, name, x, Other::Scalar(v.f()), false, &shape)?
            }
            (Operand::S(v), Operand::T(y)) => {
                compare(s, name, y, Other::Scalar(v.f()), true, &shape)?
            }
            _ => None,
        };
        if let Some(v) = done {
            return Ok(v);
        }
    }
    let float = result_dtype(&a, &b).is_float();
    let va = values_for(&a, &shape)?;
    let vb = values_for(&b, &shape)?;
    let out = va.into_iter().zip(vb).map(|(x, y)| {
        let ord = if float {
            x.f().partial_cmp(&y.f())
        } else {
            Some(x.i().cmp(&y.i()))
        };
        use std::cmp::Ordering::*;
        Scalar::B(match (op, ord) {
            (CmpOp::Eq, o) => o == Some(Equal),
            (CmpOp::NotEq, o) => o != Some(Equal),
            (CmpOp::Lt, o) => o == Some(Less),
            (CmpOp::LtE, o) => matches!(o, Some(Less | Equal)),
            (CmpOp::Gt, o) => o == Some(Greater),
            (CmpOp::GtE, o) => matches!(o, Some(Greater | Equal)),
            _ => false,
        })
    });
    Ok(Val::tensor(Tensor::from_scalars(
        &shape,
        DType::I1,
        device,
        out.collect::<Vec<_>>(),
    )))
}

/// `a @ b` for 1-D and 2-D tensors, accumulating in f32 (f64 for f64), like torch on the CPU.
pub fn matmul(s: &mut Engine, a: &Tensor, b: &Tensor) -> R<Tensor> {
    if a.shape.len() > 2 || b.shape.len() > 2 {
        return matmul_batched(s, a, b);
    }
    matmul_2d(s, a, b)
}

/// `a @ b` with batch dimensions, as torch broadcasts them: a 1-D operand
/// gains (then loses) a matrix dimension, the leading dims broadcast, and
/// each batch entry is a 2-D product.
fn matmul_batched(s: &mut Engine, a: &Tensor, b: &Tensor) -> R<Tensor> {
    let a1 = a.shape.len() == 1;
    let b1 = b.shape.len() == 1;
    let a3 = if a1 { a.unsqueeze(0) } else { a.clone() };
    let b3 = if b1 { b.unsqueeze(1) } else { b.clone() };
    let (ra, rb) = (a3.shape.len(), b3.shape.len());
    let (m, k) = (a3.shape[ra - 2], a3.shape[ra - 1]);
    let (k2, n) = (b3.shape[rb - 2], b3.shape[rb - 1]);
    if k != k2 {
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "matmul: shapes {:?} and {:?} cannot be multiplied ({m}x{k} and {k2}x{n})",
                a.shape, b.shape
            ),
        ));
    }
    let (ba, bb) = (&a3.shape[..ra - 2], &b3.shape[..rb - 2]);
    let rank = ba.len().max(bb.len());
    let mut batch = vec![0usize; rank];
    for d in 0..rank {
        let x = if d + ba.len() >= rank {
            ba[d + ba.len() - rank]
        } else {
            1
        };
        let y = if d + bb.len() >= rank {
            bb[d + bb.len() - rank]
        } else {
            1
        };
        batch[d] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Exc::new(
                    "RuntimeError",
                    format!(
                        "matmul: batch dimensions of {:?} and {:?} do not broadcast",
                        a.shape, b.shape
                    ),
                ))
            }
        };
    }
    let mut full_a = batch.clone();
    full_a.extend([m, k]);
    let mut full_b = batch.clone();
    full_b.extend([k, n]);
    let too_big = || Exc::new("RuntimeError", "matmul: the broadcast batch is too large");
    let ea = a3.expand(&full_a).ok_or_else(too_big)?;
    let eb = b3.expand(&full_b).ok_or_else(too_big)?;
    let count = crate::tensor::checked_numel(&batch).map_err(|e| Exc::new("RuntimeError", e))?;
    let mut out_shape = batch.clone();
    out_shape.extend([m, n]);
    let total =
        crate::tensor::checked_numel(&out_shape).map_err(|e| Exc::new("RuntimeError", e))?;
    let entry = |flat: usize| {
        let (mut x, mut y) = (ea.clone(), eb.clone());
        let mut rest = flat;
        let mut index = vec![0usize; rank];
        for d in (0..rank).rev() {
            index[d] = rest % batch[d];
            rest /= batch[d];
        }
        for &i in &index {
            x = x.select(0, i);
            y = y.select(0, i);
        }
        (x, y)
    };
    // On a GPU every entry's product goes through cuBLAS into one device
    // tensor (no trip through host memory).
    let on_gpu = matches!(s.backend, crate::Backend::Cuda(_))
        && a.device == b.device
        && matches!(a.device, Device::Cuda(_))
        && a.dtype == b.dtype
        && matches!(a.dtype, DType::F16 | DType::BF16 | DType::F32)
        && total > 0
        && k > 0;
    if on_gpu {
        let out = s.new_tensor(&out_shape, a.dtype, a.device.clone(), false)?;
        let mut all = true;
        for flat in 0..count {
            let (x, y) = entry(flat);
            if cublas_gemm(s, &x, &y, (m, n, k), Some((&out, flat * m * n)))?.is_none() {
                all = false;
                break;
            }
        }
        if all {
            let mut shape = out_shape.clone();
            if b1 {
                shape.pop();
            }
            if a1 {
                shape.remove(shape.len() - if b1 { 1 } else { 2 });
            }
            return Ok(out.view(&shape).unwrap_or(out));
        }
    }
    // Each product is written into the output as it is made, so only one
    // product besides the output is in memory at a time.
    let out = Tensor::try_empty(&out_shape, a.dtype, a.device.clone())
        .map_err(|(kind, m)| Exc::new(kind, format!("matmul: {m}")))?;
    for flat in 0..count {
        let (x, y) = entry(flat);
        let part = matmul_2d(s, &x, &y)?;
        for (j, v) in part.values().into_iter().enumerate() {
            out.set_flat(flat * m * n + j, v);
        }
    }
    let mut shape = out_shape;
    if b1 {
        shape.pop();
    }
    if a1 {
        shape.remove(shape.len() - if b1 { 1 } else { 2 });
    }
    Ok(out.view(&shape).unwrap_or(out))
}

fn matmul_2d(s: &mut Engine, a: &Tensor, b: &Tensor) -> R<Tensor> {
    let a2 = if a.shape.len() == 1 {
        a.unsqueeze(0)
    } else {
        a.clone()
    };
    let b2 = if b.shape.len() == 1 {
        b.unsqueeze(1)
    } else {
        b.clone()
    };
    if a2.shape.len() != 2 || b2.shape.len() != 2 {
        return Err(Exc::new(
            "NotImplementedError",
            "tilebook's matmul supports 1-D and 2-D tensors",
        ));
    }
    let (m, k) = (a2.shape[0], a2.shape[1]);
    let (k2, n) = (b2.shape[0], b2.shape[1]);
    if k != k2 {
        return Err(Exc::new(
            "RuntimeError",
            format!("mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})"),
        ));
    }
    if a.dtype != b.dtype {
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "expected both matmul operands to have the same dtype, got {} and {}",
                crate::tensor::torch_name(a.dtype),
                crate::tensor::torch_name(b.dtype)
            ),
        ));
    }
    let d = a.dtype;
    let mn = crate::tensor::checked_numel(&[m, n]).map_err(|e| Exc::new("RuntimeError", e))?;
    crate::tensor::ensure_host_room(mn, 24).map_err(|e| Exc::new("MemoryError", e))?;
    if let Some(t) = cublas_matmul(s, &a2, &b2, (m, n, k))? {
        return Ok(if b.shape.len() == 1 {
            t.view(&[m]).unwrap_or(t)
        } else if a.shape.len() == 1 {
            t.view(&[n]).unwrap_or(t)
        } else {
            t
        });
    }
    let mut shape = vec![m, n];
    if b.shape.len() == 1 {
        shape.pop();
    }
    if a.shape.len() == 1 {
        shape.remove(0);
    }
    if d == DType::F64 || d.is_int() {
        let av = a2.values_f64();
        let bv = b2.values_f64();
        let mut out = vec![0f64; m * n];
        for i in 0..m {
            for p in 0..k {
                let x = av[i * k + p];
                for j in 0..n {
                    out[i * n + j] += x * bv[p * n + j];
                }
            }
        }
        let float = d.is_float();
        return Ok(Tensor::from_scalars(
            &shape,
            d,
            a.device.clone(),
            out.into_iter().map(|x| {
                if float {
                    Scalar::F(x)
                } else {
                    Scalar::I(x as i64)
                }
            }),
        ));
    }
    // fp32 and narrower: fp32 products in the CPU backend's `tl.dot` order,
    // on every core.
    let av = a2.values_f32();
    let bv = b2.values_f32();
    let mut out = vec![0f32; m * n];
    tilebook_cpu::runtime::matmul_parallel(&av, &bv, &mut out, m, n, k);
    Ok(Tensor::from_f32s(&shape, d, a.device.clone(), &out))
}

// ---------------------------------------------------------------- indexing

/// `a @ b` through cuBLAS when both are fp16, bf16 or fp32 `'cuda'`
/// tensors of a session on a GPU (`None` otherwise: the host computes it).
fn cublas_matmul(
    s: &mut Engine,
    a: &Tensor,
    b: &Tensor,
    dims: (usize, usize, usize),
) -> R<Option<Tensor>> {
    cublas_gemm(s, a, b, dims, None)
}

/// `torch.matmul(a, b, out=out)` straight from cuBLAS into `out`: both
/// operands 2-D, `out` a contiguous GPU tensor of the product's shape and
/// dtype. False when that does not apply (the caller copies instead).
pub fn matmul_into(s: &mut Engine, a: &Tensor, b: &Tensor, out: &Tensor) -> R<bool> {
    let (m, k, n) = match (a.shape.as_slice(), b.shape.as_slice()) {
        ([m, k], [k2, n]) if k == k2 => (*m, *k, *n),
        _ => return Ok(false),
    };
    if out.shape != [m, n]
        || out.dtype != a.dtype
        || b.dtype != a.dtype
        || !out.is_contiguous()
        || out.device != a.device
        || std::rc::Rc::ptr_eq(&out.storage, &a.storage)
        || std::rc::Rc::ptr_eq(&out.storage, &b.storage)
    {
        return Ok(false);
    }
    Ok(cublas_gemm(s, a, b, (m, n, k), Some((out, 0)))?.is_some())
}

/// `cublas_matmul`, writing the `m x n` product into the contiguous GPU
/// tensor `into.0` from element `into.1` on when given (a batch entry of a
/// batched product), else into a new tensor.
fn cublas_gemm(
    s: &mut Engine,
    a: &Tensor,
    b: &Tensor,
    (m, n, k): (usize, usize, usize),
    into: Option<(&Tensor, usize)>,
) -> R<Option<Tensor>> {
    use tilebook_cuda::{BlasType, Operand};
    if !matches!(s.backend, crate::Backend::Cuda(_)) {
        return Ok(None);
    }
    if let (Device::Cuda(x), Device::Cuda(y)) = (&a.device, &b.device) {
        if x != y {
            return Err(Exc::new(
                "RuntimeError",
                format!("Expected all tensors to be on the same device, but found at least two devices, cuda:{x} and cuda:{y}!"),
            ));
        }
    }
    let t = match a.dtype {
        DType::F16 => BlasType::F16,
        DType::BF16 => BlasType::BF16,
        DType::F32 => BlasType::F32,
        _ => return Ok(None),
    };
    if !matches!(a.device, Device::Cuda(_))
        || !matches!(b.device, Device::Cuda(_))
        || m * n * k == 0
    {
        return Ok(None);
    }
    // Row-major C = A B is column-major C^T = B^T A^T. An operand whose rows
    // are contiguous is its transpose in column-major terms; one whose
    // columns are contiguous is used transposed.
    let operand = |t: &Tensor| -> R<Option<(Tensor, bool, i32)>> {
        let (s0, s1) = (t.strides[0], t.strides[1]);
        if s1 == 1 || t.shape[1] == 1 {
            Ok(Some((t.clone(), false, s0.max(t.shape[1] as isize) as i32)))
        } else if s0 == 1 || t.shape[0] == 1 {
            Ok(Some((t.clone(), true, s1.max(t.shape[0] as isize) as i32)))
        } else {
            Ok(Some((t.contiguous(), false, t.shape[1] as i32)))
        }
    };
    let (Some((a, ta, lda)), Some((b, tb, ldb))) = (operand(a)?, operand(b)?) else {
        return Ok(None);
    };
    let Some(g) = s.gpu_of(&a.device)? else {
        return Ok(None);
    };
    let (out, at) = match into {
        Some((t, at)) => (t.clone(), at),
        None => (s.new_tensor(&[m, n], a.dtype, a.device.clone(), false)?, 0),
    };
    let addr = |s: &mut Engine, x: &Tensor| -> R<u64> {
        let base = x
            .storage
            .device_address(&g)
            .map_err(|e| s.gpu_failure(Exc::new("RuntimeError", e)))?;
        Ok(base + (x.offset * x.dtype.size_bytes()) as u64)
    };
    let pc = addr(s, &out)? + (at * out.dtype.size_bytes()) as u64;
    let (pa, pb) = (addr(s, &a)?, addr(s, &b)?);
    g.gemm(
        t,
        (n as i32, m as i32, k as i32),
        Operand {
            ptr: pb,
            trans: tb,
            ld: ldb,
        },
        Operand {
            ptr: pa,
            trans: ta,
            ld: lda,
        },
        pc,
        n as i32,
    )
    .map_err(|e| s.gpu_failure(Exc::new("RuntimeError", format!("torch.matmul: {e}"))))?;
    out.storage.mark_device_written();
    Ok(Some(out))
}
