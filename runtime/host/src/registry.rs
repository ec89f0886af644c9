//! The registry of native functions: every module of the host library is a
//! table of entries (qualified name, function, doc) — `builtins::TABLE`,
//! `torch::TABLE`, `triton::TABLE`, `docs::TABLE` — registered when an
//! engine is made, and the session layer registers its own (`perf_report`,
//! the methods of its objects, the `%magic` handler) the same way. Calls,
//! module attributes, `dir()`, completion and `help()` all read this one
//! registry, so the crate never names the one above it.

use crate::tensor::Tensor;
use crate::value::{Args, Object, Val, R};
use crate::Engine;
use std::collections::HashMap;
use std::rc::Rc;

/// A native function; it gets the name it was called by (one function
/// may serve several names, as `torch.zeros` and `torch.ones`).
pub type NativeFn = fn(&mut Engine, &str, Args) -> R<Val>;
/// A method of `torch.Tensor`.
pub type TensorMethodFn = fn(&mut Engine, &Rc<Tensor>, &str, Args) -> R<Val>;
pub type MethodFn = fn(&mut Engine, &Object, &str, &Args) -> R<Val>;
pub type MagicFn = fn(&mut Engine, &str) -> R<Val>;

/// A registry entry: a qualified name, its function and its `help()` text.
#[derive(Clone, Copy)]
pub struct Entry<F: 'static = NativeFn> {
    pub name: &'static str,
    pub f: F,
    pub doc: &'static str,
}

/// The methods of one object type: the dispatcher and the names it
/// answers (what completion and `dir()` list).
#[derive(Clone, Copy)]
pub struct Methods {
    pub f: MethodFn,
    pub names: &'static [&'static str],
}

/// The functions, object methods and magic handler an engine knows.
#[derive(Default)]
pub struct Registry {
    pub natives: HashMap<&'static str, Entry>,
    pub methods: HashMap<&'static str, Methods>,
    pub magic: Option<MagicFn>,
}

impl Registry {
    /// A registry holding these tables.
    pub fn with_tables(tables: &[&'static [Entry]]) -> Registry {
        let mut r = Registry::default();
        for t in tables {
            r.table(t);
        }
        r
    }

    /// Register a module's table.
    pub fn table(&mut self, t: &'static [Entry]) {
        for e in t {
            self.natives.insert(e.name, *e);
        }
    }

    pub fn native(&mut self, name: &'static str, f: NativeFn, doc: &'static str) {
        self.natives.insert(name, Entry { name, f, doc });
    }

    pub fn methods(
        &mut self,
        type_name: &'static str,
        f: MethodFn,
        names: &'static [&'static str],
    ) {
        self.methods.insert(type_name, Methods { f, names });
    }
}

impl Engine {
    /// Run a `%magic` line through the session's handler.
    pub fn magic(&mut self, text: &str) -> R<Val> {
        match self.registry.magic {
            Some(f) => f(self, text),
            None => Err(crate::value::Exc::new(
                "UsageError",
                "magics need a session (this engine runs without one)",
            )),
        }
    }
}
