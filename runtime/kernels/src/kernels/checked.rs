//! Checked GPU launches (`TILEBOOK_CHECK_BOUNDS=1`, `%config check_bounds`):
//! the kernel was compiled to check each access against its tensor
//! (`tilebook_nvptx::record`); here the launch gets the record's address and
//! every argument's byte range, and afterwards the record is read back. An
//! access outside was not performed, so memory is intact; the first one
//! becomes an `IndexError` naming the kernel line, the program and the
//! element, as on the CPU backend. Reading the record waits for the launch:
//! checked mode trades the asynchronous launch for the answer at its line.

use super::{kernel_line_exc, oob_message, Access, KernelArg};
use crate::gpu_fault::GpuFault;
use crate::value::{Exc, R};
use crate::Host;
use std::rc::Rc;
use tilebook_cuda::{Arg, Gpu};
use tilebook_frontend::kernel::JitFunction;
use tilebook_nvptx::record;

/// Allocations listed for addresses of unknown origin, at most.
const MAX_LISTED: usize = 1 << 16;

fn rt(e: String) -> Exc {
    Exc::new("RuntimeError", e)
}

/// The arguments a checked kernel takes after its own: the record's address
/// and each argument's `[lo, hi)` on the device. Kernels that follow
/// addresses loaded from memory also get every live device allocation.
pub(super) fn extra_args(
    s: &mut dyn Host,
    g: &Rc<Gpu>,
    gk: &tilebook_nvptx::GpuKernel,
    args: &[KernelArg],
) -> R<Vec<Arg>> {
    // The arguments first: a tensor's first launch gives it its device
    // copy, which the list of allocations must include.
    let mut ranges = vec![];
    for a in args {
        let (lo, hi) = match a {
            KernelArg::Tensor(t) => {
                // The launch made every tensor's device copy (on the GPU
                // that owns it, which need not be `g`).
                let lo = t.storage.current_device_address().ok_or_else(|| {
                    Exc::new("InternalError", "a tensor argument has no device copy")
                })?;
                (lo, lo + t.storage.bytes() as u64)
            }
            _ => (0, 0),
        };
        ranges.extend([Arg::I64(lo as i64), Arg::I64(hi as i64)]);
    }
    let listed = if gk.ptx.contains("tb_in_any") {
        let mut a = crate::tensor::live::device_allocations();
        a.truncate(MAX_LISTED);
        a
    } else {
        vec![]
    };
    let words = record::words(listed.len());
    let fresh = !matches!(&s.check_record,
        Some((gen, dev, b)) if *gen == g.generation && *dev == g.ordinal && b.bytes >= words * 8);
    if fresh {
        s.check_record = Some((g.generation, g.ordinal, g.alloc(words * 8).map_err(rt)?));
    }
    let Some((_, _, buf)) = s.check_record.as_mut() else {
        return Err(Exc::new("InternalError", "no check record"));
    };
    if !listed.is_empty() {
        let mut table = vec![listed.len() as u64];
        for (lo, hi) in &listed {
            table.extend([*lo, *hi]);
        }
        // The record's first words stay as they are (zero); the table follows.
        let mut all = vec![0u64; record::ALLOCATIONS as usize];
        all.extend(table);
        let bytes: Vec<u8> = all.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut head = vec![0u8; buf.bytes];
        head[..bytes.len()].copy_from_slice(&bytes);
        g.upload(&head, buf).map_err(rt)?;
    }
    let mut out = vec![Arg::I64(g.address(buf) as i64)];
    out.extend(ranges);
    Ok(out)
}

/// After a checked launch: wait for it and raise its first out-of-bounds
/// access, if it made one (clearing the record for the next launch).
pub(super) fn read_record(
    s: &mut dyn Host,
    g: &Rc<Gpu>,
    jit: &JitFunction,
    args: &[KernelArg],
) -> R<()> {
    let Some((_, _, buf)) = s.check_record.as_mut() else {
        return Ok(());
    };
    let mut bytes = vec![0u8; buf.bytes];
    if let Err(e) = g.download(buf, &mut bytes) {
        return Err(s.gpu_failure(rt(e)));
    }
    let word = |i: u64| {
        let i = i as usize * 8;
        u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]))
    };
    if word(record::FLAG) & 0xffff_ffff == 0 {
        return Ok(());
    }
    let loc = word(record::LOC);
    let (line, col) = ((loc >> 32) as u32, loc as u32);
    let what = record::WHAT_NAMES
        .get(word(record::WHAT) as usize)
        .copied()
        .unwrap_or("access");
    let param = word(record::PARAM);
    let pid = [0, 1, 2].map(|i| word(record::PID + i) as u32);
    let access = Access {
        what,
        line,
        pid,
        param: (param != u64::MAX).then_some(param as usize),
        elem_size: word(record::ELEM) as usize,
        addr: word(record::ADDR),
    };
    let divide = word(record::WHAT) >= record::DIVIDE;
    let zero = vec![0u8; record::ALLOCATIONS as usize * 8];
    let mut cleared = bytes;
    cleared[..zero.len()].copy_from_slice(&zero);
    g.upload(&cleared, buf).map_err(rt)?;
    let tensors: Vec<_> = args
        .iter()
        .map(|a| match a {
            KernelArg::Tensor(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    let base = |t: &crate::tensor::Tensor| {
        let b = t.storage.current_device_address()?;
        Some(b + (t.offset * t.dtype.size_bytes()) as u64)
    };
    if divide {
        let element = match access.addr {
            u64::MAX => String::new(),
            i => format!(", element {i}"),
        };
        let message = format!(
            "{what} in kernel `{}` at line {line}: program ({}, {}, {}){element} (checked GPU mode)",
            jit.name, pid[0], pid[1], pid[2]
        );
        return Err(kernel_line_exc(
            jit,
            "ZeroDivisionError",
            message,
            line,
            col,
            "divide",
        ));
    }
    let mut message = oob_message(jit, &access, &tensors, &base);
    message.push_str(" (checked GPU mode: the access was not made)");
    Err(kernel_line_exc(jit, "IndexError", message, line, col, what))
}
