//! `torch`-like tensors in host memory: strided views over shared storage.
//!
//! Element values pass through `Scalar` (f64 for floats, i64 for integers,
//! bool), which is exact for every dtype we hold. Arithmetic follows torch's
//! type promotion for the cases the tutorials use; printing follows torch's
//! format (precision 4, scientific notation when the range is wide,
//! summarised with `...` past 1000 elements).

use half::{bf16, f16};

use std::rc::Rc;
use tilebook_cuda::Gpu;
use tilebook_tir::fp8::{decode_fp8, encode_fp8};
use tilebook_tir::DType;

/// What reading a tensor lost in a GPU fault says.
pub const LOST: &str = "this tensor's data lived only on the GPU and were lost when the GPU context was rebuilt after a fault";

/// What a failed read-back of a tensor from the GPU says first.
pub const READ_BACK_FAILED: &str = "reading a tensor back from the GPU failed";

/// The alignment of tensor memory: 16 bytes, what kernels specialize on
/// (Triton's "divisible by 16"). It is also the allocator's own alignment,
/// so a zeroed allocation is `calloc`, whose large blocks are fresh pages
/// zeroed lazily by the OS; a larger alignment would make the allocator
/// write every byte (a 16 GB `torch.zeros` took 20 s and its memory at once).
const ALIGN: usize = 16;

mod storage;
pub use storage::Storage;

pub mod live;
mod sizes;
pub use sizes::{checked_bytes, checked_numel, ensure_host_room};

/// One element's value.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    F(f64),
    I(i64),
    B(bool),
}

impl Scalar {
    pub fn f(self) -> f64 {
        match self {
            Scalar::F(f) => f,
            Scalar::I(i) => i as f64,
            Scalar::B(b) => b as i64 as f64,
        }
    }
    pub fn i(self) -> i64 {
        match self {
            Scalar::F(f) => f as i64,
            Scalar::I(i) => i,
            Scalar::B(b) => b as i64,
        }
    }
    pub fn truth(self) -> bool {
        match self {
            Scalar::F(f) => f != 0.0,
            Scalar::I(i) => i != 0,
            Scalar::B(b) => b,
        }
    }
}

/// Where a tensor claims to live. With no GPU, `cuda` tensors are host memory.
#[derive(Clone, Debug, PartialEq)]
pub enum Device {
    Cpu,
    Cuda(u32),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

#[derive(Clone)]
pub struct Tensor {
    pub storage: Rc<Storage>,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Strides in elements.
    pub strides: Vec<isize>,
    /// Offset of element 0 in elements.
    pub offset: usize,
    pub device: Device,
}

pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut s = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1].max(1) as isize;
    }
    s
}

/// torch's name for a dtype.
pub fn torch_name(d: DType) -> &'static str {
    match d {
        DType::I1 => "torch.bool",
        DType::I8 => "torch.int8",
        DType::I16 => "torch.int16",
        DType::I32 => "torch.int32",
        DType::I64 => "torch.int64",
        DType::U8 => "torch.uint8",
        DType::U16 => "torch.uint16",
        DType::U32 => "torch.uint32",
        DType::U64 => "torch.uint64",
        DType::F16 => "torch.float16",
        DType::BF16 => "torch.bfloat16",
        DType::F32 => "torch.float32",
        DType::F64 => "torch.float64",
        DType::F8E5 => "torch.float8_e5m2",
        DType::F8E4NV => "torch.float8_e4m3fn",
    }
}

/// Read one element at a byte address.
///
/// # Safety
/// `p` must point to a valid element of dtype `d`.
pub unsafe fn read(p: *const u8, d: DType) -> Scalar {
    match d {
        DType::I1 => Scalar::B(*p != 0),
        DType::I8 => Scalar::I(*(p as *const i8) as i64),
        DType::U8 => Scalar::I(*p as i64),
        DType::I16 => Scalar::I((p as *const i16).read_unaligned() as i64),
        DType::U16 => Scalar::I((p as *const u16).read_unaligned() as i64),
        DType::I32 => Scalar::I((p as *const i32).read_unaligned() as i64),
        DType::U32 => Scalar::I((p as *const u32).read_unaligned() as i64),
        DType::I64 | DType::U64 => Scalar::I((p as *const i64).read_unaligned()),
        DType::F16 => Scalar::F(f16::from_bits((p as *const u16).read_unaligned()).to_f64()),
        DType::BF16 => Scalar::F(bf16::from_bits((p as *const u16).read_unaligned()).to_f64()),
        DType::F32 => Scalar::F((p as *const f32).read_unaligned() as f64),
        DType::F64 => Scalar::F((p as *const f64).read_unaligned()),
        DType::F8E5 | DType::F8E4NV => Scalar::F(decode_fp8(*p, d)),
    }
}

/// Write one element (converting like torch's `.to`: fp16 and bf16 through
/// fp32, as torch's `Half`/`BFloat16` are built from a float; `half`'s own
/// `from_f64` drops the low 32 bits of the source before rounding, so a value
/// just above a tie rounded down).
///
/// # Safety
/// `p` must point to writable memory for one element of dtype `d`.
pub unsafe fn write(p: *mut u8, d: DType, v: Scalar) {
    match d {
        DType::I1 => *p = v.truth() as u8,
        DType::I8 | DType::U8 => *p = v.i() as u8,
        DType::I16 | DType::U16 => (p as *mut u16).write_unaligned(v.i() as u16),
        DType::I32 | DType::U32 => (p as *mut u32).write_unaligned(v.i() as u32),
        DType::I64 | DType::U64 => (p as *mut i64).write_unaligned(v.i()),
        DType::F16 => (p as *mut u16).write_unaligned(f16::from_f32(v.f() as f32).to_bits()),
        DType::BF16 => (p as *mut u16).write_unaligned(bf16::from_f32(v.f() as f32).to_bits()),
        DType::F32 => (p as *mut f32).write_unaligned(v.f() as f32),
        DType::F64 => (p as *mut f64).write_unaligned(v.f()),
        DType::F8E5 | DType::F8E4NV => *p = encode_fp8(v.f(), d, false),
    }
}

/// The value `v` converted to dtype `d` (as storing and reloading would).
pub fn convert(v: Scalar, d: DType) -> Scalar {
    let mut buf = [0u8; 8];
    // SAFETY: the buffer holds any element.
    unsafe {
        write(buf.as_mut_ptr(), d, v);
        read(buf.as_ptr(), d)
    }
}

impl Tensor {
    /// A zeroed host tensor, or a message when its size overflows
    /// (`RuntimeError`) or the memory is not there (`MemoryError`).
    pub fn try_empty(
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor, (&'static str, String)> {
        let bytes = checked_bytes(shape, dtype).map_err(|m| ("RuntimeError", m))?;
        Ok(Tensor {
            storage: Storage::try_new(bytes).map_err(|m| ("MemoryError", m))?,
            dtype,
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
            device,
        })
    }

    pub fn empty(shape: &[usize], dtype: DType, device: Device) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor {
            storage: Storage::new(n * dtype.size_bytes()),
            dtype,
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
            device,
        }
    }

    /// A contiguous tensor whose storage lives on `gpu` first; zeroed, or
    /// with unspecified contents (`torch.empty`).
    pub fn on_gpu(
        shape: &[usize],
        dtype: DType,
        device: Device,
        gpu: &Rc<Gpu>,
        zero: bool,
    ) -> Result<Tensor, String> {
        let n: usize = shape.iter().product();
        Ok(Tensor {
            storage: Storage::on_device(gpu, n * dtype.size_bytes(), zero)?,
            dtype,
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
            device,
        })
    }

    pub fn from_scalars(
        shape: &[usize],
        dtype: DType,
        device: Device,
        vals: impl IntoIterator<Item = Scalar>,
    ) -> Tensor {
        let t = Tensor::empty(shape, dtype, device);
        let es = dtype.size_bytes();
        for (i, v) in vals.into_iter().enumerate().take(t.numel()) {
            // SAFETY: i < numel and the storage is contiguous.
            unsafe { write(t.storage.ptr().add(i * es), dtype, v) };
        }
        t
    }

    /// Write element `i` (row-major) of a contiguous tensor; out of range does nothing.
    pub fn set_flat(&self, i: usize, v: Scalar) {
        if i < self.numel() && self.is_contiguous() {
            let es = self.dtype.size_bytes();
            // SAFETY: offset + i is inside the contiguous storage.
            unsafe {
                write(
                    self.storage.ptr().add((self.offset + i) * es),
                    self.dtype,
                    v,
                )
            };
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_contiguous(&self) -> bool {
        let c = contiguous_strides(&self.shape);
        self.shape
            .iter()
            .zip(self.strides.iter().zip(&c))
            .all(|(&n, (s, c))| n <= 1 || s == c)
    }

    /// Address of the first element.
    pub fn data_ptr(&self) -> u64 {
        self.storage.ptr() as u64 + (self.offset * self.dtype.size_bytes()) as u64
    }

    /// Byte range of the whole storage (for bounds checks).
    pub fn storage_bounds(&self) -> [u64; 2] {
        let lo = self.storage.ptr() as u64;
        [lo, lo + self.storage.bytes() as u64]
    }

    /// Element offsets (in elements) of every logical index, row-major.
    pub fn offsets(&self) -> Vec<usize> {
        let n = self.numel();
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        if self.is_contiguous() {
            out.extend((0..n).map(|i| self.offset + i));
            return out;
        }
        let r = self.shape.len();
        let mut idx = vec![0usize; r];
        let mut off = self.offset as isize;
        for _ in 0..n {
            out.push(off as usize);
            for d in (0..r).rev() {
                idx[d] += 1;
                off += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                off -= self.strides[d] * self.shape[d] as isize;
                idx[d] = 0;
            }
        }
        out
    }

    pub fn get_at(&self, off: usize) -> Scalar {
        // SAFETY: offsets come from `offsets()` or checked indexing inside the storage.
        unsafe {
            read(
                self.storage.ptr().add(off * self.dtype.size_bytes()),
                self.dtype,
            )
        }
    }

    pub fn set_at(&self, off: usize, v: Scalar) {
        // SAFETY: as in `get_at`.
        unsafe {
            write(
                self.storage.ptr().add(off * self.dtype.size_bytes()),
                self.dtype,
                v,
            )
        }
    }

    pub fn values(&self) -> Vec<Scalar> {
        self.offsets().into_iter().map(|o| self.get_at(o)).collect()
    }

    /// `f` of the elements as one slice, for a contiguous fp32 tensor
    /// (`None` otherwise): the fast path of host loops over big tensors.
    pub fn with_f32<T>(&self, f: impl FnOnce(&[f32]) -> T) -> Option<T> {
        if self.dtype != DType::F32 || !self.is_contiguous() {
            return None;
        }
        // SAFETY: contiguous f32 elements inside the storage, which lives
        // (and is not written through this tensor) while `f` runs.
        let s = unsafe {
            std::slice::from_raw_parts(
                (self.storage.ptr() as *const f32).add(self.offset),
                self.numel(),
            )
        };
        Some(f(s))
    }

    /// The elements as fp32, row-major (exact for fp16, bf16, fp8 and
    /// fp32; others rounded as `x as f32` would), with fast paths for
    /// contiguous fp32, fp16 and bf16 tensors.
    pub fn values_f32(&self) -> Vec<f32> {
        if let Some(v) = self.with_f32(|s| s.to_vec()) {
            return v;
        }
        if matches!(self.dtype, DType::F16 | DType::BF16) && self.is_contiguous() {
            // SAFETY: contiguous 2-byte elements inside the storage.
            let s = unsafe {
                std::slice::from_raw_parts(
                    (self.storage.ptr() as *const u16).add(self.offset),
                    self.numel(),
                )
            };
            return if self.dtype == DType::F16 {
                s.iter().map(|&x| f16::from_bits(x).to_f32()).collect()
            } else {
                s.iter().map(|&x| bf16::from_bits(x).to_f32()).collect()
            };
        }
        self.offsets()
            .into_iter()
            .map(|o| self.get_at(o).f() as f32)
            .collect()
    }

    /// A contiguous tensor of dtype `dtype` holding `vals` converted as
    /// `Tensor.to` converts (fast for fp32, fp16 and bf16). Extra values
    /// are ignored; missing ones leave the rest unspecified.
    pub fn from_f32s(shape: &[usize], dtype: DType, device: Device, vals: &[f32]) -> Tensor {
        let t = Tensor::empty(shape, dtype, device);
        let n = t.numel().min(vals.len());
        let p = t.storage.ptr();
        // SAFETY: the storage is contiguous and holds `numel >= n` elements.
        unsafe {
            match dtype {
                DType::F32 => std::ptr::copy_nonoverlapping(vals.as_ptr(), p as *mut f32, n),
                DType::F16 | DType::BF16 => {
                    let out = std::slice::from_raw_parts_mut(p as *mut u16, n);
                    for (o, &v) in out.iter_mut().zip(vals) {
                        *o = if dtype == DType::F16 {
                            f16::from_f32(v).to_bits()
                        } else {
                            bf16::from_f32(v).to_bits()
                        };
                    }
                }
                _ => {
                    let es = dtype.size_bytes();
                    for (i, &v) in vals[..n].iter().enumerate() {
                        write(p.add(i * es), dtype, Scalar::F(v as f64));
                    }
                }
            }
        }
        t
    }

    pub fn values_f64(&self) -> Vec<f64> {
        if let Some(v) = self.with_f32(|s| s.iter().map(|&x| x as f64).collect()) {
            return v;
        }
        self.offsets()
            .into_iter()
            .map(|o| self.get_at(o).f())
            .collect()
    }

    /// A contiguous copy (or the tensor itself when already contiguous).
    pub fn contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        self.to_dtype(self.dtype, true)
    }

    /// Convert (always copying when `copy`).
    pub fn to_dtype(&self, d: DType, copy: bool) -> Tensor {
        if d == self.dtype && !copy {
            return self.clone();
        }
        let out = Tensor::empty(&self.shape, d, self.device.clone());
        let src_es = self.dtype.size_bytes();
        let dst_es = d.size_bytes();
        for (i, off) in self.offsets().into_iter().enumerate() {
            // SAFETY: both addresses are elements of their storages.
            unsafe {
                if d == self.dtype {
                    std::ptr::copy_nonoverlapping(
                        self.storage.ptr().add(off * src_es),
                        out.storage.ptr().add(i * dst_es),
                        src_es,
                    );
                } else {
                    write(
                        out.storage.ptr().add(i * dst_es),
                        d,
                        read(self.storage.ptr().add(off * src_es), self.dtype),
                    );
                }
            }
        }
        out
    }

    /// `x.to(dtype)` as torch does it (`memory_format=torch.preserve_format`):
    /// a tensor whose elements tile its storage without gaps or overlaps in
    /// some order of its dimensions (`b.T` of a contiguous `b`) keeps that
    /// order, so its strides stay those of `self`; any other is made
    /// contiguous.
    pub fn to_dtype_preserving(&self, d: DType, copy: bool) -> Tensor {
        if d == self.dtype && !copy {
            return self.clone();
        }
        let Some(strides) = self.dense_strides().filter(|_| !self.is_contiguous()) else {
            return self.to_dtype(d, copy);
        };
        let mut out = Tensor::empty(&[self.numel()], d, self.device.clone());
        out.shape = self.shape.clone();
        out.strides = strides;
        let (src_es, dst_es) = (self.dtype.size_bytes(), d.size_bytes());
        for (off, dst) in self.offsets().into_iter().zip(out.offsets()) {
            // SAFETY: both addresses are elements of their storages (`out`'s
            // strides are a permutation of contiguous strides of its shape).
            unsafe {
                write(
                    out.storage.ptr().add(dst * dst_es),
                    d,
                    read(self.storage.ptr().add(off * src_es), self.dtype),
                );
            }
        }
        out
    }

    /// The strides of `self` with its offset taken away, when its elements
    /// fill `numel` consecutive slots exactly once (non-overlapping and
    /// dense, positive strides): the layout `to_dtype_preserving` keeps.
    pub fn dense_strides(&self) -> Option<Vec<isize>> {
        let mut dims: Vec<usize> = (0..self.shape.len())
            .filter(|&i| self.shape[i] != 1)
            .collect();
        dims.sort_by_key(|&i| self.strides[i]);
        let mut expect = 1isize;
        for &i in &dims {
            if self.strides[i] != expect {
                return None;
            }
            expect = expect.checked_mul(self.shape[i] as isize)?;
        }
        let mut strides = self.strides.clone();
        // Size-1 dimensions: any stride is valid; give them torch's.
        let contiguous = contiguous_strides(&self.shape);
        for (i, s) in strides.iter_mut().enumerate() {
            if self.shape[i] == 1 {
                *s = contiguous[i];
            }
        }
        Some(strides)
    }

    pub fn with_device(&self, device: Device) -> Tensor {
        let mut t = self.clone();
        t.device = device;
        t
    }

    /// A view with a new shape (must be contiguous).
    pub fn view(&self, shape: &[usize]) -> Option<Tensor> {
        if checked_numel(shape).ok()? != self.numel() || !self.is_contiguous() {
            return None;
        }
        let mut t = self.clone();
        t.shape = shape.to_vec();
        t.strides = contiguous_strides(shape);
        Some(t)
    }

    /// A view with dimension `a` moved to the end, the others keeping their
    /// order (`movedim(a, -1)`).
    pub fn move_to_last(&self, a: usize) -> Tensor {
        let mut t = self.clone();
        let (n, st) = (t.shape.remove(a), t.strides.remove(a));
        t.shape.push(n);
        t.strides.push(st);
        t
    }

    pub fn transpose(&self, a: usize, b: usize) -> Tensor {
        let mut t = self.clone();
        t.shape.swap(a, b);
        t.strides.swap(a, b);
        t
    }

    /// Index along dim 0 (a view of rank - 1).
    pub fn select(&self, dim: usize, i: usize) -> Tensor {
        let mut t = self.clone();
        t.offset = (t.offset as isize + t.strides[dim] * i as isize) as usize;
        t.shape.remove(dim);
        t.strides.remove(dim);
        t
    }

    /// Slice `start..stop` by `step` along `dim` (a view).
    pub fn slice(&self, dim: usize, start: usize, stop: usize, step: usize) -> Tensor {
        let mut t = self.clone();
        let len = if stop > start {
            (stop - start).div_ceil(step)
        } else {
            0
        };
        t.offset = (t.offset as isize + t.strides[dim] * start as isize) as usize;
        t.shape[dim] = len;
        t.strides[dim] *= step as isize;
        t
    }

    pub fn unsqueeze(&self, dim: usize) -> Tensor {
        let mut t = self.clone();
        let stride = if dim < t.shape.len() {
            t.strides[dim] * t.shape[dim] as isize
        } else {
            1
        };
        t.shape.insert(dim, 1);
        t.strides.insert(dim, stride);
        t
    }

    /// Broadcast view to `shape` (stride 0 on stretched dims).
    pub fn expand(&self, shape: &[usize]) -> Option<Tensor> {
        checked_numel(shape).ok()?;
        let r = shape.len();
        if self.shape.len() > r {
            return None;
        }
        let pad = r - self.shape.len();
        let mut strides = vec![0isize; r];
        for d in 0..r {
            if d < pad {
                continue;
            }
            let (n, s) = (self.shape[d - pad], self.strides[d - pad]);
            if n == shape[d] {
                strides[d] = s;
            } else if n == 1 {
                strides[d] = 0;
            } else {
                return None;
            }
        }
        let mut t = self.clone();
        t.shape = shape.to_vec();
        t.strides = strides;
        Some(t)
    }
}

/// torch's promotion for two tensor dtypes.
pub fn promote(a: DType, b: DType) -> DType {
    if a == b {
        return a;
    }
    let rank = |d: DType| match d {
        DType::I1 => 0,
        DType::U8 => 1,
        DType::I8 => 2,
        DType::I16 | DType::U16 => 3,
        DType::I32 | DType::U32 => 4,
        DType::I64 | DType::U64 => 5,
        DType::F8E5 | DType::F8E4NV => 6,
        DType::F16 | DType::BF16 => 7,
        DType::F32 => 8,
        DType::F64 => 9,
    };
    if (a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16) {
        return DType::F32;
    }
    if a == DType::U8 && b == DType::I8 || a == DType::I8 && b == DType::U8 {
        return DType::I16;
    }
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

pub use tilebook_tir::types::broadcast_shapes as broadcast_shape;

// ---------------------------------------------------------------- printing

fn fmt_float_plain(x: f64, decimals: usize, int_mode: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if int_mode {
        return format!("{x:.0}.");
    }
    format!("{x:.decimals$}")
}

fn fmt_float_sci(x: f64) -> String {
    if !x.is_finite() {
        return fmt_float_plain(x, 4, false);
    }
    let s = format!("{x:.4e}");
    // Rust writes `1.2346e5`; torch writes `1.2346e+05`.
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

/// Format every element the way torch would for this tensor.
fn element_strings(vals: &[Scalar], dtype: DType) -> Vec<String> {
    if dtype == DType::I1 {
        return vals
            .iter()
            .map(|v| {
                if v.truth() {
                    "True".into()
                } else {
                    "False".into()
                }
            })
            .collect();
    }
    if dtype.is_int() {
        return vals.iter().map(|v| v.i().to_string()).collect();
    }
    let finite: Vec<f64> = vals
        .iter()
        .map(|v| v.f())
        .filter(|x| x.is_finite())
        .collect();
    let int_mode = finite.iter().all(|x| x.fract() == 0.0);
    let nonzero: Vec<f64> = finite
        .iter()
        .map(|x| x.abs())
        .filter(|&x| x > 0.0)
        .collect();
    let (mut sci, max) = (false, nonzero.iter().cloned().fold(0.0, f64::max));
    if let Some(min) = nonzero.iter().cloned().reduce(f64::min) {
        if int_mode {
            sci = max > 1e8;
        } else {
            sci = max / min > 1000.0 || max > 1e8 || min < 1e-4;
        }
    }
    vals.iter()
        .map(|v| {
            if sci {
                fmt_float_sci(v.f())
            } else {
                fmt_float_plain(v.f(), 4, int_mode)
            }
        })
        .collect()
}

const SUMMARY_THRESHOLD: usize = 1000;
const EDGE: usize = 3;

impl Tensor {
    /// The indices shown along one dimension (all, or the first and last three).
    fn shown(&self, d: usize, summarize: bool) -> Vec<Option<usize>> {
        let n = self.shape[d];
        if summarize && n > 2 * EDGE {
            let mut v: Vec<Option<usize>> = (0..EDGE).map(Some).collect();
            v.push(None);
            v.extend((n - EDGE..n).map(Some));
            v
        } else {
            (0..n).map(Some).collect()
        }
    }

    fn collect_shown(&self, d: usize, off: isize, summarize: bool, out: &mut Vec<Scalar>) {
        if d == self.shape.len() {
            out.push(self.get_at(off as usize));
            return;
        }
        for i in self.shown(d, summarize).into_iter().flatten() {
            self.collect_shown(d + 1, off + self.strides[d] * i as isize, summarize, out);
        }
    }

    /// torch's `repr` of the tensor.
    pub fn repr(&self) -> String {
        let summarize = self.numel() > SUMMARY_THRESHOLD;
        let mut shown = vec![];
        if self.numel() > 0 {
            self.collect_shown(0, self.offset as isize, summarize, &mut shown);
        }
        let strs = element_strings(&shown, self.dtype);
        // torch pads to the widest nonzero finite float (every integer),
        // so an `inf`, `nan` or `-0.` wider than those is not padded to.
        let counts = |v: &Scalar| !self.dtype.is_float() || (v.f().is_finite() && v.f() != 0.0);
        let width = strs
            .iter()
            .zip(&shown)
            .filter(|(_, v)| counts(v))
            .map(|(s, _)| s.len())
            .max()
            .unwrap_or(1);
        let mut body = String::new();
        let mut it = strs.into_iter();
        if self.shape.is_empty() {
            body = it.next().unwrap_or_default();
        } else if self.numel() == 0 {
            body = "[]".into();
        } else {
            self.fmt_dim(0, summarize, width, &mut it, &mut body, 8);
        }
        let mut suffix = vec![];
        if let Device::Cuda(i) = self.device {
            suffix.push(format!("device='cuda:{i}'"));
        }
        // An empty tensor has no elements to tell int64 or bool by: torch
        // names every dtype but float32 there.
        let default = if self.numel() == 0 {
            self.dtype == DType::F32
        } else {
            matches!(self.dtype, DType::F32 | DType::I64 | DType::I1)
        };
        if self.numel() == 0 && self.shape.len() > 1 {
            suffix.push(format!(
                "size=({})",
                self.shape
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !default {
            suffix.push(format!("dtype={}", torch_name(self.dtype)));
        }
        if suffix.is_empty() {
            format!("tensor({body})")
        } else {
            format!("tensor({body}, {})", suffix.join(", "))
        }
    }

    fn fmt_dim(
        &self,
        d: usize,
        summarize: bool,
        width: usize,
        it: &mut impl Iterator<Item = String>,
        out: &mut String,
        indent: usize,
    ) {
        out.push('[');
        let last = d + 1 == self.shape.len();
        let shown = self.shown(d, summarize);
        let n = shown.len();
        // Rows of a 1-D line wrap at 80 columns like torch does (its
        // indent is one less than ours: `tensor(` and one per dimension).
        let per_line = if last {
            ((80 - (indent - 1)) / (width + 2)).max(1)
        } else {
            usize::MAX
        };
        let mut on_line = 0;
        for (k, i) in shown.into_iter().enumerate() {
            match i {
                // torch pads the ellipsis with one extra space before it.
                None => out.push_str(if last { " ..." } else { "..." }),
                Some(_) if last => {
                    let s = it.next().unwrap_or_default();
                    out.push_str(&format!("{s:>width$}"));
                }
                Some(_) => self.fmt_dim(d + 1, summarize, width, it, out, indent + 1),
            }
            if k + 1 < n {
                if last {
                    on_line += 1;
                    if on_line == per_line {
                        out.push_str(",\n");
                        out.push_str(&" ".repeat(indent));
                        on_line = 0;
                    } else {
                        out.push_str(", ");
                    }
                } else {
                    let blank = self.shape.len() - d - 1;
                    out.push(',');
                    out.push_str(&"\n".repeat(blank));
                    out.push_str(&" ".repeat(indent - 1 + d + 1));
                }
            }
        }
        out.push(']');
    }

    /// `str()` of a 0-d tensor in an f-string: the plain number.
    pub fn item_string(&self) -> String {
        let v = self.get_at(self.offset);
        match self.dtype {
            DType::I1 => (if v.truth() { "True" } else { "False" }).into(),
            d if d.is_int() => v.i().to_string(),
            _ => tilebook_frontend::kernel::py_float(v.f()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], d: DType, v: &[f64]) -> Tensor {
        Tensor::from_scalars(shape, d, Device::Cpu, v.iter().map(|&x| Scalar::F(x)))
    }

    #[test]
    fn prints_like_torch() {
        assert_eq!(
            t(&[3], DType::F32, &[1.0, 2.0, 3.0]).repr(),
            "tensor([1., 2., 3.])"
        );
        assert_eq!(
            t(&[2], DType::F32, &[0.5, 0.25]).repr(),
            "tensor([0.5000, 0.2500])"
        );
        assert_eq!(
            t(&[2, 2], DType::F16, &[1.5, 2.0, 3.0, 4.0]).with_device(Device::Cuda(0)).repr(),
            "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]], device='cuda:0', dtype=torch.float16)"
        );
        assert_eq!(
            t(&[2], DType::F32, &[1e-6, 1.0]).repr(),
            "tensor([1.0000e-06, 1.0000e+00])"
        );
        let big = t(&[2000], DType::F32, &vec![1.0; 2000]);
        assert_eq!(big.repr(), "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
    }

    #[test]
    fn views_and_strides() {
        let x = t(&[2, 3], DType::F32, &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let tt = x.transpose(0, 1);
        assert!(!tt.is_contiguous());
        assert_eq!(tt.values_f64(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(x.slice(1, 1, 3, 1).values_f64(), vec![1.0, 2.0, 4.0, 5.0]);
        assert_eq!(x.select(0, 1).values_f64(), vec![3.0, 4.0, 5.0]);
    }
}
