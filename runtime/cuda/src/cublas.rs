//! cuBLAS, for `torch.matmul` on the GPU: the reference the tutorials
//! compare their kernels against.
//!
//! libcublas is opened at run time, like libcuda, and only the four entry
//! points used here are looked up (`cublasCreate_v2`, `cublasSetStream_v2`,
//! `cublasGemmEx`, `cublasDestroy_v2`). Their signatures are the same in
//! cuBLAS 12 and 13; cudarc's bindings target one CUDA version and resolve
//! every symbol of it, which fails against a newer library.

use crate::{BlasType, Operand};
use libloading::Library;
use std::ffi::c_void;

type Handle = *mut c_void;
type Create = unsafe extern "C" fn(*mut Handle) -> i32;
type SetStream = unsafe extern "C" fn(Handle, *mut c_void) -> i32;
type Destroy = unsafe extern "C" fn(Handle) -> i32;
#[allow(clippy::type_complexity)]
type GemmEx = unsafe extern "C" fn(
    Handle,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const c_void,
    u64,
    i32,
    i32,
    u64,
    i32,
    i32,
    *const c_void,
    u64,
    i32,
    i32,
    i32,
    i32,
) -> i32;

pub struct Blas {
    _lib: Library,
    handle: Handle,
    gemm: GemmEx,
    destroy: Destroy,
}

impl Blas {
    /// Open libcublas and create a handle bound to `stream`.
    ///
    /// # Safety
    /// `stream` must be a live CUDA stream of the current context, and
    /// outlive the handle.
    pub unsafe fn open(stream: *mut c_void) -> Result<Blas, String> {
        let names = ["libcublas.so", "libcublas.so.13", "libcublas.so.12"];
        let lib = names
            .iter()
            // SAFETY: loading the system's cuBLAS runs its initialisers only.
            .find_map(|n| unsafe { Library::new(*n) }.ok())
            .ok_or(
                "libcublas was not found (install CUDA's cuBLAS, or put it on LD_LIBRARY_PATH)",
            )?;
        // SAFETY: the symbols have these C signatures in cuBLAS 12 and 13.
        unsafe {
            let create: Create = *lib.get(b"cublasCreate_v2").map_err(|e| e.to_string())?;
            let set_stream: SetStream =
                *lib.get(b"cublasSetStream_v2").map_err(|e| e.to_string())?;
            let gemm: GemmEx = *lib.get(b"cublasGemmEx").map_err(|e| e.to_string())?;
            let destroy: Destroy = *lib.get(b"cublasDestroy_v2").map_err(|e| e.to_string())?;
            let mut handle: Handle = std::ptr::null_mut();
            check(create(&mut handle), "cublasCreate")?;
            check(set_stream(handle, stream), "cublasSetStream")?;
            Ok(Blas {
                _lib: lib,
                handle,
                gemm,
                destroy,
            })
        }
    }

    /// `C (m x n, column-major, ld ldc) = op(A) (m x k) * op(B) (k x n)`, all
    /// of type `t`, accumulating in fp32 (no tf32 for fp32 inputs, as torch's
    /// default). Asynchronous on the handle's stream.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(
        &self,
        t: BlasType,
        (m, n, k): (i32, i32, i32),
        a: Operand,
        b: Operand,
        c: u64,
        ldc: i32,
    ) -> Result<(), String> {
        const COMPUTE_32F: i32 = 68;
        const GEMM_DEFAULT: i32 = -1;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = |x: bool| i32::from(x);
        // SAFETY: the handle is live; the addresses are device allocations
        // large enough for the shapes and leading dimensions given.
        let status = unsafe {
            (self.gemm)(
                self.handle,
                op(a.trans),
                op(b.trans),
                m,
                n,
                k,
                (&alpha as *const f32).cast(),
                a.ptr,
                t as i32,
                a.ld,
                b.ptr,
                t as i32,
                b.ld,
                (&beta as *const f32).cast(),
                c,
                t as i32,
                ldc,
                COMPUTE_32F,
                GEMM_DEFAULT,
            )
        };
        check(status, "cublasGemmEx")
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the handle came from cublasCreate and is destroyed once.
        unsafe {
            (self.destroy)(self.handle);
        }
    }
}

fn check(status: i32, what: &str) -> Result<(), String> {
    if status == 0 {
        Ok(())
    } else {
        Err(format!("{what} failed with cuBLAS status {status}"))
    }
}
