//! The methods and attributes of `torch.Tensor` as a table (`METHODS`):
//! shape and view methods, conversions, reductions and element-wise
//! functions, in-place fills and copies.

use crate::args::{shape_val, tensor_arg, to_f64, to_int, Args};
use crate::registry::{Entry, TensorMethodFn};
use crate::shapes::{reshape_dims, reshape_shape};
use crate::tensor::{Device, Scalar, Tensor};
use crate::tensor_lib::{cumsum, reduce_call, softmax_call, unary_named};
use crate::value::{Exc, Val, R};
use crate::Engine;
use std::rc::Rc;
use tilebook_tir::DType;

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
    match all_methods().find(|e| e.name == name) {
        Some(e) => (e.f)(s, t, name, a),
        None => Err(Exc::new(
            "AttributeError",
            format!("'Tensor' object has no attribute '{name}' in tilebook"),
        )),
    }
}

/// The methods of `torch.Tensor`.
pub const METHODS: &[Entry<TensorMethodFn>] = &[
    Entry {
        name: "size",
        f: tensor_size,
        doc: "Tensor.size(dim=None): the shape as torch.Size, or one dimension's length.",
    },
    Entry {
        name: "stride",
        f: tensor_stride,
        doc: "Tensor.stride(dim=None): elements to step per index of each dimension.",
    },
    Entry {
        name: "numel",
        f: tensor_numel,
        doc: "Tensor.numel(): the number of elements.",
    },
    Entry {
        name: "nelement",
        f: tensor_numel,
        doc: "Tensor.nelement(): the number of elements (as numel).",
    },
    Entry {
        name: "dim",
        f: tensor_dim,
        doc: "Tensor.dim(): the number of dimensions.",
    },
    Entry {
        name: "element_size",
        f: tensor_element_size,
        doc: "Tensor.element_size(): bytes per element.",
    },
    Entry {
        name: "data_ptr",
        f: tensor_data_ptr,
        doc: "Tensor.data_ptr(): the address of the first element (device memory on cuda).",
    },
    Entry {
        name: "is_contiguous",
        f: tensor_is_contiguous,
        doc: "Tensor.is_contiguous(): whether elements are laid out row-major, no gaps.",
    },
    Entry {
        name: "contiguous",
        f: tensor_contiguous,
        doc: "Tensor.contiguous(): self if contiguous, else a row-major copy.",
    },
    Entry {
        name: "clone",
        f: tensor_clone,
        doc: "Tensor.clone(): a copy with its own storage, on the same device.",
    },
    Entry {
        name: "item",
        f: tensor_item,
        doc: "Tensor.item(): the value of a one-element tensor as a Python number.",
    },
    Entry {
        name: "tolist",
        f: tensor_tolist,
        doc: "Tensor.tolist(): the elements as (nested) Python lists.",
    },
    Entry {
        name: "to",
        f: tensor_to,
        doc: "Tensor.to(device=None, dtype=None): a copy on another device and/or dtype.",
    },
    Entry {
        name: "type",
        f: tensor_to,
        doc: "Tensor.type(dtype=None): the type name, or a copy converted to dtype.",
    },
    Entry {
        name: "cpu",
        f: tensor_cpu,
        doc: "Tensor.cpu(): a copy in host memory (self if already there).",
    },
    Entry {
        name: "cuda",
        f: tensor_cuda,
        doc: "Tensor.cuda(device=None): a copy in GPU memory (self if already there).",
    },
    Entry {
        name: "float",
        f: tensor_cast,
        doc: "Tensor.float(): as torch.float32.",
    },
    Entry {
        name: "half",
        f: tensor_cast,
        doc: "Tensor.half(): as torch.float16.",
    },
    Entry {
        name: "bfloat16",
        f: tensor_cast,
        doc: "Tensor.bfloat16(): as torch.bfloat16.",
    },
    Entry {
        name: "double",
        f: tensor_cast,
        doc: "Tensor.double(): as torch.float64.",
    },
    Entry {
        name: "int",
        f: tensor_cast,
        doc: "Tensor.int(): as torch.int32.",
    },
    Entry {
        name: "long",
        f: tensor_cast,
        doc: "Tensor.long(): as torch.int64.",
    },
    Entry {
        name: "bool",
        f: tensor_cast,
        doc: "Tensor.bool(): as torch.bool (nonzero is True).",
    },
    Entry {
        name: "reshape",
        f: tensor_reshape,
        doc: "Tensor.reshape(*shape): the same elements in a new shape (a view if it can be).",
    },
    Entry {
        name: "view",
        f: tensor_reshape,
        doc: "Tensor.view(*shape): a view of a contiguous tensor in a new shape.",
    },
    Entry {
        name: "flatten",
        f: tensor_flatten,
        doc: "Tensor.flatten(start_dim=0, end_dim=-1): dimensions merged into one.",
    },
    Entry {
        name: "t",
        f: tensor_t,
        doc: "Tensor.t(): the transpose of a 2-D tensor (a view).",
    },
    Entry {
        name: "transpose",
        f: tensor_transpose,
        doc: "Tensor.transpose(dim0, dim1): two dimensions swapped (a view).",
    },
    Entry {
        name: "permute",
        f: tensor_permute,
        doc: "Tensor.permute(*dims): dimensions reordered (a view).",
    },
    Entry {
        name: "unsqueeze",
        f: tensor_unsqueeze,
        doc: "Tensor.unsqueeze(dim): a new dimension of length 1 (a view).",
    },
    Entry {
        name: "squeeze",
        f: tensor_squeeze,
        doc: "Tensor.squeeze(dim=None): dimensions of length 1 removed (a view).",
    },
    Entry {
        name: "expand",
        f: tensor_expand,
        doc: "Tensor.expand(*sizes): length-1 dimensions broadcast, no copy (a view).",
    },
    Entry {
        name: "sum",
        f: tensor_sum,
        doc: "Tensor.sum(dim=None, keepdim=False, dtype=None): the sum of elements (dim: an int or a tuple of ints).",
    },
    Entry {
        name: "mean",
        f: tensor_sum,
        doc: "Tensor.mean(dim=None, keepdim=False): the mean of floating elements (dim: an int or a tuple of ints).",
    },
    Entry {
        name: "max",
        f: tensor_sum,
        doc: "Tensor.max(dim=None, keepdim=False): the maximum, or (values, indices) along dim.",
    },
    Entry {
        name: "min",
        f: tensor_sum,
        doc: "Tensor.min(dim=None, keepdim=False): the minimum, or (values, indices) along dim.",
    },
    Entry {
        name: "argmax",
        f: tensor_sum,
        doc: "Tensor.argmax(dim=None, keepdim=False): the index of the maximum.",
    },
    Entry {
        name: "argmin",
        f: tensor_sum,
        doc: "Tensor.argmin(dim=None, keepdim=False): the index of the minimum.",
    },
    Entry {
        name: "all",
        f: tensor_sum,
        doc: "Tensor.all(dim=None): whether every element is nonzero.",
    },
    Entry {
        name: "any",
        f: tensor_sum,
        doc: "Tensor.any(dim=None): whether some element is nonzero.",
    },
    Entry {
        name: "amax",
        f: tensor_sum,
        doc: "Tensor.amax(dim=(), keepdim=False): the maximum over dimensions.",
    },
    Entry {
        name: "amin",
        f: tensor_sum,
        doc: "Tensor.amin(dim=(), keepdim=False): the minimum over dimensions.",
    },
    Entry {
        name: "var",
        f: tensor_sum,
        doc: "Tensor.var(dim=None, correction=1, keepdim=False): the variance.",
    },
    Entry {
        name: "std",
        f: tensor_sum,
        doc: "Tensor.std(dim=None, correction=1, keepdim=False): the standard deviation.",
    },
    Entry {
        name: "abs",
        f: tensor_abs,
        doc: "Tensor.abs(): |x| elementwise.",
    },
    Entry {
        name: "tan",
        f: tensor_exp,
        doc: "Tensor.tan(): tangent elementwise.",
    },
    Entry {
        name: "asin",
        f: tensor_exp,
        doc: "Tensor.asin(): arcsine elementwise.",
    },
    Entry {
        name: "acos",
        f: tensor_exp,
        doc: "Tensor.acos(): arccosine elementwise.",
    },
    Entry {
        name: "atan",
        f: tensor_exp,
        doc: "Tensor.atan(): arctangent elementwise.",
    },
    Entry {
        name: "sinh",
        f: tensor_exp,
        doc: "Tensor.sinh(): hyperbolic sine elementwise.",
    },
    Entry {
        name: "cosh",
        f: tensor_exp,
        doc: "Tensor.cosh(): hyperbolic cosine elementwise.",
    },
    Entry {
        name: "asinh",
        f: tensor_exp,
        doc: "Tensor.asinh(): inverse hyperbolic sine elementwise.",
    },
    Entry {
        name: "acosh",
        f: tensor_exp,
        doc: "Tensor.acosh(): inverse hyperbolic cosine elementwise.",
    },
    Entry {
        name: "atanh",
        f: tensor_exp,
        doc: "Tensor.atanh(): inverse hyperbolic tangent elementwise.",
    },
    Entry {
        name: "log10",
        f: tensor_exp,
        doc: "Tensor.log10(): base-10 logarithm elementwise.",
    },
    Entry {
        name: "log1p",
        f: tensor_exp,
        doc: "Tensor.log1p(): log(1 + x) elementwise, exact near 0.",
    },
    Entry {
        name: "expm1",
        f: tensor_exp,
        doc: "Tensor.expm1(): exp(x) - 1 elementwise, exact near 0.",
    },
    Entry {
        name: "erf",
        f: tensor_exp,
        doc: "Tensor.erf(): the error function elementwise.",
    },
    Entry {
        name: "erfc",
        f: tensor_exp,
        doc: "Tensor.erfc(): 1 - erf(x) elementwise.",
    },
    Entry {
        name: "exp",
        f: tensor_exp,
        doc: "Tensor.exp(): e to the x elementwise.",
    },
    Entry {
        name: "log",
        f: tensor_exp,
        doc: "Tensor.log(): natural logarithm elementwise.",
    },
    Entry {
        name: "sqrt",
        f: tensor_exp,
        doc: "Tensor.sqrt(): square root elementwise.",
    },
    Entry {
        name: "sigmoid",
        f: tensor_exp,
        doc: "Tensor.sigmoid(): 1 / (1 + exp(-x)) elementwise.",
    },
    Entry {
        name: "relu",
        f: tensor_exp,
        doc: "Tensor.relu(): max(x, 0) elementwise.",
    },
    Entry {
        name: "sin",
        f: tensor_exp,
        doc: "Tensor.sin(): sine elementwise.",
    },
    Entry {
        name: "cos",
        f: tensor_exp,
        doc: "Tensor.cos(): cosine elementwise.",
    },
    Entry {
        name: "floor",
        f: tensor_exp,
        doc: "Tensor.floor(): rounded down elementwise.",
    },
    Entry {
        name: "ceil",
        f: tensor_exp,
        doc: "Tensor.ceil(): rounded up elementwise.",
    },
    Entry {
        name: "round",
        f: tensor_exp,
        doc: "Tensor.round(): rounded to nearest, ties to even, elementwise.",
    },
    Entry {
        name: "trunc",
        f: tensor_exp,
        doc: "Tensor.trunc(): rounded toward zero elementwise.",
    },
    Entry {
        name: "tanh",
        f: tensor_exp,
        doc: "Tensor.tanh(): hyperbolic tangent elementwise.",
    },
    Entry {
        name: "exp2",
        f: tensor_exp,
        doc: "Tensor.exp2(): 2 to the x elementwise.",
    },
    Entry {
        name: "log2",
        f: tensor_exp,
        doc: "Tensor.log2(): base-2 logarithm elementwise.",
    },
    Entry {
        name: "rsqrt",
        f: tensor_exp,
        doc: "Tensor.rsqrt(): 1 / sqrt(x) elementwise.",
    },
    Entry {
        name: "cumsum",
        f: tensor_cumsum,
        doc: "Tensor.cumsum(dim): running sums along dim.",
    },
    Entry {
        name: "sort",
        f: tensor_sort,
        doc: "Tensor.sort(dim=-1, descending=False): (values, indices), sorted along dim.",
    },
    Entry {
        name: "flip",
        f: tensor_flip,
        doc: "Tensor.flip(dims): the order of elements reversed along dims.",
    },
    Entry {
        name: "softmax",
        f: tensor_softmax,
        doc: "Tensor.softmax(dim): exp(x) / sum(exp(x)) along dim.",
    },
    Entry {
        name: "fill_",
        f: tensor_fill_,
        doc: "Tensor.fill_(value): every element set to value, in place.",
    },
    Entry {
        name: "zero_",
        f: tensor_fill_,
        doc: "Tensor.zero_(): every element set to 0, in place.",
    },
    Entry {
        name: "normal_",
        f: tensor_random_,
        doc: "Tensor.normal_(mean=0.0, std=1.0): fill in place with normal samples (torch.manual_seed's generator).",
    },
    Entry {
        name: "uniform_",
        f: tensor_random_,
        doc: "Tensor.uniform_(from=0.0, to=1.0): fill in place with uniform samples in [from, to).",
    },
    Entry {
        name: "copy_",
        f: tensor_copy_,
        doc: "Tensor.copy_(src): src's elements (broadcast, converted) copied in, in place.",
    },
    Entry {
        name: "__repr__",
        f: tensor_repr,
        doc: "repr(tensor): the elements as torch prints them, with device and dtype.",
    },
];

fn tensor_size(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    match a.get(0, "dim") {
        Some(d) => Ok(Val::Int(
            t.shape[dim_index(to_int(&d)?, t.shape.len())?] as i64,
        )),
        None => Ok(shape_val(&t.shape)),
    }
}

fn tensor_stride(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    match a.get(0, "dim") {
        Some(d) => Ok(Val::Int(
            t.strides[dim_index(to_int(&d)?, t.shape.len())?] as i64,
        )),
        None => Ok(Val::tuple(
            t.strides.iter().map(|&x| Val::Int(x as i64)).collect(),
        )),
    }
}

fn tensor_numel(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Int(t.numel() as i64))
}

fn tensor_dim(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Int(t.shape.len() as i64))
}

fn tensor_element_size(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Int(t.dtype.size_bytes() as i64))
}

/// On the GPU, a 'cuda' tensor's address is its GPU copy's (as torch's
/// is), and the storage is marked as escaped: kernels may reach it through
/// that address (tensors of pointers).
fn tensor_data_ptr(s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    if let (Some(g), crate::tensor::Device::Cuda(_)) = (s.gpu_of(&t.device)?, &t.device) {
        let base = t
            .storage
            .device_address(&g)
            .map_err(|e| Exc::new("RuntimeError", e))?;
        crate::tensor::live::escape(&t.storage);
        return Ok(Val::Int(
            (base + (t.offset * t.dtype.size_bytes()) as u64) as i64,
        ));
    }
    Ok(Val::Int(t.data_ptr() as i64))
}

fn tensor_is_contiguous(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::Bool(t.is_contiguous()))
}

fn tensor_contiguous(s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    if t.is_contiguous() {
        return Ok(Val::Tensor(t.clone()));
    }
    match crate::device_ops::copy(s, t)? {
        Some(c) => Ok(Val::tensor(c)),
        None => Ok(Val::tensor(t.contiguous())),
    }
}

/// `t.clone()`: a new contiguous copy, made on the GPU for a GPU tensor.
fn tensor_clone(s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    match crate::device_ops::copy(s, t)? {
        Some(c) => Ok(Val::tensor(c)),
        None => Ok(Val::tensor(t.to_dtype(t.dtype, true))),
    }
}

fn tensor_item(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
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

fn tensor_tolist(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
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

fn tensor_to(s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let mut out = (**t).clone();
    for v in a.pos.iter().chain(a.kw.iter().map(|(_, v)| v)) {
        match v {
            Val::DType(d, _) => out = crate::device_ops::cast_or_host(s, &out, *d)?,
            Val::Str(_) | Val::Device(_) => {
                let d = s.device_arg(Some(v.clone()))?;
                out = to_device(s, &out, d)?;
            }
            _ => {}
        }
    }
    Ok(Val::tensor(out))
}

/// A tensor on `device`: itself when it is there already, else a copy, as
/// in torch (from one GPU to another over NVLink or PCIe where there is a
/// path; between the host and a GPU through host memory, uploaded when a
/// kernel first uses it).
pub(crate) fn to_device(s: &mut Engine, t: &Tensor, device: Device) -> R<Tensor> {
    if t.device == device {
        return Ok(t.clone());
    }
    let gpu = match (&t.device, &device) {
        (Device::Cuda(_), Device::Cuda(_)) => s.gpu_of(&device)?,
        _ => None,
    };
    // The source's owner is opened too, so that its device copy is found.
    let from = s.gpu_of(&t.device)?;
    if let (Some(a), Some(b)) = (&from, &gpu) {
        s.prepare_copy(a, b);
    }
    let storage = match gpu {
        Some(g) => t.storage.copy_to_gpu(&g),
        None => t.storage.copy_on_host(),
    }
    .map_err(|e| {
        tilebook_kernels::gpu_fault::GpuFault::gpu_failure(s, Exc::new("RuntimeError", e))
    })?;
    let mut out = t.with_device(device);
    out.storage = storage;
    Ok(out)
}

fn tensor_cpu(s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::tensor(to_device(s, t, Device::Cpu)?))
}

/// `x.cuda(device=None)`: to the current GPU, or the one named.
fn tensor_cuda(s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    s.announce_backend();
    let d = match a.get(0, "device") {
        None | Some(Val::None) => Device::Cuda(s.current_device),
        Some(Val::Int(i)) => Device::Cuda(s.remapped(s.check_cuda_index(i)?)),
        Some(v) => s.device_arg(Some(v))?,
    };
    Ok(Val::tensor(to_device(s, t, d)?))
}

/// `x.float()`, `x.half()`, ...: a copy in the dtype the method names.
fn tensor_cast(s: &mut Engine, t: &Rc<Tensor>, name: &str, _a: Args) -> R<Val> {
    let d = match name {
        "float" => DType::F32,
        "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "double" => DType::F64,
        "int" => DType::I32,
        "long" => DType::I64,
        _ => DType::I1,
    };
    Ok(Val::tensor(crate::device_ops::cast_or_host(s, t, d)?))
}

fn tensor_reshape(_s: &mut Engine, t: &Rc<Tensor>, name: &str, a: Args) -> R<Val> {
    let shape = reshape_shape(t, &a)?;
    match t.view(&shape) {
        Some(v) => Ok(Val::tensor(v)),
        None if name == "reshape" => Ok(Val::tensor(
            t.contiguous().view(&shape).expect("contiguous view"),
        )),
        None => Err(Exc::new(
            "RuntimeError",
            "view size is not compatible with input tensor's size and stride; use .reshape(...)",
        )),
    }
}

fn tensor_flatten(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::tensor(
        t.contiguous().view(&[t.numel()]).expect("flat"),
    ))
}

fn tensor_t(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
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

fn tensor_transpose(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let d0 = dim_index(to_int(&a.req(0, "dim0")?)?, t.shape.len())?;
    let d1 = dim_index(to_int(&a.req(1, "dim1")?)?, t.shape.len())?;
    Ok(Val::tensor(t.transpose(d0, d1)))
}

fn tensor_permute(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let dims: Vec<usize> = reshape_dims(&a)?
        .into_iter()
        .map(|d| dim_index(d, t.shape.len()))
        .collect::<R<_>>()?;
    let mut out = (**t).clone();
    out.shape = dims.iter().map(|&d| t.shape[d]).collect();
    out.strides = dims.iter().map(|&d| t.strides[d]).collect();
    Ok(Val::tensor(out))
}

fn tensor_unsqueeze(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let d = to_int(&a.req(0, "dim")?)?;
    let r = t.shape.len() as i64 + 1;
    let d = if d < 0 { d + r } else { d };
    Ok(Val::tensor(t.unsqueeze(d.clamp(0, r - 1) as usize)))
}

fn tensor_squeeze(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
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

fn tensor_expand(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
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

fn tensor_sum(s: &mut Engine, t: &Rc<Tensor>, name: &str, a: Args) -> R<Val> {
    reduce_call(s, t, &a, 0, name)
}

fn tensor_abs(s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    crate::builtins::abs(
        s,
        "abs",
        Args {
            pos: vec![Val::Tensor(t.clone())],
            kw: vec![],
            fname: "abs".into(),
        },
    )
}

fn tensor_exp(s: &mut Engine, t: &Rc<Tensor>, name: &str, _a: Args) -> R<Val> {
    unary_named(s, t, name)
}

fn tensor_cumsum(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    cumsum(t, to_int(&a.req(0, "dim")?)?)
}

fn tensor_sort(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let dim = a
        .get(0, "dim")
        .map(|v| to_int(&v))
        .transpose()?
        .unwrap_or(-1);
    let desc = a
        .get(1, "descending")
        .map(|v| v.truth())
        .transpose()?
        .unwrap_or(false);
    crate::tensor_lib::sort(t, dim, desc)
}

fn tensor_flip(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let dims = match a.kw("dims") {
        Some(v) => crate::tensor_lib::dims_list(&[v])?,
        None => crate::tensor_lib::dims_list(&a.pos)?,
    };
    crate::tensor_lib::flip(t, &dims)
}

fn tensor_softmax(s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    softmax_call(s, t, to_int(&a.req(0, "dim")?)?)
}

fn tensor_fill_(_s: &mut Engine, t: &Rc<Tensor>, name: &str, a: Args) -> R<Val> {
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

fn tensor_random_(s: &mut Engine, t: &Rc<Tensor>, name: &str, a: Args) -> R<Val> {
    let normal = name == "normal_";
    let (p0, p1) = if normal {
        ("mean", "std")
    } else {
        ("from", "to")
    };
    let x = a.get(0, p0).map(|v| to_f64(&v)).transpose()?.unwrap_or(0.0);
    let y = a.get(1, p1).map(|v| to_f64(&v)).transpose()?.unwrap_or(1.0);
    if normal && y < 0.0 {
        return Err(Exc::new(
            "RuntimeError",
            format!("normal_ expects std >= 0.0, but found std {y}"),
        ));
    }
    if !normal && x > y {
        return Err(Exc::new(
            "RuntimeError",
            format!("uniform_ expects to return a [from, to) range, but found from={x} > to={y}"),
        ));
    }
    let (mean, scale) = if normal { (x, y) } else { (x, y - x) };
    if crate::device_ops::fill_random(s, t, normal, mean, scale)? {
        return Ok(Val::Tensor(t.clone()));
    }
    for o in t.offsets() {
        let v = if normal {
            x + y * s.normal()
        } else {
            x + (y - x) * s.uniform()
        };
        t.set_at(o, Scalar::F(v));
    }
    Ok(Val::Tensor(t.clone()))
}

fn tensor_copy_(s: &mut Engine, t: &Rc<Tensor>, _name: &str, a: Args) -> R<Val> {
    let src = tensor_arg(&a.req(0, "src")?, "copy_")?;
    if crate::device_ops::copy_into(s, t, &src)? {
        return Ok(Val::Tensor(t.clone()));
    }
    let e = src
        .expand(&t.shape)
        .ok_or_else(|| Exc::new("RuntimeError", "copy_: shapes do not match"))?;
    for (o, v) in t.offsets().into_iter().zip(e.values()) {
        t.set_at(o, v);
    }
    Ok(Val::Tensor(t.clone()))
}

fn tensor_repr(_s: &mut Engine, t: &Rc<Tensor>, _name: &str, _a: Args) -> R<Val> {
    Ok(Val::str(&t.repr()))
}

/// The attributes of a tensor that are not methods (`x.shape`, `x.T`);
/// any other name is a method, bound to the tensor.
/// Reads one attribute's value from a tensor.
type Field = fn(&Tensor) -> Val;

/// A tensor's attributes that are values, not methods (`x.shape`, ...).
const TENSOR_FIELDS: &[(&str, Field)] = &[
    ("shape", |t| shape_val(&t.shape)),
    ("dtype", |t| Val::DType(t.dtype, true)),
    ("device", |t| Val::Device(t.device.clone())),
    ("T", |t| Val::tensor(crate::args::reverse_dims(t))),
    ("ndim", |t| Val::Int(t.shape.len() as i64)),
    ("is_cuda", |t| {
        Val::Bool(matches!(t.device, Device::Cuda(_)))
    }),
    ("itemsize", |t| Val::Int(t.dtype.size_bytes() as i64)),
];

/// The names of a tensor's value attributes (the prelude makes each a
/// property of `torch.Tensor`, so reading one skips `__getattr__`).
pub fn field_names() -> impl Iterator<Item = &'static str> {
    TENSOR_FIELDS.iter().map(|(n, _)| *n)
}

/// The names of a tensor's native methods (the prelude makes each a
/// function of `torch.Tensor`).
/// Every tensor method: this table and `float_class`'s.
fn all_methods() -> impl Iterator<Item = &'static Entry<TensorMethodFn>> {
    METHODS
        .iter()
        .chain(crate::float_class::METHODS)
        .chain(crate::clamp_ops::METHODS)
}

pub fn method_names() -> impl Iterator<Item = &'static str> {
    all_methods()
        .map(|e| e.name)
        .filter(|n| !n.starts_with("__"))
}

/// Every public attribute of a tensor, values then methods (`dir(x)`,
/// completion), from the same tables `tensor_attr` reads.
pub fn attribute_names() -> impl Iterator<Item = &'static str> {
    TENSOR_FIELDS
        .iter()
        .map(|(n, _)| *n)
        .chain(all_methods().map(|e| e.name))
        .filter(|n| !n.starts_with('_'))
}

pub fn tensor_attr(base: &Val, t: &Rc<Tensor>, name: &str) -> R<Val> {
    if let Some((_, get)) = TENSOR_FIELDS.iter().find(|(n, _)| *n == name) {
        return Ok(get(t));
    }
    if all_methods().any(|e| e.name == name) {
        return Ok(Val::Method(Box::new(base.clone()), Rc::from(name)));
    }
    // As torch: an unknown attribute is an error where it is read (so
    // `hasattr` answers truly), not a method that fails when called.
    Err(Exc::new(
        "AttributeError",
        format!(
            "'Tensor' object has no attribute '{name}' in tilebook{}",
            tilebook_frontend::diag::did_you_mean(name, attribute_names(), "")
        ),
    ))
}
