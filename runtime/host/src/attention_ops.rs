//! `torch.nn.functional.scaled_dot_product_attention`'s forward on a GPU by
//! the stdlib kernel `tb_attention_fwd` (flash attention's online softmax:
//! the scores are never materialised), where autograd does not track the
//! call and there is no mask or dropout; elsewhere the composed operations
//! (`vm/attention.py`) compute it.

use crate::device_ops::{applies, int, launch, leading_merge};
use crate::tensor::Tensor;
use crate::value::{Val, R};
use crate::Engine;
use std::rc::Rc;
use tilebook_tir::DType;

/// The widest head dimension the kernel takes (its tiles hold a row of it).
const WIDEST_HEAD: usize = 256;

/// `t` of shape `(..., rows, cols)` as (batches, rows, cols, batch stride,
/// row stride), every leading dimension merged into one stride and the last
/// contiguous; `None` where they cannot be.
fn batched(t: &Tensor) -> Option<(usize, usize, usize, isize, isize)> {
    let r = t.shape.len();
    if r < 2 {
        return None;
    }
    let (rows, cols) = (t.shape[r - 2], t.shape[r - 1]);
    if cols > 1 && t.strides[r - 1] != 1 {
        return None;
    }
    if !leading_merge(t, r - 2) {
        return None;
    }
    let lead = &t.shape[..r - 2];
    let batches = lead.iter().try_fold(1usize, |a, &n| a.checked_mul(n))?;
    let batch_stride = if lead.is_empty() { 0 } else { t.strides[r - 3] };
    Some((batches, rows, cols, batch_stride, t.strides[r - 2]))
}

/// Whether one batch's offsets (rows and columns, from the batch's first
/// element) fit the kernel's 32-bit arithmetic; batches are 64-bit.
fn fits_i32(rows: usize, cols: usize, row_stride: isize) -> bool {
    let reach = rows
        .saturating_sub(1)
        .saturating_mul(row_stride.unsigned_abs())
        .saturating_add(cols);
    reach < (i32::MAX as usize) - (1 << 20)
}

// Batches are the grid's second dimension (at most 65535 programs).

/// The attention of `q` over `k`, `v` (`(..., L, E)`, `(..., S, E)`), each
/// query row's softmax of its scaled scores (keys after it masked when
/// `causal`) times the values; `None` where the kernel does not apply.
pub fn attention(
    s: &mut Engine,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    causal: bool,
    scale: f64,
) -> R<Option<Tensor>> {
    let (Some(bq), Some(bk), Some(bv)) = (batched(q), batched(k), batched(v)) else {
        return Ok(None);
    };
    let (batches, l, e, sq0, sq1) = bq;
    let (_, n, _, sk0, sk1) = bk;
    let (_, _, _, sv0, sv1) = bv;
    let lead = &q.shape[..q.shape.len() - 2];
    let same_lead = |t: &Tensor| t.shape.len() == q.shape.len() && &t.shape[..lead.len()] == lead;
    if !applies(s, &[q, k, v])
        || q.dtype != k.dtype
        || q.dtype != v.dtype
        || !same_lead(k)
        || !same_lead(v)
        || k.shape[k.shape.len() - 1] != e
        || v.shape[v.shape.len() - 2..] != [n, e]
        || e == 0
        || e > WIDEST_HEAD
        || n == 0
        || batches > 65535
        || !fits_i32(l, e, sq1)
        || !fits_i32(n, e, sk1)
        || !fits_i32(n, e, sv1)
    {
        return Ok(None);
    }
    let out = Rc::new(s.new_tensor(&q.shape, q.dtype, q.device.clone(), false)?);
    if batches == 0 || l == 0 {
        return Ok(Some((*out).clone()));
    }
    let (_, _, _, so0, so1) = batched(&out).expect("a new tensor is contiguous");
    let head = e.next_power_of_two().max(16);
    let block_m = if head > 128 { 64 } else { 128 };
    let grid = l.div_ceil(block_m);
    launch(
        s,
        "tb_attention_fwd",
        [grid, batches],
        vec![
            Val::tensor(q.clone()),
            Val::tensor(k.clone()),
            Val::tensor(v.clone()),
            Val::Tensor(out.clone()),
            Val::Float(scale),
            int(l),
            int(n),
            int(sq0),
            int(sq1),
            int(sk0),
            int(sk1),
            int(sv0),
            int(sv1),
            int(so0),
            int(so1),
        ],
        vec![
            // The head dimension is a constant of the kernel: where it is
            // the tile's width, its column masks fold away.
            ("E", int(e)),
            ("CAUSAL", Val::Bool(causal)),
            ("IEEE", Val::Bool(q.dtype == DType::F32)),
            ("BLOCK_M", int(block_m)),
            ("BLOCK_N", int(64)),
            ("BLOCK_D", int(head)),
            ("num_warps", int(if head > 64 { 8 } else { 4 })),
            ("num_stages", int(2)),
        ],
    )?;
    Ok(Some((*out).clone()))
}
