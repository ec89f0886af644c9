//! Operations that move elements within a block: `tl.gather` (one IR op,
//! `gather[axis]`) and what is built from it and the ordinary ops —
//! `tl.flip`, `tl.sort` (a bitonic network of gathers and selects),
//! `tl.join`/`tl.split`/`tl.interleave`/`tl.cat`, `tl.histogram` and
//! `tl.associative_scan` with a user combine function (a log-depth scan).
//! Everything here is lowered to IR both backends already run, so the CPU
//! backend stays the reference for all of it.

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use super::semantic::shape_str;
use super::ConstVal;
use crate::source::Span;
use tilebook_tir::{BinOp, CmpPred, Combine, Const, DType, Elem, OpKind, Type, Value};

impl Lowerer<'_> {
    pub(super) fn shuffle(&mut self, name: &str, args: &Args, span: &Span) -> LResult<KVal> {
        match name {
            "gather" => {
                let a = self.bind(name, &["src", "index", "axis"], args, span)?;
                let src = self.block_arg(name, "src", &a[0], span)?;
                let index = self.block_arg(name, "index", &a[1], span)?;
                let rank = self.ty(src).shape.len();
                let axis = self.axis_arg(&a[2], rank, span)?.ok_or_else(|| {
                    self.err("TypeError", "gather() is missing the argument `axis`", span)
                })?;
                Ok(KVal::T(self.gather_checked(src, index, axis, span)?))
            }
            "flip" => {
                let a = self.bind(name, &["x", "dim"], args, span)?;
                let x = self.block_arg(name, "x", &a[0], span)?;
                let shape = self.ty(x).shape;
                let dim = self.axis_arg(&a[1], shape.len(), span)?;
                let dim = dim.unwrap_or(shape.len() - 1);
                let lane = self.lane_index(&shape, dim, span);
                let last = self.int_block(shape[dim] as i64 - 1, &shape, span);
                let idx = self.ibin(BinOp::Sub, last, lane, span);
                Ok(KVal::T(self.gather_v(x, idx, dim, span)))
            }
            "sort" => {
                let a = self.bind(name, &["x", "dim", "descending"], args, span)?;
                let x = self.block_arg(name, "x", &a[0], span)?;
                let shape = self.ty(x).shape;
                let dim = self.axis_arg(&a[1], shape.len(), span)?;
                let dim = dim.unwrap_or(shape.len() - 1);
                let descending = self.flag(&a[2]);
                Ok(KVal::T(self.bitonic_sort(x, dim, descending, span)?))
            }
            "join" => {
                let a = self.bind(name, &["a", "b"], args, span)?;
                let x = self.required(name, "a", &a[0], span)?;
                let y = self.required(name, "b", &a[1], span)?;
                let (x, y) = self.same_dtype_pair(&x, &y, span)?;
                Ok(KVal::T(self.join(x, y, span)?))
            }
            "split" => {
                let a = self.bind(name, &["a"], args, span)?;
                let x = self.block_arg(name, "a", &a[0], span)?;
                let (lo, hi) = self.split(x, span)?;
                Ok(KVal::Tuple(vec![KVal::T(lo), KVal::T(hi)]))
            }
            "interleave" => {
                let a = self.bind(name, &["a", "b"], args, span)?;
                let x = self.required(name, "a", &a[0], span)?;
                let y = self.required(name, "b", &a[1], span)?;
                let (x, y) = self.same_dtype_pair(&x, &y, span)?;
                let j = self.join(x, y, span)?;
                let mut shape = self.ty(j).shape;
                let two = shape.pop().unwrap_or(2);
                match shape.last_mut() {
                    Some(last) => *last *= two,
                    None => shape.push(two),
                }
                self.reshape(j, shape, span)
            }
            "cat" => {
                let a = self.bind(name, &["input", "other", "can_reorder", "dim"], args, span)?;
                let x = self.block_arg(name, "input", &a[0], span)?;
                let y = self.block_arg(name, "other", &a[1], span)?;
                self.cat(x, y, &a[3], span)
            }
            "histogram" => {
                let a = self.bind(name, &["input", "num_bins", "mask"], args, span)?;
                let x = self.block_arg(name, "input", &a[0], span)?;
                let bins =
                    self.const_int(&self.required(name, "num_bins", &a[1], span)?, "num_bins")?;
                let mask = self.mask_arg(&a[2])?;
                Ok(KVal::T(self.histogram(x, bins, mask, span)?))
            }
            _ => self.associative_scan(args, span),
        }
    }

    /// A block operand (a scalar is an error naming the argument).
    fn block_arg(
        &mut self,
        fname: &str,
        what: &str,
        v: &Option<(KVal, Span)>,
        span: &Span,
    ) -> LResult<Value> {
        let (k, s) = self.required(fname, what, v, span)?;
        let x = self.value_of(&k, &s)?;
        let t = self.ty(x);
        if !t.is_block() || t.elem.is_ptr() {
            return Err(self.err(
                "TypeError",
                format!(
                    "{fname}() needs a block of numbers for `{what}`, got {}",
                    self.describe_kval(&k)
                ),
                &s,
            ));
        }
        Ok(x)
    }

    /// Two operands of one dtype (a constexpr takes the other's dtype).
    fn same_dtype_pair(
        &mut self,
        a: &(KVal, Span),
        b: &(KVal, Span),
        span: &Span,
    ) -> LResult<(Value, Value)> {
        let (x, y) = match (&a.0, &b.0) {
            (KVal::C(c), other) if !matches!(other, KVal::C(_)) => {
                let y = self.value_of(other, &b.1)?;
                let d = self.ty(y).dtype().unwrap_or(DType::I32);
                (self.const_as(c, d, &a.1), y)
            }
            (other, KVal::C(c)) if !matches!(other, KVal::C(_)) => {
                let x = self.value_of(other, &a.1)?;
                let d = self.ty(x).dtype().unwrap_or(DType::I32);
                (x, self.const_as(c, d, &b.1))
            }
            _ => (self.value_of(&a.0, &a.1)?, self.value_of(&b.0, &b.1)?),
        };
        let (tx, ty) = (self.ty(x), self.ty(y));
        if tx.elem != ty.elem {
            return Err(self.err(
                "TypeError",
                format!(
                    "the two operands must have one dtype, got {} and {}",
                    self.describe_kval(&a.0),
                    self.describe_kval(&b.0)
                ),
                span,
            ));
        }
        Ok((x, y))
    }

    // ------------------------------------------------------------ helpers

    /// An `i32` block of `shape` holding each element's position along `dim`.
    fn lane_index(&mut self, shape: &[usize], dim: usize, span: &Span) -> Value {
        let n = shape[dim];
        let i32t = Elem::Scalar(DType::I32);
        let mut v = self.emit1(
            OpKind::Arange(0, n as i64),
            vec![],
            Type::block(i32t, vec![n]),
            span,
        );
        if shape.len() > 1 {
            let mut s = vec![1; shape.len()];
            s[dim] = n;
            v = self.emit1(OpKind::Reshape, vec![v], Type::block(i32t, s), span);
            v = self.emit1(
                OpKind::Broadcast,
                vec![v],
                Type::block(i32t, shape.to_vec()),
                span,
            );
        }
        v
    }

    fn int_block(&mut self, c: i64, shape: &[usize], span: &Span) -> Value {
        let t = Type::block(Elem::Scalar(DType::I32), shape.to_vec());
        self.constant(Const::Int(c), t, span)
    }

    fn ibin(&mut self, op: BinOp, a: Value, b: Value, span: &Span) -> Value {
        let t = self.ty(a);
        self.emit1(OpKind::Binary(op), vec![a, b], t, span)
    }

    fn icmp(&mut self, p: CmpPred, a: Value, b: Value, span: &Span) -> Value {
        let t = self.ty(a).with_elem(Elem::Scalar(DType::I1));
        self.emit1(OpKind::Cmp(p), vec![a, b], t, span)
    }

    fn sel(&mut self, c: Value, a: Value, b: Value, span: &Span) -> Value {
        let t = self.ty(a);
        self.emit1(OpKind::Select, vec![c, a, b], t, span)
    }

    fn gather_v(&mut self, src: Value, index: Value, axis: usize, span: &Span) -> Value {
        let t = self.ty(src).with_shape(self.ty(index).shape);
        self.emit1(OpKind::Gather(axis), vec![src, index], t, span)
    }

    /// `tl.gather` with its operands checked.
    fn gather_checked(
        &mut self,
        src: Value,
        index: Value,
        axis: usize,
        span: &Span,
    ) -> LResult<Value> {
        let (st, it) = (self.ty(src), self.ty(index));
        if !it.dtype().is_some_and(DType::is_int) {
            return Err(self.err("TypeError", "gather() needs an integer index block", span));
        }
        let fits = it.shape.len() == st.shape.len()
            && (0..st.shape.len()).all(|d| d == axis || it.shape[d] == st.shape[d]);
        if !fits {
            return Err(self.err(
                "ValueError",
                format!(
                    "gather() along axis {axis}: the index block {} must have the rank of the source {} and its size off the axis",
                    shape_str(&it.shape),
                    shape_str(&st.shape)
                ),
                span,
            ));
        }
        Ok(self.gather_v(src, index, axis, span))
    }

    /// Bit `b` of each lane (0 or 1).
    fn lane_bit(&mut self, lane: Value, b: u32, span: &Span) -> Value {
        let shape = self.ty(lane).shape;
        let sh = self.int_block(b as i64, &shape, span);
        let one = self.int_block(1, &shape, span);
        let s = self.ibin(BinOp::Shr, lane, sh, span);
        self.ibin(BinOp::And, s, one, span)
    }

    /// A bitonic sorting network along `dim`: log2(n)·(log2(n)+1)/2 rounds,
    /// each exchanging every element with its partner `lane ^ j` through
    /// `gather`. Comparisons are `<`, so a NaN is never moved past (as in
    /// Triton's network), and the result is always a permutation.
    fn bitonic_sort(
        &mut self,
        x: Value,
        dim: usize,
        descending: bool,
        span: &Span,
    ) -> LResult<Value> {
        let shape = self.ty(x).shape;
        let n = shape[dim];
        if !n.is_power_of_two() {
            return Err(self.err(
                "ValueError",
                format!("sort() needs a power-of-two size along dim {dim}, got {n}"),
                span,
            ));
        }
        let lane = self.lane_index(&shape, dim, span);
        let want = self.int_block(descending as i64, &shape, span);
        let mut x = x;
        let logn = n.trailing_zeros();
        for kb in 1..=logn {
            let up = self.lane_bit(lane, kb, span);
            for jb in (0..kb).rev() {
                let jv = self.int_block(1 << jb, &shape, span);
                let partner = self.ibin(BinOp::Xor, lane, jv, span);
                let y = self.gather_v(x, partner, dim, span);
                let low = self.lane_bit(lane, jb, span);
                // This lane keeps the smaller of the pair when its bit `j`
                // equals its bit `k` (an ascending run), flipped for descending.
                let differ = self.ibin(BinOp::Xor, low, up, span);
                let take_min = self.icmp(CmpPred::Eq, differ, want, span);
                let y_less = self.icmp(CmpPred::Lt, y, x, span);
                let x_less = self.icmp(CmpPred::Lt, x, y, span);
                let swap = self.sel(take_min, y_less, x_less, span);
                x = self.sel(swap, y, x, span);
            }
        }
        Ok(x)
    }

    /// `tl.join`: a new minor dimension of size 2 (operands broadcast first).
    fn join(&mut self, a: Value, b: Value, span: &Span) -> LResult<Value> {
        let (a, b) = self.broadcast_pair(a, b, span)?;
        let t = self.ty(a);
        let rank = t.shape.len();
        let mut shape = t.shape.clone();
        shape.push(2);
        self.check_numel(&shape, span)?;
        let mut wide = vec![];
        for v in [a, b] {
            let v = if rank > 0 {
                let mut s = t.shape.clone();
                s.push(1);
                self.emit1(OpKind::ExpandDims(rank), vec![v], t.with_shape(s), span)
            } else {
                v
            };
            wide.push(self.broadcast_to(v, &shape, span)?);
        }
        let lane = self.lane_index(&shape, rank, span);
        let zero = self.int_block(0, &shape, span);
        let first = self.icmp(CmpPred::Eq, lane, zero, span);
        Ok(self.sel(first, wide[0], wide[1], span))
    }

    /// `tl.split`: the two halves of a minor dimension of size 2.
    fn split(&mut self, x: Value, span: &Span) -> LResult<(Value, Value)> {
        let t = self.ty(x);
        let rank = t.shape.len();
        if t.shape[rank - 1] != 2 {
            return Err(self.err(
                "ValueError",
                format!(
                    "split() needs a last dimension of size 2, got a block of shape {}",
                    shape_str(&t.shape)
                ),
                span,
            ));
        }
        let mut ishape = t.shape.clone();
        ishape[rank - 1] = 1;
        let mut out = vec![];
        for h in 0..2 {
            let idx = self.int_block(h, &ishape, span);
            let g = self.gather_v(x, idx, rank - 1, span);
            let v = if rank > 1 {
                let rt = t.with_shape(t.shape[..rank - 1].to_vec());
                self.emit1(OpKind::Reshape, vec![g], rt, span)
            } else {
                self.only_element(g, span)
            };
            out.push(v);
        }
        Ok((out[0], out[1]))
    }

    /// The element of a one-element block as a scalar, bit for bit (an `or`
    /// reduction of its bits).
    fn only_element(&mut self, g: Value, span: &Span) -> Value {
        let t = self.ty(g);
        let d = t.dtype().unwrap_or(DType::I32);
        let bits = match d.bits() {
            1 => DType::I1,
            8 => DType::I8,
            16 => DType::I16,
            64 => DType::I64,
            _ => DType::I32,
        };
        let gi = if bits == d {
            g
        } else {
            self.emit1(
                OpKind::Bitcast,
                vec![g],
                t.with_elem(Elem::Scalar(bits)),
                span,
            )
        };
        let r = self.emit1(
            OpKind::Reduce {
                axis: 0,
                combine: Combine::Or,
            },
            vec![gi],
            Type::scalar(bits),
            span,
        );
        if bits == d {
            r
        } else {
            self.emit1(OpKind::Bitcast, vec![r], Type::scalar(d), span)
        }
    }

    /// `tl.cat` along `dim` (0 unless given) of two blocks of one shape, in
    /// order (so `can_reorder` either way is honoured).
    fn cat(
        &mut self,
        x: Value,
        y: Value,
        dim: &Option<(KVal, Span)>,
        span: &Span,
    ) -> LResult<KVal> {
        let (tx, ty) = (self.ty(x), self.ty(y));
        if tx.elem != ty.elem || tx.shape != ty.shape {
            return Err(self.err(
                "ValueError",
                format!(
                    "cat() in tilebook joins two blocks of one shape and dtype (the result's sizes must stay powers of two), got {} and {}",
                    shape_str(&tx.shape),
                    shape_str(&ty.shape)
                ),
                span,
            ));
        }
        let rank = tx.shape.len();
        let dim = self.axis_arg(dim, rank, span)?.unwrap_or(0);
        let j = self.join(x, y, span)?;
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.insert(dim, rank);
        let jt = self.ty(j);
        let pshape: Vec<usize> = perm.iter().map(|&p| jt.shape[p]).collect();
        let moved = self.emit1(OpKind::Trans(perm), vec![j], jt.with_shape(pshape), span);
        let mut shape = tx.shape.clone();
        shape[dim] *= 2;
        self.reshape(moved, shape, span)
    }

    /// `tl.histogram`: counts of each value in `0..bins` (others are not
    /// counted), as `int32`.
    fn histogram(
        &mut self,
        x: Value,
        bins: i64,
        mask: Option<Value>,
        span: &Span,
    ) -> LResult<Value> {
        let t = self.ty(x);
        if t.shape.len() != 1 || !t.dtype().is_some_and(DType::is_int) {
            return Err(self.err(
                "TypeError",
                format!(
                    "histogram() takes a 1-d block of integers, got a block of shape {}",
                    shape_str(&t.shape)
                ),
                span,
            ));
        }
        if bins <= 0 {
            return Err(self.err("ValueError", "num_bins must be positive", span));
        }
        let (n, b) = (t.shape[0], bins as usize);
        self.check_numel(&[b], span)?;
        if n.checked_mul(b).is_none_or(|nb| nb > 1 << 20) {
            return Err(self.err(
                "ValueError",
                format!(
                    "histogram() of {n} values into {b} bins compares them in a {n} x {b} block; tilebook allows at most 2^20 elements (use fewer values per program or fewer bins)"
                ),
                span,
            ));
        }
        let shape = [n, b];
        let xs = self.emit1(
            OpKind::ExpandDims(1),
            vec![x],
            t.with_shape(vec![n, 1]),
            span,
        );
        let xs = self.broadcast_to(xs, &shape, span)?;
        let d = t.dtype().unwrap_or(DType::I32);
        let lanes = self.lane_index(&shape, 1, span);
        let lanes = self.cast(lanes, d, span);
        let mut hit = self.icmp(CmpPred::Eq, xs, lanes, span);
        if let Some(m) = mask {
            let m = self.broadcast_to(m, &[n], span)?;
            let mt = self.ty(m);
            let m = self.emit1(
                OpKind::ExpandDims(1),
                vec![m],
                mt.with_shape(vec![n, 1]),
                span,
            );
            let m = self.broadcast_to(m, &shape, span)?;
            hit = self.ibin(BinOp::And, hit, m, span);
        }
        let counts = self.cast(hit, DType::I32, span);
        self.reduce(Combine::Add, counts, Some(0), false, span)
    }

    /// `tl.associative_scan(input, axis, combine_fn, reverse=False)`: an
    /// inclusive scan in log2(n) rounds (Hillis and Steele), each combining
    /// every element with the one `2^r` before it (after it when reversed,
    /// where the later element is the left operand, as Triton's reversed
    /// scan is). Tuples of blocks scan together.
    fn associative_scan(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let name = "associative_scan";
        let a = self.bind(
            name,
            &["input", "axis", "combine_fn", "reverse"],
            args,
            span,
        )?;
        let input = self.required(name, "input", &a[0], span)?;
        let f = self.combine_fn(&self.required(name, "combine_fn", &a[2], span)?, span)?;
        let reverse = self.flag(&a[3]);
        let items: Vec<KVal> = match &input.0 {
            KVal::Tuple(items) => items.clone(),
            other => vec![other.clone()],
        };
        let mut xs = vec![];
        for it in &items {
            xs.push(self.value_of(it, &input.1)?);
        }
        let shape = self.ty(xs[0]).shape;
        if shape.is_empty() || xs.iter().any(|&v| self.ty(v).shape != shape) {
            return Err(self.err(
                "ValueError",
                "associative_scan() needs blocks of one shape",
                span,
            ));
        }
        let axis = self.axis_arg(&a[1], shape.len(), span)?.ok_or_else(|| {
            self.err(
                "TypeError",
                "associative_scan() is missing the argument `axis`",
                span,
            )
        })?;
        let n = shape[axis];
        let lane = self.lane_index(&shape, axis, span);
        let mut off = 1;
        while off < n {
            let o = self.int_block(off as i64, &shape, span);
            let (idx, valid) = if reverse {
                let last = self.int_block(n as i64 - 1, &shape, span);
                let up = self.ibin(BinOp::Add, lane, o, span);
                let valid = self.icmp(CmpPred::Le, up, last, span);
                (self.ibin(BinOp::Min, up, last, span), valid)
            } else {
                let zero = self.int_block(0, &shape, span);
                let down = self.ibin(BinOp::Sub, lane, o, span);
                let valid = self.icmp(CmpPred::Ge, down, zero, span);
                (self.ibin(BinOp::Max, down, zero, span), valid)
            };
            let mut call = Args::default();
            for &x in &xs {
                let s = self.gather_v(x, idx, axis, span);
                call.pos.push((KVal::T(s), span.clone()));
            }
            for &x in &xs {
                call.pos.push((KVal::T(x), span.clone()));
            }
            let res = self.call(KVal::C(ConstVal::Func(f.clone())), call, span)?;
            let outs = self.combine_outputs(res, &f, xs.len(), span)?;
            for (x, o) in xs.iter_mut().zip(&outs) {
                let d = self.ty(*x).dtype().unwrap_or(DType::F32);
                let y = match o {
                    KVal::C(c) => self.const_as(c, d, span),
                    other => {
                        let y = self.value_of(other, span)?;
                        self.cast(y, d, span)
                    }
                };
                let y = self.broadcast_to(y, &shape, span)?;
                *x = self.sel(valid, y, *x, span);
            }
            off *= 2;
        }
        if xs.len() == 1 {
            Ok(KVal::T(xs[0]))
        } else {
            Ok(KVal::Tuple(xs.into_iter().map(KVal::T).collect()))
        }
    }
}
