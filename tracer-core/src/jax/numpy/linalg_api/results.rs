//! The named tuples `jnp.linalg` returns, as JAX 0.10.2 defines them
//! (`jax._src.numpy.linalg`): `eigh` an `EighResult(eigenvalues, eigenvectors)`, `slogdet`
//! a `SlogdetResult(sign, logabsdet)`, `svd` an `SVDResult(U, S, Vh)`, `qr` a
//! `QRResult(Q, R)`. Code reads them by field (`jnp.linalg.eigh(a).eigenvalues`) as often as
//! it unpacks them.

use std::rc::Rc;

use crate::interp::value::Value;
use crate::interp::{Interp, PyResult};

/// Each result type and its fields, in order.
const RESULTS: &[(&str, &[&str])] = &[
    ("EighResult", &["eigenvalues", "eigenvectors"]),
    ("SlogdetResult", &["sign", "logabsdet"]),
    ("SVDResult", &["U", "S", "Vh"]),
    ("QRResult", &["Q", "R"]),
];

/// `items` as the named tuple `name` (one class per analysis, so `type(r)` is the same for
/// every call).
pub(in crate::jax::numpy) fn named(interp: &mut Interp, name: &'static str, items: Vec<Value>) -> PyResult<Value> {
    let class = match interp.jax.linalg_results.get(name) {
        Some(class) => class.clone(),
        None => {
            let fields = RESULTS.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, f)| *f);
            let class = crate::interp::modules::namedtuple_class(interp, Rc::from(name), fields.iter().map(|f| Rc::from(*f)).collect());
            interp.jax.linalg_results.insert(name, class.clone());
            class
        }
    };
    interp.call(&Value::Class(class), items, Vec::new())
}
