//! A benchmark sweep's results (`Mark.run`'s data): one row per x value
//! with (mean, min, max) per line, written as pandas-style text, HTML and
//! CSV, and what the plots read.

use crate::value::Val;

/// One x value of a sweep: its x values, then `(mean, min, max)` per line.
pub type Row = (Vec<Val>, Vec<(f64, f64, f64)>);

/// The results of one benchmark: x columns, then per line mean, min, max.
pub struct Table {
    pub name: String,
    pub x_names: Vec<String>,
    pub line_names: Vec<String>,
    /// One row per x value: the x values, then `(mean, min, max)` per line.
    pub rows: Vec<Row>,
    pub xlabel: String,
    pub ylabel: String,
    pub x_log: bool,
    pub y_log: bool,
}

impl Table {
    /// The table as `{column name: [values]}`: x columns, then the mean of
    /// each line.
    pub(crate) fn columns(&self) -> Val {
        let mut cols: Vec<(Val, Val)> = vec![];
        for (i, name) in self.x_names.iter().enumerate() {
            let vals = self.rows.iter().map(|r| r.0[i].clone()).collect();
            cols.push((Val::str(name), Val::list(vals)));
        }
        for (i, name) in self.line_names.iter().enumerate() {
            let vals = self.rows.iter().map(|r| Val::Float(r.1[i].0)).collect();
            cols.push((Val::str(name), Val::list(vals)));
        }
        Val::Dict(std::rc::Rc::new(std::cell::RefCell::new(cols)))
    }
}
