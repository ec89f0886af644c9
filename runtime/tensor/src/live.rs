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
