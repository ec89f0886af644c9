//! The host allocations of live tensors, so a kernel that turns loaded
//! integers into pointers (`x.to(tl.pointer_type(...))`, tensors of
//! `data_ptr()`s) can still have each access checked on the CPU backend.

use std::cell::RefCell;
use std::collections::BTreeMap;

thread_local! {
    static LIVE: RefCell<BTreeMap<usize, usize>> = const { RefCell::new(BTreeMap::new()) };
}

pub(crate) fn add(p: *mut u8, bytes: usize) {
    LIVE.with(|l| l.borrow_mut().insert(p as usize, bytes));
}

pub(crate) fn remove(p: *mut u8) {
    LIVE.with(|l| l.borrow_mut().remove(&(p as usize)));
}

/// Every live host allocation as `[lo, hi)` byte bounds, sorted.
pub fn allocations() -> Vec<(u64, u64)> {
    LIVE.with(|l| {
        l.borrow()
            .iter()
            .map(|(&p, &n)| (p as u64, (p + n) as u64))
            .collect()
    })
}

thread_local! {
    /// Device allocations of live storages: address → bytes.
    static DEVICE: RefCell<BTreeMap<u64, usize>> = const { RefCell::new(BTreeMap::new()) };
}

pub(crate) fn device_add(addr: u64, bytes: usize) {
    DEVICE.with(|l| l.borrow_mut().insert(addr, bytes));
}

pub(crate) fn device_remove(addr: u64) {
    DEVICE.with(|l| l.borrow_mut().remove(&addr));
}

/// Every live device allocation of a tensor as `[lo, hi)` byte bounds,
/// sorted (what checked GPU launches check addresses of unknown origin
/// against).
pub fn device_allocations() -> Vec<(u64, u64)> {
    DEVICE.with(|l| {
        l.borrow()
            .iter()
            .map(|(&p, &n)| (p, p + n as u64))
            .collect()
    })
}

thread_local! {
    static ESCAPED: RefCell<Vec<std::rc::Weak<crate::Storage>>> = const { RefCell::new(Vec::new()) };
}

/// A storage whose GPU address a program took (`data_ptr()` of a 'cuda'
/// tensor): a kernel may write it through an address it loads, which the
/// launch's arguments do not show. Every GPU launch therefore counts as
/// writing it (its host copy is re-read from the GPU when next needed).
pub fn escape(s: &std::rc::Rc<crate::Storage>) {
    ESCAPED.with(|e| {
        let mut e = e.borrow_mut();
        if !e
            .iter()
            .any(|w| std::ptr::eq(w.as_ptr(), std::rc::Rc::as_ptr(s)))
        {
            e.push(std::rc::Rc::downgrade(s));
        }
    });
}

/// After a GPU launch: every escaped storage may have been written there.
pub fn mark_escaped_written() {
    ESCAPED.with(|e| {
        e.borrow_mut().retain(|w| match w.upgrade() {
            Some(s) => {
                s.mark_device_written();
                true
            }
            None => false,
        })
    });
}
