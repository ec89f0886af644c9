//! PTX to cubin through the driver's linker (`cuLinkCreate` ...
//! `cuLinkComplete`): the same JIT that loading PTX runs, but its output can
//! be kept, so a kernel found in the disk cache loads its cubin directly
//! instead of compiling its PTX again.

use cudarc::driver::sys;
use std::ffi::{c_uint, c_void};

/// Bytes of the linker's error log.
const LOG: usize = 16 * 1024;

/// The installed driver's CUDA version (`13000` for 13.0), 0 if unknown.
pub(crate) fn driver_version() -> i32 {
    let mut v = 0;
    // SAFETY: writes one int.
    let r = unsafe { sys::cuDriverGetVersion(&mut v) };
    if r == sys::CUresult::CUDA_SUCCESS {
        v
    } else {
        0
    }
}

/// Compile `ptx` for the current context's device. The caller has bound
/// the context to this thread.
pub(crate) fn ptx_to_cubin(ptx: &str) -> Result<Vec<u8>, String> {
    let mut src = Vec::with_capacity(ptx.len() + 1);
    src.extend_from_slice(ptx.as_bytes());
    src.push(0);
    let mut log = vec![0u8; LOG];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values = [log.as_mut_ptr() as *mut c_void, LOG as *mut c_void];
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    let check = |r: sys::CUresult, log: &[u8]| -> Result<(), String> {
        if r == sys::CUresult::CUDA_SUCCESS {
            return Ok(());
        }
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]);
        Err(format!("{r:?} {}", text.trim()))
    };
    // SAFETY: the option arrays outlive the link state (destroyed below),
    // the log buffer's size is what the options say, and the cubin is
    // copied out before the state that owns it is destroyed.
    unsafe {
        check(
            sys::cuLinkCreate_v2(
                options.len() as c_uint,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut state,
            ),
            &log,
        )?;
        let added = sys::cuLinkAddData_v2(
            state,
            sys::CUjitInputType::CU_JIT_INPUT_PTX,
            src.as_mut_ptr() as *mut c_void,
            src.len(),
            c"kernel.ptx".as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let done = if added == sys::CUresult::CUDA_SUCCESS {
            sys::cuLinkComplete(state, &mut out, &mut size)
        } else {
            added
        };
        let cubin = (done == sys::CUresult::CUDA_SUCCESS && !out.is_null())
            .then(|| std::slice::from_raw_parts(out as *const u8, size).to_vec());
        sys::cuLinkDestroy(state);
        check(done, &log)?;
        cubin.ok_or_else(|| "the linker returned no code".into())
    }
}
