//! Tests for the lowering: the lowered shape of snippets (printed as S-expressions), spans,
//! syntax errors, and inputs that must neither panic nor take long.

use super::{parse_module, KindName};
use crate::syntax::ast::{self, Expr, ExprKind, FStringPart, Parameters, Stmt, StmtKind};

/// One line per top-level statement.
fn dump_body(body: &[Stmt]) -> String {
    body.iter().map(stmt).collect::<Vec<_>>().join("\n")
}

fn block(body: &[Stmt]) -> String {
    format!("{{{}}}", body.iter().map(stmt).collect::<Vec<_>>().join("; "))
}

fn stmt(statement: &Stmt) -> String {
    match &statement.kind {
        StmtKind::Expr(value) => expr(value),
        StmtKind::Assign { targets, value } => {
            format!("(= {} {})", targets.iter().map(expr).collect::<Vec<_>>().join(" "), expr(value))
        }
        StmtKind::AnnAssign { target, annotation, value } => {
            format!("(ann {} {}{})", expr(target), expr(annotation), value.as_ref().map(|v| format!(" {}", expr(v))).unwrap_or_default())
        }
        StmtKind::AugAssign { target, op, value } => {
            format!("({}= {} {})", op.symbol(), expr(target), expr(value))
        }
        StmtKind::FunctionDef(function) => function_def(function),
        StmtKind::ClassDef(class) => {
            let mut out = format!("(class {}", class.name);
            if !class.bases.is_empty() || !class.keywords.is_empty() {
                let mut bases: Vec<String> = class.bases.iter().map(expr).collect();
                bases.extend(class.keywords.iter().map(keyword));
                out.push_str(&format!(" ({})", bases.join(" ")));
            }
            if !class.decorators.is_empty() {
                out.push_str(&format!(" @({})", class.decorators.iter().map(expr).collect::<Vec<_>>().join(" ")));
            }
            format!("{out} {})", block(&class.body))
        }
        StmtKind::Return(value) => match value {
            Some(value) => format!("(return {})", expr(value)),
            None => "(return)".to_string(),
        },
        StmtKind::If { test, body, orelse } => with_else("if", &expr(test), body, orelse),
        StmtKind::While { test, body, orelse } => with_else("while", &expr(test), body, orelse),
        StmtKind::For { target, iter, body, orelse } => with_else("for", &format!("{} in {}", expr(target), expr(iter)), body, orelse),
        StmtKind::Break => "break".to_string(),
        StmtKind::Continue => "continue".to_string(),
        StmtKind::Pass => "pass".to_string(),
        StmtKind::Raise { exc, cause } => {
            let mut out = "(raise".to_string();
            if let Some(exc) = exc {
                out.push_str(&format!(" {}", expr(exc)));
            }
            if let Some(cause) = cause {
                out.push_str(&format!(" from {}", expr(cause)));
            }
            out + ")"
        }
        StmtKind::Try { body, handlers, orelse, finalbody } => {
            let mut out = format!("(try {}", block(body));
            for handler in handlers {
                out.push_str(" (except");
                if let Some(typ) = &handler.typ {
                    out.push_str(&format!(" {}", expr(typ)));
                }
                if let Some(name) = &handler.name {
                    out.push_str(&format!(" as {name}"));
                }
                out.push_str(&format!(" {})", block(&handler.body)));
            }
            if !orelse.is_empty() {
                out.push_str(&format!(" (else {})", block(orelse)));
            }
            if !finalbody.is_empty() {
                out.push_str(&format!(" (finally {})", block(finalbody)));
            }
            out + ")"
        }
        StmtKind::With { items, body } => {
            let items: Vec<String> = items
                .iter()
                .map(|item| match &item.target {
                    Some(target) => format!("{} as {}", expr(&item.context), expr(target)),
                    None => expr(&item.context),
                })
                .collect();
            format!("(with {} {})", items.join(", "), block(body))
        }
        StmtKind::Assert { test, msg } => {
            format!("(assert {}{})", expr(test), msg.as_ref().map(|m| format!(" {}", expr(m))).unwrap_or_default())
        }
        StmtKind::Import(names) => format!("(import {})", aliases(names)),
        StmtKind::ImportFrom { module, names, level } => {
            let names = if names.is_empty() { "*".to_string() } else { aliases(names) };
            format!("(from {}{} import {})", ".".repeat(*level as usize), module.as_deref().unwrap_or(""), names)
        }
        StmtKind::Global(names) => format!("(global {})", names.join(" ")),
        StmtKind::Nonlocal(names) => format!("(nonlocal {})", names.join(" ")),
        StmtKind::Delete(targets) => format!("(del {})", targets.iter().map(expr).collect::<Vec<_>>().join(" ")),
    }
}

fn with_else(keyword: &str, head: &str, body: &[Stmt], orelse: &[Stmt]) -> String {
    if orelse.is_empty() {
        format!("({keyword} {head} {})", block(body))
    } else {
        format!("({keyword} {head} {} else {})", block(body), block(orelse))
    }
}

fn aliases(names: &[ast::ImportAlias]) -> String {
    names
        .iter()
        .map(|alias| match &alias.asname {
            Some(asname) => format!("{} as {asname}", alias.name),
            None => alias.name.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn function_def(function: &ast::FunctionDef) -> String {
    let mut out = format!("(def {} {}", function.name, params(&function.params));
    if let Some(returns) = &function.returns {
        out.push_str(&format!(" -> {}", expr(returns)));
    }
    if !function.decorators.is_empty() {
        out.push_str(&format!(" @({})", function.decorators.iter().map(expr).collect::<Vec<_>>().join(" ")));
    }
    if function.is_async {
        out.push_str(" async");
    }
    if function.is_generator {
        out.push_str(" generator");
    }
    format!("{out} {})", block(&function.body))
}

fn params(params: &Parameters) -> String {
    let one = |param: &ast::Param| {
        let mut out = param.name.to_string();
        if let Some(annotation) = &param.annotation {
            out.push_str(&format!(":{}", expr(annotation)));
        }
        if let Some(default) = &param.default {
            out.push_str(&format!("={}", expr(default)));
        }
        out
    };
    let mut parts: Vec<String> = params.posonly.iter().map(one).collect();
    if !params.posonly.is_empty() {
        parts.push("/".to_string());
    }
    parts.extend(params.args.iter().map(one));
    match &params.vararg {
        Some(vararg) => parts.push(format!("*{}", one(vararg))),
        None if !params.kwonly.is_empty() => parts.push("*".to_string()),
        None => {}
    }
    parts.extend(params.kwonly.iter().map(one));
    if let Some(kwarg) = &params.kwarg {
        parts.push(format!("**{}", one(kwarg)));
    }
    format!("({})", parts.join(" "))
}

fn keyword(keyword: &ast::Keyword) -> String {
    match &keyword.arg {
        Some(arg) => format!("{arg}={}", expr(&keyword.value)),
        None => format!("**{}", expr(&keyword.value)),
    }
}

fn exprs(values: &[Expr]) -> String {
    values.iter().map(|value| format!(" {}", expr(value))).collect()
}

fn expr(value: &Expr) -> String {
    match &value.kind {
        ExprKind::Name(name) => name.to_string(),
        ExprKind::Int(value) => value.to_string(),
        ExprKind::BigInt(digits) => format!("big:{digits}"),
        ExprKind::Float(value) => format!("{value:?}"),
        ExprKind::Imag(value) => format!("{value:?}j"),
        ExprKind::Str(text) => format!("{text:?}"),
        ExprKind::Bytes(bytes) => format!("b{:?}", String::from_utf8_lossy(bytes)),
        ExprKind::FString(parts) => format!("(f{})", fstring_parts(parts)),
        ExprKind::Bool(true) => "True".to_string(),
        ExprKind::Bool(false) => "False".to_string(),
        ExprKind::NoneLit => "None".to_string(),
        ExprKind::Ellipsis => "...".to_string(),
        ExprKind::Tuple(elements) => format!("(tuple{})", exprs(elements)),
        ExprKind::List(elements) => format!("(list{})", exprs(elements)),
        ExprKind::Set(elements) => format!("(set{})", exprs(elements)),
        ExprKind::Dict(entries) => {
            let entries: String = entries
                .iter()
                .map(|(key, value)| match key {
                    Some(key) => format!(" {}:{}", expr(key), expr(value)),
                    None => format!(" **{}", expr(value)),
                })
                .collect();
            format!("(dict{entries})")
        }
        ExprKind::Attribute { value, attr, .. } => format!("{}.{attr}", expr(value)),
        ExprKind::Subscript { value, index } => format!("{}[{}]", expr(value), expr(index)),
        ExprKind::Slice { lower, upper, step } => {
            let part = |part: &Option<Box<Expr>>| part.as_ref().map_or("_".to_string(), |part| expr(part));
            format!("(slice {} {} {})", part(lower), part(upper), part(step))
        }
        ExprKind::Call { func, args, keywords } => {
            let keywords: String = keywords.iter().map(|k| format!(" {}", keyword(k))).collect();
            format!("(call {}{}{keywords})", expr(func), exprs(args))
        }
        ExprKind::Starred(value) => format!("*{}", expr(value)),
        ExprKind::BinOp { left, op, right } => {
            format!("({} {} {})", op.symbol(), expr(left), expr(right))
        }
        ExprKind::UnaryOp { op, operand } => {
            let op = match op {
                ast::UnaryOp::Not => "not",
                ast::UnaryOp::Neg => "neg",
                ast::UnaryOp::Pos => "pos",
                ast::UnaryOp::Invert => "inv",
            };
            format!("({op} {})", expr(operand))
        }
        ExprKind::BoolOp { op, values } => {
            let op = if *op == ast::BoolOp::And { "and" } else { "or" };
            format!("({op}{})", exprs(values))
        }
        ExprKind::Compare { left, ops, comparators } => {
            let mut out = format!("(cmp {}", expr(left));
            for (op, comparator) in ops.iter().zip(comparators) {
                out.push_str(&format!(" {} {}", op.symbol().replace(' ', "-"), expr(comparator)));
            }
            out + ")"
        }
        ExprKind::IfExp { test, body, orelse } => {
            format!("(ifexp {} {} {})", expr(test), expr(body), expr(orelse))
        }
        ExprKind::Lambda(function) => {
            let body = match function.body.as_slice() {
                [Stmt { kind: StmtKind::Return(Some(value)), .. }] => expr(value),
                other => block(other),
            };
            let generator = if function.is_generator { " generator" } else { "" };
            format!("(lambda {} {body}{generator})", params(&function.params))
        }
        ExprKind::ListComp { elt, generators } => {
            format!("(listcomp {}{})", expr(elt), comprehensions(generators))
        }
        ExprKind::SetComp { elt, generators } => {
            format!("(setcomp {}{})", expr(elt), comprehensions(generators))
        }
        ExprKind::GeneratorExp { elt, generators } => {
            format!("(genexp {}{})", expr(elt), comprehensions(generators))
        }
        ExprKind::DictComp { key, value, generators } => {
            format!("(dictcomp {}:{}{})", expr(key), expr(value), comprehensions(generators))
        }
        ExprKind::NamedExpr { target, value } => format!("(:= {} {})", expr(target), expr(value)),
        ExprKind::Yield(value) => match value {
            Some(value) => format!("(yield {})", expr(value)),
            None => "(yield)".to_string(),
        },
        ExprKind::YieldFrom(value) => format!("(yield-from {})", expr(value)),
        ExprKind::Await(value) => format!("(await {})", expr(value)),
    }
}

fn comprehensions(generators: &[ast::Comprehension]) -> String {
    generators
        .iter()
        .map(|generator| {
            let ifs: String = generator.ifs.iter().map(|condition| format!(" if {}", expr(condition))).collect();
            format!(" (for {} in {}{ifs})", expr(&generator.target), expr(&generator.iter))
        })
        .collect()
}

fn fstring_parts(parts: &[FStringPart]) -> String {
    parts
        .iter()
        .map(|part| match part {
            FStringPart::Literal(text) => format!(" {text:?}"),
            FStringPart::Formatted { value, conversion, format_spec, debug_text } => {
                let mut out = format!(" {{{}", expr(value));
                if let Some(conversion) = conversion {
                    out.push_str(&format!("!{conversion}"));
                }
                if !format_spec.is_empty() {
                    out.push_str(&format!(":{}", fstring_parts(format_spec).trim_start()));
                }
                if let Some(debug_text) = debug_text {
                    out.push_str(&format!(" debug={debug_text:?}"));
                }
                out + "}"
            }
        })
        .collect()
}

fn format_errors(module: &ast::Module) -> String {
    module.errors.iter().map(|error| format!("{}..{} {}", error.span.start, error.span.end, error.message)).collect::<Vec<_>>().join("\n")
}

/// Asserts that `source` lowers without errors to `expected` (one line per statement).
#[track_caller]
fn check(source: &str, expected: &str) {
    let module = parse_module(source);
    assert!(module.errors.is_empty(), "unexpected errors for {source:?}:\n{}", format_errors(&module));
    assert_eq!(dump_body(&module.body), expected.trim(), "source: {source:?}");
}

/// Asserts the kept statements and the errors (`start..end message`, one per line).
#[track_caller]
fn check_errors(source: &str, expected_body: &str, expected_errors: &str) {
    let module = parse_module(source);
    assert_eq!(dump_body(&module.body), expected_body.trim(), "body of {source:?}");
    assert_eq!(format_errors(&module), expected_errors.trim(), "errors of {source:?}");
}

/// The first error's message, for checks that care only about the wording.
#[track_caller]
fn first_error(source: &str) -> String {
    let module = parse_module(source);
    module.errors.first().map(|error| error.message.clone()).unwrap_or_default()
}

fn only_expr(source: &str) -> Expr {
    let module = parse_module(source);
    assert!(module.errors.is_empty(), "errors: {}", format_errors(&module));
    match module.body.into_iter().next().map(|statement| statement.kind) {
        Some(StmtKind::Expr(value)) => value,
        other => panic!("expected an expression statement, got {other:?}"),
    }
}

fn simple_statements() {
    check(
        "x = 1\na = b = c\nx: int\ny: int = 2\nz += 1\nw @= m\npass\ndel a, b[0]\ndel (a, b)\nglobal g, h\n",
        "(= x 1)\n(= a b c)\n(ann x int)\n(ann y int 2)\n(+= z 1)\n(@= w m)\npass\n(del a b[0])\n(del (tuple a b))\n(global g h)",
    );
    check("a, *b = c\n(d, e) = [f, g] = h\nx = 1, 2\n", "(= (tuple a *b) c)\n(= (tuple d e) (list f g) h)\n(= x (tuple 1 2))");
    check("a, b\na; b\n", "(tuple a b)\na\nb");
    check(
        "assert x\nassert x, 'm'\nraise\nraise E\nraise E from c\n",
        "(assert x)\n(assert x \"m\")\n(raise)\n(raise E)\n(raise E from c)",
    );
    check("def f():\n    global g\n    nonlocal n, m\n", "(def f () {(global g); (nonlocal n m)})");
}

fn imports() {
    check(
        "import a.b.c as d, e\nfrom ..x.y import (z as w, v)\nfrom . import *\nfrom m import n\nfrom __future__ import annotations\nimport a . b\n",
        "(import a.b.c as d, e)\n(from ..x.y import z as w, v)\n(from . import *)\n(from m import n)\n(from __future__ import annotations)\n(import a.b)",
    );
}

fn compound_statements() {
    check("if a:\n    x\nelif b:\n    y\nelif c:\n    z\nelse:\n    w\n", "(if a {x} else {(if b {y} else {(if c {z} else {w})})})");
    check("while x:\n    break\nelse:\n    continue_ = 1\n", "(while x {break} else {(= continue_ 1)})");
    check("for a, b in c, d:\n    continue\nelse:\n    pass\n", "(for (tuple a b) in (tuple c d) {continue} else {pass})");
    check("for x, in y: pass\n", "(for (tuple x) in y {pass})");
    check(
        "try:\n    a\nexcept (A, B) as e:\n    b\nexcept C:\n    c\nexcept:\n    d\nelse:\n    e\nfinally:\n    f\n",
        "(try {a} (except (tuple A B) as e {b}) (except C {c}) (except {d}) (else {e}) (finally {f}))",
    );
    check("try:\n    a\nfinally:\n    f\n", "(try {a} (finally {f}))");
    check(
        "with a as b, c as d: pass\nwith e: pass\nwith (f as g, h): pass\n",
        "(with a as b, c as d {pass})\n(with e {pass})\n(with f as g, h {pass})",
    );
    check("with open(p) as (a, b): pass\n", "(with (call open p) as (tuple a b) {pass})");
    check("with (\n    m() as x\n):\n    pass\nwith (a, b as c): pass\n", "(with (call m) as x {pass})\n(with a, b as c {pass})");
}

fn function_definitions() {
    check(
        "def f(a, b: int, /, c=1, d: T = 2, *args: A, e, f=3, **kw: K) -> R:\n    return a\n",
        "(def f (a b:int / c=1 d:T=2 *args:A e f=3 **kw:K) -> R {(return a)})",
    );
    check("def g(*, a, b=1): pass\n", "(def g (* a b=1) {pass})");
    check("def h(a, /): pass\n", "(def h (a /) {pass})");
    check("async def h():\n    await x\n", "(def h () async {(await x)})");
    check("@dec\n@mod.dec2(1)\ndef f():\n    yield\n", "(def f () @(dec (call mod.dec2 1)) generator {(yield)})");
    check("def f():\n    x = yield from y\n", "(def f () generator {(= x (yield-from y))})");
    // A yield in a nested function, lambda or class does not make the outer one a generator.
    check(
        "def f():\n    def g():\n        yield 1\n    h = lambda: (yield)\n    class C:\n        def m(self): yield\n    return g\n",
        "(def f () {(def g () generator {(yield 1)}); (= h (lambda () (yield) generator)); (class C {(def m (self) generator {(yield)})}); (return g)})",
    );
    check(
        "def f():\n    return [(yield x) for x in y] if 0 else 1\n    (yield)\n",
        "(def f () generator {(return (ifexp 0 (listcomp (yield x) (for x in y)) 1)); (yield)})",
    );
    check("def f(x: 'X' = None) -> list[int] | None: ...\n", "(def f (x:\"X\"=None) -> (| list[int] None) {...})");
    check("def f(*args: *Ts): pass\n", "(def f (*args:*Ts) {pass})");
    check("def f[T](x: T) -> T: pass\n", "(def f (x:T) -> T {pass})");
}

fn class_definitions() {
    check(
        "@dataclass(frozen=True)\nclass C(B, *mixins, metaclass=M, **kw):\n    x: int = 1\n    def m(self): return self.x\n",
        "(class C (B *mixins metaclass=M **kw) @((call dataclass frozen=True)) {(ann x int 1); (def m (self) {(return self.x)})})",
    );
    check("class D: pass\n", "(class D {pass})");
}

fn lambdas() {
    check("lambda: 0\n", "(lambda () 0)");
    check("lambda a, /, b, *c, d=1, **e: a\n", "(lambda (a / b *c d=1 **e) a)");
    check("lambda *, k: k\n", "(lambda (* k) k)");
    check("f = lambda x=lambda: 1: x()\n", "(= f (lambda (x=(lambda () 1)) (call x)))");
}

fn operators() {
    check(
        "-x ** 2\nnot a and b or c\na and b and c\na or (b or c)\n",
        "(neg (** x 2))\n(or (and (not a) b) c)\n(and a b c)\n(or a (or b c))",
    );
    check("a < b <= c not in d is not e in f is g != h == i > j >= k\n", "(cmp a < b <= c not-in d is-not e in f is g != h == i > j >= k)");
    check(
        "a + b - c * d @ e / f // g % h\n1 << 2 >> 3 & 4 | 5 ^ 6\n~x + +y\n",
        "(- (+ a b) (% (// (/ (@ (* c d) e) f) g) h))\n(| (& (>> (<< 1 2) 3) 4) (^ 5 6))\n(+ (inv x) (pos y))",
    );
    check("a if b else c\n(y := f(x))\n", "(ifexp b a c)\n(:= y (call f x))");
    check("not x in y\n", "(not (cmp x in y))");
    // tree-sitter-python ranks `^` above `&`; Python ranks `&` above `^` above `|`.
    check("~1 ^ 1 & 1 | 1 & 1 ^ -1\n", "(| (^ (inv 1) (& 1 1)) (^ (& 1 1) (neg 1)))");
    check("a ** b ** c * d\na << b + c\n(a + b) * c\n", "(* (** a (** b c)) d)\n(<< a (+ b c))\n(* (+ a b) c)");
    let product = only_expr("(a + b) * c\n");
    assert_eq!((product.span.start, product.span.end), (0, 11));
}

fn calls_and_subscripts() {
    check(
        "f(a, *b, c=1, **d)\nf(x for x in y)\nf()(g)[h].i\n",
        "(call f a *b c=1 **d)\n(call f (genexp x (for x in y)))\n(call (call f) g)[h].i",
    );
    check("f(a=1, *b)\nf(**a, b=2)\n", "(call f *b a=1)\n(call f **a b=2)");
    check("x[1:2, ::3, a]\nx[1,]\nx[()]\nx[:]\nx[a:]\nx[:b]\nx[::]\nx[::c]\nx[a:b:c]\n",
        "x[(tuple (slice 1 2 _) (slice _ _ 3) a)]\nx[(tuple 1)]\nx[(tuple)]\nx[(slice _ _ _)]\nx[(slice a _ _)]\nx[(slice _ b _)]\nx[(slice _ _ _)]\nx[(slice _ _ c)]\nx[(slice a b c)]");
    check("x[..., None]\nx[*a]\nx[*a.b]\ny: T[*Ts]\n", "x[(tuple ... None)]\nx[(tuple *a)]\nx[(tuple *a.b)]\n(ann y T[(tuple *Ts)])");
}

fn collections_and_comprehensions() {
    check(
        "()\n(1,)\n[]\n[1, *a]\n{}\n{1}\n{*a, 2}\n{**a, 'b': 1}\n",
        "(tuple)\n(tuple 1)\n(list)\n(list 1 *a)\n(dict)\n(set 1)\n(set *a 2)\n(dict **a \"b\":1)",
    );
    check(
        "[x for a, b in y if c if d for e in f]\n{k: v for k in d}\n{x for x in y}\n(x for x in y if x)\n",
        "(listcomp x (for (tuple a b) in y if c if d) (for e in f))\n(dictcomp k:v (for k in d))\n(setcomp x (for x in y))\n(genexp x (for x in y if x))",
    );
    check("[x async for x in y]\n", "(listcomp x (for x in y))");
}

fn literals() {
    check(
        "0\n42\n1_000_000\n0x_FF\n0o17\n0B101\n00\n9223372036854775807\n9223372036854775808\n0xFFFFFFFFFFFFFFFFFFFF\n0b1_0000000000000000000000000000000000000000000000000000000000000000\n",
        "0\n42\n1000000\n255\n15\n5\n0\n9223372036854775807\nbig:9223372036854775808\nbig:1208925819614629174706175\nbig:18446744073709551616",
    );
    check("1.5\n1e10\n.5\n5.\n1_0.2_5e-1_0\n1e500\n2j\n1.5J\n1e3j\n", "1.5\n10000000000.0\n0.5\n5.0\n1.025e-9\ninf\n2.0j\n1.5j\n1000.0j");
    check("True\nFalse\nNone\n...\n", "True\nFalse\nNone\n...");
}

fn string_literals() {
    check(r#"'a\tb\n\\\'\"\x41\101\u00e9\U0001F600\z'"#, r#""a\tb\n\\'\"AAé😀\\z""#);
    check(r#"r'\d\n' R"\"" r'\\' r'''\''''"#, r#""\\d\\n\\\"\\\\\\'""#);
    check(r#"rb'\'' Rb"\x""#, r#"b"\\'\\x""#);
    check("'a' \"b\" '''c\nd''' \"\"\"e\"\"\"\n", r#""abc\nde""#);
    check("'a\\\nb'\n", r#""ab""#);
    check("u'x'\n", r#""x""#);
    check("b'a\\x00\\n' rb'\\x' B\"z\"\n", r#"b"a\0\n\\xz""#);
    check("''\n", r#""""#);
    check("'\\N{BULLET}'\n", r#""\\N{BULLET}""#);
}

fn bytes_are_bytes() {
    let value = only_expr("b'\\xff\\x00a'\n");
    match value.kind {
        ExprKind::Bytes(bytes) => assert_eq!(&*bytes, &[0xff, 0x00, b'a']),
        other => panic!("expected bytes, got {other:?}"),
    }
}

fn fstrings() {
    check("f'a{x}b'\n", r#"(f "a" {x} "b")"#);
    check("f'{x!r:>{w}.3}'\n", r#"(f {x!r:">" {w} ".3"})"#);
    check("f'{x=}'\n", r#"(f {x!r debug="x="})"#);
    check("f'{x = !s}'\n", r#"(f {x!s debug="x = "})"#);
    check("f'{x=:>10}'\n", r#"(f {x:">10" debug="x="})"#);
    check("f'{{a}}{x}}}'\n", r#"(f "{a}" {x} "}")"#);
    check("'a' f'{x}' 'b' f'c'\n", r#"(f "a" {x} "bc")"#);
    check("f''\n", "(f)");
    check("f'{a, b}{yield_}'\n", r#"(f {(tuple a b)} {yield_})"#);
    check("f\"{d['k']:%H:%M}\"\n", r#"(f {d["k"]:"%H:%M"})"#);
    check("rf'\\d{x}\\n'\n", r#"(f "\\d" {x} "\\n")"#);
    check("f'\\t{x}'\n", r#"(f "\t" {x})"#);
    check("f'''{\n  x\n}'''\n", "(f {x})");
    check("f'{x:{y}{z}}'\n", "(f {x:{y} {z}})");
    check("f'{f\"{x}\"}'\n", "(f {(f {x})})");
}

fn spans() {
    let source = "x = foo(a, b=1)\n";
    let module = parse_module(source);
    let StmtKind::Assign { targets, value } = &module.body[0].kind else { panic!("{:?}", module.body) };
    assert_eq!((targets[0].span.start, targets[0].span.end), (0, 1));
    assert_eq!((value.span.start, value.span.end), (4, 15));
    let ExprKind::Call { func, args, keywords } = &value.kind else { panic!() };
    assert_eq!((func.span.start, func.span.end), (4, 7));
    assert_eq!((args[0].span.start, args[0].span.end), (8, 9));
    assert_eq!((keywords[0].span.start, keywords[0].span.end), (11, 14));
    assert_eq!((module.body[0].span.start, module.body[0].span.end), (0, 15));

    let source = "obj.attr\n(x)\n";
    let module = parse_module(source);
    let StmtKind::Expr(Expr { kind: ExprKind::Attribute { attr_span, .. }, span }) = &module.body[0].kind else { panic!() };
    assert_eq!((span.start, span.end, attr_span.start, attr_span.end), (0, 8, 4, 8));
    let StmtKind::Expr(inner) = &module.body[1].kind else { panic!() };
    assert_eq!((inner.span.start, inner.span.end), (10, 11), "parentheses are not part of the span");

    // A decorated definition's span covers its decorators; name_span is the name token.
    let source = "@dec\ndef f(a, b: int = 2):\n    pass\n";
    let module = parse_module(source);
    let StmtKind::FunctionDef(function) = &module.body[0].kind else { panic!() };
    assert_eq!((module.body[0].span.start, module.body[0].span.end), (0, 35));
    assert_eq!((function.span.start, function.span.end), (0, 35));
    assert_eq!(&source[function.name_span.start as usize..function.name_span.end as usize], "f");
    let b = &function.params.args[1];
    assert_eq!(&source[b.span.start as usize..b.span.end as usize], "b: int");

    let source = "class K(Base):\n    pass\n";
    let module = parse_module(source);
    let StmtKind::ClassDef(class) = &module.body[0].kind else { panic!() };
    assert_eq!(&source[class.name_span.start as usize..class.name_span.end as usize], "K");

    // An `elif` spans from its keyword to the end of the chain.
    let source = "if a:\n    x\nelif b:\n    y\nelse:\n    z\n";
    let module = parse_module(source);
    let StmtKind::If { orelse, .. } = &module.body[0].kind else { panic!() };
    assert_eq!(&source[orelse[0].span.start as usize..orelse[0].span.end as usize], "elif b:\n    y\nelse:\n    z");

    // Multi-byte characters: spans are byte offsets.
    let source = "s = 'é'; t\n";
    let module = parse_module(source);
    assert_eq!((module.body[1].span.start, module.body[1].span.end), (10, 11));
}

fn tree_sitter_quirks() {
    // `*` applies to the whole postfix chain and binary operation, not to its first name.
    check(
        "[*a.b(), *c[0].d]\nx = *a.b(),\nf(1, *a.b())\n[*a + b]\n",
        "(list *(call a.b) *c[0].d)\n(= x (tuple *(call a.b)))\n(call f 1 *(call a.b))\n(list *(+ a b))",
    );
    let starred = only_expr("[*a.b()]\n");
    let ExprKind::List(elements) = &starred.kind else { panic!("{starred:?}") };
    let ExprKind::Starred(call) = &elements[0].kind else { panic!() };
    assert_eq!((elements[0].span.start, elements[0].span.end, call.span.start, call.span.end), (1, 7, 2, 7));
    // A parenthesized single target is not a tuple.
    check("(a): int = 1\nfor (x) in y: pass\n(b) = 2\n(c,) = 3\n", "(ann a int 1)\n(for x in y {pass})\n(= b 2)\n(= (tuple c) 3)");
    // `type(m).x = 1` is an assignment, not a type alias.
    check("def f(m):\n    type(m).x = 1\n    type(m)[0] = 2\n", "(def f (m) {(= (call type m).x 1); (= (call type m)[0] 2)})");
    // A raw string's escaped quote (tree-sitter folds it into the closing token).
    check("r'\\''\n", r#""\\'""#);
}

fn unsupported_statements_are_skipped() {
    // `type` aliases are valid Python that `ast` cannot hold: skipped, no error.
    check("type X = int\ntype Y[T] = list[T]\nc = 3\n", "(= c 3)");
}

fn match_statements_are_branches_on_unknown_conditions() {
    // The subject is evaluated; each case is taken on an unknown condition with the names
    // its pattern binds unknown; a last irrefutable case is the `else`.
    check("a = 1\nmatch a:\n    case 1:\n        pass\nb = 2\n", "(= a 1)\n(if True {a; (if (cmp a == 1) {pass})})\n(= b 2)");
    check("match f():\n    case 1:\n        pass\n", "(if True {(call f); (if (await ...) {pass})})");
    check(
        "match a:\n    case 'x' | 'y':\n        pass\n    case _:\n        pass\n",
        "(if True {a; (if (or (cmp a == \"x\") (cmp a == \"y\")) {pass} else {pass})})",
    );
    check(
        "match p:\n    case Point(x=0, y=y0) as q:\n        f(y0)\n    case [first, *rest] | {'k': first, **rest}:\n        g(first)\n    case Color.RED:\n        pass\n    case other:\n        h(other)\n",
        "(if True {p; (if (await ...) {(= y0 (await ...)); (= q (await ...)); (call f y0)} else {(if (await ...) {(= first (await ...)); (= rest (await ...)); (call g first)} else {(if (await ...) {pass} else {(= other p); (call h other)})})})})",
    );
    // A yield inside a `match` makes the function a generator.
    check(
        "def f(x):\n    match x:\n        case 1:\n            yield x\n",
        "(def f (x) generator {(if True {x; (if (cmp x == 1) {(yield x)})})})",
    );
}

fn syntax_errors_keep_statements_before_the_first() {
    check_errors("x = 1\ndef f(\ny = 2\n", "(= x 1)", "11..12 '(' was never closed");
    check_errors("x = 1\nif x\n    y = 2\nz = 3\n", "(= x 1)", "10..10 expected ':'");
    check_errors("a = 1\nx = 1 +\ny = 3\n", "(= a 1)", "10..13 invalid syntax");
    check_errors("x = )\n", "", "0..5 invalid syntax");
    check_errors("f(a", "", "1..2 '(' was never closed");
    check_errors("a = 1\nb = [1,\n", "(= a 1)", "10..11 '[' was never closed");
}

fn a_missing_line_break_tree_sitter_hides_is_still_an_error() {
    // tree-sitter marks the line break missing between `return (a, b)` and `c` with a
    // hidden node; the statements after were silently dropped. Python 3.11:
    // `SyntaxError: invalid syntax`, at the second `nxt`.
    check_errors("x = 1\ndef f(nxt, key):\n    return (nxt, key) nxt\n\ny = 2\n", "(= x 1)", "45..48 invalid syntax");
}

fn good_statements_inside_an_error_node_are_kept() {
    // tree-sitter's recovery wraps this whole file in one (extra) ERROR node; the imports
    // before the error are still whole statements.
    let source = "import a\nimport b\n@d\nclass C:\n    def f(self):\n        def g():\n            (bar.\n        baz)\n            (bar.\n        baz(\n        ))\n";
    let module = parse_module(source);
    assert_eq!(dump_body(&module.body), "(import a)\n(import b)");
    assert!(!module.errors.is_empty());
    assert!(module.errors[0].span.start >= 18, "{}", format_errors(&module));
}

fn indentation_errors() {
    check_errors("a = 1\n  b = 2\nc = 3\n", "(= a 1)", "8..13 unexpected indent");
    check_errors("  x = 1\n", "", "2..7 unexpected indent");
    check_errors(
        "if x:\n        a = 1\n    b = 2\nc = 3\n",
        "(if x {(= a 1)})",
        "24..29 unindent does not match any outer indentation level",
    );
    check_errors("def f():\n    a = 1\n      b = 2\n", "", "25..30 unexpected indent");
    check_errors("x = 0\nif x:\npass\n", "(= x 0)", "12..16 expected an indented block after 'if' statement on line 2");
    check_errors("def f():\n", "", "9..9 expected an indented block after function definition on line 1");
    check_errors("if x:\n\ta\n        b\n", "", "17..18 inconsistent use of tabs and spaces in indentation");
    // Blank lines and comments do not count; a continuation line is not a statement start.
    check("if x:\n    a = (1,\n  2)\n\n  # c\n    b\n", "(if x {(= a (tuple 1 2)); b})");
}

fn python_errors_tree_sitter_accepts() {
    check_errors("print 'hi'\n", "", "0..10 Missing parentheses in call to 'print'. Did you mean print(...)?");
    // Valid Python 3 that tree-sitter reads as Python 2.
    check("print >>sys.stderr, 'a', b\nprint >> f\n", "(tuple (>> print sys.stderr) \"a\" b)\n(>> print f)");
    check_errors("return 1\n", "", "0..8 'return' outside function");
    check_errors("yield 1\n", "", "0..7 'yield' outside function");
    check_errors("break\n", "", "0..5 'break' outside loop");
    check_errors("for x in y:\n    def f():\n        continue\n", "", "33..41 'continue' not properly in loop");
    check_errors("f(a=1, b)\n", "", "7..8 positional argument follows keyword argument");
    check_errors("f(**a, *b)\n", "", "7..9 iterable argument unpacking follows keyword argument unpacking");
    check_errors("def f(a=1, b): pass\n", "", "11..12 parameter without a default follows parameter with a default");
    check_errors("def f(*): pass\n", "", "6..7 named arguments must follow bare *");
    check_errors("x = 012\n", "", "4..7 leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
    check_errors("x = 10L\n", "", "4..7 invalid decimal literal");
    check_errors("x = b'a' 'b'\n", "", "4..12 cannot mix bytes and nonbytes literals");
    check_errors("x = '\\x4'\n", "", "4..9 (unicode error) truncated \\xXX escape");
    check_errors("x = b'é'\n", "", "4..9 bytes can only contain ASCII literal characters");
    check_errors("a = 1\nx <> y\n", "(= a 1)", "8..10 invalid syntax");
    check_errors("f'{x!z}'\n", "", "4..6 f-string: invalid conversion character 'z': expected 's', 'r', or 'a'");
    check_errors("f(x for x in y, 1)\n", "", "1..18 Generator expression must be parenthesized");
    check_errors("f(1, x for x in y)\n", "", "5..10 invalid syntax");
    check_errors("[x for x in 1, 2]\n", "", "12..16 invalid syntax");
    // Statements after the first error are dropped even when they are fine.
    check_errors("a = 1\nreturn\nb = 2\n", "(= a 1)", "6..12 'return' outside function");
    check(
        "def f():\n    for x in y:\n        if x:\n            break\n    while 1:\n        continue\n",
        "(def f () {(for x in y {(if x {break})}); (while 1 {continue})})",
    );
}

fn missing_tokens() {
    check_errors("a = 1\nclass A(B:\n    pass\n", "(= a 1)", "15..15 expected ')'");
    check_errors("def f(:\n    pass\n", "", "6..6 expected ')'");
    // Errors inside a function drop the whole top-level statement.
    check_errors("x = 1\ndef f():\n    y = [1,\n", "(= x 1)", "23..24 '[' was never closed");
}

fn error_messages_are_pythons() {
    assert_eq!(first_error("while True print(1)\n"), "expected ':'");
    assert_eq!(first_error("x = (1, 2\ny = 3\n"), "'(' was never closed");
    assert_eq!(first_error("foo(]\n"), "invalid syntax");
    assert_eq!(first_error("class C\n    pass\n"), "expected ':'");
}

fn degenerate_inputs_return_promptly() {
    let empty = parse_module("");
    assert!(empty.body.is_empty() && empty.errors.is_empty());
    let blank = parse_module("\n\n   \n# only a comment\n");
    assert!(blank.body.is_empty() && blank.errors.is_empty(), "{}", format_errors(&blank));

    // Binary: keep what precedes the line with the first NUL, report the NUL.
    let binary = parse_module("a = 1\nb = 2\0\0\x01\x02garbage\nc = 3\n");
    assert_eq!(dump_body(&binary.body), "(= a 1)");
    assert_eq!(format_errors(&binary), "11..12 source code cannot contain null bytes");

    let noise: String = (0..20_000u32).map(|i| char::from_u32((i * 7919 + 13) % 0x2FF + 1).unwrap_or('?')).collect();
    let module = parse_module(&noise);
    assert!(!module.errors.is_empty());
    assert!(module.errors.len() <= super::MAX_ERRORS);

    let replacement = parse_module("x = '\u{FFFD}\u{FFFD}'\n\u{FFFD}\u{FFFD} = 1\n");
    assert_eq!(dump_body(&replacement.body), "(= x \"\u{FFFD}\u{FFFD}\")");
    assert!(!replacement.errors.is_empty());
}

fn deep_nesting_is_an_error_not_a_crash() {
    for (open, close) in [("(", ")"), ("[", "]"), ("{", "}"), ("f(", ")"), ("-(", ")"), ("(1+", ")"), ("x[", "]")] {
        let source = format!("a = 1\nb = {}0{}\nc = 3\n", open.repeat(5_000), close.repeat(5_000));
        let module = parse_module(&source);
        assert_eq!(dump_body(&module.body), "(= a 1)", "for {open}");
        assert_eq!(module.errors.len(), 1, "for {open}: {}", format_errors(&module));
        assert_eq!(module.errors[0].message, "too deeply nested");
    }
    let nested_blocks: String =
        (0..300).map(|depth| format!("{}if x:\n", " ".repeat(depth))).collect::<String>() + &" ".repeat(300) + "pass\n";
    assert_eq!(first_error(&nested_blocks), "too many levels of indentation");
    let nested_ok: String = (0..99).map(|depth| format!("{}if x:\n", " ".repeat(depth))).collect::<String>() + &" ".repeat(99) + "pass\n";
    assert_eq!(first_error(&nested_ok), "");
    let long_sum = format!("x = {}\n", vec!["1"; 5_000].join(" + "));
    assert_eq!(first_error(&long_sum), "too deeply nested");
    let long_and = format!("x = {}\n", vec!["a"; 5_000].join(" and "));
    assert_eq!(first_error(&long_and), "");
    let unclosed = "(".repeat(50_000);
    assert!(!parse_module(&unclosed).errors.is_empty());
}

fn moderate_nesting_lowers() {
    let source = format!("x = {}0{}\n", "(".repeat(150), ")".repeat(150));
    check(&source, "(= x 0)");
    // Long polynomials (sympy has them) are chains, not recursion.
    let sum = format!("x = {}\n", vec!["-x**9*y**8*z"; 600].join(" + "));
    let module = parse_module(&sum);
    assert!(module.errors.is_empty(), "{}", format_errors(&module));
}

/// The table `KindName` reads names every node as tree-sitter does (errors, aliases, tokens).
fn kind_names_are_tree_sitters() {
    let source = "import a.b as c\nfrom . import d\nx: int = [i async for i in y if i]\nmatch p:\n    case {'k': [1, *r]} | (a as b): pass\nwith open(f) as (g, h): yield from z\nlambda *a, **k: a @ k\nf'{x!r:>{w}}' b'\\x00'\ndef f(a, /, b=1, *, c): ...\nclass C(B, metaclass=M): global q; nonlocal r\ntry: 1\nexcept* E as e: del e\nwhile (n := n - 1) > 0: continue\nbroken = (1 +\nprint(\n";
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_python::LANGUAGE.into()).expect("the grammar loads");
    let tree = parser.parse(source, None).expect("a tree");
    let (mut cursor, mut seen, mut errors) = (tree.walk(), 0, 0);
    loop {
        let node = cursor.node();
        assert_eq!(node.kind_name(), node.kind(), "node {} at {:?}", node.kind_id(), node.byte_range());
        (seen, errors) = (seen + 1, errors + usize::from(node.is_error()));
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        while cursor.goto_parent() && !cursor.goto_next_sibling() {}
        if cursor.node() == tree.root_node() {
            break;
        }
    }
    assert!(seen > 200 && errors > 0, "{seen} nodes, {errors} errors");
}

fn ten_thousand_lines() {
    let mut source = String::new();
    for index in 0..2_000 {
        source.push_str(&format!(
            "def function_{index}(x, y=2, *args, **kwargs):\n    z = jnp.dot(x, y) + {index}\n    return f'{{z!r}}' if z else [a for a in args]\n\nvalue_{index} = function_{index}(1)\n"
        ));
    }
    assert_eq!(source.lines().count(), 10_000);
    let module = parse_module(&source);
    assert!(module.errors.is_empty(), "{}", format_errors(&module));
    assert_eq!(module.body.len(), 4_000);
}

crate::unit_tests::list![
    simple_statements,
    imports,
    compound_statements,
    function_definitions,
    class_definitions,
    lambdas,
    operators,
    calls_and_subscripts,
    collections_and_comprehensions,
    literals,
    string_literals,
    bytes_are_bytes,
    fstrings,
    spans,
    tree_sitter_quirks,
    unsupported_statements_are_skipped,
    match_statements_are_branches_on_unknown_conditions,
    syntax_errors_keep_statements_before_the_first,
    a_missing_line_break_tree_sitter_hides_is_still_an_error,
    good_statements_inside_an_error_node_are_kept,
    indentation_errors,
    python_errors_tree_sitter_accepts,
    missing_tokens,
    error_messages_are_pythons,
    degenerate_inputs_return_promptly,
    deep_nesting_is_an_error_not_a_crash,
    moderate_nesting_lowers,
    kind_names_are_tree_sitters,
    ten_thousand_lines
];
