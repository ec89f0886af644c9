//! Inline PTX, in one place: statements (volatile, clobbering memory) and
//! instructions with one result. Constraints are LLVM's, one per operand in
//! order (`=r` for a result first, then `r`, `l`, `f`, `b` for operands).
//! `wgmma`'s tied accumulators, `ldmatrix`'s register tuples and the
//! prologue's warp index keep their own calls.

use super::*;
use inkwell::values::BasicMetadataValueEnum;

impl<'ctx> Gen<'ctx, '_> {
    /// The PTX statement `text` with `args` as `$0, $1 ...` under
    /// `constraints` (comma-separated, empty for none): volatile, and
    /// clobbering memory so that loads and stores stay on their side of it.
    pub(super) fn ptx_asm(
        &self,
        text: &str,
        constraints: &str,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<()> {
        let clobbers = if constraints.is_empty() {
            "~{memory}".to_string()
        } else {
            format!("{constraints},~{{memory}}")
        };
        self.call_inline(text, clobbers, None, true, args)?;
        Ok(())
    }

    /// A statement without operands (`cp.async.commit_group;`, fences).
    pub(super) fn ptx_statement(&self, text: &str) -> R<()> {
        self.ptx_asm(text, "", &[])
    }

    /// A PTX instruction whose result (`$0`, of type `ret`) is what it is
    /// for; `volatile` where it has effects besides (or must not be moved).
    pub(super) fn ptx_value(
        &self,
        text: &str,
        constraints: &str,
        ret: BasicTypeEnum<'ctx>,
        volatile: bool,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        self.call_inline(text, constraints.to_string(), Some(ret), volatile, args)?
            .ok_or_else(|| GenError(format!("inline PTX without a result: {text}")))
    }

    fn call_inline(
        &self,
        text: &str,
        constraints: String,
        ret: Option<BasicTypeEnum<'ctx>>,
        volatile: bool,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<Option<BasicValueEnum<'ctx>>> {
        let params: Vec<inkwell::types::BasicMetadataTypeEnum> =
            args.iter().map(|a| a.get_type().into()).collect();
        let fn_ty = match ret {
            Some(t) => t.fn_type(&params, false),
            None => self.ctx.void_type().fn_type(&params, false),
        };
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            text.to_string(),
            constraints,
            volatile,
            false,
            None,
            false,
        );
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        let call = self.b.build_indirect_call(fn_ty, asm, &margs, "")?;
        Ok(call.try_as_basic_value().basic())
    }
}
