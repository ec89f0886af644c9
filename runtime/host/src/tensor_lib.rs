//! The tensor library behind `torch.*` and tensor methods: creation
//! (random numbers included), reductions with `dim`/`keepdim`, softmax,
//! cumsum, allclose, elementwise math.

use crate::args::{dtype_arg, shape_args, to_f64, to_int, to_tensor, Args};
use crate::ops::map_tensor;
use crate::tensor::{Device, Scalar, Tensor};
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;
use tilebook_tir::DType;

pub fn parse_device(s: &str) -> R<Device> {
    match s {
        "cpu" => Ok(Device::Cpu),
        "cuda" => Ok(Device::Cuda(0)),
        s if s.starts_with("cuda:") => s[5..]
            .parse()
            .map(Device::Cuda)
            .map_err(|_| Exc::new("RuntimeError", format!("Invalid device string: '{s}'"))),
        _ => Err(Exc::new(
            "RuntimeError",
            format!("Expected one of cpu, cuda device type at start of device string: {s}"),
        )),
    }
}

/// Nested lists of numbers → (shape, values, any float, any bool).
pub fn flatten_data(v: &Val, shape: &mut Vec<usize>, depth: usize, out: &mut Vec<Scalar>) -> R<()> {
    let items: Option<Vec<Val>> = match v {
        Val::List(l) => Some(l.borrow().clone()),
        Val::Tuple(t) => Some(t.to_vec()),
        _ => None,
    };
    match items {
        Some(items) => {
            if shape.len() <= depth {
                shape.push(items.len());
            } else if shape[depth] != items.len() {
                return Err(Exc::value_error("expected a rectangular nested sequence"));
            }
            for it in &items {
                flatten_data(it, shape, depth + 1, out)?;
            }
            Ok(())
        }
        None => {
            out.push(match v {
                Val::Bool(b) => Scalar::B(*b),
                Val::Int(i) => Scalar::I(*i),
                Val::Float(f) => Scalar::F(*f),
                Val::Tensor(t) if t.numel() == 1 => t.get_at(t.offset),
                other => {
                    return Err(Exc::type_error(format!(
                        "cannot make a tensor from {}",
                        other.type_name()
                    )))
                }
            });
            Ok(())
        }
    }
}

#[derive(Copy, Clone, PartialEq)]
pub enum Red {
    Sum,
    Mean,
    Max,
    Min,
    ArgMax,
    ArgMin,
    All,
    Any,
    /// Variance with Bessel's `correction` (`std` when `sqrt`).
    Var {
        correction: f64,
        sqrt: bool,
    },
}

/// Reduce over one dimension (or all): returns (values, indices).
pub fn reduce(
    t: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
    kind: Red,
) -> R<(Tensor, Option<Tensor>)> {
    let r = t.shape.len();
    if dim.is_none() && r > 0 && t.numel() > 0 && matches!(kind, Red::Sum | Red::Mean) {
        // The whole of a contiguous fp32 tensor: summed in place, in the
        // same order and precision as the general loop below.
        if let Some(sum) = t.with_f32(|x| x.iter().map(|&v| v as f64).sum::<f64>()) {
            let v = if kind == Red::Mean {
                sum / t.numel() as f64
            } else {
                sum
            };
            let shape = if keepdim { vec![1; r] } else { vec![] };
            let d = t.device.clone();
            return Ok((
                Tensor::from_scalars(&shape, DType::F32, d.clone(), [Scalar::F(v)]),
                Some(Tensor::from_scalars(&shape, DType::I64, d, [Scalar::I(0)])),
            ));
        }
    }
    let (src, axis) = match dim {
        None => (
            t.contiguous().view(&[t.numel()]).expect("flat view"),
            0usize,
        ),
        Some(d) => {
            let d = if d < 0 { d + r as i64 } else { d };
            if d < 0 || d as usize >= r.max(1) {
                return Err(Exc::new(
                    "IndexError",
                    format!(
                        "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                        -(r as i64),
                        r as i64 - 1
                    ),
                ));
            }
            (t.clone(), d as usize)
        }
    };
    if src.shape.is_empty() {
        return Ok((
            src.clone(),
            Some(Tensor::from_scalars(
                &[],
                DType::I64,
                src.device.clone(),
                [Scalar::I(0)],
            )),
        ));
    }
    let n = src.shape[axis];
    if n == 0 && matches!(kind, Red::Max | Red::Min | Red::ArgMax | Red::ArgMin) {
        return Err(Exc::new(
            "RuntimeError",
            "max(): Expected reduction dim to be specified for input.numel() == 0.",
        ));
    }
    // The reduced dimension last, the others in their order: the outputs
    // come out in the result's row-major order. (A swap with the last
    // dimension reordered the rest: `x.sum(0)` of a [2, 3, 4] tensor came
    // out [4, 3].)
    let moved = src.move_to_last(axis);
    let vals = moved.values();
    let mut out_shape: Vec<usize> = moved.shape[..moved.shape.len() - 1].to_vec();
    let float = t.dtype.is_float();
    let mut res = vec![];
    let mut idxs = vec![];
    // One chunk of `n` values per output, also where `n` is 0 (an empty
    // reduction: `all` true, `any` false, `sum` 0, `mean` NaN, as torch).
    let outputs: usize = out_shape.iter().product();
    for chunk in (0..outputs).map(|o| vals.get(o * n..o * n + n).unwrap_or(&[])) {
        let (mut best, mut bi) = (chunk.first().copied().unwrap_or(Scalar::F(0.0)), 0i64);
        for (i, &x) in chunk.iter().enumerate().skip(1) {
            let better = match kind {
                Red::Max | Red::ArgMax => {
                    if float {
                        x.f() > best.f() || x.f().is_nan()
                    } else {
                        x.i() > best.i()
                    }
                }
                Red::Min | Red::ArgMin => {
                    if float {
                        x.f() < best.f() || x.f().is_nan()
                    } else {
                        x.i() < best.i()
                    }
                }
                _ => false,
            };
            if better && !(float && best.f().is_nan()) {
                best = x;
                bi = i as i64;
            }
        }
        let v = match kind {
            Red::Sum | Red::Mean => {
                // (An empty `f64` sum is -0.0; torch's is 0.)
                let s: f64 = chunk.iter().map(|x| x.f()).fold(0.0, |a, x| a + x);
                let s = if kind == Red::Mean { s / n as f64 } else { s };
                if float || kind == Red::Mean {
                    Scalar::F(s)
                } else {
                    Scalar::I(chunk.iter().map(|x| x.i()).sum())
                }
            }
            Red::Var { correction, sqrt } => {
                let mean = chunk.iter().map(|x| x.f()).sum::<f64>() / n as f64;
                let ss: f64 = chunk.iter().map(|x| (x.f() - mean).powi(2)).sum();
                let v = ss / (n as f64 - correction).max(0.0);
                Scalar::F(if sqrt { v.sqrt() } else { v })
            }
            Red::All => Scalar::B(chunk.iter().all(|x| x.truth())),
            Red::Any => Scalar::B(chunk.iter().any(|x| x.truth())),
            Red::ArgMax | Red::ArgMin => Scalar::I(bi),
            _ => best,
        };
        res.push(v);
        idxs.push(Scalar::I(bi));
    }
    let out_dtype = match kind {
        Red::ArgMax | Red::ArgMin => DType::I64,
        Red::All | Red::Any => DType::I1,
        Red::Sum if t.dtype.is_int() => DType::I64,
        Red::Mean if t.dtype.is_int() => DType::F32,
        _ => t.dtype,
    };
    if keepdim && dim.is_some() {
        out_shape.insert(axis, 1);
    } else if keepdim {
        out_shape = vec![1; r];
    }
    let values = Tensor::from_scalars(&out_shape, out_dtype, t.device.clone(), res);
    let indices = Tensor::from_scalars(&out_shape, DType::I64, t.device.clone(), idxs);
    Ok((values, Some(indices)))
}

pub fn softmax(t: &Tensor, dim: i64) -> R<Tensor> {
    let r = t.shape.len() as i64;
    let d = if dim < 0 { dim + r } else { dim };
    if d < 0 || d >= r {
        return Err(Exc::new("IndexError", "softmax dimension out of range"));
    }
    let moved = t.transpose(d as usize, t.shape.len() - 1);
    let n = *moved.shape.last().unwrap_or(&1);
    let vals = moved.values_f64();
    let mut out = Vec::with_capacity(vals.len());
    for row in vals.chunks(n.max(1)) {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|x| (x - m).exp()).collect();
        let s: f64 = e.iter().sum();
        out.extend(e.into_iter().map(|x| Scalar::F(x / s)));
    }
    let res = Tensor::from_scalars(&moved.shape, t.dtype, t.device.clone(), out);
    Ok(res.transpose(d as usize, t.shape.len() - 1).contiguous())
}

/// Whether `p` is close to `q` as torch.isclose decides: equal values
/// (infinities included) are close; otherwise the difference must be finite
/// and within `atol + rtol * |q|` (inf is not close to -inf); NaN is close
/// only to NaN, and only with `equal_nan`.
pub fn close(p: f64, q: f64, rtol: f64, atol: f64, equal_nan: bool) -> bool {
    let d = (p - q).abs();
    p == q
        || (d.is_finite() && d <= atol + rtol * q.abs())
        || (equal_nan && p.is_nan() && q.is_nan())
}

/// `close` elementwise over the broadcast shape of `a` and `b`.
pub fn isclose(a: &Tensor, b: &Tensor, tol: Tolerance) -> R<(Vec<usize>, Vec<bool>)> {
    let shape = crate::tensor::broadcast_shape(&a.shape, &b.shape)
        .ok_or_else(|| Exc::new("RuntimeError", "isclose: shapes do not broadcast"))?;
    let x = a.expand(&shape).expect("broadcast").values_f64();
    let y = b.expand(&shape).expect("broadcast").values_f64();
    let (rtol, atol, nan) = tol;
    let v = x
        .iter()
        .zip(&y)
        .map(|(&p, &q)| close(p, q, rtol, atol, nan))
        .collect();
    Ok((shape, v))
}

pub fn allclose(a: &Tensor, b: &Tensor, tol: Tolerance) -> R<bool> {
    let (rtol, atol, nan) = tol;
    if a.shape == b.shape {
        // Two contiguous fp32 tensors of one shape (the usual check of a
        // kernel's output): compared in place, nothing materialised.
        let same = a.with_f32(|x| {
            b.with_f32(|y| {
                x.iter()
                    .zip(y)
                    .all(|(&p, &q)| close(p as f64, q as f64, rtol, atol, nan))
            })
        });
        if let Some(Some(r)) = same {
            return Ok(r);
        }
    }
    Ok(isclose(a, b, tol)?.1.into_iter().all(|c| c))
}

pub fn unary_tensor(t: &Tensor, f: impl Fn(f64) -> f64) -> Tensor {
    let d = if t.dtype.is_float() {
        t.dtype
    } else {
        DType::F32
    };
    map_tensor(t, d, |x| Scalar::F(f(x.f())))
}

pub fn tensor_from(
    s: &mut Engine,
    a: &Args,
    shape: Vec<usize>,
    default: DType,
    fill: &mut dyn FnMut(&mut Engine) -> Scalar,
) -> R<Val> {
    let dtype = dtype_arg(a.kw("dtype"), default)?;
    let device = s.device_arg(a.kw("device"))?;
    let t = Tensor::try_empty(&shape, dtype, device).map_err(|(kind, m)| Exc::new(kind, m))?;
    let (n, es) = (t.numel(), dtype.size_bytes());
    // A fresh tensor is contiguous from its storage's first byte: one
    // pointer for all elements (per-element `set_flat` checked contiguity
    // and the storage's state each time, 30 ns an element).
    let p = t.storage.ptr();
    for i in 0..n {
        let v = fill(s);
        // SAFETY: i < numel and the storage holds numel elements of `es` bytes.
        unsafe { crate::tensor::write(p.add(i * es), dtype, v) };
    }
    Ok(Val::tensor(t))
}

/// A new host tensor of one value: the value converted once, its bytes
/// repeated.
fn tensor_of_one(a: &Args, s: &mut Engine, shape: Vec<usize>, default: DType, x: Scalar) -> R<Val> {
    let dtype = dtype_arg(a.kw("dtype"), default)?;
    let device = s.device_arg(a.kw("device"))?;
    let t = Tensor::try_empty(&shape, dtype, device).map_err(|(kind, m)| Exc::new(kind, m))?;
    let es = dtype.size_bytes();
    let mut elem = [0u8; 8];
    // SAFETY: eight bytes hold any element.
    unsafe { crate::tensor::write(elem.as_mut_ptr(), dtype, x) };
    // SAFETY: the fresh storage holds numel elements of `es` bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(t.storage.ptr(), t.numel() * es) };
    for chunk in bytes.chunks_exact_mut(es) {
        chunk.copy_from_slice(&elem[..es]);
    }
    Ok(Val::tensor(t))
}

/// `t.sum((0, 2))` and the other reductions torch lets name several
/// dimensions: the named dimensions move to the end (the others keep their
/// order), become one, and that one is reduced; `keepdim` puts ones back
/// where they were. An empty tuple reduces everything.
fn reduce_dims(
    s: &mut Engine,
    t: &Tensor,
    a: &Args,
    first_arg: usize,
    kind_name: &str,
    dims: &[i64],
    keepdim: bool,
) -> R<Val> {
    if !matches!(
        kind_name,
        "sum" | "mean" | "amax" | "amin" | "var" | "std" | "all" | "any"
    ) {
        return Err(Exc::type_error(format!(
            "{kind_name}(): argument 'dim' must be int, not tuple"
        )));
    }
    let r = t.shape.len();
    let mut axes = vec![];
    for &d in dims {
        let n = if d < 0 { d + r as i64 } else { d };
        if n < 0 || n as usize >= r.max(1) {
            return Err(Exc::new(
                "IndexError",
                format!(
                    "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                    -(r as i64),
                    r as i64 - 1
                ),
            ));
        }
        if axes.contains(&(n as usize)) {
            return Err(Exc::new(
                "RuntimeError",
                format!("dim {n} appears multiple times in the list of dims"),
            ));
        }
        axes.push(n as usize);
    }
    let all_dims = axes.is_empty() || r == 0;
    let kept: Vec<usize> = (0..r).filter(|d| !axes.contains(d) && !all_dims).collect();
    let mut order = kept.clone();
    order.extend((0..r).filter(|d| !kept.contains(d)));
    let mut moved = t.clone();
    moved.shape = order.iter().map(|&d| t.shape[d]).collect();
    moved.strides = order.iter().map(|&d| t.strides[d]).collect();
    let mut flat_shape: Vec<usize> = kept.iter().map(|&d| t.shape[d]).collect();
    flat_shape.push(order[kept.len()..].iter().map(|&d| t.shape[d]).product());
    let flat = moved
        .contiguous()
        .view(&flat_shape)
        .expect("contiguous view");
    let last = Val::Int(flat_shape.len() as i64 - 1);
    let mut pos = a.pos.clone();
    if pos.len() > first_arg {
        pos[first_arg] = last.clone();
    }
    let mut kw: Vec<(String, Val)> =
        a.kw.iter()
            .filter(|(k, _)| k != "keepdim")
            .cloned()
            .collect();
    if pos.len() <= first_arg {
        kw.retain(|(k, _)| k != "dim");
        kw.push(("dim".into(), last));
    }
    let args = Args {
        pos,
        kw,
        fname: a.fname.clone(),
    };
    let v = reduce_call(s, &flat, &args, first_arg, kind_name)?;
    let out = match (&v, keepdim) {
        (Val::Tensor(o), true) => o.clone(),
        _ => return Ok(v),
    };
    let shape: Vec<usize> = (0..r)
        .map(|d| if kept.contains(&d) { t.shape[d] } else { 1 })
        .collect();
    Ok(Val::tensor(
        out.contiguous().view(&shape).expect("same element count"),
    ))
}

/// `t.sum(dim)`, `torch.max(t, dim)` and friends.
pub fn reduce_call(
    s: &mut Engine,
    t: &Tensor,
    a: &Args,
    first_arg: usize,
    kind_name: &str,
) -> R<Val> {
    // `dtype=`: the input is converted before the reduction, as torch does
    // (it was ignored: `x.sum(dtype=torch.float32)` of ints gave ints).
    if let Some(d) = a.kw("dtype").filter(|v| !matches!(v, Val::None)) {
        if !matches!(kind_name, "sum" | "mean") {
            return Err(Exc::type_error(format!(
                "{kind_name}() got an unexpected keyword argument 'dtype'"
            )));
        }
        let d = dtype_arg(Some(d), t.dtype)?;
        let converted = crate::device_ops::cast_or_host(s, t, d)?;
        let args = Args {
            pos: a.pos.clone(),
            kw: a.kw.iter().filter(|(k, _)| k != "dtype").cloned().collect(),
            fname: a.fname.clone(),
        };
        return reduce_call(s, &converted, &args, first_arg, kind_name);
    }
    if kind_name == "mean" && !t.dtype.is_float() {
        return Err(Exc::new(
            "RuntimeError",
            format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                crate::tensor::torch_name(t.dtype)
            ),
        ));
    }
    let dim_arg = a.get(first_arg, "dim").filter(|v| !matches!(v, Val::None));
    let keepdim = a
        .kw("keepdim")
        .map(|v| v.truth())
        .transpose()?
        .unwrap_or(false);
    if let Some(Val::Tuple(_) | Val::List(_)) = &dim_arg {
        let dims = crate::value::iterate(dim_arg.as_ref().expect("dim"))?
            .iter()
            .map(to_int)
            .collect::<R<Vec<i64>>>()?;
        return reduce_dims(s, t, a, first_arg, kind_name, &dims, keepdim);
    }
    let dim = dim_arg.map(|v| to_int(&v)).transpose()?;
    if matches!(kind_name, "var" | "std") {
        if !t.dtype.is_float() {
            return Err(Exc::new(
                "RuntimeError",
                format!(
                    "{kind_name}(): input dtype should be floating point, got {}",
                    crate::tensor::torch_name(t.dtype)
                ),
            ));
        }
        // torch: `unbiased=True` (the second positional), or `correction=`.
        let unbiased = a
            .get(first_arg + 1, "unbiased")
            .map(|v| v.truth())
            .transpose()?
            .unwrap_or(true);
        let correction = match a.kw("correction") {
            Some(v) => to_f64(&v)?,
            None => f64::from(u8::from(unbiased)),
        };
        let kind = Red::Var {
            correction,
            sqrt: kind_name == "std",
        };
        return Ok(Val::tensor(reduce(t, dim, keepdim, kind)?.0));
    }
    if let Some(v) = crate::device_ops::reduce(s, t, kind_name, dim, keepdim)? {
        return Ok(v);
    }
    let kind = match kind_name {
        "sum" => Red::Sum,
        "mean" => Red::Mean,
        "max" | "amax" => Red::Max,
        "min" | "amin" => Red::Min,
        "argmax" => Red::ArgMax,
        "argmin" => Red::ArgMin,
        "all" => Red::All,
        _ => Red::Any,
    };
    let (vals, idx) = reduce(t, dim, keepdim, kind)?;
    if dim.is_some() && matches!(kind_name, "max" | "min") {
        return Ok(Val::return_pair(
            kind_name,
            Val::tensor(vals),
            Val::tensor(idx.expect("indices")),
        ));
    }
    Ok(Val::tensor(vals))
}

/// `torch.cumsum(t, dim)`.
pub fn cumsum(t: &Tensor, dim: i64) -> R<Val> {
    let r = t.shape.len() as i64;
    let d = if dim < 0 { dim + r } else { dim };
    if d < 0 || d >= r {
        return Err(Exc::new("IndexError", "cumsum dimension out of range"));
    }
    let moved = t.transpose(d as usize, t.shape.len() - 1);
    let n = *moved.shape.last().unwrap_or(&1);
    let float = t.dtype.is_float();
    let mut out = vec![];
    for row in moved.values().chunks(n.max(1)) {
        let (mut fa, mut ia) = (0.0, 0i64);
        for x in row {
            fa += x.f();
            ia = ia.wrapping_add(x.i());
            out.push(if float { Scalar::F(fa) } else { Scalar::I(ia) });
        }
    }
    let d_out = if float { t.dtype } else { DType::I64 };
    let res = Tensor::from_scalars(&moved.shape, d_out, t.device.clone(), out);
    Ok(Val::tensor(
        res.transpose(d as usize, t.shape.len() - 1).contiguous(),
    ))
}

pub fn softmax_call(s: &mut Engine, t: &Tensor, dim: i64) -> R<Val> {
    if let Some(v) = crate::device_ops::softmax(s, t, dim)? {
        return Ok(v);
    }
    Ok(Val::tensor(softmax(t, dim)?))
}

/// `(rtol, atol, equal_nan)` of `allclose`/`isclose`.
pub type Tolerance = (f64, f64, bool);

/// `rtol=`, `atol=` and `equal_nan=` of `allclose`/`isclose`, with torch's defaults.
pub fn tolerances(a: &Args) -> R<Tolerance> {
    let get = |n: &str, d: f64| {
        a.kw(n)
            .map(|v| to_f64(&v))
            .transpose()
            .map(|v| v.unwrap_or(d))
    };
    let nan = match a.kw("equal_nan") {
        None | Some(Val::None) => false,
        Some(v) => v.truth()?,
    };
    Ok((get("rtol", 1e-5)?, get("atol", 1e-8)?, nan))
}

pub fn allclose_call(x: &Tensor, y: &Tensor, a: &Args) -> R<bool> {
    allclose(x, y, tolerances(a)?)
}

pub fn creation(s: &mut Engine, kind: &str, a: &Args) -> R<Val> {
    // torch.zeros(2, 3), torch.zeros((2, 3)) and torch.zeros(size=(2, 3)).
    let shape = match (a.pos.is_empty(), a.kw("size")) {
        (true, Some(size)) => shape_args(&[size])?,
        _ => shape_args(&a.pos)?,
    };
    match kind {
        "empty" | "zeros" => {
            let dtype = dtype_arg(a.kw("dtype"), DType::F32)?;
            let device = s.device_arg(a.kw("device"))?;
            Ok(Val::tensor(s.new_tensor(
                &shape,
                dtype,
                device,
                kind == "zeros",
            )?))
        }
        "ones" => filled(s, a, shape, DType::F32, Scalar::I(1)),
        "rand" | "randn" => {
            let dtype = dtype_arg(a.kw("dtype"), DType::F32)?;
            let device = s.device_arg(a.kw("device"))?;
            let normal = kind == "randn";
            if let Some(v) = crate::device_ops::random(s, &shape, dtype, &device, normal)? {
                return Ok(v);
            }
            tensor_from(s, a, shape, DType::F32, &mut |s| {
                Scalar::F(if normal {
                    s.normal()
                } else {
                    s.uniform_for(dtype)
                })
            })
        }
        _ => unreachable!(),
    }
}

pub fn like(s: &mut Engine, kind: &str, a: &Args) -> R<Val> {
    let t = to_tensor(&a.req(0, "input")?)?;
    let dtype = dtype_arg(a.kw("dtype"), t.dtype)?;
    let device = match a.kw("device") {
        Some(d) => s.device_arg(Some(d))?,
        None => t.device.clone(),
    };
    let n = t.numel();
    if matches!(kind, "rand_like" | "randn_like") {
        let normal = kind == "randn_like";
        if let Some(v) = crate::device_ops::random(s, &t.shape, dtype, &device, normal)? {
            return Ok(v);
        }
    }
    if matches!(kind, "empty_like" | "zeros_like") {
        let zero = kind == "zeros_like";
        return Ok(Val::tensor(s.new_tensor(&t.shape, dtype, device, zero)?));
    }
    let vals: Vec<Scalar> = match kind {
        "ones_like" => vec![Scalar::I(1); n],
        "rand_like" => (0..n).map(|_| Scalar::F(s.uniform_for(dtype))).collect(),
        "randn_like" => (0..n).map(|_| Scalar::F(s.normal())).collect(),
        _ => {
            let v = a.req(1, "fill_value")?;
            vec![Scalar::F(to_f64(&v)?); n]
        }
    };
    Ok(Val::tensor(Tensor::from_scalars(
        &t.shape, dtype, device, vals,
    )))
}

pub fn from_data(s: &mut Engine, a: &Args) -> R<Val> {
    let data = a.req(0, "data")?;
    let mut shape = vec![];
    let mut vals = vec![];
    flatten_data(&data, &mut shape, 0, &mut vals)?;
    // torch's default dtype for floats, and for no data at all
    // (`torch.tensor([])` is float32).
    let default = if vals.is_empty() || vals.iter().any(|v| matches!(v, Scalar::F(_))) {
        DType::F32
    } else if vals.iter().all(|v| matches!(v, Scalar::B(_))) {
        DType::I1
    } else {
        DType::I64
    };
    let dtype = dtype_arg(a.kw("dtype"), default)?;
    let device = s.device_arg(a.kw("device"))?;
    Ok(Val::tensor(Tensor::from_scalars(
        &shape, dtype, device, vals,
    )))
}

pub fn randint(s: &mut Engine, a: &Args) -> R<Val> {
    let (lo, hi, size) = if a.pos.len() >= 3 || a.kw("high").is_some() && a.pos.len() >= 2 {
        (
            to_int(&a.req(0, "low")?)?,
            to_int(&a.req(1, "high")?)?,
            a.req(2, "size")?,
        )
    } else {
        (0, to_int(&a.req(0, "high")?)?, a.req(1, "size")?)
    };
    if hi <= lo {
        return Err(Exc::new(
            "RuntimeError",
            format!("random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}"),
        ));
    }
    let shape = shape_args(&[size])?;
    let span = (hi - lo) as u64;
    tensor_from(s, a, shape, DType::I64, &mut |s| {
        Scalar::I(lo + (s.next_u64() % span) as i64)
    })
}

pub fn arange(s: &mut Engine, a: &Args) -> R<Val> {
    let nums: Vec<f64> = a.pos.iter().map(to_f64).collect::<R<_>>()?;
    let (start, end, step) = match nums.as_slice() {
        [e] => (0.0, *e, 1.0),
        [b, e] => (*b, *e, 1.0),
        [b, e, st] => (*b, *e, *st),
        _ => return Err(Exc::type_error("arange expects 1 to 3 numbers")),
    };
    // torch's checks, so that a zero step or a step pointing away from
    // the end is an error rather than an empty or an endless range.
    if !start.is_finite() || !end.is_finite() {
        return Err(Exc::new(
            "RuntimeError",
            format!("unsupported range: {start} -> {end}"),
        ));
    }
    if step == 0.0 || step.is_nan() {
        return Err(Exc::new("RuntimeError", "step must be nonzero"));
    }
    if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
        return Err(Exc::new(
            "RuntimeError",
            "upper bound and larger bound inconsistent with step sign",
        ));
    }
    let float = a.pos.iter().any(|v| matches!(v, Val::Float(_)));
    let n = ((end - start) / step).ceil().max(0.0) as usize;
    let mut i = 0usize;
    let default = if float { DType::F32 } else { DType::I64 };
    tensor_from(s, a, vec![n], default, &mut |_| {
        let v = start + step * i as f64;
        i += 1;
        if float {
            Scalar::F(v)
        } else {
            Scalar::I(v as i64)
        }
    })
}

pub fn full(s: &mut Engine, a: &Args) -> R<Val> {
    let shape = shape_args(&[a.req(0, "size")?])?;
    let v = a.req(1, "fill_value")?;
    let default = match v {
        Val::Float(_) => DType::F32,
        Val::Bool(_) => DType::I1,
        _ => DType::I64,
    };
    let x = match v {
        Val::Float(f) => Scalar::F(f),
        Val::Bool(b) => Scalar::B(b),
        other => Scalar::I(to_int(&other)?),
    };
    filled(s, a, shape, default, x)
}

/// A tensor of one value: on a GPU filled there (no host copy is made or
/// uploaded), else on the host.
fn filled(s: &mut Engine, a: &Args, shape: Vec<usize>, default: DType, x: Scalar) -> R<Val> {
    let dtype = dtype_arg(a.kw("dtype"), default)?;
    let device = s.device_arg(a.kw("device"))?;
    if matches!(device, Device::Cuda(_)) && s.gpu_of(&device)?.is_some() {
        let one = Tensor::from_scalars(&[1], dtype, Device::Cpu, [x]);
        let n = dtype.size_bytes();
        // SAFETY: the one-element host tensor holds `n` bytes.
        let elem = unsafe { std::slice::from_raw_parts(one.storage.ptr(), n) }.to_vec();
        let t = s.new_tensor(&shape, dtype, device, false)?;
        if t.storage
            .fill_on_device(&elem)
            .map_err(|e| Exc::new("RuntimeError", e))?
        {
            return Ok(Val::tensor(t));
        }
    }
    tensor_of_one(a, s, shape, default, x)
}

pub fn unary_named(s: &mut Engine, t: &Tensor, name: &str) -> R<Val> {
    if let Some(v) = crate::device_ops::unary(s, t, name)? {
        return Ok(v);
    }
    Ok(Val::tensor(match name {
        "exp" => unary_tensor(t, f64::exp),
        "log" => unary_tensor(t, f64::ln),
        "sqrt" => unary_tensor(t, f64::sqrt),
        "sigmoid" => unary_tensor(t, |x| 1.0 / (1.0 + (-x).exp())),
        "sin" => unary_tensor(t, f64::sin),
        "cos" => unary_tensor(t, f64::cos),
        "exp2" => unary_tensor(t, f64::exp2),
        "log2" => unary_tensor(t, f64::log2),
        "rsqrt" => unary_tensor(t, |x| 1.0 / x.sqrt()),
        "floor" => unary_tensor(t, f64::floor),
        "ceil" => unary_tensor(t, f64::ceil),
        "round" => unary_tensor(t, f64::round_ties_even),
        "trunc" => unary_tensor(t, f64::trunc),
        "tanh" => unary_tensor(t, f64::tanh),
        "tan" => unary_tensor(t, f64::tan),
        "asin" => unary_tensor(t, f64::asin),
        "acos" => unary_tensor(t, f64::acos),
        "atan" => unary_tensor(t, f64::atan),
        "sinh" => unary_tensor(t, f64::sinh),
        "cosh" => unary_tensor(t, f64::cosh),
        "asinh" => unary_tensor(t, f64::asinh),
        "acosh" => unary_tensor(t, f64::acosh),
        "atanh" => unary_tensor(t, f64::atanh),
        "log10" => unary_tensor(t, f64::log10),
        "log1p" => unary_tensor(t, f64::ln_1p),
        "expm1" => unary_tensor(t, f64::exp_m1),
        "erf" => unary_tensor(t, libm::erf),
        "erfc" => unary_tensor(t, libm::erfc),
        "relu" => map_tensor(t, t.dtype, |x| match x {
            Scalar::F(f) => Scalar::F(f.max(0.0)),
            o => Scalar::I(o.i().max(0)),
        }),
        _ => return Err(Exc::new("NotImplementedError", format!("torch.{name}"))),
    }))
}

/// A dim argument in `0..rank` (negative counts from the end), as torch reads it.
fn wrap_dim(dim: i64, rank: usize, what: &str) -> R<usize> {
    let r = rank.max(1) as i64;
    let d = if dim < 0 { dim + r } else { dim };
    if d < 0 || d >= r {
        return Err(Exc::new(
            "IndexError",
            format!(
                "{what}: dimension out of range (expected to be in range of [{}, {}], but got {dim})",
                -r,
                r - 1
            ),
        ));
    }
    Ok(d as usize)
}

/// `torch.sort(t, dim=-1, descending=False, stable=False)`: values and
/// indices, stable, NaN ordered above every number (as torch does).
pub fn sort(t: &Tensor, dim: i64, descending: bool) -> R<Val> {
    if t.shape.is_empty() {
        let idx = Tensor::from_scalars(&[], DType::I64, t.device.clone(), [Scalar::I(0)]);
        return Ok(Val::return_pair(
            "sort",
            Val::tensor(t.contiguous()),
            Val::tensor(idx),
        ));
    }
    let d = wrap_dim(dim, t.shape.len(), "sort")?;
    let last = t.shape.len() - 1;
    let moved = t.transpose(d, last);
    let n = moved.shape[last];
    let float = t.dtype.is_float();
    let cmp = |a: Scalar, b: Scalar| {
        if float {
            let (x, y) = (a.f(), b.f());
            x.partial_cmp(&y)
                .unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()))
        } else {
            a.i().cmp(&b.i())
        }
    };
    let (mut vals, mut idxs) = (vec![], vec![]);
    if n > 0 {
        for row in moved.values().chunks(n) {
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| {
                let o = cmp(row[a], row[b]);
                if descending {
                    o.reverse()
                } else {
                    o
                }
            });
            vals.extend(order.iter().map(|&i| row[i]));
            idxs.extend(order.iter().map(|&i| Scalar::I(i as i64)));
        }
    }
    let back = |x: Tensor| x.transpose(d, last).contiguous();
    let v = Tensor::from_scalars(&moved.shape, t.dtype, t.device.clone(), vals);
    let i = Tensor::from_scalars(&moved.shape, DType::I64, t.device.clone(), idxs);
    Ok(Val::return_pair(
        "sort",
        Val::tensor(back(v)),
        Val::tensor(back(i)),
    ))
}

/// `torch.flip(t, dims)`: a copy with the order of each listed dim reversed.
pub fn flip(t: &Tensor, dims: &[i64]) -> R<Val> {
    if t.shape.is_empty() {
        return Ok(Val::tensor(t.to_dtype(t.dtype, true)));
    }
    let mut v = t.clone();
    let mut seen = vec![false; t.shape.len()];
    for &dim in dims {
        let d = wrap_dim(dim, t.shape.len(), "flip")?;
        if std::mem::replace(&mut seen[d], true) {
            return Err(Exc::new(
                "RuntimeError",
                format!("dim {d} appears multiple times in the list of dims"),
            ));
        }
        let n = v.shape[d];
        if n > 1 {
            v.offset = (v.offset as isize + v.strides[d] * (n as isize - 1)) as usize;
            v.strides[d] = -v.strides[d];
        }
    }
    Ok(Val::tensor(v.to_dtype(t.dtype, true)))
}

/// Dims given as `0`, `0, 1`, `(0, 1)` or `[0, 1]`.
pub fn dims_list(vals: &[Val]) -> R<Vec<i64>> {
    match vals {
        [Val::Tuple(_) | Val::List(_)] => crate::value::iterate(&vals[0])?
            .iter()
            .map(to_int)
            .collect(),
        _ => vals.iter().map(to_int).collect(),
    }
}

/// `torch.cat(tensors, dim=0)` (and `torch.stack`, which first gives each
/// tensor a new dim of size 1 at `dim`): dtypes promote as torch's do.
pub fn cat(items: &[Val], dim: i64, stack: bool) -> R<Val> {
    let what = if stack { "stack" } else { "cat" };
    let mut ts = vec![];
    for v in items {
        ts.push(crate::args::tensor_arg(v, what)?);
    }
    let Some(first) = ts.first() else {
        return Err(Exc::new(
            "RuntimeError",
            format!("torch.{what}(): expected a non-empty list of Tensors"),
        ));
    };
    let rank = first.shape.len() + usize::from(stack);
    if rank == 0 {
        return Err(Exc::new(
            "RuntimeError",
            "zero-dimensional tensor cannot be concatenated",
        ));
    }
    let d = wrap_dim(dim, rank, what)?;
    let mut parts = vec![];
    let mut dtype = first.dtype;
    for (entry, t) in ts.iter().enumerate() {
        if stack && t.shape != first.shape {
            return Err(Exc::new(
                "RuntimeError",
                format!(
                    "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {entry}",
                    first.shape, t.shape
                ),
            ));
        }
        dtype = crate::tensor::promote(dtype, t.dtype);
        let mut t = t.contiguous();
        if stack {
            let mut s = t.shape.clone();
            s.insert(d, 1);
            t = t
                .view(&s)
                .ok_or_else(|| Exc::new("RuntimeError", "stack: view failed"))?;
        }
        let (mut a, mut b) = (t.shape.clone(), first.shape.clone());
        if stack {
            b.insert(d, 1);
        }
        a.remove(d);
        b.remove(d);
        if a != b || t.shape.len() != rank {
            return Err(Exc::new(
                "RuntimeError",
                format!(
                    "torch.{what}(): sizes of tensors must match except in dimension {d}: got {:?} and {:?}",
                    first.shape, t.shape
                ),
            ));
        }
        parts.push(t);
    }
    let mut shape = parts[0].shape.clone();
    shape[d] = parts.iter().map(|t| t.shape[d]).sum();
    crate::tensor::checked_numel(&shape).map_err(|m| Exc::new("RuntimeError", m))?;
    let mut vals = vec![];
    for t in &parts {
        vals.extend(t.transpose(0, d).values());
    }
    let mut moved = shape.clone();
    moved.swap(0, d);
    let out = Tensor::from_scalars(&moved, dtype, first.device.clone(), vals);
    Ok(Val::tensor(out.transpose(0, d).contiguous()))
}
