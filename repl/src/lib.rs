//! tilebook from Rust: run cells of tile-language and host code in a
//! [`Session`], move data in and out as [`Tensor`]s, and compile and launch
//! `@triton.jit` kernels as [`Kernel`]s. A `main.rs` and an evcxr notebook
//! cell use it the same way:
//!
//! ```
//! use tilebook::{Session, Tensor};
//!
//! let session = Session::cpu();
//! let add = session.kernel(r#"
//! @triton.jit
//! def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
//!     offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
//!     mask = offs < n
//!     tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
//! "#)?;
//! let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0]);
//! let y = Tensor::from_slice(&[10.0f32, 20.0, 30.0]);
//! let out = Tensor::zeros::<f32>(&[3])?;
//! add.launch([1], (&x, &y, &out, 3), &[("BLOCK", 4)])?;
//! assert_eq!(out.to_vec::<f32>()?, vec![11.0, 22.0, 33.0]);
//! # Ok::<(), tilebook::Error>(())
//! ```
//!
//! Everything runs on the session engine the REPL and the Jupyter kernel
//! use (`tilebook-session`): the same specialization, caches and messages.
//! Nothing of the Python VM shows through this API. Errors are
//! [`Error`] values whose `Display` is the rendered diagnostic, carets
//! included; nothing here panics on bad input.
//!
//! The `gpu` feature (on by default) brings the GPU backend (LLVM and the
//! CUDA driver); without it the crate builds with the Cranelift CPU backend
//! alone, which is what an evcxr notebook wants
//! (`:dep tilebook = { path = "...", default-features = false }`).
//! The `cli` feature (on by default) builds the `tilebook` command.

// Errors carry rendered diagnostics; they are returned on the cold path.
#![allow(clippy::result_large_err)]

mod display;
mod error;
mod kernel;
mod session;
mod tensor;

pub use error::Error;
pub use kernel::{Arg, Grid, Kernel, KernelArgs};
pub use session::{Cell, FromValue, IntoValue, Session};
pub use tensor::{Element, Tensor};
pub use tilebook_session::Output;
pub use tilebook_tir::DType;

/// Whether this build has the GPU backend (the `gpu` feature).
pub const GPU_BUILD: bool = cfg!(feature = "gpu");
