//! The dim parser against tables of valid texts (exact dims, exact canonical text, and tract reading
//! that text back to the same dims) and of errors (exact messages), and hostile sizes.

use super::*;
use tract_onnx::prelude::{SymbolScope, SymbolValues, TDim};

fn dim(text: &str) -> Result<String, String> {
    let scope = SymbolScope::default();
    parse_dim(&scope, text).map(|d| d.to_string()).map_err(|e| e.to_string())
}

/// The canonical text of an expression.
fn canonical(text: &str) -> String {
    super::parse::canonical_dim(text).unwrap()
}

/// tract's own reading of a dim's canonical text has the dim's value (see [`tract_reads_back`]).
fn tract_reads_dim_back(text: &str) {
    let scope = SymbolScope::default();
    let ours = parse_dim(&scope, text).unwrap();
    let fresh = SymbolScope::default();
    let canon = canonical(text);
    let theirs = fresh.parse_tdim(&canon).unwrap();
    if !canon.contains('/') {
        assert_same_value(&fresh, &theirs, &scope, &ours, &canon);
    }
}

/// tract's own reading of an assumption's canonical text must be the comparison we built, of the same
/// dims. tract builds them with the same operations (grouping `a+b-c` as `a+(b-c)`), but its
/// simplification iterates hash maps, so the trees may differ in form: the dims are compared by value,
/// with every symbol set to 1, to 97, and to distinct values from 1000 up. Not where the text divides:
/// tract rewrites divisions in ways that hold only for non-negative numerators (as dims have), and a
/// numerator of the text may be negative at these values.
fn tract_reads_back(scope: &SymbolScope, a: &Assumption) {
    let fresh = SymbolScope::default();
    fresh.add_assertion(a.tract_text()).unwrap();
    let added = fresh.all_assertions().remove(0);
    let Some((lhs, rhs)) = a.comparison.sides_of(&added) else {
        panic!("tract reads {:?} as {added:?}", a.tract_text())
    };
    if a.tract_text().contains('/') {
        return;
    }
    assert_same_value(&fresh, lhs, scope, &a.lhs, a.tract_text());
    assert_same_value(&fresh, rhs, scope, &a.rhs, a.tract_text());
}

/// `got` (symbols of `got_scope`) and `want` (of `want_scope`) have the same values, symbols matched by
/// name.
fn assert_same_value(got_scope: &SymbolScope, got: &TDim, want_scope: &SymbolScope, want: &TDim, text: &str) {
    let names: Vec<String> = want_scope.all_symbols().iter().map(|s| s.to_string()).collect();
    for assign in [|_: usize| 1i64, |_| 97, |i| 1000 + 7 * i as i64] {
        let (mut g, mut w) = (SymbolValues::default(), SymbolValues::default());
        for (i, name) in names.iter().enumerate() {
            g.set(&got_scope.sym(name), assign(i));
            w.set(&want_scope.sym(name), assign(i));
        }
        assert_eq!(got.maybe_eval_to_i64(&g), want.maybe_eval_to_i64(&w), "{text:?}: {got} against {want}");
    }
}

#[test]
fn valid_dims() {
    // text, the dim (tract's unambiguous printing), the canonical text handed to tract. tract rewrites
    // `(-N)/2` as `-(N/2)`: the same under its truncating division.
    let table: &[(&str, &str, &str)] = &[
        ("12", "12", "12"),
        ("-12", "-12", "-12"),
        ("0007", "7", "7"),
        ("N", "N", "N"),
        ("  N + 1\t", "N+1", "N+1"),
        ("2*N+1", "1+2*N", "2*N+1"),
        ("N-2", "N+-2", "N-2"),
        ("(N+1)/2", "(N+1)/2", "(N+1)/2"),
        ("N*M/2", "((N)*(M))/2", "(N*M)/2"),
        ("N*(M/2)", "(N)*((M)/2)", "N*(M/2)"),
        ("N/2/3", "(N)/6", "N/2/3"),
        ("N/(1+1)", "(N)/2", "N/2"),
        ("N/1", "N", "N"),
        ("7/2", "3", "3"),
        ("-7/2", "-4", "-4"),
        ("-(7/2)", "-3", "-3"),
        ("2*-3", "-6", "-6"),
        ("2-3-4", "-5", "-5"),
        ("N-(M-1)", "N+1+-1*M", "N-(M-1)"),
        ("N-M-1", "N+-1+-1*M", "N-M-1"),
        // tract reads `a+b-c` as `a+(b-c)`: the canonical text keeps our grouping (found by fuzzing).
        ("N+2-3", "N+-1", "N+2-3"),
        ("a+2-b+3-c", "a+5+-1*b+-1*c", "a+2-b+3-c"),
        ("--N", "N", "N"),
        ("---N", "-1*N", "-N"),
        ("-(-N)", "N", "-(-N)"),
        ("-N*M", "-1*(N)*(M)", "-N*M"),
        ("-(N+1)", "-1+-1*N", "-(N+1)"),
        ("-N/2", "-1*(N)/2", "(-N)/2"),
        ("min(N,3)", "min(N,3)", "min(N,3)"),
        ("max(0, N - 2)", "max(0,N+-2)", "max(0,N-2)"),
        ("min(4,2,9)", "2", "2"),
        ("max(N)", "N", "N"),
        ("min(max(min(N)))", "N", "N"),
        ("min(N,M)+1", "1+min(N,M)", "min(N,M)+1"),
        ("unk__12*2", "2*unk__12", "unk__12*2"),
        ("s0+s1", "s0+s1", "s0+s1"),
        ("batch.size", "batch.size", "batch.size"),
        ("_x", "_x", "_x"),
        ("min", "min", "min"),
        ("9223372036854775807", "9223372036854775807", "9223372036854775807"),
        ("N*9223372036854775807", "9223372036854775807*N", "N*9223372036854775807"),
    ];
    let mut failures = vec![];
    for (text, printed, canon) in table {
        match dim(text) {
            Ok(got) if got == *printed => {}
            other => failures.push(format!("{text:?}: want {printed:?}, got {other:?}")),
        }
        let got = canonical(text);
        if got != *canon {
            failures.push(format!("{text:?}: canonical text {got:?}, want {canon:?}"));
        }
        tract_reads_dim_back(text);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tract_reads_sums_and_differences_to_the_same_values() {
    // tract reads `a+b-c` as `a+(b-c)`: the same value (found by fuzzing, where the forms differed).
    let text = "min(N-r+2-3, M+(K-2)-M*K+1)-(N+1)";
    assert_eq!(canonical(text), "min(N-r+2-3,M+K-2-M*K+1)-(N+1)");
    tract_reads_dim_back(text);
    let scope = SymbolScope::default();
    for a in parse_assumption(&scope, "N-r+2-3==M+K-2-M*K+1").unwrap() {
        tract_reads_back(&scope, &a);
    }
}

/// A text, the canonical text of each assumption in it, the symbols of each.
type AssumptionCase = (&'static str, &'static [&'static str], &'static [&'static [&'static str]]);

#[test]
fn valid_assumptions() {
    let table: &[AssumptionCase] = &[
        ("N>=2", &["N>=2"], &[&["N"]]),
        (" N >= 2 ", &["N>=2"], &[&["N"]]),
        ("N<=M", &["N<=M"], &[&["N", "M"]]),
        ("N<M", &["N<M"], &[&["N", "M"]]),
        ("N>M", &["N>M"], &[&["N", "M"]]),
        ("N==2*M", &["N==2*M"], &[&["N", "M"]]),
        ("N>=2 && M==N+1", &["N>=2", "M==N+1"], &[&["N"], &["M", "N"]]),
        ("P+S<4096", &["P+S<4096"], &[&["P", "S"]]),
        ("N*M/2 >= -N", &["(N*M)/2>=-N"], &[&["N", "M"]]),
        ("N==2*M && M==K+1", &["N==2*M", "M==K+1"], &[&["N", "M"], &["M", "K"]]),
    ];
    for (text, canon, symbols) in table {
        let scope = SymbolScope::default();
        let parsed = parse_assumption(&scope, text).unwrap();
        let texts: Vec<&str> = parsed.iter().map(|a| a.tract_text()).collect();
        assert_eq!(&texts, canon, "{text:?}");
        let syms: Vec<Vec<&str>> = parsed.iter().map(|a| a.symbols().iter().map(String::as_str).collect()).collect();
        let want: Vec<Vec<&str>> = symbols.iter().map(|s| s.to_vec()).collect();
        assert_eq!(syms, want, "{text:?}");
        for a in &parsed {
            tract_reads_back(&scope, a);
        }
    }
    let scope = SymbolScope::default();
    let a = &parse_assumption(&scope, "N>=2").unwrap()[0];
    assert_eq!(a.lhs, TDim::Sym(scope.sym("N")));
    assert_eq!(a.comparison, Comparison::Ge);
    assert_eq!(a.rhs, TDim::Val(2));
}

#[test]
fn symbols_in_texts() {
    assert_eq!(symbols_in("N+M*N").unwrap(), vec!["N", "M"]);
    assert_eq!(symbols_in("max(0,unk__3-2)").unwrap(), vec!["unk__3"]);
    assert_eq!(symbols_in("N>=2 && K<N").unwrap(), vec!["N", "K"]);
    assert_eq!(symbols_in("3*4").unwrap(), Vec::<String>::new());
    assert_eq!(
        symbols_in("N>=").unwrap_err().to_string(),
        "the expression ends at column 4 where a number, a symbol or '(' is missing"
    );
}

#[test]
fn a_failed_parse_adds_no_symbol() {
    let scope = SymbolScope::default();
    assert!(parse_dim(&scope, "Fresh+").is_err());
    assert!(parse_assumption(&scope, "Other>=2 && Third").is_err());
    assert_eq!(scope.get("Fresh"), None);
    assert_eq!(scope.get("Other"), None);
}

fn dim_error(text: &str) -> String {
    dim(text).expect_err(text)
}

fn assumption_error(text: &str) -> String {
    parse_assumption(&SymbolScope::default(), text).map(|_| ()).expect_err(text).to_string()
}

#[test]
fn dim_errors() {
    let operand = "expected a number, a symbol, '(' or '-'";
    let table: &[(&str, String)] = &[
        ("", "the expression is empty".into()),
        ("  \t", "the expression is empty".into()),
        ("N+", "the expression ends at column 3 where a number, a symbol or '(' is missing".into()),
        ("N+*2", format!("unexpected '*' at column 3: {operand}")),
        ("*N", format!("unexpected '*' at column 1: {operand}")),
        ("()", format!("unexpected ')' at column 2: {operand}")),
        ("2N", "unexpected 'N' at column 2: expected an operator (+ - * /) before it".into()),
        ("2 (M)", "unexpected '(' at column 3: expected an operator (+ - * /) before it".into()),
        ("N (M)", "unknown function 'N' at column 1: only min(..) and max(..) are supported".into()),
        ("(N", "'(' at column 1 is never closed".into()),
        ("min(N,(M)", "'(' at column 4 is never closed".into()),
        ("N)", "')' at column 2 has no matching '('".into()),
        ("foo(N)", "unknown function 'foo' at column 1: only min(..) and max(..) are supported".into()),
        ("floor(N/2)", "unknown function 'floor' at column 1: only min(..) and max(..) are supported".into()),
        ("min()", "min() at column 1 needs at least one argument".into()),
        ("N+max( )", "max() at column 3 needs at least one argument".into()),
        ("min(N,)", format!("unexpected ')' at column 7: {operand}")),
        (
            "N/M",
            "division by a symbolic expression is not supported (at column 2): divide by a positive integer".into(),
        ),
        ("N/0", "division by 0 at column 2: the divisor must be a positive integer".into()),
        ("N/(2-4)", "division by -2 at column 2: the divisor must be a positive integer".into()),
        ("N%2", "unexpected character '%' at column 2".into()),
        ("N+é", "unexpected character 'é' at column 3".into()),
        ("N>=2", "unexpected '>=' at column 2: a dim is an expression such as N+1, not a comparison".into()),
        ("N && M", "unexpected '&&' at column 3: a dim is an expression such as N+1, not a condition".into()),
        ("N=2", "unexpected '=' at column 2: write == to compare".into()),
        ("N,M", "unexpected ',' at column 2: commas only separate the arguments of min(..) and max(..)".into()),
        ("(N,M)", "unexpected ',' at column 3: commas only separate the arguments of min(..) and max(..)".into()),
        (
            "99999999999999999999",
            "the integer 99999999999999999999 at column 1 is too large (the largest is 9223372036854775807)".into(),
        ),
        ("N+9223372036854775807", "the numbers in the expression could exceed 64-bit integers (at column 2)".into()),
        ("9223372036854775807+1", "the numbers in the expression could exceed 64-bit integers (at column 20)".into()),
        ("-9223372036854775807-2", "the numbers in the expression could exceed 64-bit integers (at column 21)".into()),
        ("N*4294967296*4294967296", "the numbers in the expression could exceed 64-bit integers (at column 13)".into()),
        // Nested divisions multiply their divisors into one denominator.
        (
            "(N/4294967296+1)/4294967296",
            "the numbers in the expression could exceed 64-bit integers (at column 17)".into(),
        ),
        ("min(a,min(b,min(c,min(d,e))))", "min and max nested more than 3 deep (at column 1)".into()),
        ("max(a,1+min(b,max(c,min(d,e)-1)))", "min and max nested more than 3 deep (at column 1)".into()),
    ];
    let mut failures = vec![];
    for (text, want) in table {
        match dim(text) {
            Err(got) if got == *want => {}
            other => failures.push(format!("{text:?}: want error {want:?}, got {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn assumption_errors() {
    let table: &[(&str, &str)] = &[
        ("N", "no comparison in the assumption at columns 1-1: compare two expressions, such as N>=2"),
        ("N>=2 && M+1", "no comparison in the assumption at columns 9-11: compare two expressions, such as N>=2"),
        (
            "N>=2>=3",
            "unexpected '>=' at column 5: an assumption is one comparison such as N>=2; join several with && or separate --assume flags",
        ),
        ("N>=2 || M>=2", "unexpected '||' at column 6: assumptions can only be joined with && (all of them hold)"),
        ("N>=2 & M>=1", "unexpected '&' at column 6: join assumptions with &&"),
        ("N != 2", "unexpected '!=' at column 3: comparisons are ==, <=, >=, < and >"),
        ("N>=2 &&", "the expression ends at column 8 where a number, a symbol or '(' is missing"),
        ("(N>=2)", "unexpected '>=' at column 3: compare whole expressions, not inside parentheses"),
        (">=2", "unexpected '>=' at column 1: expected a number, a symbol, '(' or '-'"),
        ("N>=M/K", "division by a symbolic expression is not supported (at column 5): divide by a positive integer"),
        ("min(N,M)>=1", "min and max cannot be used in assumptions (at column 1): tract cannot reason with them"),
        ("N>=2 && N<=max(M,4)", "min and max cannot be used in assumptions (at column 12): tract cannot reason with them"),
        (
            "N==N+1",
            "assuming N==N+1 makes N stand for an expression of itself (with the equalities already assumed): tract would substitute it without end",
        ),
        (
            "N==M+1 && M==2*N",
            "assuming N==M+1 makes N stand for an expression of itself (with the equalities already assumed): tract would substitute it without end",
        ),
    ];
    let mut failures = vec![];
    for (text, want) in table {
        let got = assumption_error(text);
        if got != *want {
            failures.push(format!("{text:?}: want error {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn equalities_already_assumed_count_for_cycles() {
    let scope = SymbolScope::default();
    for a in parse_assumption(&scope, "M==K+1 && K==2*P").unwrap() {
        scope.add_assertion(a.tract_text()).unwrap();
    }
    assert_eq!(
        parse_assumption(&scope, "P==M-3").unwrap_err().to_string(),
        "assuming P==M-3 makes P stand for an expression of itself (with the equalities already assumed): tract would substitute it without end"
    );
    // Not a substitution (no bare symbol on the left), and an acyclic one: both fine.
    assert_eq!(parse_assumption(&scope, "2*P==M-3 && Q==M").unwrap().len(), 2);
}

#[test]
fn limits() {
    // Deeper than 64 parentheses, within the length limit.
    let deep = format!("{}N{}", "(".repeat(65), ")".repeat(65));
    assert_eq!(dim_error(&deep), "nesting deeper than 64 parentheses at column 65");
    let ok = format!("{}N{}", "(".repeat(64), ")".repeat(64));
    assert_eq!(dim(&ok).unwrap(), "N");
    // Function calls count as parentheses.
    let calls = |n: usize| format!("{}N{}", "(min(N,".repeat(n), "))".repeat(n));
    assert_eq!(dim_error(&calls(33)), "nesting deeper than 64 parentheses at column 225");
    assert_eq!(dim_error(&calls(32)), "min and max nested more than 3 deep (at column 198)");
    // 256 operands are fine, 257 are not.
    let product = vec!["N"; 256].join("*");
    assert_eq!(dim(&product).unwrap(), vec!["(N)"; 256].join("*"));
    let sum = vec!["N"; 257].join("+");
    assert_eq!(dim_error(&sum), "more than 256 numbers and symbols in one expression (at column 513)");
    // Products of sums multiply out: 2^8 terms are fine, 2^9 are not.
    let factors = |n: usize| (0..n).map(|i| format!("(a{i}+b{i})")).collect::<Vec<_>>().join("*");
    assert!(dim(&factors(8)).is_ok());
    let nine = factors(9);
    let last_star = nine.rfind('*').unwrap() + 1;
    assert_eq!(
        dim_error(&nine),
        format!("the expression multiplies out to more than 256 terms (at column {last_star})")
    );
    // Four divisions of symbolic values are fine, a fifth is not (constants fold and do not count).
    assert_eq!(dim("(a+1)/2+(b+1)/2+(c+1)/2+(d+1)/2+7/2").unwrap(), "3+(a+1)/2+(b+1)/2+(c+1)/2+(d+1)/2");
    assert_eq!(
        dim_error("(a+1)/2+(b+1)/2+(c+1)/2+(d+1)/2+e/2"),
        "more than 4 divisions of symbolic values in one expression (at column 34)"
    );
    // Eight calls of min and max are fine, a ninth is not.
    let calls = |n: usize| (0..n).map(|i| format!("min(a{i},b{i})")).collect::<Vec<_>>().join("+");
    assert!(dim(&calls(8)).is_ok());
    let nine = calls(9);
    let last = nine.rfind("min").unwrap() + 1;
    assert_eq!(dim_error(&nine), format!("more than 8 calls of min and max in one expression (at column {last})"));
    // 4096 bytes are fine, 4097 are not.
    let long = format!("{}N", "-".repeat(4095));
    assert_eq!(dim(&long).unwrap(), "-1*N");
    assert_eq!(dim_error(&format!("-{long}")), "the expression is 4097 bytes long; the limit is 4096");
}

#[test]
fn hostile_sizes_are_quick_clear_errors() {
    let cases = [
        (
            format!("{}N{}", "(".repeat(10_000), ")".repeat(10_000)),
            "the expression is 20001 bytes long; the limit is 4096",
        ),
        (format!("{}N", "-".repeat(100_000)), "the expression is 100001 bytes long; the limit is 4096"),
        (vec!["N"; 20_000].join("*"), "the expression is 39999 bytes long; the limit is 4096"),
    ];
    for (text, want) in &cases {
        assert_eq!(dim_error(text), *want);
        assert_eq!(assumption_error(&format!("{text}>=1")), assumption_message(text));
    }
    // Within the length limit: 2,000 open parentheses stop at the 65th.
    let deep = format!("{}N{}", "(".repeat(2_000), ")".repeat(2_000));
    assert_eq!(dim_error(&deep), "nesting deeper than 64 parentheses at column 65");
}

/// The length error of `text>=1`.
fn assumption_message(text: &str) -> String {
    format!("the expression is {} bytes long; the limit is 4096", text.len() + 3)
}

#[test]
fn worst_canonical_text_is_read_by_tract_on_a_small_stack() {
    // The deepest canonical text the limits allow: negations inside 63 parentheses (each level adds
    // one), then a chain of divisions. tract reads it with its recursive parser on a 512 KiB stack.
    let mut text = "N".to_string();
    for _ in 0..63 {
        text = format!("-({text}+1)");
    }
    let text = format!("{text}/2/2/2/2>=0");
    let handle = std::thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(move || {
            let scope = SymbolScope::default();
            for a in parse_assumption(&scope, &text).unwrap() {
                scope.add_assertion(a.tract_text()).unwrap();
            }
            // And simplifies under it.
            let n = scope.sym("N");
            let d = ((TDim::from(n.clone()) + 1) / 2u64 - 1).simplify();
            (scope.all_assertions().len(), d.maybe_eval_to_i64(&SymbolValues::default().with(&n, 9)))
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), (1, Some(4)));
}

#[test]
fn excerpts() {
    assert_eq!(excerpt("N>=2"), "N>=2");
    let long = "N".repeat(100);
    assert_eq!(excerpt(&long), format!("{}... (100 bytes)", "N".repeat(60)));
}
