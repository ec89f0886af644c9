//! A tensor's memory: host bytes and, once a GPU kernel used them, a copy on
//! that GPU, each brought up to date from the other when it is stale.

use crate::live;
use crate::sizes::out_of_host_memory;
use crate::{ALIGN, LOST, READ_BACK_FAILED};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use tilebook_cuda::{DeviceBuffer, Gpu};

/// A tensor's memory: 16-byte aligned bytes, freed when the last view goes.
pub struct Storage {
    /// The host bytes; null until first needed for storage that started on
    /// the GPU (a kernel's or cuBLAS's output is often never read back).
    ptr: Cell<*mut u8>,
    bytes: usize,
    /// The copy on the GPU, when a kernel there has used this storage.
    device: RefCell<Option<(Rc<Gpu>, DeviceBuffer)>>,
    /// Whether the host bytes are current (false after a GPU kernel wrote them).
    host_valid: Cell<bool>,
    /// Whether the device copy is current (false after the host touched the bytes).
    device_valid: Cell<bool>,
}

impl Storage {
    fn layout(bytes: usize) -> Layout {
        Layout::from_size_align(bytes.max(64), ALIGN).expect("tensor layout")
    }

    fn host_alloc(bytes: usize) -> *mut u8 {
        let layout = Storage::layout(bytes);
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        live::add(ptr, bytes);
        ptr
    }

    /// New zeroed host storage, or why there is none: the size fails the
    /// layout (over `isize::MAX`) or the allocator has no memory for it.
    /// Every allocation whose size a user chose goes through here.
    pub fn try_new(bytes: usize) -> Result<Rc<Storage>, String> {
        let layout = Layout::from_size_align(bytes.max(64), ALIGN)
            .map_err(|_| format!("{bytes} bytes is more than any allocation can hold"))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(out_of_host_memory(bytes));
        }
        live::add(ptr, bytes);
        Ok(Rc::new(Storage {
            ptr: Cell::new(ptr),
            bytes,
            device: RefCell::new(None),
            host_valid: Cell::new(true),
            device_valid: Cell::new(false),
        }))
    }

    /// The host allocation, made now if the storage started on the GPU.
    fn host(&self) -> *mut u8 {
        if self.ptr.get().is_null() {
            self.ptr.set(Storage::host_alloc(self.bytes));
        }
        self.ptr.get()
    }

    pub fn new(bytes: usize) -> Rc<Storage> {
        Rc::new(Storage {
            ptr: Cell::new(Storage::host_alloc(bytes)),
            bytes,
            device: RefCell::new(None),
            host_valid: Cell::new(true),
            device_valid: Cell::new(false),
        })
    }

    /// The host bytes, brought up to date from the GPU first. Callers may
    /// write through the pointer, so the device copy counts as stale after.
    pub fn ptr(&self) -> *mut u8 {
        if !self.host_valid.get() {
            if let Some((gpu, buf)) = &*self.device.borrow() {
                if gpu.is_lost() {
                    // Caught at the cell boundary and reported as an error.
                    panic!("{LOST}");
                }
                // SAFETY: `ptr` holds `bytes` bytes, as many as the device buffer.
                let host = unsafe { std::slice::from_raw_parts_mut(self.host(), self.bytes) };
                if let Err(e) = gpu.download(buf, host) {
                    panic!("{READ_BACK_FAILED}: {e}");
                }
            }
            self.host_valid.set(true);
        }
        self.device_valid.set(false);
        self.host()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Storage that lives on `gpu` first (a tensor made for a kernel's
    /// output), zeroed or not: nothing is copied until the host reads it.
    pub fn on_device(gpu: &Rc<Gpu>, bytes: usize, zero: bool) -> Result<Rc<Storage>, String> {
        let buf = if zero {
            gpu.alloc(bytes)?
        } else {
            gpu.alloc_uninit(bytes)?
        };
        live::device_add(gpu.address(&buf), bytes);
        Ok(Rc::new(Storage {
            ptr: Cell::new(std::ptr::null_mut()),
            bytes,
            device: RefCell::new(Some((gpu.clone(), buf))),
            host_valid: Cell::new(false),
            device_valid: Cell::new(true),
        }))
    }

    /// A copy of this storage on `gpu` (`.to('cuda:N')` from another GPU):
    /// device to device when its current data are on a GPU, else uploaded
    /// from the host bytes.
    pub fn copy_to_gpu(&self, gpu: &Rc<Gpu>) -> Result<Rc<Storage>, String> {
        let dev = self.device.borrow();
        match dev.as_ref() {
            Some((src_gpu, src)) if self.device_valid.get() && !src_gpu.is_lost() => {
                let out = Storage::on_device(gpu, self.bytes, false)?;
                if let Some((_, dst)) = out.device.borrow_mut().as_mut() {
                    gpu.copy_from_peer(dst, src_gpu, src, self.bytes)?;
                }
                Ok(out)
            }
            _ => {
                // Current on the host: uploaded straight to the new device.
                drop(dev);
                let src = self.read_ptr()?;
                let out = Storage::on_device(gpu, self.bytes, false)?;
                if let Some((_, dst)) = out.device.borrow_mut().as_mut() {
                    // SAFETY: `src` holds `bytes` bytes of this storage's host copy.
                    gpu.upload(unsafe { std::slice::from_raw_parts(src, self.bytes) }, dst)?;
                }
                Ok(out)
            }
        }
    }

    /// A copy in new host memory (`.cpu()` of a GPU tensor, `.to('cuda')`
    /// of a host one: torch's copies, never views of the same memory).
    pub fn copy_on_host(&self) -> Result<Rc<Storage>, String> {
        let out = Storage::try_new(self.bytes)?;
        let src = self.read_ptr()?;
        // SAFETY: both hold `bytes` bytes and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, out.ptr(), self.bytes) };
        Ok(out)
    }

    /// The host bytes for reading, brought up to date from the GPU first;
    /// unlike `ptr`, the device copy stays current.
    fn read_ptr(&self) -> Result<*const u8, String> {
        if !self.host_valid.get() {
            if let Some((gpu, buf)) = &*self.device.borrow() {
                if gpu.is_lost() {
                    return Err(LOST.into());
                }
                // SAFETY: `host()` holds `bytes` bytes, as many as the buffer.
                let host = unsafe { std::slice::from_raw_parts_mut(self.host(), self.bytes) };
                gpu.download(buf, host)
                    .map_err(|e| format!("{READ_BACK_FAILED}: {e}"))?;
            }
            self.host_valid.set(true);
        }
        Ok(self.host())
    }

    /// The device address of this storage on `gpu`, uploading the host bytes
    /// when the device copy is stale.
    pub fn device_address(&self, gpu: &Rc<Gpu>) -> Result<u64, String> {
        let mut dev = self.device.borrow_mut();
        if dev.as_ref().is_some_and(|(g, _)| g.is_lost()) {
            // The context this copy lived in was rebuilt after a fault.
            if !self.host_valid.get() {
                return Err(LOST.into());
            }
            *dev = None;
        }
        if dev.as_ref().is_some_and(|(g, _)| g.ordinal != gpu.ordinal) {
            // Storage shared by views labelled with another device (a
            // `.cpu()` view moved on to `cuda:1`): its data move there,
            // through the host, so every view reads what was written.
            if !self.host_valid.get() {
                if let Some((g, buf)) = dev.as_ref() {
                    // SAFETY: `host()` holds `bytes` bytes, as many as the buffer.
                    let host = unsafe { std::slice::from_raw_parts_mut(self.host(), self.bytes) };
                    g.download(buf, host)?;
                }
                self.host_valid.set(true);
            }
            if let Some((g, buf)) = dev.take() {
                live::device_remove(g.address(&buf));
            }
        }
        if dev.is_none() {
            let buf = gpu.alloc(self.bytes)?;
            live::device_add(gpu.address(&buf), self.bytes);
            *dev = Some((gpu.clone(), buf));
            self.device_valid.set(false);
        }
        let (g, buf) = dev.as_mut().expect("device copy");
        if !self.device_valid.get() {
            // SAFETY: the host copy is current whenever the device copy is stale.
            let host = unsafe { std::slice::from_raw_parts(self.host(), self.bytes) };
            g.upload(host, buf)?;
            self.device_valid.set(true);
        }
        Ok(g.address(buf))
    }

    /// Fill the device copy with one element's bytes repeated (the storage
    /// must have been made on the GPU); false when the element size has no
    /// device fill (8 bytes with unequal halves) or there is no device copy.
    pub fn fill_on_device(&self, elem: &[u8]) -> Result<bool, String> {
        let mut dev = self.device.borrow_mut();
        let Some((g, buf)) = dev.as_mut() else {
            return Ok(false);
        };
        let done = match elem.len() {
            8 if elem[..4] == elem[4..] => g.fill(buf, &elem[..4])?,
            _ => g.fill(buf, elem)?,
        };
        if done {
            self.device_valid.set(true);
            self.host_valid.set(false);
        }
        Ok(done)
    }

    /// The address of the device copy as it is (on whichever GPU holds
    /// it), with nothing uploaded or moved; `None` without one.
    pub fn current_device_address(&self) -> Option<u64> {
        let dev = self.device.borrow();
        let (g, buf) = dev.as_ref()?;
        (!g.is_lost()).then(|| g.address(buf))
    }

    /// Whether this storage's data lived only in a GPU context that was
    /// rebuilt after a fault.
    pub fn lost_on_gpu(&self) -> bool {
        !self.host_valid.get()
            && self
                .device
                .borrow()
                .as_ref()
                .is_some_and(|(g, _)| g.is_lost())
    }

    /// A kernel on the GPU may have written the device copy.
    pub fn mark_device_written(&self) {
        if self.device.borrow().is_some() {
            self.host_valid.set(false);
            self.device_valid.set(true);
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Some((g, buf)) = &*self.device.borrow() {
            if !g.is_lost() {
                live::device_remove(g.address(buf));
            }
        }
        let p = self.ptr.get();
        if !p.is_null() {
            live::remove(p);
            // SAFETY: allocated by `host_alloc` with this layout.
            unsafe { dealloc(p, Storage::layout(self.bytes)) }
        }
    }
}
