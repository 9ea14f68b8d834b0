//! Python's `random` module after `random.seed(n)`: CPython's Mersenne Twister (MT19937,
//! seeded with `init_by_array` from the 32-bit words of `abs(n)`) and the functions built on
//! it, draw for draw as CPython 3.11 makes them, so `tracelens run` prints what `python`
//! prints and a branch on `random.random()` is known.
//!
//! Unseeded (Python seeds from the OS), seeded with anything but an int, or after a call whose
//! number of draws is unknown, the state is unknown and so is every result.

use super::value::Value;
use super::{Interp, PyResult};

const N: usize = 624;
const M: usize = 397;

/// CPython's `random.Random` state: the Mersenne Twister and `gauss`'s cached second value.
#[derive(Clone)]
pub struct PyRandom {
    mt: Box<[u32; N]>,
    index: usize,
    gauss_next: Option<f64>,
}

impl PyRandom {
    /// `random.seed(n)` for an int `n`: `init_by_array` over the little-endian 32-bit words
    /// of `abs(n)` (one zero word for 0).
    pub fn from_int(n: i64) -> PyRandom {
        let a = n.unsigned_abs();
        let key: Vec<u32> = if a >> 32 == 0 { vec![a as u32] } else { vec![a as u32, (a >> 32) as u32] };
        let mut r = PyRandom { mt: Box::new([0; N]), index: N, gauss_next: None };
        r.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_664_525)).wrapping_add(key[j]).wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
        }
        r.mt[0] = 0x8000_0000;
        r
    }

    fn init_genrand(&mut self, seed: u32) {
        self.mt[0] = seed;
        for i in 1..N {
            let prev = self.mt[i - 1] ^ (self.mt[i - 1] >> 30);
            self.mt[i] = prev.wrapping_mul(1_812_433_253).wrapping_add(i as u32);
        }
        self.index = N;
    }

    /// The next 32 random bits (`genrand_uint32`).
    fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            for k in 0..N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: 53 random bits in [0, 1).
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `getrandbits(k)` for `k <= 63`: whole words from the least significant up, the last
    /// one cut to the bits left.
    fn getrandbits(&mut self, k: u32) -> u64 {
        match k {
            0 => 0,
            1..=32 => u64::from(self.next_u32() >> (32 - k)),
            _ => {
                let low = u64::from(self.next_u32());
                let high = u64::from(self.next_u32() >> (64 - k));
                low | (high << 32)
            }
        }
    }

    /// `_randbelow(n)` for `n > 0`: rejection sampling on `n.bit_length()` bits.
    fn below(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `random.gauss(mu, sigma)`: Box-Muller, keeping the second value for the next call.
    fn gauss(&mut self, mu: f64, sigma: f64) -> f64 {
        let z = match self.gauss_next.take() {
            Some(z) => z,
            None => {
                let x2pi = self.random() * std::f64::consts::TAU;
                let g2rad = (-2.0 * (1.0 - self.random()).ln()).sqrt();
                self.gauss_next = Some(x2pi.sin() * g2rad);
                x2pi.cos() * g2rad
            }
        };
        mu + z * sigma
    }

    /// `random.normalvariate(mu, sigma)`: Kinderman and Monahan's ratio method.
    fn normalvariate(&mut self, mu: f64, sigma: f64) -> f64 {
        let magic = 4.0 * (-0.5f64).exp() / 2.0f64.sqrt();
        loop {
            let u1 = self.random();
            let u2 = 1.0 - self.random();
            let z = magic * (u1 - 0.5) / u2;
            if z * z / 4.0 <= -u2.ln() {
                return mu + z * sigma;
            }
        }
    }
}

/// The functions of `random` that draw (`random.seed` included); `None` for the others.
pub fn call(interp: &mut Interp, func: &str, args: &[Value], kwargs: &[(std::rc::Rc<str>, Value)]) -> Option<PyResult<Value>> {
    let arg = |i: usize, name: &str| args.get(i).or_else(|| kwargs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v));
    let int = |v: Option<&Value>| match v {
        Some(Value::Int(i)) => Some(*i),
        Some(Value::Bool(b)) => Some(i64::from(*b)),
        _ => None,
    };
    let float = |v: Option<&Value>, default: f64| match v {
        None => Some(default),
        Some(Value::Float(f)) => Some(*f),
        Some(Value::Int(i)) => Some(*i as f64),
        Some(Value::Bool(b)) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    if func == "seed" {
        interp.py_random = match arg(0, "a") {
            Some(Value::Int(n)) => Some(PyRandom::from_int(*n)),
            Some(Value::Bool(b)) => Some(PyRandom::from_int(i64::from(*b))),
            _ => None,
        };
        return Some(Ok(Value::None));
    }
    // What each call draws, computed only when the state and every argument are known; else
    // the state becomes unknown (a call may draw any number of times).
    let known = |r: &mut PyRandom| -> Option<Result<Value, &'static str>> {
        Some(Ok(match func {
            "random" => Value::Float(r.random()),
            "uniform" => {
                let (a, b) = (float(arg(0, "a"), f64::NAN)?, float(arg(1, "b"), f64::NAN)?);
                Value::Float(a + (b - a) * r.random())
            }
            "gauss" | "normalvariate" => {
                let (mu, sigma) = (float(arg(0, "mu"), 0.0)?, float(arg(1, "sigma"), 1.0)?);
                Value::Float(if func == "gauss" { r.gauss(mu, sigma) } else { r.normalvariate(mu, sigma) })
            }
            "randint" => {
                let (a, b) = (int(arg(0, "a"))?, int(arg(1, "b"))?);
                match b.checked_sub(a).and_then(|w| w.checked_add(1)) {
                    Some(width) if width > 0 => Value::Int(a + r.below(width as u64) as i64),
                    _ => return Some(Err("empty range for randrange()")),
                }
            }
            "randrange" => {
                let start = int(arg(0, "start"))?;
                match arg(1, "stop") {
                    None | Some(Value::None) if start > 0 => Value::Int(r.below(start as u64) as i64),
                    None | Some(Value::None) => return Some(Err("empty range for randrange()")),
                    stop => {
                        let (stop, step) = (int(stop)?, if arg(2, "step").is_some() { int(arg(2, "step"))? } else { 1 });
                        let width = stop.checked_sub(start)?;
                        let n = match step {
                            0 => return Some(Err("zero step for randrange()")),
                            1 => width,
                            s if s > 0 => width.checked_add(s - 1)?.div_euclid(s),
                            s => width.checked_add(s + 1)?.div_euclid(s),
                        };
                        if n <= 0 {
                            return Some(Err("empty range for randrange()"));
                        }
                        Value::Int(start.checked_add(step.checked_mul(r.below(n as u64) as i64)?)?)
                    }
                }
            }
            _ => return None,
        }))
    };
    let drawn = interp.py_random.as_mut().and_then(|r| known(r));
    Some(match drawn {
        Some(Ok(v)) => Ok(v),
        Some(Err(msg)) => {
            interp.py_random = None;
            Err(interp.value_error(msg))
        }
        None => {
            interp.py_random = None;
            return None;
        }
    })
}

/// `random.shuffle(x)` and `random.choice(seq)` on a list whose length is known.
pub fn shuffle_or_choice(interp: &mut Interp, func: &str, seq: &Value) -> Option<PyResult<Value>> {
    let Some(r) = interp.py_random.as_mut() else {
        return None;
    };
    match (func, seq) {
        ("shuffle", Value::List(items)) => {
            let mut items = items.borrow_mut();
            for i in (1..items.len()).rev() {
                let j = r.below(i as u64 + 1) as usize;
                items.swap(i, j);
            }
            Some(Ok(Value::None))
        }
        ("choice", Value::List(_) | Value::Tuple(_) | Value::Range(..)) => {
            let n = match seq {
                Value::List(l) => l.borrow().len(),
                Value::Tuple(t) => t.len(),
                Value::Range(a, b, s) => super::ops::range_len(*a, *b, *s).max(0) as usize,
                _ => 0,
            };
            if n == 0 {
                return Some(Err(interp.raise(
                    "IndexError",
                    crate::diagnostics::Code::PythonException,
                    "Cannot choose from an empty sequence",
                )));
            }
            let j = r.below(n as u64) as i64;
            Some(interp.getitem(seq, Value::Int(j)))
        }
        _ => None,
    }
}

#[cfg(feature = "unit-tests")]
pub(crate) mod tests {
    use super::PyRandom;

    /// Each expectation is what CPython 3.11.7 printed for the statement in the comment.
    fn draws_as_cpython_does_after_seed() {
        // random.seed(3); [random.random() for _ in range(3)]
        let mut r = PyRandom::from_int(3);
        let got: Vec<f64> = (0..3).map(|_| r.random()).collect();
        assert_eq!(got, [0.23796462709189137, 0.5442292252959519, 0.36995516654807925]);
        // random.seed(0); [random.randint(1, 6) for _ in range(8)]
        let mut r = PyRandom::from_int(0);
        let dice: Vec<u64> = (0..8).map(|_| 1 + r.below(6)).collect();
        assert_eq!(dice, [4, 4, 1, 3, 5, 4, 4, 3]);
        // random.seed(2**40 + 5); random.random(); random.gauss(0, 1), random.gauss(0, 1)
        let mut r = PyRandom::from_int((1 << 40) + 5);
        let _ = r.random();
        assert_eq!([r.gauss(0.0, 1.0), r.gauss(0.0, 1.0)], [-0.26599670041490253, 2.2651413745246916]);
        // random.seed(-7); random.normalvariate(2.0, 0.5), random.randrange(10, 100, 7),
        // random.randrange(5), random.getrandbits(40)
        let mut r = PyRandom::from_int(-7);
        assert_eq!(r.normalvariate(2.0, 0.5), 1.8220458752447142);
        assert_eq!(10 + 7 * r.below(13), 80);
        assert_eq!(r.below(5), 0);
        assert_eq!(r.getrandbits(40), 902_254_243_635);
    }

    crate::unit_tests::list![draws_as_cpython_does_after_seed];
}
