//! Named dimensions in a reproducer: an error found with them (`crate::symbolic`) is
//! reproduced by lowering the function with `jax.ShapeDtypeStruct`s whose shapes name them,
//! all made by one `jax.export.symbolic_shape` (JAX refuses dimensions of two scopes in one
//! `lower`), so JAX's message names them as the user's did.

use super::{np_dtype, Input, Program};

impl Program {
    /// The named dimensions the call's inputs have, in the order the analysis bound them.
    pub(super) fn symbolic_names(&self) -> Vec<&str> {
        let live = self.live_params();
        self.symbolic
            .iter()
            .filter(|(_, size)| live.iter().any(|x| self.symbolic_value_of(x).is_some() && x.aval.shape.contains(size)))
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The line that makes the named dimensions, all in one scope as JAX requires of the
    /// dimensions of one `lower` (`b, n = jax.export.symbolic_shape("b, n")`), if any.
    pub(super) fn symbolic_declaration(&self) -> Option<String> {
        let names = self.symbolic_names();
        let targets = match names.as_slice() {
            [] => return None,
            [one] => format!("{one},"),
            many => many.join(", "),
        };
        Some(format!("{targets} = jax.export.symbolic_shape(\"{}\")", names.join(", ")))
    }

    /// `input` as a `jax.ShapeDtypeStruct` with named dimensions, when one of its axes has
    /// the size of a named dimension.
    pub(super) fn symbolic_value_of(&self, input: &Input) -> Option<String> {
        let a = &input.aval;
        if self.symbolic.is_empty() || input.literal.is_some() || a.dtype.is_key() {
            return None;
        }
        let named = |d: &usize| self.symbolic.iter().find(|(_, size)| size == d).map(|(n, _)| n.clone());
        if !a.shape.iter().any(|d| named(d).is_some()) {
            return None;
        }
        let dims: Vec<String> = a.shape.iter().map(|d| named(d).unwrap_or_else(|| d.to_string())).collect();
        let shape = match dims.as_slice() {
            [one] => format!("({one},)"),
            _ => format!("({})", dims.join(", ")),
        };
        Some(format!("jax.ShapeDtypeStruct({shape}, {})", np_dtype(a.dtype)))
    }
}
