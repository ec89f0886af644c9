//! Atomics on the CPU backend: programs run on several threads at once, so
//! `tl.atomic_*` are real atomic instructions. Integer add/and/or/xor/
//! exchange/max/min map to one `atomic_rmw`; floating-point operations and
//! 16-bit floats are a compare-and-swap loop on the element's bits. Every
//! atomic is sequentially consistent here, which is at least as strong as
//! any `sem=`/`scope=` a kernel asks for.

use crate::codegen::Gen;
use crate::elem::reg_ty;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AtomicRmwOp, InstBuilder, MemFlags, Type as CT, Value as CV};
use tilebook_tir::{AtomicOp, DType, Elem, Op, Value};

/// The integer type an element of `d` is in memory.
fn bits_ty(d: DType) -> CT {
    match d.bits() {
        16 => types::I16,
        32 => types::I32,
        _ => types::I64,
    }
}

impl Gen<'_, '_> {
    /// `atomic` and `atomic_cas`, element by element.
    pub(crate) fn atomic_op(&mut self, op: &Op, rmw: Option<(AtomicOp, bool)>) {
        let ptr = op.args[0];
        let res = op.results[0];
        let d = self.ty(ptr).elem.pointee().unwrap_or(DType::I32);
        let (site, param, size) = self.new_site(op, "atomic", ptr);
        let shape = self.ty(res).shape.clone();
        let block = self.ty(res).is_block();
        let args = op.args.clone();
        let elem = |g: &mut Self, lin: Option<CV>| {
            let read = |g: &mut Self, v: Value| match lin {
                Some(l) if g.ty(v).is_block() => g.load_elem(v, l),
                _ => g.get(v),
            };
            let addr = read(g, args[0]);
            let rt = reg_ty(Elem::Scalar(d));
            let result = g.b.declare_var(rt);
            let zero = if rt == types::F32 {
                g.b.ins().f32const(0.0)
            } else if rt == types::F64 {
                g.b.ins().f64const(0.0)
            } else {
                g.b.ins().iconst(rt, 0)
            };
            g.b.def_var(result, zero);
            let done = g.b.create_block();
            if let Some((_, true)) = rmw {
                let m = read(g, args[2]);
                let active = g.b.create_block();
                g.b.ins().brif(m, active, &[], done, &[]);
                g.b.switch_to_block(active);
            }
            g.check_bounds(site, param, size, addr, None);
            let old = match rmw {
                Some((kind, _)) => {
                    let x = read(g, args[1]);
                    g.rmw(kind, d, addr, x)
                }
                None => {
                    let cmp = read(g, args[1]);
                    let x = read(g, args[2]);
                    g.cas(d, addr, cmp, x)
                }
            };
            g.b.def_var(result, old);
            g.b.ins().jump(done, &[]);
            g.b.switch_to_block(done);
            let old = g.b.use_var(result);
            match lin {
                Some(l) => g.store_elem(res, l, old),
                None => g.set(res, old),
            }
        };
        if block {
            self.loop_nest(&shape, &mut |g, _, lin| elem(g, Some(lin)));
        } else {
            elem(self, None);
        }
    }

    fn elem_bits(&mut self, x: CV, d: DType) -> CV {
        match d {
            DType::F16 | DType::BF16 => self.encode_bits(x, d),
            DType::F32 | DType::F64 => self.b.ins().bitcast(bits_ty(d), MemFlags::new(), x),
            _ => x,
        }
    }

    fn bits_elem(&mut self, bits: CV, d: DType) -> CV {
        match d {
            DType::F16 | DType::BF16 => self.decode_bits(bits, d),
            DType::F32 => self.b.ins().bitcast(types::F32, MemFlags::new(), bits),
            DType::F64 => self.b.ins().bitcast(types::F64, MemFlags::new(), bits),
            _ => bits,
        }
    }

    /// One read-modify-write; returns the old element.
    fn rmw(&mut self, kind: AtomicOp, d: DType, addr: CV, x: CV) -> CV {
        let flags = MemFlags::trusted();
        if d.is_int() {
            let signed = d.is_signed_int();
            let op = match kind {
                AtomicOp::Add => AtomicRmwOp::Add,
                AtomicOp::And => AtomicRmwOp::And,
                AtomicOp::Or => AtomicRmwOp::Or,
                AtomicOp::Xor => AtomicRmwOp::Xor,
                AtomicOp::Xchg => AtomicRmwOp::Xchg,
                AtomicOp::Max if signed => AtomicRmwOp::Smax,
                AtomicOp::Max => AtomicRmwOp::Umax,
                AtomicOp::Min if signed => AtomicRmwOp::Smin,
                AtomicOp::Min => AtomicRmwOp::Umin,
            };
            return self.b.ins().atomic_rmw(bits_ty(d), flags, op, addr, x);
        }
        if kind == AtomicOp::Xchg {
            let bits = self.elem_bits(x, d);
            let old = self
                .b
                .ins()
                .atomic_rmw(bits_ty(d), flags, AtomicRmwOp::Xchg, addr, bits);
            return self.bits_elem(old, d);
        }
        let old_bits = self.cas_loop(d, addr, &mut |g, old| match kind {
            AtomicOp::Max => g.b.ins().fmax(old, x),
            AtomicOp::Min => g.b.ins().fmin(old, x),
            _ => g.b.ins().fadd(old, x),
        });
        self.bits_elem(old_bits, d)
    }

    /// Replace the element by `f(old)` with compare-and-swap until no other
    /// thread wrote in between; returns the old element's bits.
    fn cas_loop(&mut self, d: DType, addr: CV, f: &mut dyn FnMut(&mut Self, CV) -> CV) -> CV {
        let flags = MemFlags::trusted();
        let bt = bits_ty(d);
        let seen = self.b.declare_var(bt);
        let first = self.b.ins().atomic_load(bt, flags, addr);
        self.b.def_var(seen, first);
        let head = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let old_bits = self.b.use_var(seen);
        let old = self.bits_elem(old_bits, d);
        let new = f(self, old);
        let new_bits = self.elem_bits(new, d);
        let prev = self.b.ins().atomic_cas(flags, addr, old_bits, new_bits);
        self.b.def_var(seen, prev);
        let same = self.b.ins().icmp(IntCC::Equal, prev, old_bits);
        self.b.ins().brif(same, exit, &[], head, &[]);
        self.b.switch_to_block(exit);
        self.b.use_var(seen)
    }

    /// Compare-and-swap of one element (floats compare by their bits, as
    /// the GPU does); returns the old element.
    fn cas(&mut self, d: DType, addr: CV, cmp: CV, x: CV) -> CV {
        let c = self.elem_bits(cmp, d);
        let v = self.elem_bits(x, d);
        let old = self.b.ins().atomic_cas(MemFlags::trusted(), addr, c, v);
        self.bits_elem(old, d)
    }
}
