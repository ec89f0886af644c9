//! Math functions through NVIDIA's libdevice (see `libdevice.rs`): which
//! unary ops go there and the calls to `__nv_*`.

use super::*;

impl<'ctx> Gen<'ctx, '_> {
    /// Whether `u` on values of type `ft` goes to libdevice: log, log2, sin
    /// and cos always (Triton does the same), exp and exp2 only in fp64 (in
    /// fp32 both use `ex2.approx`, as Triton does).
    pub(super) fn libdevice_math(&self, u: UnOp, ft: BasicTypeEnum<'ctx>) -> bool {
        let f64 = ft == self.ctx.f64_type().into();
        self.libdevice && (f64 || matches!(u, UnOp::Log | UnOp::Log2 | UnOp::Sin | UnOp::Cos))
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
        let ty = x.get_type();
        let name = if ty == self.ctx.f64_type().into() {
            format!("__nv_{base}")
        } else {
            format!("__nv_{base}f")
        };
        let f = self.module.get_function(&name).unwrap_or_else(|| {
            let fn_ty = ty.fn_type(&[ty.into()], false);
            self.module.add_function(&name, fn_ty, None)
        });
        let call = self.b.build_call(f, &[x.into()], "")?;
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| GenError(format!("{name} returned nothing")))
    }
}
