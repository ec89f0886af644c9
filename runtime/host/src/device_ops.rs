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
                // Kernels call each other's helpers (`_index`) by name.
                ns.borrow_mut()
                    .insert(d.name.to_string(), Val::Kernel(k.clone()));
                kernels.insert(d.name.to_string(), k);
            }
        }
        Ok(Stdlib { kernels })
    }
}

/// Whether torch operations on these tensors run as kernels: on a GPU
/// session, or anywhere when `Engine::ops_as_kernels` asks (tests).
pub(crate) fn applies(s: &Engine, tensors: &[&Tensor]) -> bool {
    on_gpu(s, tensors)
        && tensors
            .iter()
            .all(|t| matches!(t.dtype, DType::F32 | DType::F16 | DType::BF16))
}

/// A bool tensor's bytes as int8 (a bool is one byte, 0 or 1), as the
/// kernels read and write them; other tensors as they are.
fn bool_bytes(t: &Tensor) -> Tensor {
    let mut v = t.clone();
    if v.dtype == DType::I1 {
        v.dtype = DType::I8;
    }
    v
}

/// Whether these tensors live on a GPU the session computes on (any dtype).
fn on_gpu(s: &Engine, tensors: &[&Tensor]) -> bool {
    (s.ops_as_kernels || matches!(s.backend, Backend::Cuda(_)))
        && tensors
            .iter()
            .all(|t| matches!(t.device, Device::Cuda(_)) && fits_i64(t))
}

/// How far `t`'s elements reach from its first one, in elements.
fn reach(t: &Tensor) -> usize {
    t.shape
        .iter()
        .zip(&t.strides)
        .map(|(&n, &s)| n.saturating_sub(1).saturating_mul(s.unsigned_abs()))
        .fold(0usize, |a, b| a.saturating_add(b))
}

/// Whether `t`'s element count and offsets fit 64-bit kernel offsets, with
/// room for a block past the end.
fn fits_i64(t: &Tensor) -> bool {
    let limit = (i64::MAX / 4) as usize;
    t.numel() < limit && reach(t) < limit
}

/// Whether offsets into these tensors (and `extra`, a count the kernel
/// indexes up to, such as the grid's rows times blocks) need 64 bits:
/// `WIDE` for the kernels. Below 2^31 - 2^20 so a last block's lanes past
/// the end do not wrap either.
pub(crate) fn wide(tensors: &[&Tensor], extra: usize) -> Val {
    let limit = (i32::MAX as usize) - (1 << 20);
    Val::Bool(
        extra >= limit
            || tensors
                .iter()
                .any(|t| t.numel() >= limit || reach(t) >= limit),
    )
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

pub(crate) fn launch(
    s: &mut Engine,
    name: &str,
    grid: [usize; 2],
    args: Vec<Val>,
    meta: Vec<(&str, Val)>,
) -> R<()> {
    let k = kernel(s, name)?;
    let grid = Val::tuple(grid.iter().map(|&g| Val::Int(g as i64)).collect());
    let kwargs = meta.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    tilebook_kernels::launch_unhooked(s, &k, &grid, args, kwargs)?;
    Ok(())
}

pub(crate) fn int(n: impl TryInto<i64>) -> Val {
    Val::Int(n.try_into().unwrap_or(i64::MAX))
}

/// Whether dimensions `0..n` of `t` merge into one with the stride of the
/// last of them: each one's stride is the next one's times its size (a
/// dimension of size 1 has no stride that matters).
pub(crate) fn leading_merge(t: &Tensor, n: usize) -> bool {
    (0..n.saturating_sub(1)).all(|i| {
        t.shape[i] <= 1
            || isize::try_from(t.shape[i + 1])
                .ok()
                .and_then(|n| t.strides[i + 1].checked_mul(n))
                == Some(t.strides[i])
    })
}

/// `t` seen as (rows, cols) with strides (rows, cols), merging the leading
/// dimensions; `None` when they cannot be merged into one stride.
pub(crate) fn as_2d(t: &Tensor) -> Option<([usize; 2], [isize; 2])> {
    let r = t.shape.len();
    match r {
        0 => Some(([1, 1], [0, 0])),
        1 => Some(([1, t.shape[0]], [0, t.strides[0]])),
        _ => {
            if !leading_merge(t, r - 1) {
                return None;
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
/// And 2^31 - 1 along the first.
const MAX_GRID_X: usize = i32::MAX as usize;
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
    elementwise(s, op, x, y, swapped, shape, dtype, dtype)
}

/// `x op y` for `op` one of `eq ne lt le gt ge` (`y op x` when `swapped`,
/// with the comparison mirrored) into a new `torch.bool` tensor.
pub fn compare(
    s: &mut Engine,
    op: &str,
    x: &Rc<Tensor>,
    y: Other,
    swapped: bool,
    shape: &[usize],
) -> R<Option<Val>> {
    let op = match (op, swapped) {
        ("lt", true) => "gt",
        ("le", true) => "ge",
        ("gt", true) => "lt",
        ("ge", true) => "le",
        (o, _) => o,
    };
    let dtype = x.dtype;
    // As torch: a number compared with a tensor is first converted to the
    // tensor's dtype (`half == 0.1` compares with 0.1 in fp16).
    let y = match y {
        Other::Scalar(v) => Other::Scalar(match dtype {
            DType::F16 => half::f16::from_f32(v as f32).to_f64(),
            DType::BF16 => half::bf16::from_f32(v as f32).to_f64(),
            _ => v as f32 as f64,
        }),
        t => t,
    };
    elementwise(s, op, x, y, false, shape, dtype, DType::I1)
}

#[allow(clippy::too_many_arguments)]
fn elementwise(
    s: &mut Engine,
    op: &str,
    x: &Rc<Tensor>,
    y: Other,
    swapped: bool,
    shape: &[usize],
    dtype: DType,
    out_dtype: DType,
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
    if dims[1].div_ceil(EW_BLOCK) > MAX_GRID_X {
        return Ok(None);
    }
    let out = s.new_tensor(shape, out_dtype, x.device.clone(), false)?;
    let out = Rc::new(out);
    if n == 0 {
        return Ok(Some(Val::Tensor(out)));
    }
    let out_bytes = bool_bytes(&out);
    let y_value = match &y {
        Other::Scalar(v) => *v,
        Other::Tensor(_) => 0.0,
    };
    let mut tensors = vec![&xe, &*out];
    if let Some(e) = &ye {
        tensors.push(e);
    }
    let wide = wide(&tensors, dims[1].next_multiple_of(EW_BLOCK));
    // CUDA allows 65535 programs along the grid's second axis: more rows go
    // in launches of that many, each on views starting at its first row.
    for (r0, rows) in row_chunks(dims[0]) {
        let at = |t: &Tensor, stride: isize| shifted(t, r0 as isize * stride);
        let xa = at(&xe, sx[0]);
        let y_arg = match &ye {
            Some(e) => at(e, sy[0]),
            // Unused: any pointer does; not `out`, which a cross-checked
            // launch would see written under another argument's name.
            None => xa.clone(),
        };
        launch(
            s,
            "tb_binary",
            [dims[1].div_ceil(EW_BLOCK), rows],
            vec![
                Val::tensor(xa),
                Val::tensor(y_arg),
                Val::tensor(at(&out_bytes, dims[1] as isize)),
                int(rows),
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
                ("WIDE", wide.clone()),
                ("BLOCK", int(EW_BLOCK)),
                ("num_warps", int(4)),
            ],
        )?;
    }
    Ok(Some(Val::Tensor(out)))
}

/// `(first row, rows)` of launches covering `rows` rows, at most
/// `MAX_ROWS` each.
fn row_chunks(rows: usize) -> Vec<(usize, usize)> {
    (0..rows)
        .step_by(MAX_ROWS)
        .map(|r0| (r0, MAX_ROWS.min(rows - r0)))
        .collect()
}

/// A 1-D view of `t`'s storage starting `by` elements after `t`'s first
/// (the kernels index it with their own strides).
fn shifted(t: &Tensor, by: isize) -> Tensor {
    let mut v = t.clone();
    v.offset = (t.offset as isize + by) as usize;
    v
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
    if dims[1].div_ceil(EW_BLOCK) > MAX_GRID_X {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&t.shape, t.dtype, t.device.clone(), false)?);
    if t.numel() > 0 {
        let wide = wide(&[t, &out], dims[1].next_multiple_of(EW_BLOCK));
        for (r0, rows) in row_chunks(dims[0]) {
            let x = shifted(t, r0 as isize * sx[0]);
            let o = Rc::new(shifted(&out, (r0 * dims[1]) as isize));
            launch(
                s,
                "tb_unary",
                [dims[1].div_ceil(EW_BLOCK), rows],
                view_args(&x, &o, [rows, dims[1]], &sx),
                vec![
                    ("OP", Val::str(name)),
                    ("WIDE", wide.clone()),
                    ("BLOCK", int(EW_BLOCK)),
                    ("num_warps", int(4)),
                ],
            )?;
        }
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
    let fits = matches!(device, Device::Cuda(_))
        && matches!(dtype, DType::F32 | DType::F16 | DType::BF16)
        && shape.iter().all(|&d| d > 0);
    if !fits || !(s.ops_as_kernels || matches!(s.backend, Backend::Cuda(_))) {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(shape, dtype, device.clone(), false)?);
    fill_random(s, &out, normal, 0.0, 1.0).map(|done| done.then_some(Val::Tensor(out)))
}

/// Fill the contiguous GPU tensor `out` with `tb_random`: normal samples
/// `mean + std * N(0, 1)`, or uniform ones in [0, 1). False (nothing done)
/// when the kernels do not cover it.
pub fn fill_random(s: &mut Engine, out: &Rc<Tensor>, normal: bool, mean: f64, std: f64) -> R<bool> {
    let n = out.numel();
    if n == 0 || !out.is_contiguous() || !applies(s, &[out]) {
        return Ok(false);
    }
    let dtype = out.dtype;
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
        vec![
            Val::Tensor(out.clone()),
            int(n),
            Val::Int(seed),
            Val::Float(mean),
            Val::Float(std),
        ],
        vec![
            ("NORMAL", Val::Bool(normal)),
            ("BELOW_ONE", Val::Float(below_one)),
            ("SCALED", Val::Bool(mean != 0.0 || std != 1.0)),
            ("WIDE", wide(&[out], n.next_multiple_of(EW_BLOCK))),
            ("BLOCK", int(EW_BLOCK)),
            ("num_warps", int(4)),
        ],
    )?;
    Ok(true)
}

/// `t` in dtype `d` as `x.to(d)` makes it: on the GPU by a kernel where
/// `cast` covers the case, else on the host.
pub(crate) fn cast_or_host(s: &mut Engine, t: &Tensor, d: DType) -> R<Tensor> {
    match cast(s, t, d)? {
        Some(out) => Ok(out),
        None => Ok(t.to_dtype_preserving(d, false)),
    }
}

/// `x.to(dtype)` (and `x.float()`, `x.half()`, ...) of a contiguous GPU
/// tensor between fp32, fp16 and bf16, and from them to fp8 and back:
/// converted there by `tb_cast` / `tb_cast_fp8` instead of on the host (0.4
/// s for 16M elements through the host).
pub fn cast(s: &mut Engine, t: &Tensor, dtype: DType) -> R<Option<Tensor>> {
    let n = t.numel();
    let wide_float = |d: DType| matches!(d, DType::F32 | DType::F16 | DType::BF16);
    let fp8 = |d: DType| matches!(d, DType::F8E5 | DType::F8E4NV);
    let convertible = (wide_float(dtype) && (wide_float(t.dtype) || fp8(t.dtype)))
        || (fp8(dtype) && wide_float(t.dtype));
    if dtype == t.dtype || !convertible || !t.is_contiguous() || n == 0 || !on_gpu(s, &[t]) {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&t.shape, dtype, t.device.clone(), false)?);
    let wide = wide(&[t, &out], n.next_multiple_of(EW_BLOCK));
    let grid = [n.div_ceil(EW_BLOCK), 1];
    let mut meta = vec![
        ("WIDE", wide),
        ("BLOCK", int(EW_BLOCK)),
        ("num_warps", int(4)),
    ];
    if fp8(dtype) {
        // The kernel writes torch's fp8 bytes itself (see `tb_cast_fp8`).
        let mut bytes = (*out).clone();
        bytes.dtype = DType::U8;
        meta.push(("E5", Val::Bool(dtype == DType::F8E5)));
        let args = vec![Val::tensor(t.clone()), Val::tensor(bytes), int(n)];
        launch(s, "tb_cast_fp8", grid, args, meta)?;
    } else {
        let args = vec![Val::tensor(t.clone()), Val::Tensor(out.clone()), int(n)];
        launch(s, "tb_cast", grid, args, meta)?;
    }
    Ok(Some((*out).clone()))
}

/// A block size for walking rows of `n` elements, and its warps.
pub(crate) fn row_block(n: usize, cap: usize) -> (usize, usize) {
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
        let meta = vec![
            ("WIDE", wide(&[t, &values], 0)),
            ("BLOCK", int(block)),
            ("num_warps", int(warps)),
        ];
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
        vec![
            ("WIDE", wide(&[t, &out], 0)),
            ("BLOCK", int(block)),
            ("num_warps", int(warps)),
        ],
    )?;
    Ok(Some(Val::Tensor(out)))
}

/// `t.contiguous()` / `t.clone()` of a GPU tensor of rank <= 4 (any dtype):
/// gathered there by `tb_copy` into a new contiguous tensor.
pub fn copy(s: &mut Engine, t: &Tensor) -> R<Option<Tensor>> {
    if !gatherable(s, t) {
        return Ok(None);
    }
    let out = s.new_tensor(&t.shape, t.dtype, t.device.clone(), false)?;
    gather(s, t, &out)?;
    Ok(Some(out))
}

/// `dst.copy_(src)` on the GPU: `src` (broadcast to `dst`'s shape, any
/// strides, cast first where the dtypes differ) gathered by `tb_copy` into a
/// contiguous `dst` on the same device. False when the kernels do not cover
/// it (the host copies then).
pub fn copy_into(s: &mut Engine, dst: &Tensor, src: &Tensor) -> R<bool> {
    // Overlapping views (`x.copy_(x.T)`) are left to the host's copy.
    if !dst.is_contiguous()
        || dst.device != src.device
        || Rc::ptr_eq(&dst.storage, &src.storage)
        || !gatherable(s, dst)
    {
        return Ok(false);
    }
    let Some(src) = src.expand(&dst.shape) else {
        return Ok(false);
    };
    let src = if src.dtype == dst.dtype {
        src
    } else {
        match cast(s, &src, dst.dtype)? {
            Some(c) => c,
            None => return Ok(false),
        }
    };
    if !gatherable(s, &src) {
        return Ok(false);
    }
    if dst.numel() > 0 {
        gather(s, &src, dst)?;
    }
    Ok(true)
}

/// Whether `tb_copy` reads `t`: on the GPU, rank <= 4, no negative strides.
fn gatherable(s: &Engine, t: &Tensor) -> bool {
    t.shape.len() <= 4 && t.numel() > 0 && on_gpu(s, &[t]) && t.strides.iter().all(|&st| st >= 0)
}

/// Element i of the contiguous `out` := `t`'s element at i's row-major
/// index (`tb_copy`, or `tb_copy_flat` from a contiguous `t`; bools copied
/// as their bytes).
fn gather(s: &mut Engine, t: &Tensor, out: &Tensor) -> R<()> {
    let r = t.shape.len();
    let n = t.numel();
    let mut dims = [1usize; 4];
    let mut strides = [0isize; 4];
    dims[4 - r..].copy_from_slice(&t.shape);
    strides[4 - r..].copy_from_slice(&t.strides);
    let mut args = vec![
        Val::tensor(bool_bytes(t)),
        Val::tensor(bool_bytes(out)),
        int(n),
    ];
    // A contiguous source is copied in storage order, without the index
    // arithmetic of a gather.
    let contiguous = t.is_contiguous();
    if !contiguous {
        args.extend(dims[1..].iter().map(|&d| int(d)));
        args.extend(strides.iter().map(|&st| int(st)));
    }
    launch(
        s,
        if contiguous {
            "tb_copy_flat"
        } else {
            "tb_copy"
        },
        [n.div_ceil(EW_BLOCK), 1],
        args,
        vec![
            ("WIDE", wide(&[t, out], n.next_multiple_of(EW_BLOCK))),
            ("BLOCK", int(EW_BLOCK)),
            ("num_warps", int(4)),
        ],
    )?;
    Ok(())
}

/// `t[..., mask, ...] = value` on a contiguous floating GPU tensor: `pre`
/// leading dimensions taken whole, then a boolean mask over the next
/// `mask.shape.len()` dimensions, the rest taken whole; `value` a number.
/// Filled there by `tb_masked_fill`; false when the kernels do not cover it.
pub fn masked_fill(s: &mut Engine, t: &Tensor, pre: usize, mask: &Tensor, value: f64) -> R<bool> {
    let k = mask.shape.len();
    let n = t.numel();
    if !applies(s, &[t])
        || !on_gpu(s, &[mask])
        || !t.is_contiguous()
        || !mask.is_contiguous()
        || mask.dtype != DType::I1
        || pre + k > t.shape.len()
        || t.shape[pre..pre + k] != mask.shape[..]
    {
        return Ok(false);
    }
    if n == 0 {
        return Ok(true);
    }
    let inner: usize = t.shape[pre + k..].iter().product();
    let bytes = bool_bytes(mask);
    launch(
        s,
        "tb_masked_fill",
        [n.div_ceil(EW_BLOCK), 1],
        vec![
            Val::tensor(t.clone()),
            Val::tensor(bytes),
            int(n),
            int(inner),
            int(mask.numel()),
            Val::Float(value),
        ],
        vec![
            ("WIDE", wide(&[t], n.next_multiple_of(EW_BLOCK))),
            ("BLOCK", int(EW_BLOCK)),
            ("num_warps", int(4)),
        ],
    )?;
    Ok(true)
}

/// `torch.tril(t, diagonal)` / `torch.triu` of a floating GPU tensor.
pub fn triangle(s: &mut Engine, t: &Tensor, diagonal: i64, lower: bool) -> R<Option<Tensor>> {
    let r = t.shape.len();
    if r < 2 || !applies(s, &[t]) {
        return Ok(None);
    }
    let src = if t.is_contiguous() {
        t.clone()
    } else {
        match copy(s, t)? {
            Some(c) => c,
            None => return Ok(None),
        }
    };
    let n = src.numel();
    let out = Rc::new(s.new_tensor(&t.shape, t.dtype, t.device.clone(), false)?);
    if n > 0 {
        launch(
            s,
            "tb_triangle",
            [n.div_ceil(EW_BLOCK), 1],
            vec![
                Val::tensor(src.clone()),
                Val::Tensor(out.clone()),
                int(n),
                int(t.shape[r - 2]),
                int(t.shape[r - 1]),
                int(diagonal),
            ],
            vec![
                ("LOWER", Val::Bool(lower)),
                ("WIDE", wide(&[&src, &out], n.next_multiple_of(EW_BLOCK))),
                ("BLOCK", int(EW_BLOCK)),
                ("num_warps", int(4)),
            ],
        )?;
    }
    Ok(Some((*out).clone()))
}

/// How many elements of `a` are not close to `e` (same shape, floating,
/// on a GPU): `|a - e| <= atol + rtol * |e|` in fp64, counted there by
/// `tb_mismatches`. `None` when the kernels do not cover the case.
pub fn mismatches(
    s: &mut Engine,
    a: &Tensor,
    e: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> R<Option<i64>> {
    if a.shape != e.shape || !applies(s, &[a, e]) {
        return Ok(None);
    }
    let mut contiguous = |t: &Tensor| -> R<Option<Tensor>> {
        if t.is_contiguous() {
            Ok(Some(t.clone()))
        } else {
            copy(s, t)
        }
    };
    let (Some(a), Some(e)) = (contiguous(a)?, contiguous(e)?) else {
        return Ok(None);
    };
    let n = a.numel();
    if n == 0 {
        return Ok(Some(0));
    }
    let count = Rc::new(s.new_tensor(&[1], DType::I32, a.device.clone(), true)?);
    launch(
        s,
        "tb_mismatches",
        [n.div_ceil(EW_BLOCK), 1],
        vec![
            Val::tensor(a.clone()),
            Val::tensor(e.clone()),
            Val::Tensor(count.clone()),
            int(n),
            Val::Float(rtol),
            Val::Float(atol),
        ],
        vec![
            ("EQUAL_NAN", Val::Bool(equal_nan)),
            ("WIDE", wide(&[&a, &e], n.next_multiple_of(EW_BLOCK))),
            ("BLOCK", int(EW_BLOCK)),
            ("num_warps", int(4)),
        ],
    )?;
    Ok(Some(count.get_at(count.offset).i()))
}

/// softmax's backward along the last dimension, `y * (g - sum(g * y))`, of
/// a GPU tensor whose rows are contiguous and fit one block (16384), in
/// `y`'s dtype: one kernel instead of four element-wise passes and their
/// full-size temporaries.
pub fn softmax_backward(s: &mut Engine, g: &Tensor, y: &Tensor, dim: i64) -> R<Option<Tensor>> {
    let r = y.shape.len() as i64;
    if r == 0 || (dim != r - 1 && dim != -1) || g.shape != y.shape || !applies(s, &[g, y]) {
        return Ok(None);
    }
    let (Some((dims, sg)), Some((_, sy))) = (as_2d(g), as_2d(y)) else {
        return Ok(None);
    };
    if (sg[1] != 1 || sy[1] != 1) && dims[1] > 1 || dims[1] > 16384 {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&y.shape, y.dtype, y.device.clone(), false)?);
    if dims[0] > 0 && dims[1] > 0 {
        let (block, warps) = row_block(dims[1], 16384);
        launch(
            s,
            "tb_softmax_bwd",
            [dims[0], 1],
            vec![
                Val::tensor(g.clone()),
                Val::tensor(y.clone()),
                Val::Tensor(out.clone()),
                int(dims[0]),
                int(dims[1]),
                int(sg[0]),
                int(sy[0]),
            ],
            vec![
                ("WIDE", wide(&[g, y, &out], 0)),
                ("BLOCK", int(block)),
                ("num_warps", int(warps)),
            ],
        )?;
    }
    Ok(Some((*out).clone()))
}
