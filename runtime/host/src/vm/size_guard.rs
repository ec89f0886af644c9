//! Constructors and padding methods whose result size is an argument,
//! checked against the host's free memory (as `memory_guard` checks
//! repetition): `bytes(10**12)`, `bytearray(10**12)`, `'x'.ljust(10**12)`
//! or `list(range(10**12))` asked RustPython 0.5 for the whole result at
//! once (or grew towards it for minutes), and a failed Rust allocation
//! aborts the process. Each is now a `MemoryError` saying how much was
//! asked where the result cannot fit in free memory; anything else goes
//! to RustPython's own function.
//!
//! Checked: the `new` slots of `bytes` and `tuple` and the `init` slots of
//! `bytearray` and `list` (an int size, or a `range`'s length: no user
//! code runs to find it), the `ljust`, `rjust`, `center`, `zfill`,
//! `expandtabs` and `join` methods of `str`, `bytes` and `bytearray`,
//! `int.to_bytes`, `int`'s left shift, and the widths and precisions of
//! `__format__` for `int`, `float`, `complex` and `str`.

use rustpython_vm::builtins::{
    PyByteArray, PyBytes, PyInt, PyList, PyRange, PyStr, PyTuple, PyTypeRef,
};
use rustpython_vm::function::FuncArgs;
use rustpython_vm::{PyObject, PyObjectRef, PyResult, VirtualMachine};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

type NewSlot = fn(PyTypeRef, FuncArgs, &VirtualMachine) -> PyResult;
type InitSlot = fn(PyObjectRef, FuncArgs, &VirtualMachine) -> PyResult<()>;

const PTR: usize = std::mem::size_of::<usize>();

/// A `MemoryError` where `count` items of `item` bytes cannot fit.
fn room(count: usize, item: usize, vm: &VirtualMachine) -> PyResult<()> {
    tilebook_tensor::ensure_host_room(count, item).map_err(|m| vm.new_memory_error(m))
}

/// The element count a constructor's first argument asks for, where it is
/// known without running user code: a non-negative int (`bytes(n)`, with
/// `ints`), or a `range`'s length.
fn asked(args: &FuncArgs, ints: bool, vm: &VirtualMachine) -> Option<usize> {
    let x = args.args.first()?;
    if ints {
        if let Some(i) = x.downcast_ref_if_exact::<PyInt>(vm) {
            return i.try_to_primitive::<usize>(vm).ok();
        }
    }
    x.downcast_ref_if_exact::<PyRange>(vm)?;
    x.length(vm).ok()
}

macro_rules! new_guard {
    ($name:ident, $orig:ident, $ints:expr, $item:expr) => {
        static $orig: OnceLock<NewSlot> = OnceLock::new();
        fn $name(cls: PyTypeRef, args: FuncArgs, vm: &VirtualMachine) -> PyResult {
            super::growth_guard::check_item(vm)?;
            if let Some(n) = asked(&args, $ints, vm) {
                room(n, $item, vm)?;
            }
            match $orig.get() {
                Some(f) => f(cls, args, vm),
                None => Err(vm.new_system_error("a constructor slot was not kept".to_owned())),
            }
        }
    };
}

macro_rules! init_guard {
    ($name:ident, $orig:ident, $ints:expr, $item:expr) => {
        static $orig: OnceLock<InitSlot> = OnceLock::new();
        fn $name(zelf: PyObjectRef, args: FuncArgs, vm: &VirtualMachine) -> PyResult<()> {
            super::growth_guard::check_item(vm)?;
            if let Some(n) = asked(&args, $ints, vm) {
                room(n, $item, vm)?;
            }
            match $orig.get() {
                Some(f) => f(zelf, args, vm),
                None => Err(vm.new_system_error("an init slot was not kept".to_owned())),
            }
        }
    };
}

new_guard!(bytes_new, BYTES_NEW, true, 1);
new_guard!(tuple_new, TUPLE_NEW, false, PTR);
init_guard!(bytearray_init, BYTEARRAY_INIT, true, 1);
init_guard!(list_init, LIST_INIT, false, PTR);

type Binary = fn(&PyObject, &PyObject, &VirtualMachine) -> PyResult;
static INT_LSHIFT: OnceLock<Binary> = OnceLock::new();

/// `x << n` of ints: a nonzero `x` shifted by `n` bits takes `n / 8` bytes
/// (`1 << 10**12` asked for 125 GB at once).
fn int_lshift(a: &PyObject, b: &PyObject, vm: &VirtualMachine) -> PyResult {
    super::growth_guard::check_item(vm)?;
    if let (Some(x), Some(n)) = (a.downcast_ref::<PyInt>(), b.downcast_ref::<PyInt>()) {
        let zero = x.try_to_primitive::<i64>(vm).is_ok_and(|v| v == 0);
        if let (false, Ok(bits)) = (zero, n.try_to_primitive::<usize>(vm)) {
            room(bits / 8, 1, vm)?;
        }
    }
    match INT_LSHIFT.get() {
        Some(f) => f(a, b, vm),
        None => Err(vm.new_system_error("a shift slot was not kept".to_owned())),
    }
}

thread_local! {
    /// The padding methods replaced on this thread's types, by `"type.name"`.
    static METHODS: RefCell<HashMap<String, PyObjectRef>> = RefCell::new(HashMap::new());
}

/// The bytes of a `str`, `bytes` or `bytearray` (tabs are counted in them).
fn tabs_and_len(zelf: &PyObjectRef) -> Option<(usize, usize)> {
    let count = |b: &[u8]| (b.iter().filter(|&&c| c == b'\t').count(), b.len());
    if let Some(s) = zelf.downcast_ref::<PyStr>() {
        return Some(count(s.as_bytes()));
    }
    if let Some(b) = zelf.downcast_ref::<PyBytes>() {
        return Some(count(b.as_bytes()));
    }
    zelf.downcast_ref::<PyByteArray>()
        .map(|b| count(&b.borrow_buf()))
}

/// The bytes a padding method's result would take, where its size
/// argument is an int: the width (`ljust`, `zfill` ...), or for
/// `expandtabs` the string with each tab widened to the tab size.
fn padded_bytes(
    method: &str,
    zelf: &PyObjectRef,
    args: &FuncArgs,
    vm: &VirtualMachine,
) -> Option<usize> {
    let arg = match args.args.first() {
        Some(a) => a.clone(),
        None => args
            .kwargs
            .get(if method == "expandtabs" {
                "tabsize"
            } else {
                "width"
            })?
            .clone(),
    };
    let n = arg
        .downcast_ref::<PyInt>()?
        .try_to_primitive::<i64>(vm)
        .ok()?;
    let n = usize::try_from(n).ok()?;
    if method != "expandtabs" {
        return Some(n);
    }
    let (tabs, len) = tabs_and_len(zelf)?;
    Some(tabs.saturating_mul(n).saturating_add(len))
}

/// Check a padding method's result size.
fn padding_check(
    key: &str,
    zelf: &PyObjectRef,
    args: &mut FuncArgs,
    vm: &VirtualMachine,
) -> PyResult<()> {
    let method = key.rsplit('.').next().unwrap_or(key);
    match padded_bytes(method, zelf, args, vm) {
        Some(bytes) => room(bytes, 1, vm),
        None => Ok(()),
    }
}

/// `sep.join(items)`: the result's bytes, the items' and the separators',
/// checked before it is built (`' '.join([big] * 10**5)` asked for it all
/// at once).
fn join_check(
    _key: &str,
    zelf: &PyObjectRef,
    args: &mut FuncArgs,
    vm: &VirtualMachine,
) -> PyResult<()> {
    let Some(arg) = args.args.first().cloned() else {
        return Ok(());
    };
    let sep = text_len(zelf);
    // Lists and tuples are measured where they are; another iterable is
    // drained into a list once, which `join` then reads.
    let total = if let Some(t) = arg.downcast_ref::<PyTuple>() {
        joined_len(t.as_slice(), sep)
    } else if let Some(l) = arg.downcast_ref::<PyList>() {
        joined_len(&l.borrow_vec(), sep)
    } else {
        let items = vm.extract_elements_with(&arg, Ok)?;
        let total = joined_len(&items, sep);
        args.args[0] = vm.ctx.new_list(items).into();
        total
    };
    room(total, 1, vm)
}

/// The length of a `str`, `bytes` or `bytearray` (0 for anything else,
/// which `join` refuses by itself).
fn text_len(o: &PyObjectRef) -> usize {
    if let Some(s) = o.downcast_ref::<PyStr>() {
        s.byte_len()
    } else if let Some(b) = o.downcast_ref::<PyBytes>() {
        b.as_bytes().len()
    } else if let Some(b) = o.downcast_ref::<PyByteArray>() {
        b.borrow_buf().len()
    } else {
        0
    }
}

/// The length of `items` joined by a separator of `sep` units
/// (`usize::MAX` past the address space).
fn joined_len(items: &[PyObjectRef], sep: usize) -> usize {
    items
        .iter()
        .map(text_len)
        .try_fold(0usize, |t, n| t.checked_add(n))
        .and_then(|t| t.checked_add(sep.checked_mul(items.len().saturating_sub(1))?))
        .unwrap_or(usize::MAX)
}

/// `n.to_bytes(length, ...)`: the length checked.
fn to_bytes_check(
    _key: &str,
    _zelf: &PyObjectRef,
    args: &mut FuncArgs,
    vm: &VirtualMachine,
) -> PyResult<()> {
    let length = args.args.first().or_else(|| args.kwargs.get("length"));
    match length.and_then(|l| {
        l.downcast_ref::<PyInt>()?
            .try_to_primitive::<usize>(vm)
            .ok()
    }) {
        Some(n) => room(n, 1, vm),
        None => Ok(()),
    }
}

/// The width and precision of a format spec (`[[fill]align][sign][z][#][0]
/// [width][grouping][.precision][type]`), saturating.
fn spec_numbers(spec: &str) -> (Option<u128>, Option<u128>) {
    let c: Vec<char> = spec.chars().collect();
    let align = |x: Option<&char>| x.is_some_and(|x| "<>=^".contains(*x));
    let mut i = if align(c.get(1)) {
        2
    } else if align(c.first()) {
        1
    } else {
        0
    };
    for flags in ["+- ", "z", "#"] {
        if c.get(i).is_some_and(|x| flags.contains(*x)) {
            i += 1;
        }
    }
    let number = |i: &mut usize| -> Option<u128> {
        let start = *i;
        let mut n: u128 = 0;
        while let Some(d) = c.get(*i).and_then(|x| x.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(d as u128);
            *i += 1;
        }
        (*i > start).then_some(n)
    };
    let width = number(&mut i);
    if c.get(i).is_some_and(|x| ",_".contains(*x)) {
        i += 1;
    }
    let precision = if c.get(i) == Some(&'.') {
        i += 1;
        number(&mut i)
    } else {
        None
    };
    (width, precision)
}

/// `x.__format__(spec)` (`format()`, `str.format`, f-strings): RustPython
/// 0.5 keeps a width or precision modulo 2^32, so `f'{1:>4294967301}'`
/// was 5 characters, silently. As CPython: past `sys.maxsize` a
/// `ValueError`, past free memory a `MemoryError`; and what RustPython
/// cannot lay out (2^32 and above) an `OverflowError` saying so.
fn format_check(
    _key: &str,
    _zelf: &PyObjectRef,
    args: &mut FuncArgs,
    vm: &VirtualMachine,
) -> PyResult<()> {
    let Some(spec) = args.args.first().and_then(|s| s.downcast_ref::<PyStr>()) else {
        return Ok(());
    };
    let Some(spec) = spec.to_str() else {
        return Ok(());
    };
    let (width, precision) = spec_numbers(spec);
    for n in [width, precision].into_iter().flatten() {
        if n > isize::MAX as u128 {
            return Err(vm.new_value_error("Too many decimal digits in format string".to_owned()));
        }
        room(n as usize, 1, vm)?;
        if n > u32::MAX as u128 {
            return Err(vm.new_overflow_error(format!(
                "a format width or precision of {n} is past what tilebook's formatter lays out (2**32 - 1)"
            )));
        }
    }
    Ok(())
}

type Check = fn(&str, &PyObjectRef, &mut FuncArgs, &VirtualMachine) -> PyResult<()>;

/// A method whose result size is checked first, then the original.
fn checked_method(
    key: &'static str,
    check: Check,
) -> impl Fn(PyObjectRef, FuncArgs, &VirtualMachine) -> PyResult {
    move |zelf, mut args, vm| {
        super::growth_guard::check_item(vm)?;
        check(key, &zelf, &mut args, vm)?;
        match METHODS.with(|m| m.borrow().get(key).cloned()) {
            Some(orig) => {
                args.args.insert(0, zelf);
                orig.call(args, vm)
            }
            None => Err(vm.new_system_error(format!("{key} was not kept"))),
        }
    }
}

const CHECKED: [(&str, Check); 23] = [
    ("str.ljust", padding_check),
    ("str.rjust", padding_check),
    ("str.center", padding_check),
    ("str.zfill", padding_check),
    ("str.expandtabs", padding_check),
    ("bytes.ljust", padding_check),
    ("bytes.rjust", padding_check),
    ("bytes.center", padding_check),
    ("bytes.zfill", padding_check),
    ("bytes.expandtabs", padding_check),
    ("bytearray.ljust", padding_check),
    ("bytearray.rjust", padding_check),
    ("bytearray.center", padding_check),
    ("bytearray.zfill", padding_check),
    ("bytearray.expandtabs", padding_check),
    ("str.join", join_check),
    ("bytes.join", join_check),
    ("bytearray.join", join_check),
    ("int.to_bytes", to_bytes_check),
    ("int.__format__", format_check),
    ("float.__format__", format_check),
    ("complex.__format__", format_check),
    ("str.__format__", format_check),
];

/// Wrap this thread's types (from `install_guards`, once per thread).
pub(super) fn install(vm: &VirtualMachine) {
    let t = &vm.ctx.types;
    for (key, check) in CHECKED {
        let Some((ty_name, name)) = key.split_once('.') else {
            continue;
        };
        let ty = match ty_name {
            "str" => t.str_type,
            "bytes" => t.bytes_type,
            "int" => t.int_type,
            "float" => t.float_type,
            "complex" => t.complex_type,
            _ => t.bytearray_type,
        };
        let interned = vm.ctx.intern_str(name);
        let Some(orig) = ty.get_direct_attr(interned) else {
            continue;
        };
        METHODS.with(|m| m.borrow_mut().insert(key.to_owned(), orig));
        ty.set_attr(
            interned,
            vm.new_method(name, ty, checked_method(key, check)).into(),
        );
    }
    let news: [(_, &OnceLock<NewSlot>, NewSlot); 2] = [
        (t.bytes_type, &BYTES_NEW, bytes_new),
        (t.tuple_type, &TUPLE_NEW, tuple_new),
    ];
    for (ty, keep, guarded) in news {
        wrap_slot!(ty.slots.new, keep, guarded);
    }
    let number = &t.int_type.slots.as_number;
    if let Some(orig) = wrap_slot!(number.lshift, INT_LSHIFT, int_lshift as Binary) {
        if number
            .right_lshift
            .load()
            .is_some_and(|r| std::ptr::fn_addr_eq(r, orig))
        {
            number.right_lshift.store(Some(int_lshift));
        }
    }
    // `list(x)`'s fast path calls RustPython's `init` directly: without
    // it, the call goes through the `init` slot checked below.
    t.list_type.slots.vectorcall.store(None);
    let inits: [(_, &OnceLock<InitSlot>, InitSlot); 2] = [
        (t.bytearray_type, &BYTEARRAY_INIT, bytearray_init),
        (t.list_type, &LIST_INIT, list_init),
    ];
    for (ty, keep, guarded) in inits {
        wrap_slot!(ty.slots.init, keep, guarded);
    }
}

#[cfg(test)]
mod tests {
    use super::spec_numbers;

    #[test]
    fn format_specs_give_their_width_and_precision() {
        assert_eq!(spec_numbers(""), (None, None));
        assert_eq!(spec_numbers(">10"), (Some(10), None));
        assert_eq!(spec_numbers("*^+#012,.3f"), (Some(12), Some(3)));
        assert_eq!(spec_numbers("08.2e"), (Some(8), Some(2)));
        assert_eq!(spec_numbers(".7"), (None, Some(7)));
        assert_eq!(spec_numbers("<"), (None, None));
        assert_eq!(spec_numbers("<<5"), (Some(5), None));
        assert_eq!(spec_numbers("x"), (None, None));
        assert_eq!(spec_numbers("4294967301d"), (Some(4294967301), None));
        assert_eq!(spec_numbers(&"9".repeat(60)), (Some(u128::MAX), None));
    }
}
