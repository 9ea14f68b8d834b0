//! Python literal tokens to values: string prefixes and escape sequences, integer and float
//! literals. Pure functions over token text; the CST walk lives in the parent module.

/// What a string literal's prefix (`rb`, `f`, `U`, ...) says about its body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct StringPrefix {
    pub raw: bool,
    pub bytes: bool,
    /// `f"..."`, and also `t"..."` (PEP 750), which tracelens reads as an f-string.
    pub formatted: bool,
}

/// Splits a `string_start` token such as `rb'''` into its prefix flags.
pub(super) fn string_prefix(start_token: &str) -> StringPrefix {
    let mut prefix = StringPrefix::default();
    for character in start_token.chars() {
        match character {
            'r' | 'R' => prefix.raw = true,
            'b' | 'B' => prefix.bytes = true,
            'f' | 'F' | 't' | 'T' => prefix.formatted = true,
            _ => {}
        }
    }
    prefix
}

/// Appends the value of a `str` literal body (the text between the quotes, or a literal
/// stretch of an f-string) to `out`.
///
/// With `fstring_braces`, `{{` and `}}` stand for one brace, as in f-string literal parts.
/// Python keeps unknown escapes (`"\d"`) as written, and so does this. `\N{...}` needs the
/// Unicode name table, which tracelens does not carry: it is kept as written. Lone surrogates
/// (`"\ud800"`) cannot live in a Rust string and become U+FFFD.
pub(super) fn decode_str(body: &str, raw: bool, fstring_braces: bool, out: &mut String) -> Result<(), String> {
    let mut first_problem = None;
    let mut rest = body;
    while let Some(position) = rest.find(|c| c == '\\' || (fstring_braces && (c == '{' || c == '}'))) {
        out.push_str(&rest[..position]);
        let after = &rest[position..];
        let mut chars = after.chars();
        let marker = chars.next().unwrap_or('\\');
        if marker != '\\' {
            // `{{` or `}}`; a lone brace cannot reach here without a tree-sitter error.
            out.push(marker);
            rest = if after[1..].starts_with(marker) { &after[2..] } else { &after[1..] };
            continue;
        }
        let next = chars.clone().next();
        if fstring_braces && matches!(next, Some('{' | '}')) {
            // `\{{` in an f-string is a backslash and then an escaped brace.
            out.push('\\');
            rest = &after[1..];
            continue;
        }
        if raw {
            // Raw strings keep the backslash and whatever follows it, including a quote.
            let escaped_len = chars.next().map_or(0, char::len_utf8);
            out.push_str(&after[..1 + escaped_len]);
            rest = &after[1 + escaped_len..];
            continue;
        }
        let Some(escaped) = chars.next() else {
            out.push('\\');
            rest = "";
            continue;
        };
        let mut consumed = 1 + escaped.len_utf8();
        match escaped {
            '\n' => {}
            '\r' => {
                if after[consumed..].starts_with('\n') {
                    consumed += 1;
                }
            }
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let (value, digits) = leading_digits(&after[1..], 8, 3);
                consumed = 1 + digits;
                out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            'x' | 'u' | 'U' => {
                let wanted = match escaped {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let (value, digits) = leading_digits(&after[2..], 16, wanted);
                if digits < wanted {
                    out.push_str(&after[..consumed + digits]);
                    first_problem.get_or_insert_with(|| {
                        let shape = match escaped {
                            'x' => "\\xXX",
                            'u' => "\\uXXXX",
                            _ => "\\UXXXXXXXX",
                        };
                        format!("(unicode error) truncated {shape} escape")
                    });
                } else if value > 0x10FFFF {
                    out.push_str(&after[..consumed + digits]);
                    first_problem.get_or_insert_with(|| "(unicode error) illegal Unicode character".to_string());
                } else {
                    out.push(char::from_u32(value).unwrap_or(char::REPLACEMENT_CHARACTER));
                }
                consumed += digits;
            }
            _ => out.push_str(&after[..consumed]),
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    match first_problem {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// Appends the value of a `bytes` literal body to `out`. Non-ASCII characters are an error,
/// as in Python; `\u`, `\U` and `\N` are not escapes in bytes and stay as written.
pub(super) fn decode_bytes(body: &str, raw: bool, out: &mut Vec<u8>) -> Result<(), String> {
    if !body.is_ascii() {
        return Err("bytes can only contain ASCII literal characters".to_string());
    }
    let bytes = body.as_bytes();
    if raw {
        out.extend_from_slice(bytes);
        return Ok(());
    }
    let mut first_problem = None;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte != b'\\' || index + 1 >= bytes.len() {
            out.push(byte);
            index += 1;
            continue;
        }
        let escaped = bytes[index + 1];
        let mut consumed = 2;
        match escaped {
            b'\n' => {}
            b'\r' => {
                if bytes.get(index + 2) == Some(&b'\n') {
                    consumed += 1;
                }
            }
            b'\\' | b'\'' | b'"' => out.push(escaped),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let (value, digits) = leading_digits(&body[index + 1..], 8, 3);
                consumed = 1 + digits;
                // Python 3.12 warns about values above 0o377 and keeps the low byte.
                out.push((value & 0xff) as u8);
            }
            b'x' => {
                let (value, digits) = leading_digits(&body[index + 2..], 16, 2);
                if digits < 2 {
                    out.extend_from_slice(&bytes[index..index + 2 + digits]);
                    first_problem.get_or_insert_with(|| "(value error) invalid \\x escape".to_string());
                } else {
                    out.push((value & 0xff) as u8);
                }
                consumed += digits;
            }
            _ => out.extend_from_slice(&bytes[index..index + 2]),
        }
        index += consumed;
    }
    match first_problem {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// Reads up to `max_digits` leading digits of `radix` from `text`: (value, digits read).
fn leading_digits(text: &str, radix: u32, max_digits: usize) -> (u32, usize) {
    let mut value: u32 = 0;
    let mut count = 0;
    for character in text.chars().take(max_digits) {
        let Some(digit) = character.to_digit(radix) else {
            break;
        };
        value = value.saturating_mul(radix).saturating_add(digit);
        count += 1;
    }
    (value, count)
}

/// The value of a numeric literal token.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Number {
    Int(i64),
    /// Decimal digits of an integer too large for `i64`.
    BigInt(String),
    Float(f64),
    Imag(f64),
}

/// Parses an `integer` token: `0x_ff`, `0o17`, `0b1`, `1_000`, and `10j` (tree-sitter tags
/// imaginary integers as `integer`). Errors carry Python's message.
pub(super) fn parse_integer(text: &str) -> Result<Number, &'static str> {
    if let Some(mantissa) = text.strip_suffix(['j', 'J']) {
        return parse_float(mantissa).map(|number| match number {
            Number::Float(value) => Number::Imag(value),
            other => other,
        });
    }
    let lower = text.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits, kind) = match lower.as_deref() {
        Some("0x") => (16, &text[2..], "hexadecimal"),
        Some("0o") => (8, &text[2..], "octal"),
        Some("0b") => (2, &text[2..], "binary"),
        _ => (10, text, "decimal"),
    };
    let invalid = match kind {
        "hexadecimal" => "invalid hexadecimal literal",
        "octal" => "invalid octal literal",
        "binary" => "invalid binary literal",
        _ => "invalid decimal literal",
    };
    // Python 2's `10L` and misplaced underscores (`1__0`, `1_`) are tokenizer errors.
    if digits.ends_with(['l', 'L']) || digits.ends_with('_') || digits.contains("__") {
        return Err(invalid);
    }
    let digits = digits.strip_prefix('_').filter(|_| radix != 10).unwrap_or(digits);
    if radix == 10 && digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0' && b != b'_') {
        return Err("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
    }
    let mut value: i64 = 0;
    let mut overflowed = false;
    for character in digits.chars().filter(|&c| c != '_') {
        let Some(digit) = character.to_digit(radix) else {
            return Err(invalid);
        };
        match value.checked_mul(i64::from(radix)).and_then(|v| v.checked_add(i64::from(digit))) {
            Some(next) => value = next,
            None => {
                overflowed = true;
                break;
            }
        }
    }
    if !overflowed {
        return Ok(Number::Int(value));
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if radix == 10 {
        return Ok(Number::BigInt(clean));
    }
    Ok(Number::BigInt(to_decimal(&clean, radix)))
}

/// Parses a `float` token, imaginary (`1.5j`) or not.
pub(super) fn parse_float(text: &str) -> Result<Number, &'static str> {
    let (mantissa, imaginary) = match text.strip_suffix(['j', 'J']) {
        Some(mantissa) => (mantissa, true),
        None => (text, false),
    };
    if mantissa.ends_with('_') || mantissa.contains("__") || mantissa.contains("_.") || mantissa.contains("._") {
        return Err("invalid decimal literal");
    }
    let clean: String = mantissa.chars().filter(|&c| c != '_').collect();
    let value = clean.parse::<f64>().map_err(|_| "invalid decimal literal")?;
    Ok(if imaginary { Number::Imag(value) } else { Number::Float(value) })
}

/// Converts digits in `radix` (already validated) to decimal digits, for integers past i64.
fn to_decimal(digits: &str, radix: u32) -> String {
    // Little-endian base-2^32 limbs.
    let mut limbs: Vec<u32> = Vec::new();
    for digit in digits.chars().filter_map(|c| c.to_digit(radix)) {
        let mut carry = u64::from(digit);
        for limb in limbs.iter_mut() {
            let product = u64::from(*limb) * u64::from(radix) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            limbs.push(carry as u32);
        }
    }
    const CHUNK: u64 = 1_000_000_000;
    let mut chunks = Vec::new();
    while limbs.iter().any(|&limb| limb != 0) {
        let mut remainder = 0u64;
        for limb in limbs.iter_mut().rev() {
            let current = (remainder << 32) | u64::from(*limb);
            *limb = (current / CHUNK) as u32;
            remainder = current % CHUNK;
        }
        chunks.push(remainder);
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
    }
    let mut decimal = String::new();
    for (index, chunk) in chunks.iter().rev().enumerate() {
        if index == 0 {
            decimal.push_str(&chunk.to_string());
        } else {
            decimal.push_str(&format!("{chunk:09}"));
        }
    }
    if decimal.is_empty() {
        decimal.push('0');
    }
    decimal
}
