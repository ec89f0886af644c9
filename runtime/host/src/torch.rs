//! `torch.*`, `triton.*`, `math.*` functions and tensor methods.

use crate::builtins::{
    allclose_call, arange, creation, from_data, full, like, make_config, randint, reduce_call,
    shape_val, softmax_call, to_f64, to_int, unary_named, Args,
};
use crate::ops::map_tensor;
use crate::tensor::{Device, Scalar, Tensor};
use crate::value::R;
use crate::value::{Exc, Val};
use crate::Engine;
use std::rc::Rc;
use tilebook_kernels::gpu_fault::GpuFault;
use tilebook_tir::DType;

fn tensor_arg(v: &Val, what: &str) -> R<Rc<Tensor>> {
    match v {
        Val::Tensor(t) => Ok(t.clone()),
        other => Err(Exc::type_error(format!(
            "{what}: expected a tensor, got {}",
            other.type_name()
        ))),
    }
}

/// Call `torch.*`, `triton.*`, `math.*` or driver functions.
pub fn call(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    match name {
        "torch.empty" | "torch.zeros" | "torch.ones" | "torch.rand" | "torch.randn" => {
            creation(s, &name[6..], &a)
        }
        "torch.empty_like" | "torch.zeros_like" | "torch.ones_like" | "torch.rand_like"
        | "torch.randn_like" | "torch.full_like" => like(s, &name[6..], &a),
        "torch.full" => full(s, &a),
        "torch.tensor" => from_data(s, &a),
        "torch.randint" => randint(s, &a),
        "torch.arange" => arange(s, &a),
        "torch.manual_seed" => {
            let seed = to_int(&a.req(0, "seed")?)?;
            s.rng = seed as u64 ^ 0x5DEECE66D;
            Ok(Val::None)
        }
        "torch.device" => {
            let d = s.device_arg(Some(a.req(0, "type")?))?;
            Ok(Val::Device(match (d, a.get(1, "index")) {
                (Device::Cuda(_), Some(i)) => Device::Cuda(to_int(&i)? as u32),
                (d, _) => d,
            }))
        }
        "torch.where" => {
            let c = tensor_arg(&a.req(0, "condition")?, "torch.where")?;
            let x = a.req(1, "input")?;
            let y = a.req(2, "other")?;
            let xt = scalar_or_tensor(&x, &c.device);
            let yt = scalar_or_tensor(&y, &c.device);
            let d = crate::tensor::promote(xt.dtype, yt.dtype);
            let shape = crate::tensor::broadcast_shape(
                &c.shape,
                &crate::tensor::broadcast_shape(&xt.shape, &yt.shape).unwrap_or_default(),
            )
            .ok_or_else(|| Exc::new("RuntimeError", "torch.where: shapes do not broadcast"))?;
            let cv = c
                .expand(&shape)
                .ok_or_else(|| Exc::new("RuntimeError", "broadcast"))?
                .values();
            let xv = xt
                .expand(&shape)
                .ok_or_else(|| Exc::new("RuntimeError", "broadcast"))?
                .values();
            let yv = yt
                .expand(&shape)
                .ok_or_else(|| Exc::new("RuntimeError", "broadcast"))?
                .values();
            let vals: Vec<Scalar> = cv
                .iter()
                .zip(xv.iter().zip(&yv))
                .map(|(c, (x, y))| if c.truth() { *x } else { *y })
                .collect();
            Ok(Val::tensor(Tensor::from_scalars(
                &shape,
                d,
                c.device.clone(),
                vals,
            )))
        }
        "torch.abs" => crate::builtins::call_builtin(s, "abs", a.pos, a.kw),
        "torch.cumsum" => {
            let t = tensor_arg(&a.req(0, "input")?, name)?;
            crate::builtins::cumsum(&t, to_int(&a.req(1, "dim")?)?)
        }
        "torch.sin"
        | "torch.cos"
        | "torch.exp2"
        | "torch.log2"
        | "torch.rsqrt"
        | "torch.floor"
        | "torch.ceil"
        | "torch.round"
        | "torch.trunc"
        | "torch.tanh"
        | "torch.exp"
        | "torch.log"
        | "torch.sqrt"
        | "torch.sigmoid"
        | "torch.relu"
        | "torch.nn.functional.relu"
        | "torch.nn.functional.sigmoid" => {
            let t = tensor_arg(&a.req(0, "input")?, name)?;
            unary_named(s, &t, name.rsplit('.').next().unwrap_or(name))
        }
        "torch.nn.functional.leaky_relu" => {
            let t = tensor_arg(&a.req(0, "input")?, name)?;
            let slope = a
                .get(1, "negative_slope")
                .map(|v| to_f64(&v))
                .transpose()?
                .unwrap_or(0.01);
            Ok(Val::tensor(map_tensor(&t, t.dtype, |x| {
                Scalar::F(if x.f() >= 0.0 { x.f() } else { x.f() * slope })
            })))
        }
        "torch.max" | "torch.min" => {
            let t = tensor_arg(&a.req(0, "input")?, name)?;
            if let Some(Val::Tensor(other)) = a.pos.get(1) {
                let op = if name == "torch.max" {
                    "torch.maximum"
                } else {
                    "torch.minimum"
                };
                return call(
                    s,
                    op,
                    Args {
                        pos: vec![Val::Tensor(t), Val::Tensor(other.clone())],
                        kw: vec![],
                        fname: op.into(),
                    },
                );
            }
            reduce_call(s, &t, &a, 1, &name[6..])
        }
        "torch.maximum" | "torch.minimum" => {
            let x = tensor_arg(&a.req(0, "input")?, name)?;
            let y = tensor_arg(&a.req(1, "other")?, name)?;
            let shape = crate::tensor::broadcast_shape(&x.shape, &y.shape)
                .ok_or_else(|| Exc::new("RuntimeError", "shapes do not broadcast"))?;
            let d = crate::tensor::promote(x.dtype, y.dtype);
            let xv = x.expand(&shape).expect("broadcast").values();
            let yv = y.expand(&shape).expect("broadcast").values();
            let max = name == "torch.maximum";
            let vals: Vec<Scalar> = xv
                .into_iter()
                .zip(yv)
                .map(|(p, q)| {
                    if (p.f() > q.f()) == max || p.f().is_nan() {
                        p
                    } else {
                        q
                    }
                })
                .collect();
            Ok(Val::tensor(Tensor::from_scalars(
                &shape,
                d,
                x.device.clone(),
                vals,
            )))
        }
        "torch.sum" | "torch.mean" | "torch.argmax" | "torch.argmin" | "torch.var"
        | "torch.std" => {
            let t = tensor_arg(&a.req(0, "input")?, name)?;
            reduce_call(s, &t, &a, 1, &name[6..])
        }
        "torch.allclose" => {
            let x = tensor_arg(&a.req(0, "input")?, name)?;
            let y = tensor_arg(&a.req(1, "other")?, name)?;
            Ok(Val::Bool(allclose_call(&x, &y, &a)?))
        }
        "torch.equal" => {
            let x = tensor_arg(&a.req(0, "input")?, name)?;
            let y = tensor_arg(&a.req(1, "other")?, name)?;
            Ok(Val::Bool(x.shape == y.shape && x.values() == y.values()))
        }
        "torch.isclose" => {
            let x = tensor_arg(&a.req(0, "input")?, name)?;
            let y = tensor_arg(&a.req(1, "other")?, name)?;
            let (rtol, atol) = crate::tensor_lib::tolerances(&a)?;
            let vals: Vec<Scalar> = x
                .values_f64()
                .iter()
                .zip(y.values_f64())
                .map(|(p, q)| Scalar::B((p - q).abs() <= atol + rtol * q.abs()))
                .collect();
            Ok(Val::tensor(Tensor::from_scalars(
                &x.shape,
                DType::I1,
                x.device.clone(),
                vals,
            )))
        }
        "torch.matmul" => {
            let x = tensor_arg(&a.req(0, "input")?, name)?;
            let y = tensor_arg(&a.req(1, "other")?, name)?;
            Ok(Val::tensor(crate::ops::matmul(s, &x, &y)?))
        }
        "torch.softmax" | "torch.nn.functional.softmax" => {
            let t = tensor_arg(&a.req(0, "input")?, name)?;
            let dim = to_int(&a.get(1, "dim").unwrap_or(Val::Int(-1)))?;
            softmax_call(s, &t, dim)
        }
        "torch.result_type" => {
            let dt = |v: &Val| match v {
                Val::Tensor(t) => t.dtype,
                Val::Float(_) => DType::F32,
                Val::Bool(_) => DType::I1,
                _ => DType::I64,
            };
            Ok(Val::DType(
                crate::tensor::promote(dt(&a.req(0, "tensor1")?), dt(&a.req(1, "tensor2")?)),
                true,
            ))
        }
        "torch.cuda.synchronize" => {
            if let crate::Backend::Cuda(g) = &s.backend {
                if let Err(e) = g.synchronize() {
                    let e = Exc::new("RuntimeError", e);
                    return Err(s.gpu_failure(e));
                }
                s.launched_since_sync.clear();
            }
            Ok(Val::None)
        }
        "torch.cuda.empty_cache" => Ok(Val::None),
        "torch.cuda.mem_get_info" => match &s.backend {
            crate::Backend::Cuda(g) => {
                let (free, total) = g.mem_info();
                Ok(Val::tuple(vec![
                    Val::Int(free as i64),
                    Val::Int(total as i64),
                ]))
            }
            crate::Backend::Cpu => Err(Exc::new(
                "RuntimeError",
                "torch.cuda.mem_get_info: no GPU in use (the CPU backend runs 'cuda' tensors)",
            )),
        },
        "triton.testing.do_bench" => crate::bench::do_bench(s, &a),
        "time.perf_counter" | "time.time" => Ok(Val::Float(s.clock())),
        "torch.cuda.is_available" => Ok(Val::Bool(s.backend_name() == "cuda")),
        "torch.cuda.current_device" => Ok(Val::Int(0)),
        "torch.cuda.device_count" => Ok(Val::Int(1)),
        "torch.cuda.get_device_name" => Ok(Val::str(&s.device_name())),
        "triton.cdiv" => {
            let x = to_int(&a.req(0, "x")?)?;
            let d = to_int(&a.req(1, "div")?)?;
            if d == 0 {
                return Err(Exc::new("ZeroDivisionError", "triton.cdiv by zero"));
            }
            // In i128: `x + d - 1` overflows i64 near its ends.
            let q = (i128::from(x) + i128::from(d) - 1).div_euclid(i128::from(d));
            i64::try_from(q).map(Val::Int).map_err(|_| {
                Exc::new(
                    "OverflowError",
                    "triton.cdiv result does not fit in 64 bits",
                )
            })
        }
        "triton.next_power_of_2" => {
            let n = to_int(&a.req(0, "n")?)?;
            (n.max(1) as u64)
                .checked_next_power_of_two()
                .and_then(|p| i64::try_from(p).ok())
                .map(Val::Int)
                .ok_or_else(|| {
                    Exc::new(
                        "OverflowError",
                        format!("next_power_of_2({n}) does not fit in 64 bits"),
                    )
                })
        }
        "triton.Config" => make_config(&a),
        "triton.autotune" | "triton.heuristics" => crate::autotune::decorator(name, &a),
        "driver.get_current_target" => Ok(s.current_target()),
        "driver.get_device_properties" => Ok(s.device_properties()),
        "torch.cuda.Stream" => Ok(Val::object("Stream", vec![])),
        // Handles load with the module; nothing is left to do.
        "compiled._init_handles" => Ok(Val::None),
        // One stream per session: kernels, copies and cuBLAS are ordered on it.
        "torch.cuda.set_stream" => Ok(Val::None),
        "driver.get_active_torch_device" => {
            s.announce_backend();
            Ok(Val::Device(Device::Cuda(0)))
        }
        "math.sqrt" | "math.log2" | "math.log" | "math.exp" | "math.log10" => {
            let x = to_f64(&a.req(0, "x")?)?;
            Ok(Val::Float(match name {
                "math.sqrt" => x.sqrt(),
                "math.log2" => x.log2(),
                "math.log" => x.ln(),
                "math.log10" => x.log10(),
                _ => x.exp(),
            }))
        }
        "math.ceil" | "math.floor" => {
            let x = to_f64(&a.req(0, "x")?)?;
            Ok(Val::Int(if name == "math.ceil" {
                x.ceil()
            } else {
                x.floor()
            } as i64))
        }
        "math.isclose" => {
            let x = to_f64(&a.req(0, "a")?)?;
            let y = to_f64(&a.req(1, "b")?)?;
            let rel = a
                .kw("rel_tol")
                .map(|v| to_f64(&v))
                .transpose()?
                .unwrap_or(1e-9);
            let abs = a
                .kw("abs_tol")
                .map(|v| to_f64(&v))
                .transpose()?
                .unwrap_or(0.0);
            Ok(Val::Bool(
                (x - y).abs() <= (rel * x.abs().max(y.abs())).max(abs),
            ))
        }
        "math.prod" => {
            let items = s.iterate(&a.req(0, "iterable")?)?;
            let mut acc = Val::Int(1);
            for it in items {
                acc = crate::ops::binary(s, ruff_python_ast::Operator::Mult, &acc, &it)?;
            }
            Ok(acc)
        }
        other => Err(Exc::new(
            "NotImplementedError",
            format!("`{other}` is not available in tilebook yet"),
        )),
    }
}

fn scalar_or_tensor(v: &Val, device: &Device) -> Tensor {
    match v {
        Val::Tensor(t) => (**t).clone(),
        Val::Float(f) => Tensor::from_scalars(&[], DType::F32, device.clone(), [Scalar::F(*f)]),
        Val::Bool(b) => Tensor::from_scalars(&[], DType::I1, device.clone(), [Scalar::B(*b)]),
        other => Tensor::from_scalars(
            &[],
            DType::I64,
            device.clone(),
            [Scalar::I(to_int(other).unwrap_or(0))],
        ),
    }
}

fn dim_index(d: i64, rank: usize) -> R<usize> {
    let r = rank as i64;
    let x = if d < 0 { d + r } else { d };
    if x < 0 || x >= r.max(1) {
        return Err(Exc::new(
            "IndexError",
            format!(
                "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                -r,
                r - 1
            ),
        ));
    }
    Ok(x as usize)
}

fn reshape_shape(t: &Tensor, a: &Args) -> R<Vec<usize>> {
    let vals: Vec<Val> = if a.pos.len() == 1 {
        match &a.pos[0] {
            Val::Tuple(x) => x.to_vec(),
            Val::List(l) => l.borrow().clone(),
            other => vec![other.clone()],
        }
    } else {
        a.pos.clone()
    };
    let mut dims: Vec<i64> = vals.iter().map(to_int).collect::<R<_>>()?;
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

/// Tensor methods.
/// Methods that read only a tensor's shape and strides, or make a view
/// (a broadcast view can name far more elements than its storage holds).
const METADATA_METHODS: &[&str] = &[
    "size",
    "stride",
    "numel",
    "nelement",
    "dim",
    "element_size",
    "data_ptr",
    "is_contiguous",
    "expand",
    "view",
    "unsqueeze",
    "t",
    "transpose",
    "permute",
];

pub fn tensor_method(s: &mut Engine, t: &Rc<Tensor>, name: &str, a: Args) -> R<Val> {
    // Whatever reads every element must find room for its intermediates
    // first, or say so.
    if !METADATA_METHODS.contains(&name) {
        // `tolist` builds a Python value per element; the rest at most a
        // 16-byte intermediate.
        let per_element = if name == "tolist" { 64 } else { 16 };
        crate::tensor::ensure_host_room(t.numel(), per_element)
            .map_err(|m| Exc::new("MemoryError", m))?;
    }
    match name {
        "size" => match a.get(0, "dim") {
            Some(d) => Ok(Val::Int(
                t.shape[dim_index(to_int(&d)?, t.shape.len())?] as i64,
            )),
            None => Ok(shape_val(&t.shape)),
        },
        "stride" => match a.get(0, "dim") {
            Some(d) => Ok(Val::Int(
                t.strides[dim_index(to_int(&d)?, t.shape.len())?] as i64,
            )),
            None => Ok(Val::tuple(
                t.strides.iter().map(|&x| Val::Int(x as i64)).collect(),
            )),
        },
        "numel" | "nelement" => Ok(Val::Int(t.numel() as i64)),
        "dim" => Ok(Val::Int(t.shape.len() as i64)),
        "element_size" => Ok(Val::Int(t.dtype.size_bytes() as i64)),
        "data_ptr" => Ok(Val::Int(t.data_ptr() as i64)),
        "is_contiguous" => Ok(Val::Bool(t.is_contiguous())),
        "contiguous" => Ok(Val::tensor(t.contiguous())),
        "clone" => Ok(Val::tensor(t.to_dtype(t.dtype, true))),
        "item" => {
            if t.numel() != 1 {
                return Err(Exc::new(
                    "RuntimeError",
                    format!(
                        "a Tensor with {} elements cannot be converted to Scalar",
                        t.numel()
                    ),
                ));
            }
            let v = t.get_at(t.offsets()[0]);
            Ok(match (v, t.dtype) {
                (x, DType::I1) => Val::Bool(x.truth()),
                (x, d) if d.is_int() => Val::Int(x.i()),
                (x, _) => Val::Float(x.f()),
            })
        }
        "tolist" => {
            fn build(t: &Tensor) -> Val {
                if t.shape.is_empty() {
                    let v = t.get_at(t.offset);
                    return match (v, t.dtype) {
                        (x, DType::I1) => Val::Bool(x.truth()),
                        (x, d) if d.is_int() => Val::Int(x.i()),
                        (x, _) => Val::Float(x.f()),
                    };
                }
                Val::list((0..t.shape[0]).map(|i| build(&t.select(0, i))).collect())
            }
            Ok(build(t))
        }
        "to" | "type" => {
            let mut out = (**t).clone();
            for v in a.pos.iter().chain(a.kw.iter().map(|(_, v)| v)) {
                match v {
                    Val::DType(d, _) => out = out.to_dtype(*d, false),
                    Val::Str(_) | Val::Device(_) => {
                        out = out.with_device(s.device_arg(Some(v.clone()))?)
                    }
                    _ => {}
                }
            }
            Ok(Val::tensor(out))
        }
        "cpu" => Ok(Val::tensor(t.with_device(Device::Cpu))),
        "cuda" => {
            s.announce_backend();
            Ok(Val::tensor(t.with_device(Device::Cuda(0))))
        }
        "float" => Ok(Val::tensor(t.to_dtype(DType::F32, false))),
        "half" => Ok(Val::tensor(t.to_dtype(DType::F16, false))),
        "bfloat16" => Ok(Val::tensor(t.to_dtype(DType::BF16, false))),
        "double" => Ok(Val::tensor(t.to_dtype(DType::F64, false))),
        "int" => Ok(Val::tensor(t.to_dtype(DType::I32, false))),
        "long" => Ok(Val::tensor(t.to_dtype(DType::I64, false))),
        "bool" => Ok(Val::tensor(t.to_dtype(DType::I1, false))),
        "reshape" | "view" => {
            let shape = reshape_shape(t, &a)?;
            match t.view(&shape) {
                Some(v) => Ok(Val::tensor(v)),
                None if name == "reshape" => Ok(Val::tensor(t.contiguous().view(&shape).expect("contiguous view"))),
                None => Err(Exc::new("RuntimeError", "view size is not compatible with input tensor's size and stride; use .reshape(...)")),
            }
        }
        "flatten" => Ok(Val::tensor(
            t.contiguous().view(&[t.numel()]).expect("flat"),
        )),
        "t" => {
            if t.shape.len() > 2 {
                return Err(Exc::new(
                    "RuntimeError",
                    "t() expects a tensor with <= 2 dimensions",
                ));
            }
            Ok(Val::tensor(if t.shape.len() == 2 {
                t.transpose(0, 1)
            } else {
                (**t).clone()
            }))
        }
        "transpose" => {
            let d0 = dim_index(to_int(&a.req(0, "dim0")?)?, t.shape.len())?;
            let d1 = dim_index(to_int(&a.req(1, "dim1")?)?, t.shape.len())?;
            Ok(Val::tensor(t.transpose(d0, d1)))
        }
        "permute" => {
            let dims: Vec<usize> = reshape_dims(&a)?
                .into_iter()
                .map(|d| dim_index(d, t.shape.len()))
                .collect::<R<_>>()?;
            let mut out = (**t).clone();
            out.shape = dims.iter().map(|&d| t.shape[d]).collect();
            out.strides = dims.iter().map(|&d| t.strides[d]).collect();
            Ok(Val::tensor(out))
        }
        "unsqueeze" => {
            let d = to_int(&a.req(0, "dim")?)?;
            let r = t.shape.len() as i64 + 1;
            let d = if d < 0 { d + r } else { d };
            Ok(Val::tensor(t.unsqueeze(d.clamp(0, r - 1) as usize)))
        }
        "squeeze" => {
            let mut out = (**t).clone();
            let keep: Vec<bool> = match a.get(0, "dim") {
                Some(d) => {
                    let d = dim_index(to_int(&d)?, t.shape.len())?;
                    (0..t.shape.len())
                        .map(|i| i != d || t.shape[i] != 1)
                        .collect()
                }
                None => t.shape.iter().map(|&n| n != 1).collect(),
            };
            out.shape = t
                .shape
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(n, _)| *n)
                .collect();
            out.strides = t
                .strides
                .iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(n, _)| *n)
                .collect();
            Ok(Val::tensor(out))
        }
        "expand" => {
            let dims = reshape_dims(&a)?;
            let shape: Vec<usize> = dims
                .iter()
                .zip(t.shape.iter().chain(std::iter::repeat(&1)))
                .map(|(&d, &o)| if d < 0 { o } else { d as usize })
                .collect();
            crate::tensor::checked_numel(&shape).map_err(|m| Exc::new("RuntimeError", m))?;
            t.expand(&shape)
                .map(Val::tensor)
                .ok_or_else(|| Exc::new("RuntimeError", "expand: shape mismatch"))
        }
        "sum" | "mean" | "max" | "min" | "argmax" | "argmin" | "all" | "any" | "amax" | "amin"
        | "var" | "std" => reduce_call(s, t, &a, 0, name),
        "abs" => crate::builtins::call_builtin(s, "abs", vec![Val::Tensor(t.clone())], vec![]),
        "exp" | "log" | "sqrt" | "sigmoid" | "relu" | "sin" | "cos" | "floor" | "ceil"
        | "round" | "trunc" | "tanh" | "exp2" | "log2" | "rsqrt" => unary_named(s, t, name),
        "cumsum" => crate::builtins::cumsum(t, to_int(&a.req(0, "dim")?)?),
        "softmax" => softmax_call(s, t, to_int(&a.req(0, "dim")?)?),
        "fill_" | "zero_" => {
            let v = if name == "zero_" {
                Scalar::I(0)
            } else {
                Scalar::F(to_f64(&a.req(0, "value")?)?)
            };
            for o in t.offsets() {
                t.set_at(o, v);
            }
            Ok(Val::Tensor(t.clone()))
        }
        "copy_" => {
            let src = tensor_arg(&a.req(0, "src")?, "copy_")?;
            let e = src
                .expand(&t.shape)
                .ok_or_else(|| Exc::new("RuntimeError", "copy_: shapes do not match"))?;
            for (o, v) in t.offsets().into_iter().zip(e.values()) {
                t.set_at(o, v);
            }
            Ok(Val::Tensor(t.clone()))
        }
        "__repr__" => Ok(Val::str(&t.repr())),
        _ => Err(Exc::new(
            "AttributeError",
            format!("'Tensor' object has no attribute '{name}' in tilebook"),
        )),
    }
}

fn reshape_dims(a: &Args) -> R<Vec<i64>> {
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
