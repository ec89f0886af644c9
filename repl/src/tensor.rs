//! `tilebook::Tensor`: a session tensor seen from Rust.

use crate::Error;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use tilebook_session::tensor::{checked_bytes, Device, Tensor as Inner};
use tilebook_tir::DType;

/// An element type a tensor can hold, with its tile-language dtype. The
/// types are plain values of the dtype's size, so data moves as bytes.
///
/// # Safety
/// `DTYPE.size_bytes()` must equal `size_of::<Self>()`, and every bit
/// pattern of that size read from a tensor of `DTYPE` must be a valid `Self`.
pub unsafe trait Element: Copy + 'static {
    const DTYPE: DType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {
        // SAFETY: each pair has the same size, and every bit pattern of the
        // dtype is a value of the type (bool: tensors of `I1` hold 0 or 1).
        $(unsafe impl Element for $t { const DTYPE: DType = DType::$d; })*
    };
}

elements! {
    f32 => F32, f64 => F64, half::f16 => F16, half::bf16 => BF16,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
}

/// A tensor: strided view over shared memory, on the host or (in a GPU
/// session) with a device copy that is synced when the host reads it.
/// Clones share their memory, as views in torch do; a kernel's writes
/// through one are seen through all.
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Rc<Inner>,
}

impl Tensor {
    pub(crate) fn wrap(inner: Rc<Inner>) -> Tensor {
        Tensor { inner }
    }

    /// A tensor of `shape` holding `data` (row-major), on the CPU.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor, Error> {
        Tensor::from_shaped(&data, shape)
    }

    /// A one-dimensional tensor holding a copy of `data`, on the CPU.
    pub fn from_slice<T: Element>(data: &[T]) -> Tensor {
        Tensor::from_shaped(data, &[data.len()]).expect("a slice's length is a valid shape")
    }

    fn from_shaped<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor, Error> {
        let t = Tensor::zeros::<T>(shape)?;
        if t.inner.numel() != data.len() {
            return Err(Error::new(
                "ValueError",
                format!(
                    "shape {shape:?} holds {} elements, but {} values were given",
                    t.inner.numel(),
                    data.len()
                ),
            ));
        }
        let bytes = std::mem::size_of_val(data);
        // SAFETY: the new contiguous storage holds `numel * size` bytes,
        // which is `bytes` (Element's contract), and does not overlap `data`.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr() as *const u8, t.inner.storage.ptr(), bytes)
        };
        Ok(t)
    }

    /// A zeroed tensor of `shape` and `T`'s dtype, on the CPU.
    pub fn zeros<T: Element>(shape: &[usize]) -> Result<Tensor, Error> {
        Tensor::zeros_of(T::DTYPE, shape)
    }

    /// A zeroed tensor of `shape` and `dtype`, on the CPU.
    pub fn zeros_of(dtype: DType, shape: &[usize]) -> Result<Tensor, Error> {
        checked_bytes(shape, dtype).map_err(|m| Error::new("RuntimeError", m))?;
        let t = Inner::try_empty(shape, dtype, Device::Cpu).map_err(|(k, m)| Error::new(k, m))?;
        Ok(Tensor::wrap(Rc::new(t)))
    }

    /// The elements in row-major order (read back from the GPU first when a
    /// kernel there wrote them). `T` must be the tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, Error> {
        if T::DTYPE != self.inner.dtype {
            return Err(Error::new(
                "TypeError",
                format!(
                    "the tensor holds {}, not {} (`{}`)",
                    self.dtype_name(),
                    tilebook_session::tensor::torch_name(T::DTYPE),
                    std::any::type_name::<T>()
                ),
            ));
        }
        catch_unwind(AssertUnwindSafe(|| {
            let c = self.inner.contiguous();
            let n = c.numel();
            let mut out: Vec<T> = Vec::with_capacity(n);
            // SAFETY: `c` is contiguous with `n` elements of `T`'s size from
            // its offset; `out` has room for `n`, each bit pattern is a `T`.
            unsafe {
                let src = c.storage.ptr().add(c.offset * std::mem::size_of::<T>());
                std::ptr::copy_nonoverlapping(
                    src,
                    out.as_mut_ptr() as *mut u8,
                    n * std::mem::size_of::<T>(),
                );
                out.set_len(n);
            }
            out
        }))
        .map_err(Error::from_panic)
    }

    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }

    pub fn numel(&self) -> usize {
        self.inner.numel()
    }

    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// torch's name of the dtype (`torch.float32`).
    pub fn dtype_name(&self) -> &'static str {
        tilebook_session::tensor::torch_name(self.inner.dtype)
    }

    /// `cpu` or `cuda:0`.
    pub fn device(&self) -> String {
        self.inner.device.to_string()
    }

    /// A copy on `device` (`cpu`, `cuda`, `cuda:0`), as torch's `.to`. On
    /// the GPU the data moves when a kernel first uses it; in a session on
    /// the CPU backend a `cuda` tensor is host memory, as in a notebook.
    pub fn to_device(&self, device: &str) -> Result<Tensor, Error> {
        let d = match device.trim() {
            "cpu" => Device::Cpu,
            "cuda" | "cuda:0" => Device::Cuda(0),
            other => {
                return Err(Error::new(
                    "RuntimeError",
                    format!("unknown device '{other}': use 'cpu', 'cuda' or 'cuda:0'"),
                ))
            }
        };
        catch_unwind(AssertUnwindSafe(|| {
            let copy = self.inner.to_dtype(self.inner.dtype, true);
            Tensor::wrap(Rc::new(copy.with_device(d)))
        }))
        .map_err(Error::from_panic)
    }

    /// torch's printed form (`tensor([1., 2.])`).
    pub fn repr(&self) -> Result<String, Error> {
        catch_unwind(AssertUnwindSafe(|| self.inner.repr())).map_err(Error::from_panic)
    }
}

impl std::fmt::Display for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.repr() {
            Ok(s) => f.write_str(&s),
            Err(e) => write!(f, "<tensor that cannot be read: {}>", e.message),
        }
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
