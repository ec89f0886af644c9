//! The `CompiledKernel` object: what `kernel[grid](...)` and
//! `kernel.warmup(...)` return (`n_regs`, `n_spills`, `metadata`, `asm`),
//! launchable again as `compiled[grid](...)`.

use super::{compiled, prepare, Compiled, KernelObj};
use crate::value::{Exc, HostObject, Val, R};
use crate::Host;
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use tilebook_frontend::kernel::JitFunction;

/// `kernel.warmup(*args, grid=..., **meta)`: compile without launching and
/// return the compiled kernel (`n_regs`, `n_spills`, `metadata.shared`,
/// `asm[...]`), which can also be launched as `compiled[grid](...)`.
pub fn warmup(s: &mut dyn Host, k: &Rc<KernelObj>, a: crate::value::Args) -> R<Val> {
    let grid = a
        .kw("grid")
        .unwrap_or_else(|| Val::tuple(vec![Val::Int(1)]));
    let kwargs: Vec<(String, Val)> = a.kw.iter().filter(|(n, _)| n != "grid").cloned().collect();
    let p = prepare(s, k, &grid, a.pos.clone(), kwargs)?;
    let c = compiled(s, k, &p)?;
    Ok(compiled_value(k, &c))
}

/// The compiled-kernel object of a specialization, as a launch and
/// `warmup` return it: made once, then shared.
pub fn compiled_value(k: &Rc<KernelObj>, c: &Compiled) -> Val {
    if let Some(v) = c.object.borrow().as_ref() {
        return v.clone();
    }
    let v = compiled_object(k, c);
    *c.object.borrow_mut() = Some(v.clone());
    v
}

/// The compiled-kernel object of one specialization.
fn compiled_object(k: &Rc<KernelObj>, c: &Compiled) -> Val {
    let name = k.jit.borrow().name.clone();
    let mut asm = vec![(Val::str("ttir"), Val::str(&c.tir))];
    // Registers and spills as the driver reports them. The CPU backend has
    // no register file: it reports a nominal 32 registers and no spills, and
    // as shared memory the working memory of one program, so that occupancy
    // arithmetic in host code (tutorial 02) still runs.
    let (regs, spills, shared, warps) = match &c.gpu {
        Some((gk, f)) => {
            asm.push((Val::str("llir"), Val::str(&gk.llvm_ir)));
            asm.push((Val::str("ptx"), Val::str(&gk.ptx)));
            (f.regs, f.local_bytes / 4, gk.shared_bytes, gk.num_warps)
        }
        None => {
            let mut frame = 0;
            if let Some(cpu) = &c.kernel {
                asm.push((Val::str("clif"), Val::str(&cpu.clif)));
                frame = cpu.frame_bytes() as u32;
            }
            (32, 0, frame.max(1), c.num_warps)
        }
    };
    let metadata = Val::object(
        "KernelMetadata",
        vec![
            ("name", Val::str(&name)),
            ("shared", Val::Int(shared as i64)),
            ("num_warps", Val::Int(warps as i64)),
        ],
    );
    let repr =
        format!("<CompiledKernel {name}: {regs} registers, {spills} spilled words, {warps} warps>");
    Val::object(
        "CompiledKernel",
        vec![
            ("__repr__", Val::str(&repr)),
            ("name", Val::str(&name)),
            ("n_regs", Val::Int(regs as i64)),
            ("n_spills", Val::Int(spills as i64)),
            ("metadata", metadata),
            ("asm", Val::Dict(Rc::new(RefCell::new(asm)))),
            (
                "_init_handles",
                Val::Builtin(Rc::from("compiled._init_handles")),
            ),
            // Weak: the object sits in the kernel's own cache.
            (
                "__kernel__",
                Val::Py(Rc::new(KernelRef {
                    kernel: Rc::downgrade(k),
                    def: k.jit.borrow().clone(),
                })),
            ),
        ],
    )
}

/// The kernel behind a compiled-kernel object (its `__kernel__`), held
/// weakly so that the object can live in the kernel's cache, and the
/// definition it was compiled from: a launch through the object after the
/// kernel was redefined (with other text) would run the new body, so it is
/// refused instead.
pub struct KernelRef {
    pub kernel: Weak<KernelObj>,
    pub def: Rc<JitFunction>,
}

impl KernelRef {
    /// The kernel to launch `compiled[grid](...)` through: `None` when `v`
    /// is not a kernel reference; an error when the kernel is gone or was
    /// redefined since this object was compiled.
    pub fn kernel(v: &Val) -> Option<R<Rc<KernelObj>>> {
        let Val::Py(p) = v else { return None };
        let r = p.as_any().downcast_ref::<KernelRef>()?;
        let name = &r.def.name;
        Some(match r.kernel.upgrade() {
            // Redefined with the same text (a notebook cell run again):
            // the same kernel.
            Some(k) if k.jit.borrow().text == r.def.text => Ok(k),
            Some(_) => Err(Exc::new(
                "RuntimeError",
                format!(
                    "this CompiledKernel was compiled from an earlier definition of `{name}`, \
                     which has been redefined since; launch `{name}[grid](...)` or call \
                     `{name}.warmup(...)` again for the new one"
                ),
            )),
            None => Err(Exc::new(
                "RuntimeError",
                format!(
                    "the kernel `{name}` this CompiledKernel was compiled from no longer exists"
                ),
            )),
        })
    }
}

impl HostObject for KernelRef {
    fn type_name(&self) -> String {
        "JITFunction".into()
    }
    fn repr(&self) -> String {
        format!("JITFunction({})", self.def.name)
    }
    fn call(&self, _s: &mut dyn Host, _a: Vec<Val>, _kw: Vec<(String, Val)>) -> R<Val> {
        Err(Exc::new(
            "TypeError",
            "a kernel is launched as kernel[grid](...), not called",
        ))
    }
    fn same(&self, other: &dyn HostObject) -> bool {
        other
            .as_any()
            .downcast_ref::<KernelRef>()
            .is_some_and(|o| o.kernel.ptr_eq(&self.kernel) && Rc::ptr_eq(&o.def, &self.def))
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
