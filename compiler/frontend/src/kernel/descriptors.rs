//! Block pointers (`tl.make_block_ptr`, `tl.advance`) and tensor
//! descriptors (`tl.make_tensor_descriptor`, `desc.load`, `desc.store`).
//!
//! Both describe a block of a strided tensor in memory: a base pointer, the
//! tensor's shape and strides, and a block shape. They exist only while a
//! kernel is lowered: a load or store through one becomes ordinary pointer
//! arithmetic and a masked `load`/`store` (the mask is the bounds check;
//! out-of-bounds elements read as the padding value and are not written),
//! so both backends run them unchanged and the CPU backend checks every
//! access as it checks any other. A block pointer or descriptor can be
//! carried through loops and branches: its runtime parts (pointer, shape,
//! strides, offsets) are carried as values.

use super::builtins::Args;
use super::lower::{KVal, LResult, Lowerer};
use super::semantic::shape_str;
use super::ConstVal;
use crate::source::Span;
use std::rc::Rc;
use tilebook_tir::{BinOp, CmpPred, Const, DType, Elem, OpKind, Type, Value};

/// A block pointer or a tensor descriptor.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Desc {
    /// `make_tensor_descriptor` (offsets come with each load) rather than
    /// `make_block_ptr` (offsets are part of the pointer).
    pub tensor: bool,
    pub base: Value,
    pub shape: Vec<Value>,
    pub strides: Vec<Value>,
    pub offsets: Vec<Value>,
    pub block: Vec<usize>,
    /// Out-of-bounds elements of a tensor descriptor read as NaN, not 0.
    pub nan_padding: bool,
    /// A host descriptor: the index of its base pointer among the kernel's
    /// parameters (shape and strides follow it), so that its loads can name
    /// it for a bulk tensor copy (`load[tma=i]`).
    pub param: Option<u32>,
}

impl Desc {
    /// The runtime values, in a fixed order (for loop carries).
    pub fn values(&self) -> Vec<Value> {
        let mut v = vec![self.base];
        v.extend(&self.shape);
        v.extend(&self.strides);
        v.extend(&self.offsets);
        v
    }

    /// The same descriptor over new runtime values (in `values` order).
    pub fn with_values(&self, vals: &[Value]) -> Desc {
        let r = self.shape.len();
        let o = self.offsets.len();
        Desc {
            tensor: self.tensor,
            base: vals[0],
            shape: vals[1..1 + r].to_vec(),
            strides: vals[1 + r..1 + 2 * r].to_vec(),
            offsets: vals[1 + 2 * r..1 + 2 * r + o].to_vec(),
            block: self.block.clone(),
            nan_padding: self.nan_padding,
            // Still the parameter's descriptor only while base, shape and
            // strides are the parameters' own values.
            param: self
                .param
                .filter(|_| vals[..1 + 2 * r] == self.values()[..1 + 2 * r]),
        }
    }
}

impl Lowerer<'_> {
    /// Scalars from a tuple or list argument (`shape=`, `strides=`, ...),
    /// each converted to `d`.
    fn scalar_list(
        &mut self,
        fname: &str,
        what: &str,
        v: &Option<(KVal, Span)>,
        d: DType,
        span: &Span,
    ) -> LResult<Vec<Value>> {
        let (k, s) = self.required(fname, what, v, span)?;
        let items: Vec<KVal> = match k {
            KVal::Tuple(items) => items,
            KVal::C(ConstVal::Tuple(items)) => items.into_iter().map(KVal::C).collect(),
            other => vec![other],
        };
        let mut out = vec![];
        for it in items {
            let x = match &it {
                KVal::C(c) => self.const_as(c, d, &s),
                other => self.value_of(other, &s)?,
            };
            let t = self.ty(x);
            if t.is_block() || !t.dtype().is_some_and(DType::is_int) {
                return Err(self.err(
                    "TypeError",
                    format!("{fname}(): `{what}` must hold integer scalars, got {t}"),
                    &s,
                ));
            }
            out.push(self.cast(x, d, &s));
        }
        Ok(out)
    }

    fn block_shape_arg(
        &self,
        fname: &str,
        v: &Option<(KVal, Span)>,
        rank: usize,
        span: &Span,
    ) -> LResult<Vec<usize>> {
        let b = self.required(fname, "block_shape", v, span)?;
        let block = self.shape_arg(&b)?;
        if block.len() != rank {
            return Err(self.err(
                "ValueError",
                format!(
                    "{fname}(): block_shape {} has {} dims for a tensor of rank {rank}",
                    shape_str(&block),
                    block.len()
                ),
                &b.1,
            ));
        }
        self.check_numel(&block, span)?;
        Ok(block)
    }

    fn base_arg(&mut self, fname: &str, v: &Option<(KVal, Span)>, span: &Span) -> LResult<Value> {
        let (k, s) = self.required(fname, "base", v, span)?;
        let base = self.value_of(&k, &s)?;
        let t = self.ty(base);
        if t.is_block() || !t.elem.is_ptr() {
            return Err(self.err(
                "TypeError",
                format!("{fname}(): `base` must be a scalar pointer, got {t}"),
                &s,
            ));
        }
        Ok(base)
    }

    /// The `base`, `shape` and `strides` arguments (the first three) of a
    /// block pointer or descriptor.
    fn tensor_layout(
        &mut self,
        fname: &str,
        a: &[Option<(KVal, Span)>],
        span: &Span,
    ) -> LResult<(Value, Vec<Value>, Vec<Value>)> {
        let base = self.base_arg(fname, &a[0], span)?;
        let shape = self.scalar_list(fname, "shape", &a[1], DType::I64, span)?;
        let strides = self.scalar_list(fname, "strides", &a[2], DType::I64, span)?;
        Ok((base, shape, strides))
    }

    /// `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)`.
    pub(super) fn make_block_ptr(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let n = "make_block_ptr";
        let a = self.bind(
            n,
            &[
                "base",
                "shape",
                "strides",
                "offsets",
                "block_shape",
                "order",
            ],
            args,
            span,
        )?;
        let (base, shape, strides) = self.tensor_layout(n, &a, span)?;
        let offsets = self.scalar_list(n, "offsets", &a[3], DType::I32, span)?;
        let block = self.block_shape_arg(n, &a[4], shape.len(), span)?;
        if strides.len() != shape.len() || offsets.len() != shape.len() {
            return Err(self.err(
                "ValueError",
                format!(
                    "make_block_ptr(): shape, strides and offsets must have one length, got {}, {} and {}",
                    shape.len(),
                    strides.len(),
                    offsets.len()
                ),
                span,
            ));
        }
        Ok(KVal::Desc(Rc::new(Desc {
            tensor: false,
            base,
            shape,
            strides,
            offsets,
            block,
            nan_padding: false,
            param: None,
        })))
    }

    /// A kernel parameter given a host `TensorDescriptor`: its parameters
    /// (pointer, shape, strides) and the descriptor over them. The last
    /// stride is 1 (the host checks it), so it is used as a constant.
    pub(super) fn desc_param(
        &mut self,
        name: &str,
        dtype: DType,
        block: &[usize],
        nan_padding: bool,
        shape_div16: &[bool],
        span: &Span,
    ) -> KVal {
        use tilebook_tir::ParamAttrs;
        let index = u32::try_from(self.k.params.len()).ok();
        let base = self.k.add_param(
            format!("{name}.base"),
            Type::ptr(dtype),
            ParamAttrs::divisible(16),
        );
        let i64t = Type::scalar(DType::I64);
        let rank = block.len();
        let shape = (0..rank)
            .map(|i| {
                let attrs = ParamAttrs::divisible(if shape_div16.get(i) == Some(&true) {
                    16
                } else {
                    1
                });
                self.k
                    .add_param(format!("{name}.shape{i}"), i64t.clone(), attrs)
            })
            .collect();
        let mut strides: Vec<Value> = (0..rank)
            .map(|i| {
                let attrs = ParamAttrs::divisible(if i + 1 < rank { 16 } else { 1 });
                self.k
                    .add_param(format!("{name}.stride{i}"), i64t.clone(), attrs)
            })
            .collect();
        if let Some(last) = strides.last_mut() {
            *last = self.constant(Const::Int(1), i64t, span);
        }
        KVal::Desc(Rc::new(Desc {
            tensor: true,
            base,
            shape,
            strides,
            offsets: vec![],
            block: block.to_vec(),
            nan_padding,
            param: index,
        }))
    }

    /// `tl.make_tensor_descriptor(base, shape, strides, block_shape)`.
    pub(super) fn make_tensor_descriptor(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let n = "make_tensor_descriptor";
        let a = self.bind(
            n,
            &["base", "shape", "strides", "block_shape", "padding_option"],
            args,
            span,
        )?;
        let (base, shape, strides) = self.tensor_layout(n, &a, span)?;
        let block = self.block_shape_arg(n, &a[3], shape.len(), span)?;
        if strides.len() != shape.len() {
            return Err(self.err(
                "ValueError",
                "make_tensor_descriptor(): shape and strides must have one length",
                span,
            ));
        }
        let nan_padding = matches!(&a[4], Some((KVal::C(ConstVal::Str(p)), _)) if p == "nan");
        // Triton's contract for a descriptor (its TMA unit's): the base is
        // 16-byte aligned and every stride but the last is a multiple of 16
        // bytes. Kept as hints, so that loads through a descriptor made in
        // the kernel (from loaded addresses and sizes) copy 16 bytes at a
        // time as those through a host descriptor do.
        let esize = self.ty(base).elem.pointee().map_or(1, |d| d.size_bytes());
        let bt = self.ty(base);
        let base = self.emit1(OpKind::MultipleOf(vec![16]), vec![base], bt, span);
        let lead = strides.len().saturating_sub(1);
        let strides = strides
            .iter()
            .enumerate()
            .map(|(i, &st)| {
                if i < lead && esize <= 16 {
                    let t = self.ty(st);
                    let per = (16 / esize.max(1)) as i64;
                    self.emit1(OpKind::MultipleOf(vec![per]), vec![st], t, span)
                } else {
                    st
                }
            })
            .collect();
        Ok(KVal::Desc(Rc::new(Desc {
            tensor: true,
            base,
            shape,
            strides,
            offsets: vec![],
            block,
            nan_padding,
            param: None,
        })))
    }

    /// `tl.advance(ptr, offsets)`.
    pub(super) fn advance(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let a = self.bind("advance", &["base", "offsets"], args, span)?;
        let d = match self.required("advance", "base", &a[0], span)? {
            (KVal::Desc(d), _) if !d.tensor => d,
            (other, s) => {
                return Err(self.err(
                    "TypeError",
                    format!("advance() needs a block pointer, got {}", other.describe()),
                    &s,
                ))
            }
        };
        let by = self.scalar_list("advance", "offsets", &a[1], DType::I32, span)?;
        if by.len() != d.offsets.len() {
            return Err(self.err(
                "ValueError",
                format!(
                    "advance(): {} offsets for a block pointer of rank {}",
                    by.len(),
                    d.offsets.len()
                ),
                span,
            ));
        }
        let mut next = (*d).clone();
        for (o, b) in next.offsets.iter_mut().zip(by) {
            *o = self.emit1(
                OpKind::Binary(BinOp::Add),
                vec![*o, b],
                Type::scalar(DType::I32),
                span,
            );
        }
        Ok(KVal::Desc(Rc::new(next)))
    }

    /// Pointers to the block at `offsets` and the in-bounds mask of the
    /// dims in `check`.
    fn block_address(
        &mut self,
        d: &Desc,
        offsets: &[Value],
        check: &[usize],
        span: &Span,
    ) -> LResult<(Value, Option<Value>)> {
        let rank = d.block.len();
        let block = d.block.clone();
        let i64b = |s: &[usize]| Type::block(Elem::Scalar(DType::I64), s.to_vec());
        let mut addr: Option<Value> = None;
        let mut mask: Option<Value> = None;
        for dim in 0..rank {
            let n = block[dim];
            let mut s1 = vec![1; rank];
            s1[dim] = n;
            let ar = self.emit1(
                OpKind::Arange(0, n as i64),
                vec![],
                Type::block(Elem::Scalar(DType::I32), vec![n]),
                span,
            );
            let ar = self.cast(ar, DType::I64, span);
            let o = self.cast(offsets[dim], DType::I64, span);
            let o = self.emit1(OpKind::Splat, vec![o], i64b(&[n]), span);
            let idx = self.emit1(OpKind::Binary(BinOp::Add), vec![o, ar], i64b(&[n]), span);
            let idx = if rank > 1 {
                self.emit1(OpKind::Reshape, vec![idx], i64b(&s1), span)
            } else {
                idx
            };
            let st = self.emit1(OpKind::Splat, vec![d.strides[dim]], i64b(&s1), span);
            let term = self.emit1(OpKind::Binary(BinOp::Mul), vec![idx, st], i64b(&s1), span);
            let term = self.broadcast_to(term, &block, span)?;
            addr = Some(match addr {
                None => term,
                Some(a) => self.emit1(
                    OpKind::Binary(BinOp::Add),
                    vec![a, term],
                    i64b(&block),
                    span,
                ),
            });
            if check.contains(&dim) {
                let b1 = Type::block(Elem::Scalar(DType::I1), s1.clone());
                let zero = self.constant(Const::Int(0), i64b(&s1), span);
                let lim = self.emit1(OpKind::Splat, vec![d.shape[dim]], i64b(&s1), span);
                let ge = self.emit1(OpKind::Cmp(CmpPred::Ge), vec![idx, zero], b1.clone(), span);
                let lt = self.emit1(OpKind::Cmp(CmpPred::Lt), vec![idx, lim], b1.clone(), span);
                let ok = self.emit1(OpKind::Binary(BinOp::And), vec![ge, lt], b1, span);
                let ok = self.broadcast_to(ok, &block, span)?;
                mask = Some(match mask {
                    None => ok,
                    Some(m) => self.emit1(
                        OpKind::Binary(BinOp::And),
                        vec![m, ok],
                        Type::block(Elem::Scalar(DType::I1), block.clone()),
                        span,
                    ),
                });
            }
        }
        let pt = self.ty(d.base);
        let base = self.emit1(
            OpKind::Splat,
            vec![d.base],
            pt.with_shape(block.clone()),
            span,
        );
        let off = addr.unwrap_or(base);
        let ptrs = self.emit1(OpKind::AddPtr, vec![base, off], pt.with_shape(block), span);
        Ok((ptrs, mask))
    }

    /// Which dims `boundary_check=` names.
    fn boundary_dims(&self, v: &Option<(KVal, Span)>, rank: usize) -> LResult<Vec<usize>> {
        let items: Vec<ConstVal> = match v {
            None | Some((KVal::C(ConstVal::None), _)) => return Ok(vec![]),
            Some((KVal::C(ConstVal::Tuple(t)), _)) => t.clone(),
            Some((KVal::C(c), _)) => vec![c.clone()],
            Some((other, s)) => {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "boundary_check must be a tuple of dims, got {}",
                        other.describe()
                    ),
                    s,
                ))
            }
        };
        let span = v.as_ref().map(|x| x.1.clone()).expect("given");
        items
            .iter()
            .map(|c| match c {
                ConstVal::Int(i) if (0..rank as i64).contains(i) => Ok(*i as usize),
                other => Err(self.err(
                    "ValueError",
                    format!("boundary_check dim {other} is out of range for rank {rank}"),
                    &span,
                )),
            })
            .collect()
    }

    /// Pointers and mask of an access: a descriptor checks every dim, a
    /// block pointer those `boundary_check=` names.
    fn access(
        &mut self,
        d: &Desc,
        offsets: Option<Vec<Value>>,
        boundary: &Option<(KVal, Span)>,
        span: &Span,
    ) -> LResult<(Value, Option<Value>)> {
        let rank = d.block.len();
        let check = if d.tensor {
            (0..rank).collect()
        } else {
            self.boundary_dims(boundary, rank)?
        };
        let offs = offsets.unwrap_or_else(|| d.offsets.clone());
        self.block_address(d, &offs, &check, span)
    }

    /// `tl.pointer_type(element_ty)`.
    pub(super) fn pointer_type(&mut self, args: &Args, span: &Span) -> LResult<KVal> {
        let n = "pointer_type";
        let a = self.bind(n, &["element_ty"], args, span)?;
        let d = self.dtype_arg(&self.required(n, "element_ty", &a[0], span)?, "element_ty")?;
        Ok(KVal::C(ConstVal::PtrType(d)))
    }

    /// The element type a descriptor's block holds.
    fn desc_dtype(&self, d: &Desc) -> DType {
        self.ty(d.base).elem.pointee().unwrap_or(DType::F32)
    }

    /// A load through a block pointer (`tl.load(bp, boundary_check=,
    /// padding_option=)`) or a descriptor (`desc.load(offsets)`).
    pub(super) fn desc_load(
        &mut self,
        d: &Desc,
        offsets: Option<Vec<Value>>,
        boundary: &Option<(KVal, Span)>,
        padding: &Option<(KVal, Span)>,
        span: &Span,
    ) -> LResult<KVal> {
        // A host descriptor's block coordinates (`i32`, as given).
        let coords = match (&offsets, d.param) {
            (Some(o), Some(i)) if d.tensor && padding.is_none() => Some((i, o.clone())),
            _ => None,
        };
        let (ptrs, mask) = self.access(d, offsets, boundary, span)?;
        let dt = self.desc_dtype(d);
        let pad = match padding {
            None if d.tensor && d.nan_padding && dt.is_float() => Const::Float(f64::NAN),
            Some((KVal::C(ConstVal::Str(s)), _)) if s == "nan" => {
                if !dt.is_float() {
                    return Err(self.err(
                        "ValueError",
                        "padding_option=\"nan\" needs a floating-point block",
                        span,
                    ));
                }
                Const::Float(f64::NAN)
            }
            Some((KVal::C(ConstVal::Str(s)), p)) if s != "zero" && !s.is_empty() => {
                return Err(self.err(
                    "ValueError",
                    format!("padding_option must be \"zero\" or \"nan\", got \"{s}\""),
                    p,
                ))
            }
            _ => Const::Int(0),
        };
        let rt = Type::block(Elem::Scalar(dt), d.block.clone());
        let mut operands = vec![ptrs];
        if let Some(m) = mask {
            operands.push(m);
            operands.push(self.constant(pad, rt.clone(), span));
        }
        let tma = coords.map(|(i, c)| {
            operands.extend(c);
            i
        });
        let kind = OpKind::Load {
            mask: mask.is_some(),
            other: mask.is_some(),
            tma,
            map: None,
            guards: 0,
        };
        Ok(KVal::T(self.emit1(kind, operands, rt, span)))
    }

    /// A store through a block pointer or a descriptor.
    pub(super) fn desc_store(
        &mut self,
        d: &Desc,
        offsets: Option<Vec<Value>>,
        value: &(KVal, Span),
        boundary: &Option<(KVal, Span)>,
        span: &Span,
    ) -> LResult<KVal> {
        let coords = match (&offsets, d.param) {
            (Some(o), Some(i)) if d.tensor => Some((i, o.clone())),
            _ => None,
        };
        let (ptrs, mask) = self.access(d, offsets, boundary, span)?;
        let dt = self.desc_dtype(d);
        let v = self.stored_value(value, dt)?;
        let vt = self.ty(v);
        if vt.is_block() && vt.shape != d.block {
            return Err(self.err(
                "ValueError",
                format!(
                    "the stored block has shape {} but the block pointer's block is {}",
                    shape_str(&vt.shape),
                    shape_str(&d.block)
                ),
                &value.1,
            ));
        }
        let v = self.broadcast_to(v, &d.block, span)?;
        let mut operands = vec![ptrs, v];
        if let Some(m) = mask {
            operands.push(m);
        }
        let tma = coords.map(|(i, c)| {
            operands.extend(c);
            i
        });
        self.emit(
            OpKind::Store {
                mask: mask.is_some(),
                tma,
                map: false,
            },
            operands,
            vec![],
            span,
        );
        Ok(KVal::C(ConstVal::None))
    }

    /// Methods of a descriptor: `load(offsets)`, `store(offsets, value)`,
    /// and the attributes `block_shape`, `dtype`.
    pub(super) fn desc_method(
        &mut self,
        d: &Desc,
        name: &str,
        args: Args,
        span: &Span,
    ) -> LResult<KVal> {
        match name {
            "load" if d.tensor => {
                let a = self.bind("load", &["offsets"], &args, span)?;
                let o = self.scalar_list("load", "offsets", &a[0], DType::I32, span)?;
                self.check_rank(d, &o, span)?;
                self.desc_load(d, Some(o), &None, &None, span)
            }
            "store" if d.tensor => {
                let a = self.bind("store", &["offsets", "value"], &args, span)?;
                let o = self.scalar_list("store", "offsets", &a[0], DType::I32, span)?;
                self.check_rank(d, &o, span)?;
                let v = self.required("store", "value", &a[1], span)?;
                self.desc_store(d, Some(o), &v, &None, span)
            }
            "advance" if !d.tensor => {
                let mut full = Args {
                    pos: vec![(KVal::Desc(Rc::new(d.clone())), span.clone())],
                    kw: args.kw,
                };
                full.pos.extend(args.pos);
                self.advance(&full, span)
            }
            _ => Err(self.err(
                "AttributeError",
                format!(
                    "a {} has no method `{name}` in tilebook",
                    if d.tensor {
                        "tensor descriptor"
                    } else {
                        "block pointer"
                    }
                ),
                span,
            )),
        }
    }

    fn check_rank(&self, d: &Desc, o: &[Value], span: &Span) -> LResult<()> {
        if o.len() != d.block.len() {
            return Err(self.err(
                "ValueError",
                format!(
                    "{} offsets for a descriptor of rank {}",
                    o.len(),
                    d.block.len()
                ),
                span,
            ));
        }
        Ok(())
    }

    /// `desc.block_shape`, `desc.dtype`, `desc.shape`, `desc.strides`.
    pub(super) fn desc_attr(&mut self, d: &Desc, attr: &str, span: &Span) -> LResult<KVal> {
        match attr {
            "block_shape" => Ok(KVal::C(ConstVal::Tuple(
                d.block.iter().map(|&b| ConstVal::Int(b as i64)).collect(),
            ))),
            "dtype" => Ok(KVal::C(ConstVal::DType(self.desc_dtype(d)))),
            "shape" => Ok(KVal::Tuple(d.shape.iter().map(|&v| KVal::T(v)).collect())),
            "strides" => Ok(KVal::Tuple(d.strides.iter().map(|&v| KVal::T(v)).collect())),
            "load" | "store" | "advance" => Ok(KVal::Method(
                Box::new(KVal::Desc(Rc::new(d.clone()))),
                attr.to_string(),
            )),
            _ => Err(self.err(
                "AttributeError",
                format!("a descriptor has no attribute `{attr}` in tilebook"),
                span,
            )),
        }
    }
}
