//! Math functions through NVIDIA's libdevice (see `libdevice.rs`): which
//! unary ops go there, and the calls to `__nv_*` — also of the math
//! library functions (`lib.asin`, `lib.atan2`: `libdevice.*` in kernels),
//! which only libdevice provides; without a toolkit they stay external
//! calls in the PTX).

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// Whether `u` on values of type `ft` goes to libdevice: log, log2, sin
    /// and cos in fp32 when libdevice is there (Triton does the same; else
    /// the `approx` instructions), exp and exp2 in fp32 never (`ex2.approx`,
    /// as Triton), everything in fp64 (the GPU has no fp64 approximations;
    /// without a toolkit the calls stay external).
    pub(super) fn libdevice_math(&self, u: UnOp, ft: BasicTypeEnum<'ctx>) -> bool {
        let f64 = ft == self.ctx.f64_type().into();
        f64 || (self.libdevice && matches!(u, UnOp::Log | UnOp::Log2 | UnOp::Sin | UnOp::Cos))
    }

    /// A call of libdevice's version of `u` (`__nv_logf`, `__nv_log`, ...).
    pub(super) fn libdevice_unary(
        &self,
        u: UnOp,
        x: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let base = match u {
            UnOp::Exp => "exp",
            UnOp::Exp2 => "exp2",
            UnOp::Log => "log",
            UnOp::Log2 => "log2",
            UnOp::Sin => "sin",
            UnOp::Cos => "cos",
            _ => return fail(format!("internal: no libdevice function for {u:?}")),
        };
        self.libdevice_call(base, &[x])
    }

    /// A call of libdevice's `__nv_<base>f` (fp32) or `__nv_<base>` (fp64)
    /// on `args`, all of one float type.
    pub(super) fn libdevice_call(
        &self,
        base: &str,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        // Without a toolkit the call stays an external declaration in the
        // PTX (`.extern .func`): the PTX is complete for inspection, and a
        // load on a GPU reports the missing libdevice (`kernels` runtime).
        let ty = args[0].get_type();
        let name = if ty == self.ctx.f64_type().into() {
            format!("__nv_{base}")
        } else {
            format!("__nv_{base}f")
        };
        let f = self.module.get_function(&name).unwrap_or_else(|| {
            let params: Vec<_> = args.iter().map(|a| a.get_type().into()).collect();
            self.module
                .add_function(&name, ty.fn_type(&params, false), None)
        });
        let call_args: Vec<_> = args.iter().map(|a| (*a).into()).collect();
        let call = self.b.build_call(f, &call_args, "")?;
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| GenError(format!("{name} returned nothing")))
    }
}
