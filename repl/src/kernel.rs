//! `tilebook::Kernel`: a `@triton.jit` function compiled from source and
//! launched with Rust arguments, through the session that defined it.

use crate::session::IntoValue;
use crate::{Error, Session};
use std::rc::Rc;
use tilebook_session::value::kernel::KernelObj;
use tilebook_session::value::Val;

/// A tile-language kernel defined in a session. Each launch specializes it
/// as a notebook launch does (argument dtypes, divisibility by 16,
/// constexpr values) and compiles a specialization once; later launches
/// reuse it.
#[derive(Clone)]
pub struct Kernel {
    session: Session,
    obj: Rc<KernelObj>,
    name: String,
}

/// One launch argument: a tensor (`&x`, `&mut z`), an integer, a float or
/// a bool.
pub struct Arg(Result<Val, Error>);

impl<T: IntoValue> From<T> for Arg {
    fn from(v: T) -> Arg {
        Arg(v.into_value())
    }
}

/// The arguments of a launch: a tuple of up to 16 values that convert to
/// [`Arg`] (`(&x, &y, &mut out, n)`), or a `Vec<Arg>`.
pub trait KernelArgs {
    fn into_args(self) -> Result<Vec<Val>, Error>;
}

impl KernelArgs for Vec<Arg> {
    fn into_args(self) -> Result<Vec<Val>, Error> {
        self.into_iter().map(|a| a.0).collect()
    }
}

impl KernelArgs for () {
    fn into_args(self) -> Result<Vec<Val>, Error> {
        Ok(vec![])
    }
}

macro_rules! tuple_args {
    ($($name:ident)+) => {
        impl<$($name: Into<Arg>),+> KernelArgs for ($($name,)+) {
            #[allow(non_snake_case)]
            fn into_args(self) -> Result<Vec<Val>, Error> {
                let ($($name,)+) = self;
                Ok(vec![$($name.into().0?),+])
            }
        }
    };
}

tuple_args!(A);
tuple_args!(A B);
tuple_args!(A B C);
tuple_args!(A B C D);
tuple_args!(A B C D E);
tuple_args!(A B C D E F);
tuple_args!(A B C D E F G);
tuple_args!(A B C D E F G H);
tuple_args!(A B C D E F G H I);
tuple_args!(A B C D E F G H I J);
tuple_args!(A B C D E F G H I J K);
tuple_args!(A B C D E F G H I J K L);
tuple_args!(A B C D E F G H I J K L M);
tuple_args!(A B C D E F G H I J K L M N);
tuple_args!(A B C D E F G H I J K L M N O);
tuple_args!(A B C D E F G H I J K L M N O P);

/// A launch grid: a number of programs, or one to three of them as an array.
pub trait Grid {
    fn dims(self) -> Vec<i64>;
}

macro_rules! grids {
    ($($t:ty),*) => {$(
        impl Grid for $t {
            fn dims(self) -> Vec<i64> {
                vec![i64::try_from(self).unwrap_or(i64::MAX)]
            }
        }
        impl<const N: usize> Grid for [$t; N] {
            fn dims(self) -> Vec<i64> {
                self.iter().map(|&d| i64::try_from(d).unwrap_or(i64::MAX)).collect()
            }
        }
    )*};
}

grids!(u32, usize, i32, i64);

impl Kernel {
    /// Run `source` in the session (named `file` in messages, or
    /// `<kernel source N>`) and take its last `@triton.jit` function.
    pub(crate) fn define(
        session: &Session,
        source: &str,
        file: Option<&str>,
    ) -> Result<Kernel, Error> {
        session.run_named(
            "import triton\nimport triton.language as tl\n",
            Some("<tilebook imports>"),
        )?;
        let n = session.next_source_number();
        let file_name = file.map_or_else(|| format!("<kernel source {n}>"), str::to_string);
        session.run_named(source, Some(&file_name))?;
        // The last top-level `def` that is a `@triton.jit` function.
        let names: Vec<&str> = source
            .lines()
            .filter_map(|l| l.strip_prefix("def "))
            .filter_map(|rest| rest.split('(').next())
            .map(str::trim)
            .collect();
        for name in names.iter().rev() {
            if let Ok(Val::Kernel(obj)) = session.global(name) {
                return Ok(Kernel {
                    session: session.clone(),
                    obj,
                    name: name.to_string(),
                });
            }
        }
        Err(Error::new(
            "ValueError",
            "the source defines no @triton.jit function at its top level",
        ))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Launch on `grid` programs with `args` (in the kernel's parameter
    /// order) and the constexpr or launch options of `meta`
    /// (`&[("BLOCK_SIZE", 1024)]`, `num_warps`, ...). Tensors the kernel
    /// writes hold the results afterwards.
    pub fn launch<M: IntoValue + Clone>(
        &self,
        grid: impl Grid,
        args: impl KernelArgs,
        meta: &[(&str, M)],
    ) -> Result<(), Error> {
        let grid = Val::Tuple(Rc::new(grid.dims().into_iter().map(Val::Int).collect()));
        let launcher = Val::Launcher(self.obj.clone(), Box::new(grid));
        let meta = meta
            .iter()
            .map(|(k, v)| Ok((k.to_string(), v.clone().into_value()?)))
            .collect::<Result<Vec<_>, Error>>()?;
        self.session
            .call(&launcher, args.into_args()?, meta)
            .map(|_| ())
    }

    /// The tile IR of the specialization launched last (`None` before the
    /// first launch).
    pub fn tile_ir(&self) -> Option<String> {
        self.obj.last.borrow().as_ref().map(|c| c.tir.clone())
    }

    /// The PTX of the specialization launched last, in a GPU session.
    pub fn ptx(&self) -> Option<String> {
        let last = self.obj.last.borrow();
        last.as_ref()?.gpu.as_ref().map(|(g, _)| g.ptx.clone())
    }

    /// The LLVM IR of the specialization launched last, in a GPU session.
    pub fn llvm_ir(&self) -> Option<String> {
        let last = self.obj.last.borrow();
        last.as_ref()?.gpu.as_ref().map(|(g, _)| g.llvm_ir.clone())
    }

    /// How many specializations were compiled.
    pub fn compiles(&self) -> usize {
        self.obj.compiles.get()
    }
}
