//! Checked sizes: element and byte counts of shapes, and what the host has
//! room for (a clear error instead of an overflow or an aborted allocation).

use crate::torch_name;
use tilebook_tir::DType;

/// The host memory available to new allocations (Linux's `MemAvailable`).
fn available_host_bytes() -> Option<usize> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// What a failed host allocation says: how much was asked, how much is free.
pub(crate) fn out_of_host_memory(bytes: usize) -> String {
    let gib = |b: f64| b / (1u64 << 30) as f64;
    match available_host_bytes() {
        Some(free) => format!(
            "could not allocate {bytes} bytes ({:.2} GiB) on the host; {:.2} GiB are available",
            gib(bytes as f64),
            gib(free as f64)
        ),
        None => format!(
            "could not allocate {bytes} bytes ({:.2} GiB) on the host",
            gib(bytes as f64)
        ),
    }
}

/// Whether the host has room for a result of `numel` elements of
/// `elem_bytes` each (the evaluator's intermediates take up to 16 bytes an
/// element): a `MemoryError` message when clearly not. Small results pass
/// without asking the system.
pub fn ensure_host_room(numel: usize, elem_bytes: usize) -> Result<(), String> {
    let Some(bytes) = numel.checked_mul(elem_bytes) else {
        return Err(out_of_host_memory(usize::MAX));
    };
    if bytes < 64 << 20 {
        return Ok(());
    }
    match available_host_bytes() {
        Some(free) if bytes > free => Err(out_of_host_memory(bytes)),
        _ => Ok(()),
    }
}

/// The element count of `shape`, or a message naming the shape when it
/// does not fit in memory's address space.
pub fn checked_numel(shape: &[usize]) -> Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| {
            format!(
                "a tensor of shape {} has too many elements",
                shape_text(shape)
            )
        })
}

/// The byte size of a contiguous `shape` of `dtype`, checked like `checked_numel`.
pub fn checked_bytes(shape: &[usize], dtype: DType) -> Result<usize, String> {
    checked_numel(shape)?
        .checked_mul(dtype.size_bytes())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            format!(
                "a tensor of shape {} and dtype {} needs more bytes than memory can address",
                shape_text(shape),
                torch_name(dtype)
            )
        })
}

fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("({})", dims.join(", "))
}
