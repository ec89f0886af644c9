//! NCCL collectives over the devices of one process (`tilebook.distributed`).
//!
//! One communicator per group of devices, made by `ncclCommInitAll` (single
//! process, one rank per device, as NCCL's "one thread, several devices"
//! mode). A collective is one NCCL group: each rank's call is queued on its
//! device's stream, so it is ordered after the kernels that made its inputs
//! and before whatever reads its outputs. libnccl is opened at run time
//! through cudarc's bindings (they look for `libnccl.so`, which the NCCL
//! packages install); without it a collective over several GPUs is an error
//! that says so.

use crate::driver::Gpu;
use crate::{Collective, NcclOp, NcclType};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;

/// A communicator over a list of devices (rank i is `ordinals[i]`).
pub struct Communicator {
    comms: Vec<sys::ncclComm_t>,
    pub ordinals: Vec<u32>,
}

fn nccl_err(what: &str, e: result::NcclError) -> String {
    format!("NCCL {what} failed: {:?}", e.0)
}

/// Whether libnccl can be opened.
pub fn nccl_available() -> bool {
    // SAFETY: only probes whether the library can be loaded.
    unsafe { sys::is_culib_present() }
}

/// NCCL's version (22803 for 2.28.3), or why there is none.
pub fn nccl_version() -> Result<i32, String> {
    if !nccl_available() {
        return Err(NO_NCCL.into());
    }
    result::get_nccl_version().map_err(|e| nccl_err("ncclGetVersion", e))
}

const NO_NCCL: &str = "NCCL was not found (libnccl.so): install the NCCL library \
    (Debian/Ubuntu: libnccl2 and libnccl-dev) or put it on LD_LIBRARY_PATH";

impl Communicator {
    /// One communicator per device of `gpus`, in that order.
    pub fn new(gpus: &[&Gpu]) -> Result<Communicator, String> {
        if !nccl_available() {
            return Err(NO_NCCL.into());
        }
        let ordinals: Vec<u32> = gpus.iter().map(|g| g.ordinal).collect();
        let devs: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
        let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); devs.len()];
        // SAFETY: `comms` has room for one communicator per device listed.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), devs.len() as i32, devs.as_ptr()) }
            .map_err(|e| nccl_err("ncclCommInitAll", e))?;
        Ok(Communicator { comms, ordinals })
    }

    /// Run one collective: `bufs[i]` is rank i's (send, receive) device
    /// addresses on `gpus[i]`, each holding what `Collective` says for
    /// `count` elements of `ty` (the caller checks the sizes).
    pub fn run(
        &self,
        gpus: &[&Gpu],
        what: Collective,
        bufs: &[(u64, u64)],
        count: usize,
        ty: NcclType,
    ) -> Result<(), String> {
        if gpus.len() != self.comms.len() || bufs.len() != self.comms.len() {
            return Err(format!(
                "a collective over {} devices given {} devices and {} buffers",
                self.comms.len(),
                gpus.len(),
                bufs.len()
            ));
        }
        for (g, &o) in gpus.iter().zip(&self.ordinals) {
            if g.ordinal != o {
                return Err(format!(
                    "rank on cuda:{} given cuda:{}'s stream",
                    o, g.ordinal
                ));
            }
        }
        let dt = data_type(ty);
        result::group_start().map_err(|e| nccl_err("ncclGroupStart", e))?;
        let mut first_err = None;
        for (i, ((g, &(send, recv)), &comm)) in gpus.iter().zip(bufs).zip(&self.comms).enumerate() {
            let stream = g.raw_stream() as sys::cudaStream_t;
            let (s, r) = (send as *const c_void, recv as *mut c_void);
            // SAFETY: the addresses are live device buffers of rank i's device
            // with room for the counts this collective moves (checked above us).
            let out = unsafe {
                match what {
                    Collective::AllReduce(op) => {
                        result::all_reduce(s, r, count, dt, red_op(op), comm, stream)
                    }
                    Collective::Broadcast { root } => {
                        result::broadcast(s, r, count, dt, root as i32, comm, stream)
                    }
                    Collective::AllGather => result::all_gather(s, r, count, dt, comm, stream),
                    Collective::ReduceScatter(op) => {
                        result::reduce_scatter(s, r, count, dt, red_op(op), comm, stream)
                    }
                }
            };
            if let Err(e) = out {
                first_err.get_or_insert(format!("rank {i}: {}", nccl_err("collective", e)));
            }
        }
        let end = result::group_end().map_err(|e| nccl_err("ncclGroupEnd", e));
        match first_err {
            Some(e) => Err(e),
            None => end.map(|_| ()),
        }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        for &c in &self.comms {
            // SAFETY: each communicator was made by ncclCommInitAll and is
            // destroyed once.
            let _ = unsafe { result::comm_destroy(c) };
        }
    }
}

fn data_type(t: NcclType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t::*;
    match t {
        NcclType::I8 => ncclInt8,
        NcclType::U8 => ncclUint8,
        NcclType::I32 => ncclInt32,
        NcclType::I64 => ncclInt64,
        NcclType::F16 => ncclFloat16,
        NcclType::BF16 => ncclBfloat16,
        NcclType::F32 => ncclFloat32,
        NcclType::F64 => ncclFloat64,
    }
}

fn red_op(op: NcclOp) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t::*;
    match op {
        NcclOp::Sum => ncclSum,
        NcclOp::Prod => ncclProd,
        NcclOp::Max => ncclMax,
        NcclOp::Min => ncclMin,
        NcclOp::Avg => ncclAvg,
    }
}
