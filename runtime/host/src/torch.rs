//! `torch.*`, `triton.*`, `math.*` functions and tensor methods.

use crate::args::{tensor_arg, to_f64, to_int, Args};
use crate::ops::map_tensor;
use crate::registry::Entry;
use crate::tensor::{Device, Scalar, Tensor};
use crate::tensor_lib::{
    allclose_call, arange, creation, cumsum, from_data, full, like, randint, reduce_call,
    softmax_call, unary_named,
};
use crate::value::{Exc, Val, R};
use crate::Engine;
use tilebook_kernels::gpu_fault::GpuFault;
use tilebook_tir::DType;

/// The functions of `torch`, `torch.cuda` and `torch.nn.functional`.
pub const TABLE: &[Entry] = &[
    Entry {
        name: "torch.empty",
        f: torch_empty,
        doc: r#"torch.empty(*size, dtype=torch.float32, device='cpu')
A tensor with unspecified contents.
"#,
    },
    Entry {
        name: "torch.zeros",
        f: torch_empty,
        doc: r#"torch.zeros(*size, dtype=torch.float32, device='cpu')
A tensor of zeros.
"#,
    },
    Entry {
        name: "torch.ones",
        f: torch_empty,
        doc: r#"torch.ones(*size, dtype=torch.float32, device='cpu')
A tensor of ones.
"#,
    },
    Entry {
        name: "torch.rand",
        f: torch_empty,
        doc: r#"torch.rand(*size, dtype=torch.float32, device='cpu')
Uniform random numbers in [0, 1) (torch.manual_seed makes them repeatable).
"#,
    },
    Entry {
        name: "torch.randn",
        f: torch_empty,
        doc: r#"torch.randn(*size, dtype=torch.float32, device='cpu')
Standard normal random numbers.
"#,
    },
    Entry {
        name: "torch.empty_like",
        f: torch_empty_like,
        doc: "torch.empty_like(input, dtype=None, device=None)\nA new tensor of `input`'s shape (and dtype and device unless given), uninitialised.\n",
    },
    Entry {
        name: "torch.zeros_like",
        f: torch_empty_like,
        doc: "torch.zeros_like(input, dtype=None, device=None)\nA new tensor of `input`'s shape (and dtype and device unless given), filled with 0.\n",
    },
    Entry {
        name: "torch.ones_like",
        f: torch_empty_like,
        doc: "torch.ones_like(input, dtype=None, device=None)\nA new tensor of `input`'s shape (and dtype and device unless given), filled with 1.\n",
    },
    Entry {
        name: "torch.rand_like",
        f: torch_empty_like,
        doc: "torch.rand_like(input, dtype=None, device=None)\nA new tensor of `input`'s shape (and dtype and device unless given), uniform in [0, 1).\n",
    },
    Entry {
        name: "torch.randn_like",
        f: torch_empty_like,
        doc: "torch.randn_like(input, dtype=None, device=None)\nA new tensor of `input`'s shape (and dtype and device unless given), standard normal.\n",
    },
    Entry {
        name: "torch.full_like",
        f: torch_empty_like,
        doc: "torch.full_like(input, fill_value, dtype=None, device=None)\nA new tensor of `input`'s shape filled with `fill_value`.\n",
    },
    Entry {
        name: "torch.full",
        f: torch_full,
        doc: r#"torch.full(size, value, dtype=None, device='cpu')
A tensor filled with value.
"#,
    },
    Entry {
        name: "torch.tensor",
        f: torch_tensor,
        doc: r#"torch.tensor(data, dtype=None, device='cpu')
A tensor from a number or (nested) lists.
"#,
    },
    Entry {
        name: "torch.randint",
        f: torch_randint,
        doc: r#"torch.randint(low, high, size, dtype=torch.int64, device='cpu')
Random integers in [low, high).
"#,
    },
    Entry {
        name: "torch.arange",
        f: torch_arange,
        doc: r#"torch.arange(start, end, step=1, dtype=None, device='cpu')
A 1-D tensor of evenly spaced values.
"#,
    },
    Entry {
        name: "torch.manual_seed",
        f: torch_manual_seed,
        doc: r#"torch.manual_seed(seed)
Seed the random generator: the same seed gives the same values on every device.
"#,
    },
    Entry {
        name: "torch.device",
        f: torch_device,
        doc: "torch.device(type, index=None)\nA device: 'cpu', 'cuda' or 'cuda:N'.\n",
    },
    Entry {
        name: "torch.where",
        f: torch_where,
        doc: "torch.where(condition, input, other)\nElementwise choice: `input` where `condition` is true, else `other` (tensors or scalars, broadcast).\n",
    },
    Entry {
        name: "torch.abs",
        f: torch_abs,
        doc: "torch.abs(input)\nElementwise absolute value of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.sort",
        f: torch_sort,
        doc: "torch.sort(input, dim=-1, descending=False): sorted values and their indices (stable; NaN last).",
    },
    Entry {
        name: "torch.flip",
        f: torch_flip,
        doc: "torch.flip(input, dims): a copy with the listed dims reversed.",
    },
    Entry {
        name: "torch.cat",
        f: torch_cat,
        doc: "torch.cat(tensors, dim=0): the tensors joined along an existing dim.",
    },
    Entry {
        name: "torch.stack",
        f: torch_cat,
        doc: "torch.stack(tensors, dim=0): the tensors joined along a new dim.",
    },
    Entry {
        name: "torch.cumsum",
        f: torch_cumsum,
        doc: "torch.cumsum(input, dim)\nRunning sums of `input` along `dim`.\n",
    },
    Entry {
        name: "torch.tan",
        f: torch_sin,
        doc: "torch.tan(input)\nElementwise tangent of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.asin",
        f: torch_sin,
        doc: "torch.asin(input)\nElementwise arcsine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.acos",
        f: torch_sin,
        doc: "torch.acos(input)\nElementwise arccosine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.atan",
        f: torch_sin,
        doc: "torch.atan(input)\nElementwise arctangent of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.sinh",
        f: torch_sin,
        doc: "torch.sinh(input)\nElementwise hyperbolic sine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.cosh",
        f: torch_sin,
        doc: "torch.cosh(input)\nElementwise hyperbolic cosine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.asinh",
        f: torch_sin,
        doc: "torch.asinh(input)\nElementwise inverse hyperbolic sine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.acosh",
        f: torch_sin,
        doc: "torch.acosh(input)\nElementwise inverse hyperbolic cosine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.atanh",
        f: torch_sin,
        doc: "torch.atanh(input)\nElementwise inverse hyperbolic tangent of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.log10",
        f: torch_sin,
        doc: "torch.log10(input)\nElementwise base-10 logarithm of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.log1p",
        f: torch_sin,
        doc: "torch.log1p(input)\nElementwise log(1 + x), accurate near 0 of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.expm1",
        f: torch_sin,
        doc: "torch.expm1(input)\nElementwise exp(x) - 1, accurate near 0 of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.erf",
        f: torch_sin,
        doc: "torch.erf(input)\nElementwise error function of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.erfc",
        f: torch_sin,
        doc: "torch.erfc(input)\nElementwise complementary error function of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.sin",
        f: torch_sin,
        doc: "torch.sin(input)\nElementwise sine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.cos",
        f: torch_sin,
        doc: "torch.cos(input)\nElementwise cosine of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.exp2",
        f: torch_sin,
        doc: "torch.exp2(input)\nElementwise 2 to the power x of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.log2",
        f: torch_sin,
        doc: "torch.log2(input)\nElementwise base-2 logarithm of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.rsqrt",
        f: torch_sin,
        doc: "torch.rsqrt(input)\nElementwise reciprocal square root of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.floor",
        f: torch_sin,
        doc: "torch.floor(input)\nElementwise largest integer not above x of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.ceil",
        f: torch_sin,
        doc: "torch.ceil(input)\nElementwise smallest integer not below x of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.round",
        f: torch_sin,
        doc: "torch.round(input)\nElementwise nearest integer, ties to even of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.trunc",
        f: torch_sin,
        doc: "torch.trunc(input)\nElementwise integer part (toward zero) of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.tanh",
        f: torch_sin,
        doc: "torch.tanh(input)\nElementwise hyperbolic tangent of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.exp",
        f: torch_sin,
        doc: "torch.exp(input)\nElementwise exponential of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.log",
        f: torch_sin,
        doc: "torch.log(input)\nElementwise natural logarithm of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.sqrt",
        f: torch_sin,
        doc: "torch.sqrt(input)\nElementwise square root of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.sigmoid",
        f: torch_sin,
        doc: "torch.sigmoid(input)\nElementwise logistic function 1 / (1 + exp(-x)) of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.relu",
        f: torch_sin,
        doc: "torch.relu(input)\nElementwise max(x, 0) of `input`, as a new tensor.\n",
    },
    Entry {
        name: "torch.nn.functional.relu",
        f: torch_sin,
        doc: "torch.nn.functional.relu(input)\nElementwise max(x, 0).\n",
    },
    Entry {
        name: "torch.nn.functional.sigmoid",
        f: torch_sin,
        doc: "torch.nn.functional.sigmoid(input)\nElementwise 1 / (1 + exp(-x)).\n",
    },
    Entry {
        name: "torch.nn.functional.leaky_relu",
        f: torch_nn_functional_leaky_relu,
        doc: "torch.nn.functional.leaky_relu(input, negative_slope=0.01)\nElementwise x where x >= 0, else negative_slope * x.\n",
    },
    Entry {
        name: "torch.max",
        f: torch_max,
        doc: r#"torch.max(x, dim=None)
The maximum (with dim: values and indices along it).
"#,
    },
    Entry {
        name: "torch.min",
        f: torch_max,
        doc: "torch.min(input, dim=None, keepdim=False) / torch.min(input, other)\nThe smallest element; along `dim`, (values, indices); with a second tensor, the elementwise minimum.\n",
    },
    Entry {
        name: "torch.maximum",
        f: torch_maximum,
        doc: "torch.maximum(input, other)\nElementwise maximum of two tensors (NaN propagates).\n",
    },
    Entry {
        name: "torch.minimum",
        f: torch_maximum,
        doc: "torch.minimum(input, other)\nElementwise minimum of two tensors (NaN propagates).\n",
    },
    Entry {
        name: "torch.sum",
        f: torch_sum,
        doc: r#"torch.sum(x, dim=None)
Sum of all elements, or along a dimension.
"#,
    },
    Entry {
        name: "torch.mean",
        f: torch_sum,
        doc: "torch.mean(input, dim=None, keepdim=False)\nThe mean of all elements, or along `dim`.\n",
    },
    Entry {
        name: "torch.argmax",
        f: torch_sum,
        doc: "torch.argmax(input, dim=None, keepdim=False)\nThe index of the largest element (of the flattened tensor, or along `dim`).\n",
    },
    Entry {
        name: "torch.argmin",
        f: torch_sum,
        doc: "torch.argmin(input, dim=None, keepdim=False)\nThe index of the smallest element (of the flattened tensor, or along `dim`).\n",
    },
    Entry {
        name: "torch.all",
        f: torch_sum,
        doc: "torch.all(input, dim=None)\nWhether every element is nonzero (of the whole tensor, or along `dim`).\n",
    },
    Entry {
        name: "torch.any",
        f: torch_sum,
        doc: "torch.any(input, dim=None)\nWhether some element is nonzero (of the whole tensor, or along `dim`).\n",
    },
    Entry {
        name: "torch.amax",
        f: torch_sum,
        doc: "torch.amax(input, dim=(), keepdim=False)\nThe maximum over dimensions.\n",
    },
    Entry {
        name: "torch.amin",
        f: torch_sum,
        doc: "torch.amin(input, dim=(), keepdim=False)\nThe minimum over dimensions.\n",
    },
    Entry {
        name: "torch.var",
        f: torch_sum,
        doc: "torch.var(input, dim=None, correction=1, keepdim=False)\nThe variance (Bessel-corrected unless `correction=0`), of all elements or along `dim`.\n",
    },
    Entry {
        name: "torch.std",
        f: torch_sum,
        doc: "torch.std(input, dim=None, correction=1, keepdim=False)\nThe standard deviation (Bessel-corrected unless `correction=0`), of all elements or along `dim`.\n",
    },
    Entry {
        name: "torch.allclose",
        f: torch_allclose,
        doc: r#"torch.allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False)
Whether |a - b| <= atol + rtol * |b| everywhere (equal values, infinities included, are close; NaN only to NaN with `equal_nan`).
"#,
    },
    Entry {
        name: "torch.equal",
        f: torch_equal,
        doc: "torch.equal(input, other)\nTrue when both tensors have one shape and equal elements.\n",
    },
    Entry {
        name: "torch.isclose",
        f: torch_isclose,
        doc: "torch.isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)\nA bool tensor: |input - other| <= atol + rtol * |other|, elementwise, broadcast (equal values, infinities included, are close; NaN only to NaN with `equal_nan`).\n",
    },
    Entry {
        name: "torch.matmul",
        f: torch_matmul,
        doc: r#"torch.matmul(a, b, out=None)
Matrix product (a @ b); cuBLAS on the GPU (straight into `out` when given).
"#,
    },
    Entry {
        name: "torch.softmax",
        f: torch_softmax,
        doc: r#"torch.softmax(x, dim)
Softmax along a dimension.
"#,
    },
    Entry {
        name: "torch.nn.functional.softmax",
        f: torch_softmax,
        doc: "torch.nn.functional.softmax(input, dim)\nexp(x) / sum(exp(x)) along `dim` (computed stably).\n",
    },
    Entry {
        name: "torch.result_type",
        f: torch_result_type,
        doc: r#"torch.result_type(a, b)
The dtype torch's promotion gives a binary operation on a and b.
"#,
    },
    Entry {
        name: "torch.cuda.synchronize",
        f: torch_cuda_synchronize,
        doc: "torch.cuda.synchronize(device=None)\nWait until the GPU has finished the work queued so far.\n",
    },
    Entry {
        name: "torch.cuda.empty_cache",
        f: torch_cuda_empty_cache,
        doc: "torch.cuda.empty_cache()\nGive the GPU buffers the session freed and kept for reuse back to the device.\n",
    },
    Entry {
        name: "torch.cuda.mem_get_info",
        f: torch_cuda_mem_get_info,
        doc: "torch.cuda.mem_get_info(device=None)\n(free, total) bytes of GPU memory.\n",
    },
    Entry {
        name: "torch.cuda.get_device_capability",
        f: torch_cuda_get_device_capability,
        doc: "torch.cuda.get_device_capability(device=None): (major, minor), e.g. (9, 0) on an H100; (9, 0) on the CPU backend too, which emulates an sm_90 target.",
    },
    Entry {
        name: "torch.cuda.get_device_properties",
        f: torch_cuda_get_device_properties,
        doc: "torch.cuda.get_device_properties(device): name, major, minor, multi_processor_count, total_memory. On the CPU backend one multiprocessor per hardware thread.",
    },
    Entry {
        name: "torch.cuda.is_available",
        f: torch_cuda_is_available,
        doc: "torch.cuda.is_available()\nWhether kernels run on a GPU in this session.\n",
    },
    Entry {
        name: "torch.cuda.current_device",
        f: torch_cuda_current_device,
        doc: "torch.cuda.current_device()\nThe index of the current GPU.\n",
    },
    Entry {
        name: "torch.cuda.set_device",
        f: torch_cuda_set_device,
        doc: "torch.cuda.set_device(device): select the current GPU (where 'cuda' tensors and launches without tensor arguments go). An index past the machine's devices is an error (invalid device ordinal).",
    },
    Entry {
        name: "torch.cuda.device_count",
        f: torch_cuda_device_count,
        doc: "torch.cuda.device_count(): the GPUs the driver shows, 0 on the CPU backend (as is_available() is False there).",
    },
    Entry {
        name: "torch.cuda.get_device_name",
        f: torch_cuda_get_device_name,
        doc: "torch.cuda.get_device_name(device=None)\nThe GPU's name, as the driver gives it.\n",
    },
    Entry {
        name: "torch.cuda.set_stream",
        f: torch_cuda_set_stream,
        doc: "torch.cuda.set_stream(stream)\nAccepted; work runs on the session's one stream per GPU.\n",
    },
];

fn torch_empty(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    creation(s, &name[6..], &a)
}

fn torch_empty_like(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    like(s, &name[6..], &a)
}

fn torch_full(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    full(s, &a)
}

fn torch_tensor(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    from_data(s, &a)
}

fn torch_randint(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    randint(s, &a)
}

fn torch_arange(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    arange(s, &a)
}

fn torch_manual_seed(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let seed = to_int(&a.req(0, "seed")?)?;
    s.rng = seed as u64 ^ 0x5DEECE66D;
    Ok(Val::None)
}

fn torch_device(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let d = s.device_arg(Some(a.req(0, "type")?))?;
    Ok(Val::Device(match (d, a.get(1, "index")) {
        (Device::Cuda(_), Some(i)) => Device::Cuda(s.check_cuda_index(to_int(&i)?)?),
        (d, _) => d,
    }))
}

fn torch_where(_s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let c = tensor_arg(&a.req(0, "condition")?, "torch.where")?;
    let x = a.req(1, "input")?;
    let y = a.req(2, "other")?;
    let d = crate::ops::result_type(&x, &y)?;
    let xt = scalar_or_tensor(&x, &c.device)?;
    let yt = scalar_or_tensor(&y, &c.device)?;
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

fn torch_abs(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    crate::builtins::abs(s, "abs", a)
}

fn torch_cumsum(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    cumsum(&t, to_int(&a.req(1, "dim")?)?)
}

fn torch_sort(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    let dim = a
        .get(1, "dim")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(-1);
    let desc = a
        .get(2, "descending")
        .map(|v| v.truth())
        .transpose()?
        .unwrap_or(false);
    crate::tensor_lib::sort(&t, dim, desc)
}

fn torch_flip(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    let dims = crate::tensor_lib::dims_list(&[a.req(1, "dims")?])?;
    crate::tensor_lib::flip(&t, &dims)
}

fn torch_cat(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let items = crate::value::iterate(&a.req(0, "tensors")?)?;
    let dim = a
        .get(1, "dim")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(0);
    crate::tensor_lib::cat(&items, dim, name.ends_with("stack"))
}

fn torch_sin(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    unary_named(s, &t, name.rsplit('.').next().unwrap_or(name))
}

fn torch_nn_functional_leaky_relu(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
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

fn torch_max(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    if let Some(Val::Tensor(other)) = a.pos.get(1) {
        let op = if name == "torch.max" {
            "torch.maximum"
        } else {
            "torch.minimum"
        };
        return torch_maximum(
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

fn torch_maximum(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
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

fn torch_sum(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    reduce_call(s, &t, &a, 1, &name[6..])
}

fn torch_allclose(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let x = tensor_arg(&a.req(0, "input")?, name)?;
    let y = tensor_arg(&a.req(1, "other")?, name)?;
    if x.shape == y.shape {
        let (rtol, atol, nan) = crate::tensor_lib::tolerances(&a)?;
        if let Some(n) = crate::device_ops::mismatches(s, &x, &y, rtol, atol, nan)? {
            return Ok(Val::Bool(n == 0));
        }
    }
    Ok(Val::Bool(allclose_call(&x, &y, &a)?))
}

fn torch_equal(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let x = tensor_arg(&a.req(0, "input")?, name)?;
    let y = tensor_arg(&a.req(1, "other")?, name)?;
    Ok(Val::Bool(x.shape == y.shape && x.values() == y.values()))
}

fn torch_isclose(_s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let x = tensor_arg(&a.req(0, "input")?, name)?;
    let y = tensor_arg(&a.req(1, "other")?, name)?;
    let (shape, close) = crate::tensor_lib::isclose(&x, &y, crate::tensor_lib::tolerances(&a)?)?;
    let vals: Vec<Scalar> = close.into_iter().map(Scalar::B).collect();
    Ok(Val::tensor(Tensor::from_scalars(
        &shape,
        DType::I1,
        x.device.clone(),
        vals,
    )))
}

fn torch_matmul(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let x = tensor_arg(&a.req(0, "input")?, name)?;
    let y = tensor_arg(&a.req(1, "other")?, name)?;
    let out = match a.kw("out") {
        None | Some(Val::None) => None,
        Some(o) => Some(tensor_arg(&o, name)?),
    };
    let Some(out) = out else {
        return Ok(Val::tensor(crate::ops::matmul(s, &x, &y)?));
    };
    // `out=`: cuBLAS writes a 2-D product straight into a contiguous GPU
    // tensor; otherwise the product is copied into it.
    if !crate::ops::matmul_into(s, &x, &y, &out)? {
        let product = crate::ops::matmul(s, &x, &y)?;
        if product.shape != out.shape || product.dtype != out.dtype {
            return Err(Exc::new(
                "RuntimeError",
                format!(
                    "torch.matmul: out= has shape {:?} and dtype {}, the product {:?} and {}",
                    out.shape,
                    crate::tensor::torch_name(out.dtype),
                    product.shape,
                    crate::tensor::torch_name(product.dtype)
                ),
            ));
        }
        let copy = Val::Method(
            Box::new(Val::Tensor(out.clone())),
            std::rc::Rc::from("copy_"),
        );
        s.call(&copy, vec![Val::tensor(product)], vec![])?;
    }
    Ok(Val::Tensor(out))
}

fn torch_softmax(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    let dim = to_int(&a.get(1, "dim").unwrap_or(Val::Int(-1)))?;
    softmax_call(s, &t, dim)
}

fn torch_result_type(_s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    Ok(Val::DType(
        crate::ops::result_type(&a.req(0, "tensor1")?, &a.req(1, "tensor2")?)?,
        true,
    ))
}

/// `(major, minor)` of the GPU in use; on the CPU backend `(9, 0)`, the
/// target it emulates (descriptors and fp8 run there).
fn capability(s: &Engine) -> (i64, i64) {
    match &s.backend {
        crate::Backend::Cuda(g) => {
            let n: i64 = g
                .arch
                .trim_start_matches("sm_")
                .trim_end_matches('a')
                .parse()
                .unwrap_or(0);
            (n / 10, n % 10)
        }
        crate::Backend::Cpu => (9, 0),
    }
}

fn torch_cuda_get_device_capability(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    let (major, minor) = capability(s);
    Ok(Val::tuple(vec![Val::Int(major), Val::Int(minor)]))
}

fn torch_cuda_get_device_properties(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let i = cuda_index(s, a.get(0, "device"))?;
    let (major, minor) = capability(s);
    let (name, sms, mem) = match s.gpu(i)? {
        Some(g) => (g.name.clone(), g.sm_count as i64, g.total_memory as i64),
        None => ("CPU backend (no GPU)".to_string(), cpu_threads() as i64, 0),
    };
    Ok(Val::object(
        "_CudaDeviceProperties",
        vec![
            ("name", Val::str(&name)),
            ("major", Val::Int(major)),
            ("minor", Val::Int(minor)),
            ("multi_processor_count", Val::Int(sms)),
            ("total_memory", Val::Int(mem)),
            ("warp_size", Val::Int(32)),
        ],
    ))
}

/// The machine's hardware threads, asked once: the question reads cgroup
/// files (tens of microseconds), and tutorials ask on every call.
fn cpu_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Waits for every GPU the session has used (torch waits for the current
/// one; waiting for all is what a notebook that times work across GPUs wants).
fn torch_cuda_synchronize(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    if let Err(e) = s.synchronize_all() {
        let e = Exc::new("RuntimeError", e);
        return Err(s.gpu_failure(e));
    }
    s.launched_since_sync.clear();
    Ok(Val::None)
}

fn torch_cuda_empty_cache(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    s.release_kept();
    Ok(Val::None)
}

fn torch_cuda_mem_get_info(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let i = cuda_index(s, a.get(0, "device"))?;
    match s.gpu(i)? {
        Some(g) => {
            let (free, total) = g.mem_info();
            Ok(Val::tuple(vec![
                Val::Int(free as i64),
                Val::Int(total as i64),
            ]))
        }
        None => Err(Exc::new(
            "RuntimeError",
            "torch.cuda.mem_get_info: no GPU in use (the CPU backend runs 'cuda' tensors)",
        )),
    }
}

fn torch_cuda_is_available(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Bool(s.backend_name() == "cuda"))
}

fn torch_cuda_current_device(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Int(s.current_device as i64))
}

fn torch_cuda_device_count(s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Int(s.cuda_device_count() as i64))
}

/// A device argument of `torch.cuda.*`: an index, `'cuda:N'` or a
/// `torch.device`, checked; `None` is the current device.
fn cuda_index(s: &mut Engine, v: Option<Val>) -> R<u32> {
    match v {
        None | Some(Val::None) => Ok(s.current_device),
        Some(Val::Int(i)) => s.check_cuda_index(i),
        Some(Val::Device(Device::Cuda(i))) => s.check_cuda_index(i as i64),
        Some(Val::Str(t)) if t.starts_with("cuda") => match s.device_arg(Some(Val::Str(t)))? {
            Device::Cuda(i) => Ok(i),
            Device::Cpu => Ok(0),
        },
        Some(other) => Err(Exc::value_error(format!(
            "Expected a cuda device, but got: {}",
            other.repr()
        ))),
    }
}

fn torch_cuda_set_device(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let i = cuda_index(s, a.get(0, "device"))?;
    // Opened now, so that a device that cannot be used says so here.
    s.gpu(i)?;
    s.current_device = i;
    Ok(Val::None)
}

fn torch_cuda_get_device_name(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let i = cuda_index(s, a.get(0, "device"))?;
    match s.gpu(i)? {
        Some(g) => Ok(Val::str(&g.name)),
        None => Ok(Val::str(&s.device_name())),
    }
}

/// One stream per session: kernels, copies and cuBLAS are ordered on it.
fn torch_cuda_set_stream(_s: &mut Engine, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::None)
}

fn scalar_or_tensor(v: &Val, device: &Device) -> R<Tensor> {
    Ok(match v {
        Val::Tensor(t) => (**t).clone(),
        Val::Float(f) => Tensor::from_scalars(&[], DType::F32, device.clone(), [Scalar::F(*f)]),
        Val::Bool(b) => Tensor::from_scalars(&[], DType::I1, device.clone(), [Scalar::B(*b)]),
        other => Tensor::from_scalars(&[], DType::I64, device.clone(), [Scalar::I(to_int(other)?)]),
    })
}
