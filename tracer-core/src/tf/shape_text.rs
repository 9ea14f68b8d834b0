//! The text of a `tf.TensorShape`, as `str` and `repr` give it: a leaf both the TensorFlow
//! front end and the interpreter's hover text (`interp/seen.rs`) read, so it names neither.

/// `str(TensorShape)`: `(2, 3)`, `(None, 3)`.
pub fn shape_str(dims: &[Option<usize>]) -> String {
    let items: Vec<String> = dims.iter().map(|d| d.map_or("None".to_string(), |d| d.to_string())).collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

/// `repr(TensorShape)`: `TensorShape([2, 3])`.
pub fn shape_repr(dims: &[Option<usize>]) -> String {
    let items: Vec<String> = dims.iter().map(|d| d.map_or("None".to_string(), |d| d.to_string())).collect();
    format!("TensorShape([{}])", items.join(", "))
}
