//! Strings matching a regular expression, for the simple patterns schemas carry: literals
//! and escapes, `.`, character classes with ranges and negation, `\d` `\w` `\s` (and
//! their negations), groups (`(...)`, `(?:...)`) with alternatives, the quantifiers `?`
//! `*` `+` `{n}` `{n,}` `{n,m}` (lazy or not), and the anchors `^` and `$` (taken as
//! the ends of the string). Anything else (look-around, back-references, word
//! boundaries, Unicode classes, named groups) is [`Unsupported`]: the caller then
//! writes a plain string, which the verifier will refuse, as documented.

use fastrand::Rng;

/// How many repetitions past its minimum an open quantifier (`*`, `+`, `{n,}`) writes at
/// most: enough to show repetition, short enough to stay readable.
const OPEN_REPEATS: u32 = 3;

/// The printable ASCII characters a `.` or a negated class draws from.
const PRINTABLE: (char, char) = (' ', '~');

/// One piece of a parsed pattern.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// This character.
    Literal(char),
    /// One character of these inclusive ranges (or, negated, of none of them).
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    /// Alternatives, each a sequence; one is chosen.
    Group(Vec<Vec<Node>>),
    /// The node, repeated between `min` and `max` times.
    Repeat(Box<Node>, u32, u32),
}

/// A pattern the generator does not cover, with the construct that stopped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub(crate) String);

/// Parses `pattern` into a node, or says which construct is not covered.
pub(crate) fn parse(pattern: &str) -> Result<Node, Unsupported> {
    let mut parser = Parser {
        chars: pattern.chars().collect(),
        at: 0,
    };
    let node = parser.alternatives()?;
    match parser.peek() {
        None => Ok(node),
        Some(c) => Err(Unsupported(format!("an unmatched `{c}`"))),
    }
}

/// Writes a string matching `node` to `out`.
pub(crate) fn generate(node: &Node, rng: &mut Rng, out: &mut String) {
    match node {
        Node::Literal(c) => out.push(*c),
        Node::Class { ranges, negated } => out.push(class_char(ranges, *negated, rng)),
        Node::Group(alternatives) => {
            if alternatives.is_empty() {
                return;
            }
            let chosen = &alternatives[rng.usize(..alternatives.len())];
            for node in chosen {
                generate(node, rng, out);
            }
        }
        Node::Repeat(node, min, max) => {
            for _ in 0..rng.u32(*min..=*max) {
                generate(node, rng, out);
            }
        }
    }
}

fn class_char(ranges: &[(char, char)], negated: bool, rng: &mut Rng) -> char {
    let inside = |c: char| ranges.iter().any(|(low, high)| (*low..=*high).contains(&c));
    if negated {
        // Draws until a printable character falls outside the ranges; a class that
        // excludes nearly all of them ends on the first printable one outside it.
        for _ in 0..64 {
            let c = rng.char(PRINTABLE.0..=PRINTABLE.1);
            if !inside(c) {
                return c;
            }
        }
        return (PRINTABLE.0..=PRINTABLE.1)
            .find(|c| !inside(*c))
            .unwrap_or('\u{a1}');
    }
    if ranges.is_empty() {
        return 'a';
    }
    let (low, high) = ranges[rng.usize(..ranges.len())];
    if low > high {
        return low;
    }
    rng.char(low..=high)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

const DIGITS: &[(char, char)] = &[('0', '9')];
const WORD: &[(char, char)] = &[('a', 'z'), ('A', 'Z'), ('0', '9'), ('_', '_')];
const SPACE: &[(char, char)] = &[(' ', ' '), ('\t', '\r')];

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// Alternatives up to a `)` or the end.
    fn alternatives(&mut self) -> Result<Node, Unsupported> {
        let mut alternatives = vec![self.sequence()?];
        while self.eat('|') {
            alternatives.push(self.sequence()?);
        }
        Ok(Node::Group(alternatives))
    }

    /// Atoms, each with its quantifier, up to a `|`, a `)` or the end.
    fn sequence(&mut self) -> Result<Vec<Node>, Unsupported> {
        let mut nodes = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let Some(atom) = self.atom()? else {
                continue;
            };
            nodes.push(self.quantified(atom)?);
        }
        Ok(nodes)
    }

    /// One atom; `None` for an anchor, which writes nothing.
    fn atom(&mut self) -> Result<Option<Node>, Unsupported> {
        let Some(c) = self.next() else {
            return Err(Unsupported("a pattern that ends early".to_owned()));
        };
        Ok(Some(match c {
            '^' | '$' => return Ok(None),
            '.' => Node::Class {
                ranges: vec![('a', 'z')],
                negated: false,
            },
            '(' => {
                if self.eat('?') && !self.eat(':') {
                    return Err(Unsupported("a look-around or named group `(?`".to_owned()));
                }
                let group = self.alternatives()?;
                if !self.eat(')') {
                    return Err(Unsupported("an unclosed group".to_owned()));
                }
                group
            }
            '[' => self.class()?,
            '\\' => self.escape()?,
            '*' | '+' | '?' | '{' => {
                return Err(Unsupported(format!("a `{c}` with nothing to repeat")));
            }
            c => Node::Literal(c),
        }))
    }

    fn escape(&mut self) -> Result<Node, Unsupported> {
        let Some(c) = self.next() else {
            return Err(Unsupported("a trailing `\\`".to_owned()));
        };
        let class = |ranges: &[(char, char)], negated| Node::Class {
            ranges: ranges.to_vec(),
            negated,
        };
        Ok(match c {
            'd' => class(DIGITS, false),
            'D' => class(DIGITS, true),
            'w' => class(WORD, false),
            'W' => class(WORD, true),
            's' => Node::Literal(' '),
            'S' => class(SPACE, true),
            'n' => Node::Literal('\n'),
            't' => Node::Literal('\t'),
            'r' => Node::Literal('\r'),
            c if c.is_ascii_alphanumeric() => {
                return Err(Unsupported(format!("the escape `\\{c}`")));
            }
            c => Node::Literal(c),
        })
    }

    /// A character class, after its `[`.
    fn class(&mut self) -> Result<Node, Unsupported> {
        let negated = self.eat('^');
        let mut ranges = Vec::new();
        let mut first = true;
        loop {
            let Some(c) = self.next() else {
                return Err(Unsupported("an unclosed `[`".to_owned()));
            };
            if c == ']' && !first {
                break;
            }
            first = false;
            let low = if c == '\\' {
                let Some(escaped) = self.next() else {
                    return Err(Unsupported("a trailing `\\`".to_owned()));
                };
                let set = match escaped {
                    'd' => Some(DIGITS),
                    'w' => Some(WORD),
                    's' => Some(SPACE),
                    'n' => {
                        ranges.push(('\n', '\n'));
                        continue;
                    }
                    't' => {
                        ranges.push(('\t', '\t'));
                        continue;
                    }
                    c if c.is_ascii_alphanumeric() => {
                        return Err(Unsupported(format!("the escape `\\{c}` in a class")));
                    }
                    _ => None,
                };
                if let Some(set) = set {
                    ranges.extend_from_slice(set);
                    continue;
                }
                escaped
            } else {
                c
            };
            let is_range = self.peek() == Some('-')
                && self.chars.get(self.at + 1).is_some_and(|next| *next != ']');
            if is_range {
                self.at += 1;
                let high = match self.next() {
                    Some('\\') => self
                        .next()
                        .ok_or_else(|| Unsupported("a trailing `\\`".to_owned()))?,
                    Some(high) => high,
                    None => return Err(Unsupported("an unclosed `[`".to_owned())),
                };
                ranges.push((low, high));
            } else {
                ranges.push((low, low));
            }
        }
        Ok(Node::Class { ranges, negated })
    }

    /// `atom` with the quantifier that follows it, if any.
    fn quantified(&mut self, atom: Node) -> Result<Node, Unsupported> {
        let (min, max) = match self.peek() {
            Some('*') => (0, OPEN_REPEATS),
            Some('+') => (1, 1 + OPEN_REPEATS),
            Some('?') => (0, 1),
            Some('{') => {
                self.at += 1;
                let min = self.number()?;
                let max = if self.eat(',') {
                    if self.peek() == Some('}') {
                        min + OPEN_REPEATS
                    } else {
                        self.number()?
                    }
                } else {
                    min
                };
                if !self.eat('}') || max < min {
                    return Err(Unsupported("a malformed `{n,m}`".to_owned()));
                }
                // Lazy or possessive: the same strings match.
                let _ = self.eat('?') || self.eat('+');
                return Ok(Node::Repeat(Box::new(atom), min, max));
            }
            _ => return Ok(atom),
        };
        self.at += 1;
        let _ = self.eat('?') || self.eat('+');
        Ok(Node::Repeat(Box::new(atom), min, max))
    }

    fn number(&mut self) -> Result<u32, Unsupported> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        digits
            .parse()
            .map_err(|_| Unsupported("a malformed `{n,m}`".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        jsonschema::validator_for(&json!({"type": "string", "pattern": pattern}))
            .unwrap()
            .is_valid(&json!(text))
    }

    #[test]
    fn generated_strings_match_their_patterns() {
        let patterns = [
            "^[A-Z]{3}-\\d{4}$",
            "^[a-z0-9_]+@[a-z]+\\.(com|org)$",
            "^INV-[0-9]{2,5}(-[A-Z])?$",
            "^\\w+\\s\\w*$",
            "^[^,;]{1,8}$",
            "^(?:ab|cd)+x?$",
            "^\\+?[0-9 ]{7,15}$",
            "^[a-f\\d]{8}$",
            "^a.b$",
            "[xyz]",
            "^\\$\\d+\\.\\d{2}$",
            "^[\\-a]{2}$",
        ];
        let mut rng = Rng::with_seed(7);
        for pattern in patterns {
            let node = parse(pattern).unwrap_or_else(|e| panic!("{pattern}: {e:?}"));
            for _ in 0..50 {
                let mut out = String::new();
                generate(&node, &mut rng, &mut out);
                assert!(matches(pattern, &out), "{out:?} does not match {pattern}");
            }
        }
    }

    #[test]
    fn constructs_outside_the_subset_are_named() {
        for (pattern, named) in [
            ("^(?=a)a$", "look-around"),
            ("(a)\\1", "\\1"),
            ("\\bword\\b", "\\b"),
            ("\\p{L}+", "\\p"),
            ("[a", "unclosed"),
            ("(a", "unclosed group"),
            ("*a", "nothing to repeat"),
            ("a)", "unmatched"),
        ] {
            let Unsupported(reason) = parse(pattern).unwrap_err();
            assert!(reason.contains(named), "{pattern}: {reason}");
        }
    }
}
