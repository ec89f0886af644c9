//! The tile IR: typed SSA over blocks (tiles) with structured control flow.
//!
//! Stages of the compiler meet here: the front end lowers kernels into a
//! `Kernel`, passes rewrite it, backends translate it. The IR has a text form
//! (`print`) that `parse` reads back identically, and a verifier (`verify`)
//! that runs after every pass in tests and debug builds.
//!
//! Architecture invariant: this crate knows nothing of Python syntax, LLVM,
//! Cranelift, CUDA or Jupyter.

pub mod accumulate;
pub mod axis;
pub mod clock;
pub mod fp8;
pub mod ir;
pub mod libm;
pub mod parse;
pub mod passes;
pub mod pipeline;
pub mod pointer_tma;
pub mod print;
pub mod provenance;
pub mod rotate;
pub mod schedule;
pub mod types;
pub mod verify;

pub use clock::StageClock;
pub use ir::*;
pub use types::{DType, Elem, Kind, Type};
