//! The tensor maps a kernel with bulk tensor copies takes after its
//! parameters (`tilebook_nvptx::TensorMapUse`): each built from a host
//! descriptor's arguments (base, shape, strides), or from the parameters
//! a block load through plain pointers names (`load[tma=i, map]`), at launch.

use super::KernelArg;
use crate::value::Exc;
use tilebook_cuda::{Arg, TensorMap};
use tilebook_nvptx::{MapSrc, TensorMapUse};
use tilebook_tir::DType;

use crate::value::kernel::Compiled;
use crate::value::R;
use crate::Host;
use std::rc::Rc;
use tilebook_cuda::Gpu;
use tilebook_frontend::kernel::JitFunction;

/// `CUtensorMapDataType` for elements of `d` (only their size matters to
/// the copy; the float types let out-of-bounds elements read as NaN).
fn map_dtype(d: DType) -> u32 {
    match d {
        DType::F16 => 6,
        DType::BF16 => 9,
        DType::F32 => 7,
        d => match d.size_bytes() {
            1 => 0,
            2 => 1,
            _ => 2,
        },
    }
}

/// The launch arguments for `maps`, given the kernel's own (`args`, and
/// `raw`, their device values).
pub(super) fn arguments(
    s: &mut dyn Host,
    g: &Rc<Gpu>,
    maps: &[TensorMapUse],
    args: &[KernelArg],
    raw: &[Arg],
) -> R<Vec<Arg>> {
    maps.iter().map(|m| one(s, g, m, args, raw)).collect()
}

/// The address of sixteen zero bytes on `g` (made on first use).
fn zero_block(s: &mut dyn Host, g: &Rc<Gpu>) -> R<u64> {
    let fresh =
        !matches!(&s.zero_block, Some((gen, dev, _)) if *gen == g.generation && *dev == g.ordinal);
    if fresh {
        let b = g
            .alloc(16)
            .map_err(|e| Exc::new("RuntimeError", format!("tensor map: {e}")))?;
        s.zero_block = Some((g.generation, g.ordinal, b));
    }
    match &s.zero_block {
        Some((_, _, b)) => Ok(g.address(b)),
        None => Err(Exc::new("InternalError", "no zero block")),
    }
}

fn one(s: &mut dyn Host, g: &Rc<Gpu>, m: &TensorMapUse, args: &[KernelArg], raw: &[Arg]) -> R<Arg> {
    let unused = TensorMap {
        addr: 0,
        dtype: 0,
        rank: 0,
        dims: [0; 5],
        strides: [0; 4],
        boxes: [0; 5],
        swizzle: 0,
        nan_fill: false,
    };
    if m.rows == 0 {
        return Ok(Arg::TensorMap(unused));
    }
    let i = m.desc_param as usize;
    let internal = || {
        Exc::new(
            "InternalError",
            "a tensor map's descriptor arguments are missing",
        )
    };
    let (Some(KernelArg::Tensor(t)), Some(Arg::Ptr(addr))) = (args.get(i), raw.get(i)) else {
        return Err(internal());
    };
    let int = |j: usize| match args.get(j) {
        Some(KernelArg::Int(v, _)) => Ok(*v),
        _ => Err(internal()),
    };
    let src = |s: MapSrc| match s {
        MapSrc::Param(j) => int(j as usize),
        MapSrc::Const(c) => Ok(c),
    };
    let (rows, cols, stride) = match m.shape {
        Some([r, c, s]) => (src(r)?, src(c)?, src(s)?),
        None => (int(i + 1)?, int(i + 2)?, int(i + 3)?),
    };
    // A block read through plain pointers from a tensor with no rows or
    // columns: every element is masked off, and the copy engine, which
    // needs a tensor of at least one element, reads one zero element (and
    // zero fill around it) instead.
    if m.shape.is_some() && (rows < 1 || cols < 1) {
        let addr = zero_block(s, g)?;
        return Ok(Arg::TensorMap(TensorMap {
            addr,
            dtype: map_dtype(t.dtype),
            rank: 2,
            dims: [1, 1, 0, 0, 0],
            strides: [16, 0, 0, 0],
            boxes: [m.cols, m.rows, 0, 0, 0],
            swizzle: m.swizzle,
            nan_fill: m.nan_fill,
        }));
    }
    let elem = t.dtype.size_bytes() as i64;
    let bad = |what: String| Exc::new("ValueError", format!("tensor descriptor: {what}"));
    if addr % 16 != 0 {
        return Err(bad(format!(
            "its base must be 16-byte aligned for the GPU's bulk copies (address {addr:#x})"
        )));
    }
    let fits = |n: i64| (1..=1i64 << 32).contains(&n);
    if !fits(rows) || !fits(cols) {
        return Err(bad(format!(
            "shape [{rows}, {cols}]: every dim must be between 1 and 2^32 for the GPU's bulk copies"
        )));
    }
    let bytes = stride
        .checked_mul(elem)
        .filter(|b| *b > 0 && b % 16 == 0 && *b < 1i64 << 40)
        .ok_or_else(|| {
            bad(format!(
                "stride {stride} of {elem}-byte elements must be a positive multiple of 16 bytes below 2^40"
            ))
        })?;
    Ok(Arg::TensorMap(TensorMap {
        addr: *addr,
        dtype: map_dtype(t.dtype),
        rank: 2,
        dims: [cols as u64, rows as u64, 0, 0, 0],
        strides: [bytes as u64, 0, 0, 0],
        boxes: [m.cols, m.rows, 0, 0, 0],
        swizzle: m.swizzle,
        nan_fill: m.nan_fill,
    }))
}

/// `compiled` built again without bulk copies for pointer loads, on `g`
/// (made once per device, `Compiled::plain`).
pub(super) fn plain_build(
    jit: &JitFunction,
    compiled: &Compiled,
    g: &Rc<Gpu>,
) -> R<Rc<(tilebook_nvptx::GpuKernel, tilebook_cuda::GpuFunction)>> {
    if let Some((ordinal, b)) = &*compiled.plain.borrow() {
        if *ordinal == g.ordinal {
            return Ok(b.clone());
        }
    }
    let failed = |e: String| {
        Exc::new(
            "CompilationError",
            format!(
                "GPU backend, kernel `{}` without bulk copies: {e}",
                jit.name
            ),
        )
    };
    let options = compiled
        .gpu_options
        .clone()
        .ok_or_else(|| Exc::new("InternalError", "no GPU options were recorded"))?;
    let options = tilebook_nvptx::GpuOptions {
        pointer_maps: false,
        arch: g.arch.clone(),
        ..options
    };
    let kernel =
        tilebook_tir::parse::parse_kernel(&compiled.tir).map_err(|e| failed(e.to_string()))?;
    let (gk, f, _) = super::build(&g.loader(), &kernel, &options).map_err(failed)?;
    let b = Rc::new((gk, f.map_err(failed)?));
    *compiled.plain.borrow_mut() = Some((g.ordinal, b.clone()));
    Ok(b)
}
