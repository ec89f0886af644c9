//! The front end: parsing cells, diagnostics, and lowering `@jit` kernels to tile IR.
//!
//! Pipeline order: `source` (cells and files) → `parse` (ruff's Python parser,
//! behind one module) → `kernel` (constexpr evaluation, Triton's typing rules,
//! inlining of `@jit` callees, structured control flow) → `tilebook_tir`.
//! `diag` carries every error as data with spans; front ends render it.
//!
//! Architecture invariant: nothing here knows LLVM, Cranelift, CUDA or Jupyter.

// Diagnostics and exceptions are large values on the cold path; boxing
// every `Err` would add noise for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod aot;
pub mod diag;
pub mod kernel;
pub mod nesting;
pub mod parse;
pub mod source;

pub use diag::{Diagnostic, Severity};
pub use source::{SourceFile, Span};
