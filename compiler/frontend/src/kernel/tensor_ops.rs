//! Tensor operations behind the `tl.*` builtins: loads and stores (masks,
//! `other`, broadcasting), reductions and scans (including `tl.reduce` with a
//! `@jit` combine function), `tl.dot`'s typing rules, conversions and shapes.

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use super::semantic::{broadcast_shapes, const_truth, shape_str};
use super::{ConstVal, JitFunction};
use crate::source::Span;
use std::rc::Rc;
use tilebook_tir::{Combine, Const, DType, Elem, OpKind, Region, Type, Value};

impl Lowerer<'_> {
    pub(super) fn float_operand(&mut self, x: &(KVal, Span)) -> LResult<KVal> {
        match &x.0 {
            KVal::C(ConstVal::Int(i)) => Ok(KVal::C(ConstVal::Float(*i as f64))),
            KVal::C(c) => Ok(KVal::C(c.clone())),
            other => {
                let v = self.value_of(other, &x.1)?;
                let d = self.ty(v).dtype().unwrap_or(DType::F32);
                Ok(KVal::T(if d.is_float() {
                    v
                } else {
                    self.cast(v, DType::F32, &x.1)
                }))
            }
        }
    }

    pub(super) fn shape_from_star_raw(&self, v: &(KVal, Span)) -> LResult<Vec<i64>> {
        let flat: Vec<KVal> = match &v.0 {
            KVal::Tuple(items) if items.len() == 1 => match &items[0] {
                KVal::C(ConstVal::Tuple(t)) => t.iter().cloned().map(KVal::C).collect(),
                other => vec![other.clone()],
            },
            KVal::Tuple(items) => items.clone(),
            KVal::C(ConstVal::Tuple(t)) => t.iter().cloned().map(KVal::C).collect(),
            other => vec![other.clone()],
        };
        flat.iter()
            .map(|k| match k {
                KVal::C(ConstVal::Int(i)) => Ok(*i),
                other => Err(self.err(
                    "TypeError",
                    format!("expected constexpr integers, got {}", other.describe()),
                    &v.1,
                )),
            })
            .collect()
    }

    pub(super) fn shape_from_star(&self, v: &(KVal, Span)) -> LResult<Vec<usize>> {
        let dims = self.shape_from_star_raw(v)?;
        let c = (
            KVal::C(ConstVal::Tuple(
                dims.into_iter().map(ConstVal::Int).collect(),
            )),
            v.1.clone(),
        );
        self.shape_arg(&c)
    }

    pub(super) fn reshape(&mut self, v: Value, shape: Vec<usize>, span: &Span) -> LResult<KVal> {
        let t = self.ty(v);
        let n: usize = shape.iter().product();
        if n != t.numel().max(1) {
            return Err(self.err(
                "ValueError",
                format!(
                    "cannot reshape a block of shape {} ({} elements) to {} ({n} elements)",
                    shape_str(&t.shape),
                    t.numel(),
                    shape_str(&shape)
                ),
                span,
            ));
        }
        if !t.is_block() {
            return Ok(KVal::T(self.emit1(
                OpKind::Splat,
                vec![v],
                t.with_shape(shape),
                span,
            )));
        }
        Ok(KVal::T(self.emit1(
            OpKind::Reshape,
            vec![v],
            t.with_shape(shape),
            span,
        )))
    }

    pub(super) fn full(
        &mut self,
        shape: &[usize],
        value: &(KVal, Span),
        dt: DType,
    ) -> LResult<KVal> {
        let span = &value.1;
        let ty = Type::block(Elem::Scalar(dt), shape.to_vec());
        match &value.0 {
            KVal::C(c) => {
                let cv = match c {
                    ConstVal::Int(i) => Const::Int(*i),
                    ConstVal::Bool(b) => Const::Int(*b as i64),
                    ConstVal::Float(f) => Const::Float(*f),
                    other => {
                        return Err(self.err(
                            "TypeError",
                            format!("a fill value must be a number, got {other}"),
                            span,
                        ))
                    }
                };
                let ty = if shape.is_empty() {
                    Type::scalar(dt)
                } else {
                    ty
                };
                Ok(KVal::T(self.constant(cv, ty, span)))
            }
            other => {
                let v = self.value_of(other, span)?;
                if self.ty(v).is_block() {
                    return Err(self.err("TypeError", "tl.full needs a scalar value", span));
                }
                let v = self.cast(v, dt, span);
                Ok(KVal::T(self.broadcast_to(v, shape, span)?))
            }
        }
    }

    /// `x.to(d)` / `tl.cast`: value conversion, or reinterpretation with `bitcast`.
    pub fn convert(
        &mut self,
        input: &(KVal, Span),
        d: DType,
        bitcast: bool,
        span: &Span,
    ) -> LResult<KVal> {
        if let (KVal::C(c), false) = (&input.0, bitcast) {
            let v = self.const_tensor(c, span)?;
            return Ok(KVal::T(self.cast(v, d, span)));
        }
        let v = self.value_of(&input.0, &input.1)?;
        let t = self.ty(v);
        if bitcast {
            let Some(src) = t.dtype() else {
                return Err(self.err("TypeError", "cannot bitcast a pointer", span));
            };
            if src.bits() != d.bits() {
                return Err(self.err(
                    "ValueError",
                    format!(
                        "bitcast needs equal widths, got {} ({} bits) and {} ({} bits)",
                        src.tl_name(),
                        src.bits(),
                        d.tl_name(),
                        d.bits()
                    ),
                    span,
                ));
            }
            if src == d {
                return Ok(KVal::T(v));
            }
            return Ok(KVal::T(self.emit1(
                OpKind::Bitcast,
                vec![v],
                t.with_elem(Elem::Scalar(d)),
                span,
            )));
        }
        match t.elem {
            // An address as a 64-bit integer, as Triton allows.
            Elem::Ptr(_) if matches!(d, DType::I64 | DType::U64) => Ok(KVal::T(self.emit1(
                OpKind::Bitcast,
                vec![v],
                t.with_elem(Elem::Scalar(d)),
                span,
            ))),
            Elem::Ptr(_) => Err(self.err(
                "TypeError",
                format!(
                    "a pointer converts only to int64/uint64 (its address), not {}",
                    d.tl_name()
                ),
                span,
            )),
            Elem::Scalar(_) if d == DType::I1 => Ok(KVal::T(self.condition_of(v, span)?)),
            Elem::Scalar(_) => Ok(KVal::T(self.cast(v, d, span))),
        }
    }

    /// `x.to(tl.pointer_type(d))`: 64-bit integers (addresses, e.g. loaded
    /// from a tensor of `data_ptr()`s) or pointers of another element type
    /// become pointers to `d`.
    pub(super) fn pointer_from(
        &mut self,
        input: &(KVal, Span),
        pd: DType,
        span: &Span,
    ) -> LResult<KVal> {
        let v = self.value_of(&input.0, &input.1)?;
        let t = self.ty(v);
        let ok = match t.elem {
            Elem::Ptr(p) if p == pd => return Ok(KVal::T(v)),
            Elem::Ptr(_) => true,
            Elem::Scalar(d) => matches!(d, DType::I64 | DType::U64),
        };
        if !ok {
            return Err(self.err(
                "TypeError",
                format!(
                    "only 64-bit integers (addresses) convert to pointers, got {}",
                    self.describe_kval(&input.0)
                ),
                span,
            ));
        }
        Ok(KVal::T(self.emit1(
            OpKind::Bitcast,
            vec![v],
            t.with_elem(Elem::Ptr(pd)),
            span,
        )))
    }

    pub(super) fn promote_for_sum(&mut self, v: Value, span: &Span) -> Value {
        match self.ty(v).dtype() {
            Some(d) if d.is_signed_int() && d.bits() < 32 || d == DType::I1 => {
                self.cast(v, DType::I32, span)
            }
            Some(d) if d.is_unsigned_int() && d.bits() < 32 => self.cast(v, DType::U32, span),
            _ => v,
        }
    }

    /// A builtin reduction along `axis` (all axes when `None`).
    pub fn reduce(
        &mut self,
        combine: Combine,
        v: Value,
        axis: Option<usize>,
        keep: bool,
        span: &Span,
    ) -> LResult<Value> {
        let t = self.ty(v);
        if t.elem.is_ptr() {
            return Err(self.err("TypeError", "cannot reduce a block of pointers", span));
        }
        if !t.is_block() {
            return Ok(v);
        }
        let v = if combine == Combine::Add {
            self.promote_for_sum(v, span)
        } else {
            v
        };
        if combine == Combine::Xor && !t.dtype().is_some_and(DType::is_int) {
            return Err(self.err("TypeError", "xor_sum needs integers", span));
        }
        let rank = t.shape.len();
        let (src, ax) = match axis {
            Some(a) => (v, a),
            None if rank == 1 => (v, 0),
            None => {
                let flat = self.ty(v).with_shape(vec![t.numel()]);
                (self.emit1(OpKind::Reshape, vec![v], flat, span), 0)
            }
        };
        let st = self.ty(src);
        let mut shape = st.shape.clone();
        shape.remove(ax);
        let elem = match combine {
            Combine::ArgMax | Combine::ArgMin => Elem::Scalar(DType::I32),
            _ => st.elem,
        };
        let mut r = self.emit1(
            OpKind::Reduce { axis: ax, combine },
            vec![src],
            Type::block(elem, shape),
            span,
        );
        if keep {
            match axis {
                Some(a) => {
                    let rt = self.ty(r);
                    let mut s = rt.shape.clone();
                    s.insert(a, 1);
                    r = self.emit1(OpKind::ExpandDims(a), vec![r], rt.with_shape(s), span);
                }
                None => {
                    let rt = self.ty(r);
                    r = self.emit1(OpKind::Splat, vec![r], rt.with_shape(vec![1; rank]), span);
                }
            }
        }
        Ok(r)
    }

    /// A `combine_fn=` argument: a @jit function.
    pub(super) fn combine_fn(&self, v: &(KVal, Span), span: &Span) -> LResult<Rc<JitFunction>> {
        match &v.0 {
            KVal::C(ConstVal::Func(f)) => Ok(f.clone()),
            other => Err(self.err(
                "TypeError",
                format!(
                    "combine_fn must be a @triton.jit function, got {}",
                    other.describe()
                ),
                span,
            )),
        }
    }

    /// What a combine function returned, one value per input.
    pub(super) fn combine_outputs(
        &self,
        res: KVal,
        f: &JitFunction,
        n: usize,
        span: &Span,
    ) -> LResult<Vec<KVal>> {
        let outs: Vec<KVal> = match res {
            KVal::Tuple(items) => items,
            KVal::C(ConstVal::Tuple(items)) => items.into_iter().map(KVal::C).collect(),
            other => vec![other],
        };
        if outs.len() != n {
            return Err(self.err(
                "TypeError",
                format!(
                    "combine_fn `{}` returns {} values for {n} inputs",
                    f.name,
                    outs.len(),
                ),
                span,
            ));
        }
        Ok(outs)
    }

    /// `tl.reduce(input, axis, combine_fn, keep_dims=False)` with a @jit combine function.
    pub(super) fn reduce_custom(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let a = self.bind(
            "reduce",
            &["input", "axis", "combine_fn", "keep_dims"],
            args,
            span,
        )?;
        let input = self.required("reduce", "input", &a[0], span)?;
        let f = self.combine_fn(&self.required("reduce", "combine_fn", &a[2], span)?, span)?;
        let inputs: Vec<KVal> = match &input.0 {
            KVal::Tuple(items) => items.clone(),
            other => vec![other.clone()],
        };
        let mut vals = vec![];
        for it in &inputs {
            vals.push(self.value_of(it, &input.1)?);
        }
        let t0 = self.ty(vals[0]);
        if !t0.is_block() {
            return Ok(input.0.clone());
        }
        for &v in &vals {
            if self.ty(v).shape != t0.shape {
                return Err(self.err(
                    "ValueError",
                    "all inputs of tl.reduce must have the same shape",
                    span,
                ));
            }
        }
        let axis = self.axis_arg(&a[1], t0.shape.len(), span)?;
        let keep = self.flag(&a[3]);
        let (vals, ax) = match axis {
            Some(ax) => (vals, ax),
            None => {
                let mut flat = vec![];
                for v in vals {
                    let ft = self.ty(v).with_shape(vec![t0.numel()]);
                    flat.push(self.emit1(OpKind::Reshape, vec![v], ft, span));
                }
                (flat, 0)
            }
        };
        let dtypes: Vec<DType> = vals
            .iter()
            .map(|&v| self.ty(v).dtype().unwrap_or(DType::F32))
            .collect();
        let region_args: Vec<Value> = (0..2 * vals.len())
            .map(|i| self.k.new_value(Type::scalar(dtypes[i % vals.len()])))
            .collect();
        let mut call = Args::default();
        for &ra in &region_args {
            call.pos.push((KVal::T(ra), span.clone()));
        }
        self.blocks.push(vec![]);
        let res = self.call(KVal::C(ConstVal::Func(f.clone())), call, span);
        let res = match res {
            Ok(r) => r,
            Err(e) => {
                self.blocks.pop();
                return Err(e);
            }
        };
        let outs = match self.combine_outputs(res, &f, vals.len(), span) {
            Ok(o) => o,
            Err(e) => {
                self.blocks.pop();
                return Err(e);
            }
        };
        let mut ys = vec![];
        for (o, d) in outs.iter().zip(&dtypes) {
            let y = match o {
                KVal::C(c) => self.const_as(c, *d, span),
                other => {
                    let y = self.value_of(other, span)?;
                    self.cast(y, *d, span)
                }
            };
            ys.push(y);
        }
        self.emit(OpKind::Yield, ys, vec![], span);
        let ops = self.blocks.pop().unwrap_or_default();
        let st = self.ty(vals[0]);
        let mut shape = st.shape.clone();
        shape.remove(ax);
        let types = dtypes
            .iter()
            .map(|&d| Type::block(Elem::Scalar(d), shape.clone()))
            .collect();
        let loc = self.loc(span);
        let mut op = self.k.op(
            OpKind::Reduce {
                axis: ax,
                combine: Combine::Region,
            },
            vals.clone(),
            types,
            loc,
        );
        op.regions = vec![Region {
            args: region_args,
            ops,
        }];
        let mut results = op.results.clone();
        self.blocks.last_mut().expect("region").push(op);
        if keep {
            for r in &mut results {
                let rt = self.ty(*r);
                let mut s = rt.shape.clone();
                let a = axis.unwrap_or(0);
                s.insert(a.min(s.len()), 1);
                *r = self.emit1(
                    OpKind::ExpandDims(a.min(rt.shape.len())),
                    vec![*r],
                    rt.with_shape(s),
                    span,
                );
            }
        }
        if results.len() == 1 {
            Ok(KVal::T(results[0]))
        } else {
            Ok(KVal::Tuple(results.into_iter().map(KVal::T).collect()))
        }
    }

    pub(super) fn load(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let a = self.bind(
            "load",
            &[
                "pointer",
                "mask",
                "other",
                "boundary_check",
                "padding_option",
                "cache_modifier",
                "eviction_policy",
                "volatile",
            ],
            args,
            span,
        )?;
        let p = self.required("load", "pointer", &a[0], span)?;
        if let KVal::Desc(d) = &p.0 {
            return self.desc_load(&d.clone(), None, &a[3], &a[4], span);
        }
        let ptr = self.value_of(&p.0, &p.1)?;
        let pt = self.ty(ptr);
        let Elem::Ptr(pointee) = pt.elem else {
            return Err(self.err(
                "TypeError",
                format!("tl.load needs pointers, got {}", self.describe_kval(&p.0)),
                &p.1,
            ));
        };
        let mask = self.mask_arg(&a[1])?;
        let other = match &a[2] {
            Some((KVal::C(ConstVal::None), _)) | None => None,
            Some(o) => Some(o.clone()),
        };
        let mut shape = pt.shape.clone();
        if let Some(m) = mask {
            shape = broadcast_shapes(&shape, &self.ty(m).shape).ok_or_else(|| {
                self.err(
                    "ValueError",
                    format!(
                        "the mask's shape {} does not match the pointers' shape {}",
                        shape_str(&self.ty(m).shape),
                        shape_str(&pt.shape)
                    ),
                    span,
                )
            })?;
        }
        let ptr = self.broadcast_to(ptr, &shape, span)?;
        let mut operands = vec![ptr];
        if let Some(m) = mask {
            operands.push(self.broadcast_to(m, &shape, span)?);
        }
        let has_other = mask.is_some() && other.is_some();
        if let (true, Some(o)) = (has_other, other) {
            let ov = match &o.0 {
                KVal::C(c) => self.const_as(c, pointee, &o.1),
                other => {
                    let ov = self.value_of(other, &o.1)?;
                    self.cast(ov, pointee, &o.1)
                }
            };
            if broadcast_shapes(&self.ty(ov).shape, &shape).as_deref() != Some(&shape[..]) {
                return Err(self.err(
                    "ValueError",
                    format!(
                        "`other` of shape {} does not broadcast to the load's shape {}",
                        shape_str(&self.ty(ov).shape),
                        shape_str(&shape)
                    ),
                    &o.1,
                ));
            }
            operands.push(self.broadcast_to(ov, &shape, &o.1)?);
        }
        let rt = Type::block(Elem::Scalar(pointee), shape);
        Ok(KVal::T(self.emit1(
            OpKind::Load {
                mask: mask.is_some(),
                other: has_other,
                tma: None,
                map: None,
                guards: 0,
            },
            operands,
            rt,
            span,
        )))
    }

    pub(super) fn mask_arg(&mut self, m: &Option<(KVal, Span)>) -> LResult<Option<Value>> {
        match m {
            None | Some((KVal::C(ConstVal::None), _)) => Ok(None),
            Some((KVal::C(c), s)) if const_truth(c) => {
                let _ = s;
                Ok(None)
            }
            Some((v, s)) => {
                let mv = self.value_of(v, s)?;
                Ok(Some(self.condition_of(mv, s)?))
            }
        }
    }

    /// A value to store into elements of `pointee`, converted to it.
    pub(super) fn stored_value(&mut self, val: &(KVal, Span), pointee: DType) -> LResult<Value> {
        Ok(match &val.0 {
            KVal::C(c) => self.const_as(c, pointee, &val.1),
            other => {
                let v = self.value_of(other, &val.1)?;
                if self.ty(v).elem.is_ptr() {
                    return Err(self.err("TypeError", "storing pointers is not supported", &val.1));
                }
                self.cast(v, pointee, &val.1)
            }
        })
    }

    pub(super) fn store(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let a = self.bind(
            "store",
            &[
                "pointer",
                "value",
                "mask",
                "boundary_check",
                "cache_modifier",
                "eviction_policy",
            ],
            args,
            span,
        )?;
        let p = self.required("store", "pointer", &a[0], span)?;
        let val = self.required("store", "value", &a[1], span)?;
        if let KVal::Desc(d) = &p.0 {
            return self.desc_store(&d.clone(), None, &val, &a[3], span);
        }
        let ptr = self.value_of(&p.0, &p.1)?;
        let pt = self.ty(ptr);
        let Elem::Ptr(pointee) = pt.elem else {
            return Err(self.err(
                "TypeError",
                format!("tl.store needs pointers, got {}", self.describe_kval(&p.0)),
                &p.1,
            ));
        };
        let v = self.stored_value(&val, pointee)?;
        let mask = self.mask_arg(&a[2])?;
        let vs = self.ty(v).shape;
        if !pt.is_block() && !vs.is_empty() {
            return Err(self.err(
                "ValueError",
                format!(
                    "cannot store a block of shape {} through a single pointer",
                    shape_str(&vs)
                ),
                span,
            ));
        }
        if broadcast_shapes(&vs, &pt.shape).as_deref() != Some(&pt.shape[..]) {
            return Err(self.err(
                "ValueError",
                format!(
                    "the value's shape {} does not match the pointers' shape {}",
                    shape_str(&vs),
                    shape_str(&pt.shape)
                ),
                span,
            ));
        }
        let v = self.broadcast_to(v, &pt.shape, span)?;
        let mut operands = vec![ptr, v];
        if let Some(m) = mask {
            if broadcast_shapes(&self.ty(m).shape, &pt.shape).as_deref() != Some(&pt.shape[..]) {
                return Err(self.err(
                    "ValueError",
                    format!(
                        "the mask's shape {} does not match the pointers' shape {}",
                        shape_str(&self.ty(m).shape),
                        shape_str(&pt.shape)
                    ),
                    span,
                ));
            }
            operands.push(self.broadcast_to(m, &pt.shape, span)?);
        }
        self.emit(
            OpKind::Store {
                mask: mask.is_some(),
                tma: None,
                map: false,
            },
            operands,
            vec![],
            span,
        );
        Ok(KVal::C(ConstVal::None))
    }

    pub(super) fn dot(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let a = self.bind(
            "dot",
            &[
                "input",
                "other",
                "acc",
                "input_precision",
                "allow_tf32",
                "max_num_imprecise_acc",
                "out_dtype",
            ],
            args,
            span,
        )?;
        let x = self.required("dot", "input", &a[0], span)?;
        let y = self.required("dot", "other", &a[1], span)?;
        let xv = self.value_of(&x.0, &x.1)?;
        let yv = self.value_of(&y.0, &y.1)?;
        let (xt, yt) = (self.ty(xv), self.ty(yv));
        if xt.shape.len() != 2 || yt.shape.len() != 2 {
            return Err(self.err(
                "ValueError",
                format!(
                    "tl.dot needs 2-D blocks, got shapes {} and {}",
                    shape_str(&xt.shape),
                    shape_str(&yt.shape)
                ),
                span,
            ));
        }
        if xt.shape[1] != yt.shape[0] {
            return Err(self.err(
                "ValueError",
                format!(
                    "tl.dot: inner dimensions differ: {} @ {} (K = {} vs {})",
                    shape_str(&xt.shape),
                    shape_str(&yt.shape),
                    xt.shape[1],
                    yt.shape[0]
                ),
                span,
            ));
        }
        let (m, k, n) = (xt.shape[0], xt.shape[1], yt.shape[1]);
        if m < 16 || n < 16 || k < 16 {
            return Err(self.err(
                "ValueError",
                format!("tl.dot needs every dimension to be at least 16, got M={m}, N={n}, K={k}"),
                span,
            ));
        }
        let (Some(dx), Some(dy)) = (xt.dtype(), yt.dtype()) else {
            return Err(self.err(
                "TypeError",
                "tl.dot operands must be numbers, not pointers",
                span,
            ));
        };
        if dx != dy && !(dx.is_fp8() && dy.is_fp8()) {
            return Err(self.err(
                "TypeError",
                format!(
                    "tl.dot operands must have the same dtype, got {} and {}",
                    dx.tl_name(),
                    dy.tl_name()
                ),
                span,
            ));
        }
        let supported = matches!(
            dx,
            DType::F16
                | DType::BF16
                | DType::F32
                | DType::F64
                | DType::F8E5
                | DType::F8E4NV
                | DType::I8
        );
        if !supported {
            return Err(self.err(
                "TypeError",
                format!(
                    "tl.dot supports fp16, bf16, fp32, fp64, fp8 and int8 inputs, got {}",
                    dx.tl_name()
                ),
                span,
            ));
        }
        let mut out = if dx == DType::I8 {
            DType::I32
        } else if dx == DType::F64 {
            DType::F64
        } else {
            DType::F32
        };
        if let Some(o) = &a[6] {
            if !matches!(o.0, KVal::C(ConstVal::None)) {
                out = self.dtype_arg(o, "out_dtype")?;
            }
        }
        let acc = match &a[2] {
            None | Some((KVal::C(ConstVal::None), _)) => self.constant(
                Const::Int(0),
                Type::block(Elem::Scalar(out), vec![m, n]),
                span,
            ),
            Some((v, s)) => {
                let av = self.value_of(v, s)?;
                let at = self.ty(av);
                if at.shape != vec![m, n] {
                    return Err(self.err(
                        "ValueError",
                        format!(
                            "tl.dot accumulator has shape {} but the product is {}",
                            shape_str(&at.shape),
                            shape_str(&[m, n])
                        ),
                        s,
                    ));
                }
                if at.dtype() != Some(out) && !(dx == DType::F16 && at.dtype() == Some(DType::F16))
                {
                    return Err(self.err(
                        "TypeError",
                        format!(
                            "tl.dot accumulator is {} but the product of {} inputs is {}",
                            at.dtype().map(|d| d.tl_name()).unwrap_or("?"),
                            dx.tl_name(),
                            out.tl_name()
                        ),
                        s,
                    ));
                }
                av
            }
        };
        let precision = match &a[3] {
            Some((KVal::C(ConstVal::Str(p)), s)) => {
                if !matches!(p.as_str(), "tf32" | "tf32x3" | "ieee") {
                    return Err(self.err(
                        "ValueError",
                        format!("input_precision must be 'tf32', 'tf32x3' or 'ieee', got '{p}'"),
                        s,
                    ));
                }
                p.clone()
            }
            _ => match &a[4] {
                Some((KVal::C(c), _)) if !const_truth(c) => "ieee".into(),
                _ => "tf32".into(),
            },
        };
        // tf32x3 recovers fp32 accuracy from three tf32 products; computing in
        // fp32 gives the same answer to within fp32 rounding.
        let tf32 = dx == DType::F32 && precision == "tf32";
        let at = self.ty(acc);
        Ok(KVal::T(self.emit1(
            OpKind::Dot { tf32 },
            vec![xv, yv, acc],
            at,
            span,
        )))
    }

    /// Methods on tensors and dtypes.
    pub fn method(&mut self, recv: KVal, name: &str, args: Args, span: &Span) -> LResult<KVal> {
        if let KVal::Desc(d) = &recv {
            return self.desc_method(&d.clone(), name, args, span);
        }
        if let KVal::C(ConstVal::DType(d)) = recv {
            let r = match name {
                "is_floating" => d.is_float(),
                "is_int" => d.is_int(),
                "is_fp16" => d == DType::F16,
                "is_bf16" => d == DType::BF16,
                "is_fp32" => d == DType::F32,
                _ => d.is_signed_int(),
            };
            return Ok(KVal::C(ConstVal::Bool(r)));
        }
        match name {
            "to" => {
                let a = self.bind(
                    "to",
                    &["dtype", "fp_downcast_rounding", "bitcast"],
                    &args,
                    span,
                )?;
                let to = self.required("to", "dtype", &a[0], span)?;
                if let KVal::C(ConstVal::PtrType(pd)) = to.0 {
                    return self.pointer_from(&(recv, span.clone()), pd, span);
                }
                let d = self.dtype_arg(&to, "dtype")?;
                let bitcast = self.flag(&a[2]);
                self.convert(&(recv, span.clone()), d, bitcast, span)
            }
            _ => {
                let mut full = Args {
                    pos: vec![(recv, span.clone())],
                    kw: args.kw,
                };
                full.pos.extend(args.pos);
                let tl_name = match name {
                    "abs" | "exp" | "log" | "sqrt" => format!("tl.{name}"),
                    _ => format!("tl.{name}"),
                };
                self.builtin(&tl_name, full, span)
            }
        }
    }
}
