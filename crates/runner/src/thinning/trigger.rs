//! `output.when`: a condition over one frame's reductions (`v_max > 0.3 and u_mean < 0.5`),
//! parsed once and evaluated per frame on the writer's thread.
//!
//! The language is small on purpose: numbers, names of one-value-per-frame arrays
//! (`FIELD_min`, `FIELD_max`, `FIELD_mean`, `FIELD_sum`), `+ - * /`, comparisons
//! (`< <= > >= == !=`), `and`, `or`, `not` (also `&&`, `||`, `!`) and parentheses, with the
//! usual precedence. Arithmetic is in f64; a comparison with NaN is false. Types are checked
//! when the text is parsed, so a run never starts with a condition that cannot be evaluated.

use std::fmt;

/// Most tokens a condition may have: the parser and the evaluation recurse along the tree,
/// whose depth a long chain (`a + a + ...`) makes as deep as its length, on threads whose
/// stacks are small.
const MAX_TOKENS: usize = 512;
/// Most nested parentheses, `not`s and signs.
const MAX_NESTING: usize = 32;

/// Why a condition does not parse: the column (1-based, in characters) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerError {
    /// Column of the offending character or token, 1 for the first.
    pub column: usize,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for TriggerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

impl std::error::Error for TriggerError {}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Compare {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// A parsed number-valued expression.
#[derive(Debug, Clone, PartialEq)]
enum Num {
    Const(f64),
    /// Index into [`Trigger::names`].
    Var(usize),
    Neg(Box<Num>),
    Arith(Arith, Box<Num>, Box<Num>),
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
enum Cond {
    Compare(Compare, Num, Num),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// Either kind while parsing; the grammar's types are checked as the tree is built.
enum Node {
    Num(Num),
    Cond(Cond),
}

/// A condition over the reductions of one frame, e.g. `v_max > 0.3`.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    text: String,
    names: Vec<String>,
    cond: Cond,
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Trigger {
    type Err = TriggerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Trigger::parse(s)
    }
}

impl Trigger {
    /// Parses `text`; errors say at which column and what was expected.
    pub fn parse(text: &str) -> Result<Trigger, TriggerError> {
        let tokens = tokenize(text)?;
        if let Some(t) = tokens.get(MAX_TOKENS) {
            return Err(TriggerError {
                column: t.column,
                message: format!("the condition is longer than {MAX_TOKENS} names, numbers and operators: shorten it"),
            });
        }
        let mut p = Parser { tokens, at: 0, names: Vec::new(), end: text.chars().count() + 1, nesting: 0 };
        let node = p.or()?;
        if let Some(t) = p.tokens.get(p.at) {
            return Err(TriggerError {
                column: t.column,
                message: format!("unexpected {}: expected `and`, `or` or the end", t.kind),
            });
        }
        match node {
            Node::Cond(cond) => Ok(Trigger { text: text.trim().to_owned(), names: p.names, cond }),
            Node::Num(_) => Err(TriggerError {
                column: 1,
                message: "this is a number, not a condition: compare it, e.g. `v_max > 0.3`".to_owned(),
            }),
        }
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The names it reads, each once, in order of first use.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether the condition holds when name `i` of [`Trigger::names`] has value `value(i)`.
    pub fn holds(&self, value: &dyn Fn(usize) -> f64) -> bool {
        cond(&self.cond, value)
    }
}

fn num(n: &Num, value: &dyn Fn(usize) -> f64) -> f64 {
    match n {
        Num::Const(c) => *c,
        Num::Var(i) => value(*i),
        Num::Neg(a) => -num(a, value),
        Num::Arith(op, a, b) => {
            let (a, b) = (num(a, value), num(b, value));
            match op {
                Arith::Add => a + b,
                Arith::Sub => a - b,
                Arith::Mul => a * b,
                Arith::Div => a / b,
            }
        }
    }
}

fn cond(c: &Cond, value: &dyn Fn(usize) -> f64) -> bool {
    match c {
        Cond::Compare(op, a, b) => {
            let (a, b) = (num(a, value), num(b, value));
            match op {
                Compare::Lt => a < b,
                Compare::Le => a <= b,
                Compare::Gt => a > b,
                Compare::Ge => a >= b,
                Compare::Eq => a == b,
                Compare::Ne => a != b,
            }
        }
        Cond::And(a, b) => cond(a, value) && cond(b, value),
        Cond::Or(a, b) => cond(a, value) || cond(b, value),
        Cond::Not(a) => !cond(a, value),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Number(f64),
    Name(String),
    And,
    Or,
    Not,
    Arith(Arith),
    Compare(Compare),
    Open,
    Close,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Number(n) => write!(f, "number {n}"),
            Kind::Name(n) => write!(f, "name `{n}`"),
            Kind::And => f.write_str("`and`"),
            Kind::Or => f.write_str("`or`"),
            Kind::Not => f.write_str("`not`"),
            Kind::Arith(op) => {
                let symbol = match op {
                    Arith::Add => "+",
                    Arith::Sub => "-",
                    Arith::Mul => "*",
                    Arith::Div => "/",
                };
                write!(f, "`{symbol}`")
            }
            Kind::Compare(op) => {
                let symbol = match op {
                    Compare::Lt => "<",
                    Compare::Le => "<=",
                    Compare::Gt => ">",
                    Compare::Ge => ">=",
                    Compare::Eq => "==",
                    Compare::Ne => "!=",
                };
                write!(f, "`{symbol}`")
            }
            Kind::Open => f.write_str("`(`"),
            Kind::Close => f.write_str("`)`"),
        }
    }
}

struct Token {
    kind: Kind,
    column: usize,
}

/// The tokens of `text`, each with its column (from 1).
fn tokenize(text: &str) -> Result<Vec<Token>, TriggerError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let (kind, len) = if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            number(&chars, i)?
        } else if c.is_ascii_alphabetic() || c == '_' {
            word(&chars, i)
        } else {
            operator(&chars, i)?
        };
        tokens.push(Token { kind, column: i + 1 });
        i += len;
    }
    Ok(tokens)
}

/// The number starting at `chars[i]` (digits and dots, then an optional exponent: e, an
/// optional sign, digits), and its length.
fn number(chars: &[char], i: usize) -> Result<(Kind, usize), TriggerError> {
    let digits_from = |mut end: usize, dot: bool| {
        while end < chars.len() && (chars[end].is_ascii_digit() || (dot && chars[end] == '.')) {
            end += 1;
        }
        end
    };
    let mut end = digits_from(i, true);
    if end < chars.len() && matches!(chars[end], 'e' | 'E') {
        let mut e = end + 1;
        if e < chars.len() && matches!(chars[e], '+' | '-') {
            e += 1;
        }
        if !(e < chars.len() && chars[e].is_ascii_digit()) {
            return Err(TriggerError { column: end + 1, message: "the exponent needs digits, e.g. 1e-3".to_owned() });
        }
        end = digits_from(e, false);
    }
    let s: String = chars[i..end].iter().collect();
    let n = s.parse::<f64>().map_err(|_| TriggerError { column: i + 1, message: format!("{s:?} is not a number") })?;
    Ok((Kind::Number(n), end - i))
}

/// The name or keyword (`and`, `or`, `not`) starting at `chars[i]`, and its length.
fn word(chars: &[char], i: usize) -> (Kind, usize) {
    let len = chars[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == '_').count();
    let s: String = chars[i..i + len].iter().collect();
    let kind = match s.as_str() {
        "and" => Kind::And,
        "or" => Kind::Or,
        "not" => Kind::Not,
        _ => Kind::Name(s),
    };
    (kind, len)
}

/// The operator or parenthesis at `chars[i]`, and its length.
fn operator(chars: &[char], i: usize) -> Result<(Kind, usize), TriggerError> {
    let c = chars[i];
    let two: String = chars[i..chars.len().min(i + 2)].iter().collect();
    Ok(match (two.as_str(), c) {
        ("<=", _) => (Kind::Compare(Compare::Le), 2),
        (">=", _) => (Kind::Compare(Compare::Ge), 2),
        ("==", _) => (Kind::Compare(Compare::Eq), 2),
        ("!=", _) => (Kind::Compare(Compare::Ne), 2),
        ("&&", _) => (Kind::And, 2),
        ("||", _) => (Kind::Or, 2),
        (_, '<') => (Kind::Compare(Compare::Lt), 1),
        (_, '>') => (Kind::Compare(Compare::Gt), 1),
        (_, '!') => (Kind::Not, 1),
        (_, '+') => (Kind::Arith(Arith::Add), 1),
        (_, '-') => (Kind::Arith(Arith::Sub), 1),
        (_, '*') => (Kind::Arith(Arith::Mul), 1),
        (_, '/') => (Kind::Arith(Arith::Div), 1),
        (_, '(') => (Kind::Open, 1),
        (_, ')') => (Kind::Close, 1),
        (_, '=') => {
            let message = "`=` assigns nothing here: compare with `==`".into();
            return Err(TriggerError { column: i + 1, message });
        }
        _ => {
            let message =
                format!("unexpected {c:?}: write names, numbers, + - * /, < <= > >= == !=, and, or, not, ( )");
            return Err(TriggerError { column: i + 1, message });
        }
    })
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    names: Vec<String>,
    /// Column just past the text, for "expected ... at the end".
    end: usize,
    /// Parentheses, `not`s and signs open around the token being parsed.
    nesting: usize,
}

impl Parser {
    /// Counts one more level of nesting; errors past [`MAX_NESTING`].
    fn nest(&mut self) -> Result<(), TriggerError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(self.error(format!("more than {MAX_NESTING} nested parentheses, `not`s or signs: simplify")));
        }
        Ok(())
    }

    fn peek(&self) -> Option<&Kind> {
        self.tokens.get(self.at).map(|t| &t.kind)
    }

    fn column(&self) -> usize {
        self.tokens.get(self.at).map_or(self.end, |t| t.column)
    }

    fn error(&self, message: impl Into<String>) -> TriggerError {
        TriggerError { column: self.column(), message: message.into() }
    }

    fn condition(&self, node: Node, column: usize, what: &str) -> Result<Cond, TriggerError> {
        match node {
            Node::Cond(c) => Ok(c),
            Node::Num(_) => Err(TriggerError {
                column,
                message: format!("{what} takes conditions, not numbers: compare the number, e.g. `v_max > 0.3`"),
            }),
        }
    }

    fn number(&self, node: Node, column: usize) -> Result<Num, TriggerError> {
        match node {
            Node::Num(n) => Ok(n),
            Node::Cond(_) => Err(TriggerError {
                column,
                message: "a condition where a number belongs: put parentheses around comparisons joined by \
                          `and`/`or`, and compare numbers only"
                    .to_owned(),
            }),
        }
    }

    fn or(&mut self) -> Result<Node, TriggerError> {
        let column = self.column();
        let mut left = self.and()?;
        while self.peek() == Some(&Kind::Or) {
            self.at += 1;
            let right_column = self.column();
            let right = self.and()?;
            let a = self.condition(left, column, "`or`")?;
            let b = self.condition(right, right_column, "`or`")?;
            left = Node::Cond(Cond::Or(Box::new(a), Box::new(b)));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Node, TriggerError> {
        let column = self.column();
        let mut left = self.not()?;
        while self.peek() == Some(&Kind::And) {
            self.at += 1;
            let right_column = self.column();
            let right = self.not()?;
            let a = self.condition(left, column, "`and`")?;
            let b = self.condition(right, right_column, "`and`")?;
            left = Node::Cond(Cond::And(Box::new(a), Box::new(b)));
        }
        Ok(left)
    }

    fn not(&mut self) -> Result<Node, TriggerError> {
        if self.peek() == Some(&Kind::Not) {
            self.nest()?;
            self.at += 1;
            let column = self.column();
            let inner = self.not()?;
            self.nesting -= 1;
            return Ok(Node::Cond(Cond::Not(Box::new(self.condition(inner, column, "`not`")?))));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Node, TriggerError> {
        let column = self.column();
        let left = self.sum()?;
        let Some(Kind::Compare(op)) = self.peek().cloned() else { return Ok(left) };
        self.at += 1;
        let right_column = self.column();
        let right = self.sum()?;
        let (a, b) = (self.number(left, column)?, self.number(right, right_column)?);
        if let Some(Kind::Compare(_)) = self.peek() {
            return Err(
                self.error("comparisons do not chain: join them with `and`, e.g. `0.1 < v_max and v_max < 0.3`")
            );
        }
        Ok(Node::Cond(Cond::Compare(op, a, b)))
    }

    fn sum(&mut self) -> Result<Node, TriggerError> {
        let column = self.column();
        let mut left = self.product()?;
        while let Some(Kind::Arith(op @ (Arith::Add | Arith::Sub))) = self.peek().cloned() {
            self.at += 1;
            let right_column = self.column();
            let right = self.product()?;
            let (a, b) = (self.number(left, column)?, self.number(right, right_column)?);
            left = Node::Num(Num::Arith(op, Box::new(a), Box::new(b)));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Node, TriggerError> {
        let column = self.column();
        let mut left = self.unary()?;
        while let Some(Kind::Arith(op @ (Arith::Mul | Arith::Div))) = self.peek().cloned() {
            self.at += 1;
            let right_column = self.column();
            let right = self.unary()?;
            let (a, b) = (self.number(left, column)?, self.number(right, right_column)?);
            left = Node::Num(Num::Arith(op, Box::new(a), Box::new(b)));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, TriggerError> {
        if self.peek() == Some(&Kind::Arith(Arith::Sub)) {
            self.nest()?;
            self.at += 1;
            let column = self.column();
            let inner = self.unary()?;
            self.nesting -= 1;
            return Ok(Node::Num(Num::Neg(Box::new(self.number(inner, column)?))));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Node, TriggerError> {
        let Some(token) = self.tokens.get(self.at) else {
            return Err(self.error("the condition ends too soon: expected a name, a number or `(`"));
        };
        let node = match &token.kind {
            Kind::Number(n) => Node::Num(Num::Const(*n)),
            Kind::Name(name) => {
                let i = match self.names.iter().position(|n| n == name) {
                    Some(i) => i,
                    None => {
                        self.names.push(name.clone());
                        self.names.len() - 1
                    }
                };
                Node::Num(Num::Var(i))
            }
            Kind::Open => {
                self.nest()?;
                self.at += 1;
                let inner = self.or()?;
                if self.peek() != Some(&Kind::Close) {
                    return Err(self.error("expected `)` to close the `(`"));
                }
                self.nesting -= 1;
                inner
            }
            other => return Err(self.error(format!("unexpected {other}: expected a name, a number or `(`"))),
        };
        self.at += 1;
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str, values: &[(&str, f64)]) -> bool {
        let t = Trigger::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let v = |i: usize| values.iter().find(|(n, _)| *n == t.names()[i]).map_or(f64::NAN, |(_, v)| *v);
        t.holds(&v)
    }

    #[test]
    fn conditions_evaluate_with_the_usual_precedence() {
        assert!(eval("v_max > 0.3", &[("v_max", 0.31)]));
        assert!(!eval("v_max > 0.3", &[("v_max", 0.3)]));
        assert!(eval("v_max >= 0.3", &[("v_max", 0.3)]));
        assert!(eval("u_mean + 2 * v_mean < 1", &[("u_mean", 0.5), ("v_mean", 0.2)]));
        assert!(!eval("(u_mean + 2) * v_mean < 0.5", &[("u_mean", 0.5), ("v_mean", 0.2)]));
        assert!(eval("a > 1 or b > 1 and c > 1", &[("a", 2.0), ("b", 0.0), ("c", 0.0)]));
        assert!(!eval("(a > 1 or b > 1) and c > 1", &[("a", 2.0), ("b", 0.0), ("c", 0.0)]));
        assert!(eval("not a > 1 && !(b == 2) || a != a", &[("a", 0.0), ("b", 3.0)]));
        assert!(eval("-a < -1e-3", &[("a", 0.5)]));
        assert!(eval("a - b - c == 1", &[("a", 4.0), ("b", 2.0), ("c", 1.0)]), "left-associative");
        assert!(eval("a / b / c == 1", &[("a", 4.0), ("b", 2.0), ("c", 2.0)]), "left-associative");
        assert!(!eval("v_max > 0.3", &[]), "NaN compares false");
        let t = Trigger::parse("v_max > 0.3 and u_min < v_max").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.names(), ["v_max", "u_min"], "each name once, in order");
        assert_eq!(t.to_string(), "v_max > 0.3 and u_min < v_max");
    }

    #[test]
    fn deep_or_long_conditions_are_refused_not_overflowing_the_stack() {
        let deep = format!("{}v_max > 0{}", "(".repeat(100), ")".repeat(100));
        let e = Trigger::parse(&deep).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("column 33") && e.contains("nested"), "{e}");
        let deeper = format!("{}v_max > 0{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(Trigger::parse(&deeper).is_err());
        let nots = format!("{}v_max > 0", "not ".repeat(20_000));
        assert!(Trigger::parse(&nots).is_err());
        let signs = format!("{}v_max > 0", "-".repeat(20_000));
        assert!(Trigger::parse(&signs).is_err());
        let long = format!("{} > 1", vec!["v_max"; 60_000].join(" + "));
        let e = Trigger::parse(&long).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("longer than 512"), "{e}");
        // Within the limits, deep enough for any real condition.
        let nested = format!("{}v_max > 0{}", "(".repeat(32), ")".repeat(32));
        assert!(Trigger::parse(&nested).is_ok());
        let sum = format!("{} > 1", vec!["v_max"; 250].join(" + "));
        assert!(eval(&sum, &[("v_max", 0.01)]));
    }

    #[test]
    fn errors_name_the_column_and_what_to_write() {
        let cases = [
            ("v_max", 1, "not a condition"),
            ("v_max > ", 9, "ends too soon"),
            ("v_max = 0.3", 7, "=="),
            ("v_max > 0.3 and u_min", 17, "not numbers"),
            ("0.1 < v_max < 0.3", 13, "do not chain"),
            ("(v_max > 0.3", 13, "`)`"),
            ("v_max > 0.3)", 12, "unexpected `)`"),
            ("v_max # 2", 7, "unexpected '#'"),
            ("(a > 1) + 2 > 3", 1, "a condition where a number belongs"),
            ("not 3", 5, "not numbers"),
            ("v_max > 1e", 10, "exponent needs digits"),
            ("v_max > 1e+", 10, "exponent needs digits"),
        ];
        for (text, column, says) in cases {
            match Trigger::parse(text) {
                Ok(t) => panic!("{text:?} parsed as {t:?}"),
                Err(e) => {
                    assert_eq!(e.column, column, "{text:?}: {e}");
                    assert!(e.message.contains(says), "{text:?}: {e}");
                }
            }
        }
    }
}
