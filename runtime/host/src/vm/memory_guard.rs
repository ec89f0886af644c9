//! Sequence repetition checked against the host's free memory.
//!
//! RustPython 0.5 refuses a repetition only past `isize::MAX` bytes, so
//! `'a' * 10**12` or `[0] * 10**12` asks the allocator for a terabyte, and
//! a failed Rust allocation aborts the process (stable Rust has no hook to
//! make it an error). Before any user code runs, the `repeat` and
//! `inplace_repeat` slots of `str`, `bytes`, `bytearray`, `list` and
//! `tuple` are wrapped: a result larger than the memory the host has free
//! is a `MemoryError` saying how much was asked, as a tensor that does not
//! fit is (`tilebook_tensor::ensure_host_room`); anything else goes to
//! RustPython's own slot. A thread's interpreters share these slots, so
//! wrapping them at a thread's first session covers every later one. Not
//! covered: explicit `x.__mul__(n)` calls and subclasses of these types,
//! which go through the `__mul__` method rather than the slot.

use rustpython_vm::builtins::PyStr;
use rustpython_vm::protocol::PySequence;
use rustpython_vm::{PyResult, VirtualMachine};
use std::sync::OnceLock;

type Repeat = fn(PySequence<'_>, isize, &VirtualMachine) -> PyResult;

/// Bytes a repetition `n` times of `seq` would hold, `None` on overflow:
/// a string's UTF-8 bytes, a bytes object's bytes, a list's or tuple's
/// object pointers.
fn result_bytes(seq: PySequence<'_>, n: isize, item: usize, vm: &VirtualMachine) -> Option<usize> {
    let n = usize::try_from(n).ok()?;
    let len = match seq.obj.downcast_ref::<PyStr>() {
        Some(s) => s.byte_len(),
        None => seq.obj.length(vm).ok()?.checked_mul(item)?,
    };
    len.checked_mul(n)
}

/// A `MemoryError` where the result would not fit in free memory.
fn check(seq: PySequence<'_>, n: isize, item: usize, vm: &VirtualMachine) -> PyResult<()> {
    if n <= 1 {
        return Ok(());
    }
    let bytes = result_bytes(seq, n, item, vm).unwrap_or(usize::MAX);
    tilebook_tensor::ensure_host_room(bytes, 1).map_err(|m| vm.new_memory_error(m))
}

/// One wrapped slot: the original kept in `$orig`, the check before it.
macro_rules! guard {
    ($name:ident, $orig:ident, $item:expr) => {
        static $orig: OnceLock<Repeat> = OnceLock::new();
        fn $name(seq: PySequence<'_>, n: isize, vm: &VirtualMachine) -> PyResult {
            check(seq, n, $item, vm)?;
            match $orig.get() {
                Some(f) => f(seq, n, vm),
                None => Err(vm.new_system_error("a repetition slot was not kept".to_owned())),
            }
        }
    };
}

const PTR: usize = std::mem::size_of::<usize>();
guard!(str_repeat, STR_REPEAT, 1);
guard!(bytes_repeat, BYTES_REPEAT, 1);
guard!(bytearray_repeat, BYTEARRAY_REPEAT, 1);
guard!(bytearray_irepeat, BYTEARRAY_IREPEAT, 1);
guard!(list_repeat, LIST_REPEAT, PTR);
guard!(list_irepeat, LIST_IREPEAT, PTR);
guard!(tuple_repeat, TUPLE_REPEAT, PTR);

/// Wrap the slots. RustPython's built-in types are per thread (a session
/// made on another thread has its own), so each thread's are wrapped on
/// its first session; the originals are the same functions on every
/// thread.
pub(super) fn install(vm: &VirtualMachine) {
    thread_local! {
        static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if DONE.with(|d| d.replace(true)) {
        return;
    }
    let t = &vm.ctx.types;
    let slots: [(_, &OnceLock<Repeat>, Repeat, bool); 7] = [
        (t.str_type, &STR_REPEAT, str_repeat, false),
        (t.bytes_type, &BYTES_REPEAT, bytes_repeat, false),
        (t.bytearray_type, &BYTEARRAY_REPEAT, bytearray_repeat, false),
        (
            t.bytearray_type,
            &BYTEARRAY_IREPEAT,
            bytearray_irepeat,
            true,
        ),
        (t.list_type, &LIST_REPEAT, list_repeat, false),
        (t.list_type, &LIST_IREPEAT, list_irepeat, true),
        (t.tuple_type, &TUPLE_REPEAT, tuple_repeat, false),
    ];
    for (ty, keep, guarded, inplace) in slots {
        let cell = if inplace {
            &ty.slots.as_sequence.inplace_repeat
        } else {
            &ty.slots.as_sequence.repeat
        };
        let Some(orig) = cell.load() else { continue };
        if std::ptr::fn_addr_eq(orig, guarded) {
            continue;
        }
        let kept = *keep.get_or_init(|| orig);
        // Wrap only the function kept: a slot another thread's types hold
        // differently stays as RustPython made it.
        if std::ptr::fn_addr_eq(kept, orig) {
            cell.store(Some(guarded));
        }
    }
}
