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
//! RustPython's own slot. The `__mul__`, `__rmul__` and `__imul__` methods
//! are wrapped the same way, for explicit calls and for subclasses, whose
//! repetition goes through the method. A thread's interpreters share these
//! types, so wrapping them at a thread's first session covers every later
//! one.

use rustpython_vm::builtins::PyStr;
use rustpython_vm::protocol::PySequence;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use std::cell::RefCell;
use std::collections::HashMap;
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
    super::growth_guard::check_item(vm)?;
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

thread_local! {
    /// The methods replaced on this thread's types, by `"type.name"`.
    static METHODS: RefCell<HashMap<&'static str, PyObjectRef>> = RefCell::new(HashMap::new());
}

/// One wrapped method: the repetition count checked, then the original.
macro_rules! method_guard {
    ($name:ident, $key:literal, $item:expr) => {
        fn $name(zelf: PyObjectRef, n: PyObjectRef, vm: &VirtualMachine) -> PyResult {
            let count = n
                .try_index(vm)
                .ok()
                .and_then(|i| i.try_to_primitive::<isize>(vm).ok());
            if let Some(count) = count {
                check(PySequence { obj: &zelf }, count, $item, vm)?;
            }
            match METHODS.with(|m| m.borrow().get($key).cloned()) {
                Some(orig) => orig.call((zelf, n), vm),
                None => Err(vm.new_system_error(format!("{} was not kept", $key))),
            }
        }
    };
}

method_guard!(str_mul, "str.__mul__", 1);
method_guard!(str_rmul, "str.__rmul__", 1);
method_guard!(bytes_mul, "bytes.__mul__", 1);
method_guard!(bytes_rmul, "bytes.__rmul__", 1);
method_guard!(bytearray_mul, "bytearray.__mul__", 1);
method_guard!(bytearray_rmul, "bytearray.__rmul__", 1);
method_guard!(bytearray_imul, "bytearray.__imul__", 1);
method_guard!(list_mul, "list.__mul__", PTR);
method_guard!(list_rmul, "list.__rmul__", PTR);
method_guard!(list_imul, "list.__imul__", PTR);
method_guard!(tuple_mul, "tuple.__mul__", PTR);
method_guard!(tuple_rmul, "tuple.__rmul__", PTR);

type Method = fn(PyObjectRef, PyObjectRef, &VirtualMachine) -> PyResult;

/// Replace each type's repetition methods by their guards, keeping the
/// originals for the guards to call.
fn wrap_methods(vm: &VirtualMachine) {
    let t = &vm.ctx.types;
    let methods: [(_, &'static str, &'static str, Method); 12] = [
        (t.str_type, "__mul__", "str.__mul__", str_mul),
        (t.str_type, "__rmul__", "str.__rmul__", str_rmul),
        (t.bytes_type, "__mul__", "bytes.__mul__", bytes_mul),
        (t.bytes_type, "__rmul__", "bytes.__rmul__", bytes_rmul),
        (
            t.bytearray_type,
            "__mul__",
            "bytearray.__mul__",
            bytearray_mul,
        ),
        (
            t.bytearray_type,
            "__rmul__",
            "bytearray.__rmul__",
            bytearray_rmul,
        ),
        (
            t.bytearray_type,
            "__imul__",
            "bytearray.__imul__",
            bytearray_imul,
        ),
        (t.list_type, "__mul__", "list.__mul__", list_mul),
        (t.list_type, "__rmul__", "list.__rmul__", list_rmul),
        (t.list_type, "__imul__", "list.__imul__", list_imul),
        (t.tuple_type, "__mul__", "tuple.__mul__", tuple_mul),
        (t.tuple_type, "__rmul__", "tuple.__rmul__", tuple_rmul),
    ];
    for (ty, name, key, guarded) in methods {
        let interned = vm.ctx.intern_str(name);
        let Some(orig) = ty.get_direct_attr(interned) else {
            continue;
        };
        METHODS.with(|m| m.borrow_mut().insert(key, orig));
        ty.set_attr(interned, vm.new_method(name, ty, guarded).into());
    }
}

/// Wrap the slots. RustPython's built-in types are per thread (a session
/// made on another thread has its own), so each thread's are wrapped on
/// its first session; the originals are the same functions on every
/// thread.
pub(super) fn install(vm: &VirtualMachine) {
    wrap_methods(vm);
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
        wrap_slot!(*cell, keep, guarded);
    }
}
