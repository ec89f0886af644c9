//! Several devices in one process: peer access between contexts, copies
//! between devices, and ordering one device's stream after another's.
//!
//! Each device has its own primary context and stream (`Gpu::open_device`).
//! Work on two devices is unordered unless one stream waits for an event
//! the other recorded (`Gpu::wait_for`): a kernel on `cuda:0` that reads a
//! tensor `cuda:1` just wrote, or a copy between them, does that first.
//!
//! Peer access has two parts on a device whose memory comes from the
//! stream-ordered allocator: the context-level switch
//! (`cuCtxEnablePeerAccess`) and the memory pool's access list
//! (`cuMemPoolSetAccess`), without which pool allocations stay invisible to
//! the other device even with the context switch on.

use crate::driver::{DeviceBuffer, Gpu};
use cudarc::driver::sys;

fn check(r: sys::CUresult, what: &str) -> Result<(), String> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {r:?}"))
    }
}

impl Gpu {
    /// Whether kernels on this device can read and write `other`'s memory
    /// directly (NVLink or PCIe peer-to-peer), as the driver says.
    pub fn can_access_peer(&self, other: &Gpu) -> bool {
        if self.ordinal == other.ordinal {
            return true;
        }
        let mut yes = 0;
        // SAFETY: a valid out-pointer and two device handles of live contexts.
        let r = unsafe {
            sys::cuDeviceCanAccessPeer(&mut yes, self.ctx.cu_device(), other.ctx.cu_device())
        };
        r == sys::CUresult::CUDA_SUCCESS && yes != 0
    }

    /// Let kernels on this device use `owner`'s memory (both its ordinary
    /// allocations and those of its memory pool). Enabling twice is fine.
    pub fn enable_peer_access(&self, owner: &Gpu) -> Result<(), String> {
        if self.ordinal == owner.ordinal {
            return Ok(());
        }
        if !self.can_access_peer(owner) {
            return Err(format!(
                "cuda:{} cannot access the memory of cuda:{} (no peer-to-peer path between them)",
                self.ordinal, owner.ordinal
            ));
        }
        self.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        // SAFETY: both contexts are live; the flags argument must be 0.
        let r = unsafe { sys::cuCtxEnablePeerAccess(owner.ctx.cu_ctx(), 0) };
        if r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            check(r, "cuCtxEnablePeerAccess")?;
        }
        if owner.ctx.has_async_alloc() {
            if let Some(pool) = crate::driver::default_pool(&owner.ctx) {
                let desc = sys::CUmemAccessDesc {
                    location: sys::CUmemLocation {
                        type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                        id: self.ordinal as i32,
                    },
                    flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                };
                // SAFETY: one valid descriptor for a live pool.
                check(
                    unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) },
                    "cuMemPoolSetAccess",
                )?;
            }
        }
        Ok(())
    }

    /// Make this device's stream wait (on the device, not the host) for
    /// the work queued on `other`'s stream so far.
    pub fn wait_for(&self, other: &Gpu) -> Result<(), String> {
        if self.ordinal == other.ordinal {
            return Ok(());
        }
        self.stream.join(&other.stream).map_err(|e| {
            format!(
                "ordering cuda:{} after cuda:{}: {e:?}",
                self.ordinal, other.ordinal
            )
        })
    }

    /// Copy `bytes` bytes of `src`, which lives on `src_gpu`, into `dst` on
    /// this device, on this device's stream after the work queued on the
    /// source's; the source's stream then waits for the copy, so the source
    /// buffer is not reused before the copy has read it. Goes over NVLink
    /// or PCIe where peer access exists, through the host otherwise (the
    /// driver decides).
    pub fn copy_from_peer(
        &self,
        dst: &mut DeviceBuffer,
        src_gpu: &Gpu,
        src: &DeviceBuffer,
        bytes: usize,
    ) -> Result<(), String> {
        if bytes > dst.bytes || bytes > src.bytes {
            return Err(format!(
                "peer copy of {bytes} bytes between buffers of {} and {} bytes",
                src.bytes, dst.bytes
            ));
        }
        self.wait_for(src_gpu)?;
        let (d, s) = (self.address(dst), src_gpu.address(src));
        self.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        // SAFETY: both ranges lie inside live allocations of the two contexts.
        let r = unsafe {
            sys::cuMemcpyPeerAsync(
                d,
                self.ctx.cu_ctx(),
                s,
                src_gpu.ctx.cu_ctx(),
                bytes,
                self.stream.cu_stream(),
            )
        };
        check(r, "cuMemcpyPeerAsync")?;
        src_gpu.wait_for(self)
    }

    /// Fill `buf` with a repeated element of 1, 2 or 4 bytes (`torch.full`
    /// on the GPU), on the stream. Returns false for other element sizes.
    pub fn fill(&self, buf: &mut DeviceBuffer, elem: &[u8]) -> Result<bool, String> {
        let ptr = self.address(buf);
        let bytes = buf.bytes;
        self.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
        let stream = self.stream.cu_stream();
        // SAFETY: the counts cover `bytes` bytes of a live allocation.
        let r = unsafe {
            match *elem {
                [b] => sys::cuMemsetD8Async(ptr, b, bytes, stream),
                [a, b] => sys::cuMemsetD16Async(ptr, u16::from_le_bytes([a, b]), bytes / 2, stream),
                [a, b, c, d] => {
                    sys::cuMemsetD32Async(ptr, u32::from_le_bytes([a, b, c, d]), bytes / 4, stream)
                }
                _ => return Ok(false),
            }
        };
        check(r, "cuMemsetAsync")?;
        Ok(true)
    }

    /// The CUDA stream work on this device is queued on (for NCCL).
    pub(crate) fn raw_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }
}
