//! `tilebook::Session`: cells of host and tile-language code, run by the
//! session engine, with variables moving between Rust and the namespace.

use crate::{Error, Kernel, Tensor};
use std::cell::RefCell;
use std::rc::Rc;
use tilebook_session::value::Val;
use tilebook_session::{CellResult, Output};

type Callback = Box<dyn FnMut(&Output)>;

struct Shared {
    engine: tilebook_session::Session,
    on_output: Option<Callback>,
}

/// What a session does, reached through a trait object. In an evcxr
/// notebook every cell is a library of its own that may hold its own copy
/// of this crate (with its own statics and thread-locals: the VM's, the
/// session pointer its natives read). Calls through the session's vtable
/// run the code of the copy that made the session, so one session always
/// sees one set of statics, whichever cell calls it.
pub(crate) trait Core {
    fn run_named(&self, code: &str, name: Option<&str>) -> Result<Cell, Error>;
    /// Call a launcher (`kernel[grid]`) as a cell launching it would.
    fn call(&self, f: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> Result<Cell, Error>;
    fn global(&self, name: &str) -> Result<Val, Error>;
    fn set_value(&self, name: &str, value: Option<Val>) -> Result<(), Error>;
    fn device(&self) -> String;
    fn on_output(&self, f: Callback);
    /// A fresh number for a source the session runs (`<kernel source N>`).
    fn next_source_number(&self) -> usize;
}

/// A session: the namespace that persists across cells, the kernels'
/// compile caches and the device. Cheap to clone (clones are the same
/// session). Not `Send`: a session belongs to the thread that made it.
#[derive(Clone)]
pub struct Session {
    core: Rc<dyn Core>,
}

/// What a cell produced, in order: streams, displays, the value of its
/// final expression, the timing footer.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub outputs: Vec<Output>,
}

impl Cell {
    /// Everything as plain text, in order (what a terminal shows).
    pub fn text(&self) -> String {
        CellResult {
            outputs: self.outputs.clone(),
            ok: true,
        }
        .text()
    }
}

impl Session {
    /// A session on the GPU when this build has the GPU backend and the
    /// machine a GPU, else on the CPU backend.
    pub fn new() -> Session {
        let engine = tilebook_session::Session::with_device("auto")
            .unwrap_or_else(|_| tilebook_session::Session::new());
        Session::from_engine(engine)
    }

    /// A session on the CPU backend (the reference every GPU result is
    /// compared with).
    pub fn cpu() -> Session {
        Session::from_engine(tilebook_session::Session::new())
    }

    /// A session on `device`: `cpu`, `cuda` (an error when no GPU can be
    /// used, or in a build without the `gpu` feature) or `auto`.
    pub fn with_device(device: &str) -> Result<Session, Error> {
        tilebook_session::Session::with_device(device)
            .map(Session::from_engine)
            .map_err(|e| Error::new("RuntimeError", e))
    }

    fn from_engine(mut engine: tilebook_session::Session) -> Session {
        // The "runs on the CPU backend" note is for people at a prompt.
        engine.announce = false;
        Session {
            core: Rc::new(RefCell::new(Shared {
                engine,
                on_output: None,
            })),
        }
    }

    /// Deliver every output to `f` as well, as the cell or launch that made
    /// it finishes (a front end's live view).
    pub fn on_output(&self, f: impl FnMut(&Output) + 'static) {
        self.core.on_output(Box::new(f));
    }

    /// The device kernels run on, as `%device` names it (`cpu`, `NVIDIA H100 ...`).
    pub fn device(&self) -> String {
        self.core.device()
    }

    /// Run one cell of Python host code (with `@triton.jit` kernels, magics
    /// and everything a notebook cell may hold). `Err` carries the rendered
    /// error the notebook would show; the outputs before it went to the
    /// `on_output` callback.
    pub fn run(&self, code: &str) -> Result<Cell, Error> {
        self.run_named(code, None)
    }

    pub(crate) fn run_named(&self, code: &str, name: Option<&str>) -> Result<Cell, Error> {
        self.core.run_named(code, name)
    }

    pub(crate) fn call(
        &self,
        f: &Val,
        args: Vec<Val>,
        kwargs: Vec<(String, Val)>,
    ) -> Result<Cell, Error> {
        self.core.call(f, args, kwargs)
    }

    pub(crate) fn next_source_number(&self) -> usize {
        self.core.next_source_number()
    }

    /// The value of global `name`, converted to `T`.
    pub fn get<T: FromValue>(&self, name: &str) -> Result<T, Error> {
        let v = self.global(name)?;
        T::from_value(&v).ok_or_else(|| {
            Error::new(
                "TypeError",
                format!(
                    "`{name}` is a {}, not a {}",
                    v.type_name(),
                    std::any::type_name::<T>()
                ),
            )
        })
    }

    pub(crate) fn global(&self, name: &str) -> Result<Val, Error> {
        self.core.global(name)
    }

    /// Bind global `name` to `value` (a tensor, a number, a string).
    pub fn set(&self, name: &str, value: impl IntoValue) -> Result<(), Error> {
        self.set_value(name, Some(value.into_value()?))
    }

    pub(crate) fn set_value(&self, name: &str, value: Option<Val>) -> Result<(), Error> {
        if !is_identifier(name) {
            return Err(Error::new(
                "ValueError",
                format!("'{name}' is not a Python identifier"),
            ));
        }
        self.core.set_value(name, value)
    }

    /// Compile-ready kernel from tile-language source: one or more
    /// functions, the last `@triton.jit` one of which is the kernel
    /// (`triton` and `tl` are imported for it). Compiled on first launch,
    /// once per specialization, as in a notebook.
    pub fn kernel(&self, source: &str) -> Result<Kernel, Error> {
        Kernel::define(self, source, None)
    }

    /// A kernel from a file of tile-language source, as `kernel`.
    pub fn kernel_file(&self, path: impl AsRef<std::path::Path>) -> Result<Kernel, Error> {
        let path = path.as_ref();
        let source = std::fs::read_to_string(path)
            .map_err(|e| Error::new("FileNotFoundError", format!("{}: {e}", path.display())))?;
        Kernel::define(self, &source, Some(&path.display().to_string()))
    }
}

impl Core for RefCell<Shared> {
    fn run_named(&self, code: &str, name: Option<&str>) -> Result<Cell, Error> {
        let mut shared = busy(self)?;
        let shared = &mut *shared;
        let result = match name {
            Some(n) => shared.engine.run_cell_named(code, n),
            None => shared.engine.run_cell(code),
        };
        shared.deliver(result)
    }

    fn call(&self, f: &Val, args: Vec<Val>, kwargs: Vec<(String, Val)>) -> Result<Cell, Error> {
        let mut shared = busy(self)?;
        let result = shared.engine.call_as_cell(f, args, kwargs);
        shared.deliver(result)
    }

    fn global(&self, name: &str) -> Result<Val, Error> {
        busy(self)?
            .engine
            .get_global(name)
            .ok_or_else(|| Error::new("NameError", format!("name '{name}' is not defined")))
    }

    fn set_value(&self, name: &str, value: Option<Val>) -> Result<(), Error> {
        busy(self)?
            .engine
            .set_host_global(name, value)
            .map_err(|e| Error::new(&e.kind, e.message))
    }

    fn device(&self) -> String {
        self.borrow().engine.device_name()
    }

    fn on_output(&self, f: Callback) {
        self.borrow_mut().on_output = Some(f);
    }

    fn next_source_number(&self) -> usize {
        let mut shared = self.borrow_mut();
        shared.engine.cell_count += 1;
        shared.engine.cell_count
    }
}

impl Shared {
    /// A cell's outputs to the callback, and its error as an `Err`.
    fn deliver(&mut self, result: CellResult) -> Result<Cell, Error> {
        if let Some(f) = self.on_output.as_mut() {
            result.outputs.iter().for_each(f);
        }
        match result.outputs.iter().find_map(Error::from_output) {
            Some(e) if !result.ok => Err(e),
            _ => Ok(Cell {
                outputs: result.outputs,
            }),
        }
    }
}

/// The session's state, or an error when a callback of its own is asking.
fn busy(shared: &RefCell<Shared>) -> Result<std::cell::RefMut<'_, Shared>, Error> {
    shared.try_borrow_mut().map_err(|_| {
        Error::new(
            "RuntimeError",
            "the session is busy running a cell (a callback cannot use it)",
        )
    })
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// A Rust value a session variable can become.
pub trait IntoValue {
    fn into_value(self) -> Result<Val, Error>;
}

/// A Rust value a session variable can be read as.
pub trait FromValue: Sized {
    fn from_value(v: &Val) -> Option<Self>;
}

impl IntoValue for Tensor {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Tensor(self.inner))
    }
}

impl IntoValue for &Tensor {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Tensor(self.inner.clone()))
    }
}

impl IntoValue for &mut Tensor {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Tensor(self.inner.clone()))
    }
}

impl IntoValue for bool {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Bool(self))
    }
}

impl IntoValue for &str {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Str(self.into()))
    }
}

impl IntoValue for String {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Str(self.into()))
    }
}

macro_rules! int_values {
    ($($t:ty),*) => {$(
        impl IntoValue for $t {
            fn into_value(self) -> Result<Val, Error> {
                i64::try_from(self).map(Val::Int).map_err(|_| {
                    Error::new(
                        "OverflowError",
                        format!("{self} does not fit the session's 64-bit integers"),
                    )
                })
            }
        }
        impl FromValue for $t {
            fn from_value(v: &Val) -> Option<$t> {
                match v {
                    Val::Int(i) => <$t>::try_from(*i).ok(),
                    Val::Bool(b) => Some(*b as $t),
                    _ => None,
                }
            }
        }
    )*};
}

int_values!(i32, i64, u32, usize);

impl IntoValue for f64 {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Float(self))
    }
}

impl IntoValue for f32 {
    fn into_value(self) -> Result<Val, Error> {
        Ok(Val::Float(self as f64))
    }
}

impl FromValue for f64 {
    fn from_value(v: &Val) -> Option<f64> {
        match v {
            Val::Float(f) => Some(*f),
            Val::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}

impl FromValue for bool {
    fn from_value(v: &Val) -> Option<bool> {
        match v {
            Val::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Val) -> Option<String> {
        match v {
            Val::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }
}

impl FromValue for Tensor {
    fn from_value(v: &Val) -> Option<Tensor> {
        match v {
            Val::Tensor(t) => Some(Tensor::wrap(t.clone())),
            _ => None,
        }
    }
}
