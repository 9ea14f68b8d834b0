//! Expressions and lines of a reproducer as Python text: `x[1:3, None]`, `f(a, k=b)`,
//! `x.at[i].set(v)`, `jax.vmap(f)(x)`.

use super::{Expr, Line, Op};

impl Expr {
    pub(super) fn names(&self, f: &mut dyn FnMut(&str)) {
        match self {
            Expr::Name(n) => f(n),
            Expr::Lit(_) => {}
            Expr::Tuple(items) | Expr::List(items) => items.iter().for_each(|x| x.names(f)),
            Expr::Dict(items) => items.iter().for_each(|(_, x)| x.names(f)),
            Expr::Slice(s) => s.iter().for_each(|x| x.names(f)),
        }
    }

    pub(super) fn rename(&mut self, renames: &[(String, String)]) {
        match self {
            Expr::Name(n) => {
                if let Some((_, to)) = renames.iter().find(|(from, _)| from == n) {
                    *n = to.clone();
                }
            }
            Expr::Lit(_) => {}
            Expr::Tuple(items) | Expr::List(items) => items.iter_mut().for_each(|x| x.rename(renames)),
            Expr::Dict(items) => items.iter_mut().for_each(|(_, x)| x.rename(renames)),
            Expr::Slice(s) => s.iter_mut().for_each(|x| x.rename(renames)),
        }
    }

    pub(super) fn render(&self) -> String {
        match self {
            Expr::Name(n) | Expr::Lit(n) => n.clone(),
            Expr::Tuple(items) => {
                let parts: Vec<String> = items.iter().map(Expr::render).collect();
                if parts.len() == 1 {
                    format!("({},)", parts[0])
                } else {
                    format!("({})", parts.join(", "))
                }
            }
            Expr::List(items) => format!("[{}]", items.iter().map(Expr::render).collect::<Vec<_>>().join(", ")),
            Expr::Dict(items) => {
                format!("{{{}}}", items.iter().map(|(k, v)| format!("{k}: {}", v.render())).collect::<Vec<_>>().join(", "))
            }
            Expr::Slice(s) => format!("slice({}, {}, {})", s[0].render(), s[1].render(), s[2].render()),
        }
    }

    /// Index syntax: `x[1:3, None, ...]`.
    pub(super) fn render_index(&self) -> String {
        match self {
            Expr::Tuple(items) if !items.is_empty() => {
                let parts: Vec<String> = items.iter().map(Expr::render_index).collect();
                if parts.len() == 1 {
                    format!("{},", parts[0])
                } else {
                    parts.join(", ")
                }
            }
            Expr::Lit(l) if l == "Ellipsis" => "...".into(),
            Expr::Slice(s) => {
                let part = |x: &Expr| match x {
                    Expr::Lit(l) if l == "None" => String::new(),
                    other => other.render(),
                };
                let (a, b, c) = (part(&s[0]), part(&s[1]), part(&s[2]));
                if c.is_empty() {
                    format!("{a}:{b}")
                } else {
                    format!("{a}:{b}:{c}")
                }
            }
            other => other.render(),
        }
    }
}

pub(super) fn render_line(line: &Line) -> String {
    let args: Vec<String> = line.args.iter().map(Expr::render).collect();
    let kwargs: Vec<String> = line.kwargs.iter().map(|(k, v)| format!("{k}={}", v.render())).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let index = || line.args.get(1).map(Expr::render_index).unwrap_or_default();
    let expr = match &line.op {
        Op::Api(name) => format!("{name}({})", args.iter().chain(kwargs.iter()).cloned().collect::<Vec<_>>().join(", ")),
        Op::BinOp(op) | Op::Compare(op) => format!("{} {op} {}", arg(0), arg(1)),
        Op::Unary(op) => format!("{op}{}", arg(0)),
        Op::GetItem => format!("{}[{}]", arg(0), index()),
        Op::SetItem => format!("{}[{}] = {}", arg(0), index(), arg(2)),
        Op::Method(m) => {
            format!("{}.{m}({})", arg(0), args.iter().skip(1).chain(kwargs.iter()).cloned().collect::<Vec<_>>().join(", "))
        }
        Op::Attr(name) => format!("{}.{name}", arg(0)),
        Op::AtUpdate(op) => {
            let rest: Vec<String> = args.iter().skip(2).chain(kwargs.iter()).cloned().collect();
            format!("{}.at[{}].{op}({})", arg(0), index(), rest.join(", "))
        }
        Op::Transform(api) => {
            let options: Vec<String> = args.iter().take(1).chain(kwargs.iter()).cloned().collect();
            format!("{api}({})({})", options.join(", "), args.iter().skip(1).cloned().collect::<Vec<_>>().join(", "))
        }
        Op::Converted(c) => c.render(&line.args),
        Op::Concretize(what) => match what.as_str() {
            "bool" => format!("if {}:\n    pass", arg(0)),
            "operator.index" => format!("[0][{}]", arg(0)),
            other => format!("{other}({})", arg(0)),
        },
    };
    match &line.target {
        Some(t) => format!("{t} = {expr}"),
        None => expr,
    }
}
