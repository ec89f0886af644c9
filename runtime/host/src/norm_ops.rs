//! `torch.nn.functional.layer_norm` on a GPU, forward and backward, by the
//! stdlib kernels `tb_layer_norm_fwd` (one row per program, fp32
//! statistics), `tb_layer_norm_bwd` (rows strided over a fixed number of
//! programs, each keeping partial dw/db rows) and `tb_col_sums`: what autograd's `layer_norm` calls for
//! `'cuda'` tensors, instead of composing a dozen tensor operations.

use crate::device_ops::{applies, as_2d, int, launch, row_block, wide};
use crate::tensor::Tensor;
use crate::value::{Val, R};
use crate::Engine;
use std::rc::Rc;
use tilebook_tir::DType;

/// Rows wider than this are left to the composed operations.
const WIDEST: usize = 16384;

/// `x` as rows of its last dimension, each contiguous: (rows, n, row stride).
fn rows(x: &Tensor) -> Option<(usize, usize, isize)> {
    let (dims, st) = as_2d(x)?;
    (st[1] == 1 || dims[1] == 1).then_some((dims[0], dims[1], st[0]))
}

/// A 1-D parameter of `n` elements, contiguous, on `x`'s device.
fn param_ok(p: Option<&Tensor>, x: &Tensor, n: usize) -> bool {
    p.is_none_or(|p| p.shape == [n] && p.is_contiguous() && p.device == x.device)
}

/// (y, mean, rstd) of layer norm over `x`'s last dimension; `None` where the
/// kernels do not apply.
pub fn layer_norm(
    s: &mut Engine,
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> R<Option<(Tensor, Tensor, Tensor)>> {
    let Some((m, n, sx0)) = rows(x) else {
        return Ok(None);
    };
    let params: Vec<&Tensor> = w.into_iter().chain(b).collect();
    if !applies(s, &[x]) || !applies(s, &params) || n == 0 || n > WIDEST {
        return Ok(None);
    }
    if !param_ok(w, x, n) || !param_ok(b, x, n) {
        return Ok(None);
    }
    let y = Rc::new(s.new_tensor(&x.shape, x.dtype, x.device.clone(), false)?);
    let mean = Rc::new(s.new_tensor(&[m], DType::F32, x.device.clone(), false)?);
    let rstd = Rc::new(s.new_tensor(&[m], DType::F32, x.device.clone(), false)?);
    if m > 0 {
        let (block, warps) = row_block(n, WIDEST);
        let arg = |p: Option<&Tensor>| Val::tensor(p.unwrap_or(x).clone());
        launch(
            s,
            "tb_layer_norm_fwd",
            [m, 1],
            vec![
                Val::tensor(x.clone()),
                arg(w),
                arg(b),
                Val::Tensor(y.clone()),
                Val::Tensor(mean.clone()),
                Val::Tensor(rstd.clone()),
                int(n),
                int(sx0),
                Val::Float(eps),
            ],
            vec![
                ("HAS_W", Val::Bool(w.is_some())),
                ("HAS_B", Val::Bool(b.is_some())),
                ("WIDE", wide(&[x, &y], 0)),
                ("BLOCK", int(block)),
                ("num_warps", int(warps)),
            ],
        )?;
    }
    Ok(Some(((*y).clone(), (*mean).clone(), (*rstd).clone())))
}

/// (dx, dw, db): the input's gradient, and the fp32 sums of the weight's and
/// bias's when asked for.
pub type Gradients = (Tensor, Option<Tensor>, Option<Tensor>);

/// (dx, dw, db) of layer norm from the forward's `mean` and `rstd`; dw and
/// db (fp32, summed over rows) only with `need_wb`. `None` where the kernels
/// do not apply.
pub fn layer_norm_backward(
    s: &mut Engine,
    g: &Tensor,
    x: &Tensor,
    w: Option<&Tensor>,
    mean: &Tensor,
    rstd: &Tensor,
    need_wb: bool,
) -> R<Option<Gradients>> {
    let (Some((m, n, sx0)), Some((_, _, sg0))) = (rows(x), rows(g)) else {
        return Ok(None);
    };
    let params: Vec<&Tensor> = w.into_iter().collect();
    if g.shape != x.shape
        || !applies(s, &[x, g])
        || !applies(s, &params)
        || !param_ok(w, x, n)
        || n == 0
        || n > WIDEST
        || mean.numel() != m
        || rstd.numel() != m
    {
        return Ok(None);
    }
    let dev = x.device.clone();
    let dx = Rc::new(s.new_tensor(&x.shape, x.dtype, dev.clone(), false)?);
    let sums = if need_wb {
        Some((
            Rc::new(s.new_tensor(&[n], DType::F32, dev.clone(), true)?),
            Rc::new(s.new_tensor(&[n], DType::F32, dev.clone(), true)?),
        ))
    } else {
        None
    };
    if m > 0 {
        let (block, warps) = row_block(n, WIDEST);
        // Programs of the backward: enough to fill the GPU, few enough that
        // their partial dw/db rows stay small beside the tensors.
        let programs = m.min(if n <= 4096 { 512 } else { 256 });
        let parts = match need_wb {
            true => Some((
                Rc::new(s.new_tensor(&[programs, n], DType::F32, dev.clone(), false)?),
                Rc::new(s.new_tensor(&[programs, n], DType::F32, dev.clone(), false)?),
            )),
            false => None,
        };
        let (dw, db) = match &parts {
            Some((dw, db)) => (Val::Tensor(dw.clone()), Val::Tensor(db.clone())),
            None => (Val::tensor(mean.clone()), Val::tensor(rstd.clone())),
        };
        launch(
            s,
            "tb_layer_norm_bwd",
            [programs, 1],
            vec![
                Val::tensor(x.clone()),
                Val::tensor(g.clone()),
                Val::tensor(w.unwrap_or(x).clone()),
                Val::tensor(mean.clone()),
                Val::tensor(rstd.clone()),
                Val::Tensor(dx.clone()),
                dw,
                db,
                int(m),
                int(n),
                int(sx0),
                int(sg0),
            ],
            vec![
                ("HAS_W", Val::Bool(w.is_some())),
                ("NEED_WB", Val::Bool(need_wb)),
                ("WIDE", wide(&[x, g, &dx], 0)),
                ("BLOCK", int(block)),
                ("num_warps", int(warps)),
            ],
        )?;
        if let (Some((pw, pb)), Some((dw, db))) = (&parts, &sums) {
            const COLS: usize = 128;
            launch(
                s,
                "tb_col_sums",
                [n.div_ceil(COLS), 1],
                vec![
                    Val::Tensor(pw.clone()),
                    Val::Tensor(pb.clone()),
                    Val::Tensor(dw.clone()),
                    Val::Tensor(db.clone()),
                    int(programs),
                    int(n),
                ],
                vec![
                    ("BLOCK_R", int(32)),
                    ("BLOCK_N", int(COLS)),
                    ("num_warps", int(4)),
                ],
            )?;
        }
    }
    let (dw, db) = match sums {
        Some((dw, db)) => (Some((*dw).clone()), Some((*db).clone())),
        None => (None, None),
    };
    Ok(Some(((*dx).clone(), dw, db)))
}
