//! Structure-aware mutations of Python programs: swap jnp API names, push numbers and shapes
//! to extremes, delete or duplicate lines and tokens, splice two programs, inject huge
//! literals, deep nesting and hostile calls of the modelled API, odd bytes and line breaks.
//! Deterministic for a given seed.

/// SplitMix64: small, fast, and the same sequence on every machine for a seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// jnp functions whose names are swapped for one another.
const JNP_NAMES: &[&str] = &[
    "sum",
    "mean",
    "max",
    "min",
    "argmax",
    "reshape",
    "transpose",
    "concatenate",
    "stack",
    "dot",
    "matmul",
    "einsum",
    "zeros",
    "ones",
    "arange",
    "linspace",
    "eye",
    "tile",
    "repeat",
    "where",
    "take",
    "cumsum",
    "sort",
    "argsort",
    "exp",
    "log",
    "tanh",
    "sqrt",
    "abs",
    "clip",
    "pad",
    "roll",
    "flip",
    "squeeze",
    "expand_dims",
    "broadcast_to",
    "full",
    "outer",
    "kron",
    "diag",
    "tril",
    "triu",
    "split",
    "array",
    "asarray",
    "var",
    "std",
    "prod",
    "linalg.norm",
    "linalg.inv",
    "linalg.svd",
    "fft.fft",
];

/// Numbers a program should survive.
const EXTREME_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2**31",
    "2**63",
    "-2**63",
    "10**12",
    "10**18",
    "1e308",
    "-1e308",
    "1e-320",
    "float('nan')",
    "float('inf')",
    "4294967296",
    "-9223372036854775808",
    "65536",
    "True",
    "None",
    "0.5",
    "-0",
];

/// Shapes a program should survive.
const EXTREME_SHAPES: &[&str] =
    &["()", "(0,)", "(-1,)", "(2**31,)", "(10**12, 10**12)", "(1,) * 100", "(0, 0, 0)", "(3, -2)", "(10**18, 2)", "(1, 2, 3, 4, 5, 6, 7)"];

/// Statements injected at a random line.
const INJECTIONS: &[&str] = &[
    "_z = 'a' * 10**12",
    "_z = [0] * 10**12",
    "_z = ''.center(10**12)",
    "_z = format(0, '.1000000f')",
    "_z = '{:>1000000000}'.format(1)",
    "_z = (-9223372036854775807 - 1) % -1",
    "_z = (-9223372036854775807 - 1) // -1",
    "_z = 1 << 10**6",
    "_z = 2 ** 10**6",
    "_z = jnp.arange(4294967296)",
    "_z = jnp.ones(3)[..., ...]",
    "_z = jnp.zeros((1,) * 1000)",
    "_z = jnp.tile(jnp.ones(3), 10**9)",
    "_z = jnp.eye(10**9) * 5",
    "_z = jnp.transpose(jnp.ones((2, 3, 4)), (0, 0, 1))",
    "_z = jnp.ones((2, 3)).reshape(-1, -1)",
    "_z = jnp.ones((2, 3)).sum(axis=10**12)",
    "while True:\n    pass",
    "import jax.numpy as jnp",
    "import jax",
];

/// Odd bytes and line breaks.
const ODD: &[&str] = &["\r", "\r\n", "\x0c", "\u{2028}", "\u{85}", "\0", "\t", "\u{feff}", "\\", "'''", "\"", "#", "\u{1F600}", "\x7f"];

/// `text` mutated one to three times (`donor` is spliced into it sometimes).
pub fn mutate(rng: &mut Rng, text: &str, donor: &str) -> String {
    let mut out = text.to_string();
    for _ in 0..1 + rng.below(3) {
        out = match rng.below(12) {
            0 => swap_api(rng, &out),
            1 | 2 => replace_number(rng, &out),
            3 => replace_shape(rng, &out),
            4 => line_edit(rng, &out),
            5 => token_edit(rng, &out),
            6 => splice(rng, &out, donor),
            7 => {
                let stmt = *rng.pick(INJECTIONS);
                inject(rng, &out, stmt)
            }
            8 => {
                let stmt = huge_literal(rng);
                inject(rng, &out, &stmt)
            }
            9 => odd_bytes(rng, &out),
            10 => {
                let stmt = super::api_calls::statement(rng);
                inject(rng, &out, &stmt)
            }
            _ => {
                let stmt = deep_nesting(rng);
                inject(rng, &out, &stmt)
            }
        };
    }
    out
}

fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn swap_api(rng: &mut Rng, text: &str) -> String {
    let spots: Vec<usize> = text.match_indices("jnp.").map(|(i, _)| i + 4).collect();
    if spots.is_empty() {
        return text.to_string();
    }
    let at = *rng.pick(&spots);
    let end = at + text[at..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(text.len() - at);
    format!("{}{}{}", &text[..at], rng.pick(JNP_NAMES), &text[end..])
}

/// Byte ranges of the number literals in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if bytes[i].is_ascii_digit() && starts_word {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn replace_number(rng: &mut Rng, text: &str) -> String {
    let spots = numbers(text);
    if spots.is_empty() {
        return text.to_string();
    }
    let (a, b) = *rng.pick(&spots);
    format!("{}{}{}", &text[..a], rng.pick(EXTREME_NUMBERS), &text[b..])
}

fn replace_shape(rng: &mut Rng, text: &str) -> String {
    // A parenthesised run of digits, commas and spaces: a shape or an axis tuple.
    let bytes = text.as_bytes();
    let mut spots = Vec::new();
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'(' {
            let rest = &bytes[i + 1..];
            let len = rest.iter().take_while(|c| c.is_ascii_digit() || **c == b',' || **c == b' ').count();
            if len > 0 && rest.get(len) == Some(&b')') && rest[..len].contains(&b',') {
                spots.push((i, i + len + 2));
            }
        }
    }
    if spots.is_empty() {
        return replace_number(rng, text);
    }
    let (a, b) = *rng.pick(&spots);
    format!("{}{}{}", &text[..a], rng.pick(EXTREME_SHAPES), &text[b..])
}

fn line_edit(rng: &mut Rng, text: &str) -> String {
    let mut ls = lines(text);
    if ls.is_empty() {
        return text.to_string();
    }
    let i = rng.below(ls.len());
    match rng.below(3) {
        0 => {
            ls.remove(i);
        }
        1 => ls.insert(i, ls[i]),
        _ => {
            let j = rng.below(ls.len());
            ls.swap(i, j);
        }
    }
    ls.concat()
}

/// Byte ranges of tokens: identifiers, numbers, and single punctuation characters.
pub fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if d.is_alphanumeric() || d == '_' || d == '.' {
                    end = j + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push((i, end));
        } else if !c.is_whitespace() {
            out.push((i, i + c.len_utf8()));
        }
    }
    out
}

fn token_edit(rng: &mut Rng, text: &str) -> String {
    let ts = tokens(text);
    if ts.is_empty() {
        return text.to_string();
    }
    let (a, b) = *rng.pick(&ts);
    if rng.below(2) == 0 {
        format!("{}{}", &text[..a], &text[b..])
    } else {
        format!("{}{}{}", &text[..b], &text[a..b], &text[b..])
    }
}

fn splice(rng: &mut Rng, text: &str, donor: &str) -> String {
    let (a, b) = (lines(text), lines(donor));
    let cut_a = rng.below(a.len() + 1);
    let cut_b = rng.below(b.len() + 1);
    let mut out = a[..cut_a].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&b[cut_b..].concat());
    out
}

fn inject(rng: &mut Rng, text: &str, stmt: &str) -> String {
    let mut ls: Vec<String> = lines(text).into_iter().map(str::to_string).collect();
    let i = rng.below(ls.len() + 1);
    // At the indentation of the line it goes before, so that it lands inside functions too.
    let indent: String = ls.get(i).map(|l| l.chars().take_while(|c| *c == ' ').collect()).unwrap_or_default();
    let body: String = stmt.lines().map(|l| format!("{indent}{l}\n")).collect();
    ls.insert(i, body);
    ls.concat()
}

fn huge_literal(rng: &mut Rng) -> String {
    let n = [1_000, 100_000, 1_000_000][rng.below(3)];
    match rng.below(4) {
        0 => format!("_h = [{}]", "0, ".repeat(n)),
        1 => format!("_h = '{}'", "a".repeat(n)),
        2 => format!("_h = {}", "9".repeat(n.min(100_000))),
        _ => format!("_h = ({})", "1 + ".repeat(n.min(100_000)) + "1"),
    }
}

fn deep_nesting(rng: &mut Rng) -> String {
    let depth = [50, 300, 5_000, 100_000][rng.below(4)];
    let (open, close) = *rng.pick(&[("(", ")"), ("[", "]"), ("{", "}"), ("-", ""), ("not ", ""), ("f(", ")"), ("jnp.sum(", ")")]);
    format!("_n = {}1{}", open.repeat(depth), close.repeat(depth))
}

fn odd_bytes(rng: &mut Rng, text: &str) -> String {
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).chain([text.len()]).collect();
    let at = *rng.pick(&boundaries);
    format!("{}{}{}", &text[..at], rng.pick(ODD), &text[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutants() {
        let text = "import jax.numpy as jnp\nx = jnp.ones((3, 4))\nprint(x.sum(axis=1))\n";
        let run = |seed| {
            (0..50).map(|_| 0).fold((Rng::new(seed), Vec::new()), |(mut rng, mut out), _| {
                out.push(mutate(&mut rng, text, text));
                (rng, out)
            })
        };
        assert_eq!(run(7).1, run(7).1);
        assert_ne!(run(7).1, run(8).1);
    }
}
