//! The tensor maps a kernel with bulk tensor copies takes after its
//! parameters (`tilebook_nvptx::TensorMapUse`): each built from a host
//! descriptor's arguments (base, shape, strides) at launch.

use super::KernelArg;
use crate::value::Exc;
use tilebook_cuda::{Arg, TensorMap};
use tilebook_nvptx::TensorMapUse;
use tilebook_tir::DType;

use crate::value::R;

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
pub(super) fn arguments(maps: &[TensorMapUse], args: &[KernelArg], raw: &[Arg]) -> R<Vec<Arg>> {
    maps.iter().map(|m| one(m, args, raw)).collect()
}

fn one(m: &TensorMapUse, args: &[KernelArg], raw: &[Arg]) -> R<Arg> {
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
    let (rows, cols) = (int(i + 1)?, int(i + 2)?);
    let stride = int(i + 3)?;
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
