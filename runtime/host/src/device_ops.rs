//! torch operations on `'cuda'` tensors as tile kernels from `stdlib/`.
//!
//! When the session runs on a GPU, element-wise arithmetic, `exp`/`abs`/
//! `relu`, sums and maxima along the last dimension and `softmax` on `'cuda'`
//! tensors launch the kernels of `stdlib/torch_ops.py` instead of computing on
//! the host, so the reference lines of the tutorials' benchmarks are GPU code.
//! Each function here answers `None` when its case is not one the kernels
//! cover (other dtypes, dimensions, layouts); the caller then computes on the
//! host, which is also the reference these kernels are tested against
//! (`tests/device_ops.rs` on the CPU backend, `tests/gpu/torch_ops.py` on the
//! GPU).
//!
//! The kernels are compiled like user kernels (same cache, same footer line)
//! but resolve their global names in a namespace of their own, so a cell's
//! globals never change them.

use crate::kernels::KernelObj;
use crate::tensor::{Device, Tensor};
use crate::value::R;
use crate::value::{Exc, Scope, Val};
use crate::{Backend, Engine};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use tilebook_frontend::kernel::JitFunction;
use tilebook_frontend::SourceFile;
use tilebook_tir::DType;

const SOURCE: &str = include_str!("../../../stdlib/torch_ops.py");

/// The stdlib kernels, parsed on first use.
pub struct Stdlib {
    kernels: HashMap<String, Rc<KernelObj>>,
}

impl Stdlib {
    fn load() -> R<Stdlib> {
        let file = SourceFile::new("stdlib/torch_ops.py", SOURCE);
        let stmts = tilebook_frontend::parse::parse_cell(&file)
            .map_err(|d| Exc::new("InternalError", format!("stdlib: {}", d.message)))?;
        let ns: Scope = Rc::new(RefCell::new(HashMap::from([
            ("tl".to_string(), Val::Module(Rc::from("tl"))),
            ("triton".to_string(), Val::Module(Rc::from("triton"))),
        ])));
        let mut kernels = HashMap::new();
        for st in stmts {
            if let ruff_python_ast::Stmt::FunctionDef(d) = st {
                let jit = JitFunction::new(d.clone(), &file);
                let k = Rc::new(KernelObj::in_namespace(jit, ns.clone()));
                kernels.insert(d.name.to_string(), k);
            }
        }
        Ok(Stdlib { kernels })
    }
}

/// Whether torch operations on these tensors run as kernels: on a GPU
/// session, or anywhere when `Engine::ops_as_kernels` asks (tests).
fn applies(s: &Engine, tensors: &[&Tensor]) -> bool {
    (s.ops_as_kernels || matches!(s.backend, Backend::Cuda(_)))
        && tensors.iter().all(|t| {
            matches!(t.device, Device::Cuda(_))
                && matches!(t.dtype, DType::F32 | DType::F16 | DType::BF16)
                && fits_i32(t)
        })
}

/// Whether every element offset of `t`, and its element count, fit the
/// kernels' 32-bit offsets.
fn fits_i32(t: &Tensor) -> bool {
    let reach: usize = t
        .shape
        .iter()
        .zip(&t.strides)
        .map(|(&n, &s)| n.saturating_sub(1) * s.unsigned_abs())
        .sum();
    t.numel() < i32::MAX as usize && reach < i32::MAX as usize
}

fn kernel(s: &mut Engine, name: &str) -> R<Rc<KernelObj>> {
    if s.stdlib.is_none() {
        s.stdlib = Some(Stdlib::load()?);
    }
    let lib = s.stdlib.as_ref().expect("loaded above");
    lib.kernels
        .get(name)
        .cloned()
        .ok_or_else(|| Exc::new("InternalError", format!("stdlib has no kernel `{name}`")))
}

fn launch(
    s: &mut Engine,
    name: &str,
    grid: [usize; 2],
    args: Vec<Val>,
    meta: Vec<(&str, Val)>,
) -> R<()> {
    let k = kernel(s, name)?;
    let grid = Val::tuple(grid.iter().map(|&g| Val::Int(g as i64)).collect());
    let kwargs = meta.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    tilebook_kernels::launch(s, &k, &grid, args, kwargs)?;
    Ok(())
}

fn int(n: impl TryInto<i64>) -> Val {
    Val::Int(n.try_into().unwrap_or(i64::MAX))
}

/// `t` seen as (rows, cols) with strides (rows, cols), merging the leading
/// dimensions; `None` when they cannot be merged into one stride.
fn as_2d(t: &Tensor) -> Option<([usize; 2], [isize; 2])> {
    let r = t.shape.len();
    match r {
        0 => Some(([1, 1], [0, 0])),
        1 => Some(([1, t.shape[0]], [0, t.strides[0]])),
        _ => {
            for i in 0..r - 2 {
                if t.shape[i] > 1 && t.strides[i] != t.strides[i + 1] * t.shape[i + 1] as isize {
                    return None;
                }
            }
            let rows = t.shape[..r - 1].iter().product();
            Some(([rows, t.shape[r - 1]], [t.strides[r - 2], t.strides[r - 1]]))
        }
    }
}

/// The arguments `(x_ptr, out_ptr, n_rows, n_cols, strides...)`.
fn view_args(t: &Tensor, out: &Rc<Tensor>, dims: [usize; 2], strides: &[isize]) -> Vec<Val> {
    let mut args = vec![Val::tensor(t.clone()), Val::Tensor(out.clone())];
    args.extend([int(dims[0]), int(dims[1])]);
    args.extend(strides.iter().map(|&s| int(s)));
    args
}

/// Grid rows are limited to 65535 programs in CUDA's second dimension.
const MAX_ROWS: usize = 65535;
const EW_BLOCK: usize = 1024;

/// The other operand of a binary operation.
pub enum Other<'a> {
    Tensor(&'a Rc<Tensor>),
    Scalar(f64),
}

/// `x op y` (or `y op x` when `swapped`) into a new tensor of `shape`, for
/// `+ - * /` on floating tensors of one dtype.
pub fn binary(
    s: &mut Engine,
    op: &str,
    x: &Rc<Tensor>,
    y: Other,
    swapped: bool,
    shape: &[usize],
    dtype: DType,
) -> R<Option<Val>> {
    let ys = match &y {
        Other::Tensor(t) => vec![&***t],
        Other::Scalar(_) => vec![],
    };
    if !applies(s, &[&**x]) || !applies(s, &ys) || dtype != x.dtype {
        return Ok(None);
    }
    if let Other::Tensor(t) = &y {
        if t.dtype != dtype {
            return Ok(None);
        }
    }
    let op = match (op, swapped) {
        ("sub", true) => "rsub",
        ("div", true) => "rdiv",
        (o, _) => o,
    };
    let Some(xe) = x.expand(shape) else {
        return Ok(None);
    };
    let ye = match &y {
        Other::Tensor(t) => match t.expand(shape) {
            Some(e) => Some(e),
            None => return Ok(None),
        },
        Other::Scalar(_) => None,
    };
    let both_contiguous = xe.is_contiguous() && ye.as_ref().is_none_or(|e| e.is_contiguous());
    let n: usize = shape.iter().product();
    let (dims, sx, sy) = if both_contiguous {
        ([1, n], [0, 1], [0, 1])
    } else {
        let Some((dims, sx)) = as_2d(&xe) else {
            return Ok(None);
        };
        let sy = match &ye {
            Some(e) => match as_2d(e) {
                Some((_, sy)) => sy,
                None => return Ok(None),
            },
            None => [0, 0],
        };
        (dims, sx, sy)
    };
    if dims[0] > MAX_ROWS {
        return Ok(None);
    }
    let out = s.new_tensor(shape, dtype, x.device.clone(), false)?;
    let out = Rc::new(out);
    if n == 0 {
        return Ok(Some(Val::Tensor(out)));
    }
    let (y_arg, y_value) = match (&ye, &y) {
        (Some(e), _) => (Val::tensor(e.clone()), 0.0),
        // Unused: any pointer does; not `out`, which a cross-checked launch
        // would see written under another argument's name.
        (None, Other::Scalar(v)) => (Val::tensor(xe.clone()), *v),
        (None, Other::Tensor(_)) => unreachable!("a tensor operand was expanded"),
    };
    launch(
        s,
        "tb_binary",
        [dims[1].div_ceil(EW_BLOCK), dims[0]],
        vec![
            Val::tensor(xe),
            y_arg,
            Val::Tensor(out.clone()),
            int(dims[0]),
            int(dims[1]),
            int(sx[0]),
            int(sx[1]),
            int(sy[0]),
            int(sy[1]),
            Val::Float(y_value),
        ],
        vec![
            ("OP", Val::str(op)),
            ("Y_SCALAR", Val::Bool(ye.is_none())),
            ("BLOCK", int(EW_BLOCK)),
            ("num_warps", int(4)),
        ],
    )?;
    Ok(Some(Val::Tensor(out)))
}

/// `torch.exp`, `abs`, `relu` of a floating tensor.
pub fn unary(s: &mut Engine, t: &Tensor, name: &str) -> R<Option<Val>> {
    if !applies(s, &[t]) || !matches!(name, "exp" | "abs" | "relu") {
        return Ok(None);
    }
    let (dims, sx) = if t.is_contiguous() {
        ([1, t.numel()], [0, 1])
    } else {
        match as_2d(t) {
            Some(v) => v,
            None => return Ok(None),
        }
    };
    if dims[0] > MAX_ROWS {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&t.shape, t.dtype, t.device.clone(), false)?);
    if t.numel() > 0 {
        launch(
            s,
            "tb_unary",
            [dims[1].div_ceil(EW_BLOCK), dims[0]],
            view_args(t, &out, dims, &sx),
            vec![
                ("OP", Val::str(name)),
                ("BLOCK", int(EW_BLOCK)),
                ("num_warps", int(4)),
            ],
        )?;
    }
    Ok(Some(Val::Tensor(out)))
}

/// `torch.rand`/`torch.randn` (and `*_like`) of a new tensor on a GPU:
/// generated there by `tb_random` (Philox, a seed from the session's
/// generator per call, so `torch.manual_seed` repeats it), instead of on the
/// host and copied up (a second for 64M elements).
pub fn random(
    s: &mut Engine,
    shape: &[usize],
    dtype: DType,
    device: &Device,
    normal: bool,
) -> R<Option<Val>> {
    let n: usize = shape.iter().product();
    let fits = matches!(device, Device::Cuda(_))
        && matches!(dtype, DType::F32 | DType::F16 | DType::BF16)
        && n > 0
        && n < i32::MAX as usize;
    if !fits || !(s.ops_as_kernels || matches!(s.backend, Backend::Cuda(_))) {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(shape, dtype, device.clone(), false)?);
    // 31 bits: a positive seed of the kernel's integer type.
    let seed = (s.next_u64() >> 33) as i64;
    // The largest value below 1 in the output dtype.
    let below_one = match dtype {
        DType::F16 => 1.0 - 2f64.powi(-11),
        DType::BF16 => 1.0 - 2f64.powi(-8),
        _ => 1.0 - 2f64.powi(-24),
    };
    launch(
        s,
        "tb_random",
        [n.div_ceil(EW_BLOCK), 1],
        vec![Val::Tensor(out.clone()), int(n), Val::Int(seed)],
        vec![
            ("NORMAL", Val::Bool(normal)),
            ("BELOW_ONE", Val::Float(below_one)),
            ("BLOCK", int(EW_BLOCK)),
            ("num_warps", int(4)),
        ],
    )?;
    Ok(Some(Val::Tensor(out)))
}

/// `x.to(dtype)` (and `x.float()`, `x.half()`, ...) of a contiguous GPU
/// tensor between fp32, fp16 and bf16: converted there by `tb_cast`
/// instead of on the host (0.4 s for 16M elements through the host).
pub fn cast(s: &mut Engine, t: &Tensor, dtype: DType) -> R<Option<Tensor>> {
    let n = t.numel();
    if dtype == t.dtype
        || !matches!(dtype, DType::F32 | DType::F16 | DType::BF16)
        || !t.is_contiguous()
        || n == 0
        || !applies(s, &[t])
    {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&t.shape, dtype, t.device.clone(), false)?);
    launch(
        s,
        "tb_cast",
        [n.div_ceil(EW_BLOCK), 1],
        vec![Val::tensor(t.clone()), Val::Tensor(out.clone()), int(n)],
        vec![("BLOCK", int(EW_BLOCK)), ("num_warps", int(4))],
    )?;
    Ok(Some((*out).clone()))
}

/// A block size for walking rows of `n` elements, and its warps.
fn row_block(n: usize, cap: usize) -> (usize, usize) {
    let block = n.next_power_of_two().clamp(128, cap);
    let warps = match block {
        0..=1024 => 4,
        1025..=4096 => 8,
        _ => 16,
    };
    (block, warps)
}

/// `t.sum(dim)`, `t.max(dim)` (values and indices) and `t.amax(dim)` along
/// the last dimension.
pub fn reduce(
    s: &mut Engine,
    t: &Tensor,
    kind: &str,
    dim: Option<i64>,
    keepdim: bool,
) -> R<Option<Val>> {
    let r = t.shape.len() as i64;
    let last = matches!(dim, Some(d) if r > 0 && (d == r - 1 || d == -1));
    if !applies(s, &[t]) || !last || !matches!(kind, "sum" | "max" | "amax") {
        return Ok(None);
    }
    let Some((dims, sx)) = as_2d(t) else {
        return Ok(None);
    };
    if dims[1] == 0 {
        return Ok(None);
    }
    let mut shape = t.shape.clone();
    if keepdim {
        *shape.last_mut().expect("rank > 0") = 1;
    } else {
        shape.pop();
    }
    let device = t.device.clone();
    let values = Rc::new(s.new_tensor(&shape, t.dtype, device.clone(), false)?);
    let (block, warps) = row_block(dims[1], 4096);
    let mut args = vec![Val::tensor(t.clone()), Val::Tensor(values.clone())];
    let indices = if kind == "sum" {
        None
    } else {
        let i = Rc::new(s.new_tensor(&shape, DType::I64, device, false)?);
        args.push(Val::Tensor(i.clone()));
        Some(i)
    };
    args.extend([int(dims[0]), int(dims[1]), int(sx[0]), int(sx[1])]);
    if dims[0] > 0 {
        let name = if kind == "sum" {
            "tb_row_sum"
        } else {
            "tb_row_max"
        };
        let meta = vec![("BLOCK", int(block)), ("num_warps", int(warps))];
        launch(s, name, [dims[0], 1], args, meta)?;
    }
    Ok(Some(match (kind, indices) {
        ("max", Some(i)) => Val::return_pair("max", Val::Tensor(values), Val::Tensor(i)),
        _ => Val::Tensor(values),
    }))
}

/// `torch.softmax(t, dim)` along the last dimension of a tensor whose rows
/// are contiguous.
pub fn softmax(s: &mut Engine, t: &Tensor, dim: i64) -> R<Option<Val>> {
    let r = t.shape.len() as i64;
    if !applies(s, &[t]) || r == 0 || (dim != r - 1 && dim != -1) {
        return Ok(None);
    }
    let Some((dims, sx)) = as_2d(t) else {
        return Ok(None);
    };
    if sx[1] != 1 && dims[1] > 1 {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&t.shape, t.dtype, t.device.clone(), false)?);
    if dims[0] == 0 || dims[1] == 0 {
        return Ok(Some(Val::Tensor(out)));
    }
    let long = dims[1] > 16384;
    let (block, warps) = row_block(dims[1], if long { 4096 } else { 16384 });
    launch(
        s,
        if long {
            "tb_softmax_long"
        } else {
            "tb_softmax_row"
        },
        [dims[0], 1],
        view_args(t, &out, dims, &sx[..1]),
        vec![("BLOCK", int(block)), ("num_warps", int(warps))],
    )?;
    Ok(Some(Val::Tensor(out)))
}
