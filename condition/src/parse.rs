//! The grammar (in the crate's documentation), read by hand: it is small
//! enough that a parser crate would cost more than it saves.

use alloc::format;
use alloc::string::{String, ToString};

use crate::{Comparison, Condition, ConditionError, Quantity, Subject, Test, Unit};

/// The text, and how far it has been read.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_spaces(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    /// The longest run from here of characters that pass `keep`.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &str {
        let start = self.at;
        let len = self
            .rest()
            .char_indices()
            .find(|&(_, c)| !keep(c))
            .map_or(self.rest().len(), |(i, _)| i);
        self.at += len;
        &self.text[start..self.at]
    }

    fn expected(&self, expected: &'static str) -> ConditionError {
        ConditionError::Expected {
            at: self.at,
            expected,
            found: match self.peek() {
                Some(c) => format!("\"{c}\""),
                None => "the end".to_string(),
            },
        }
    }
}

pub(crate) fn condition(text: &str) -> Result<Condition, ConditionError> {
    let mut cursor = Cursor { text, at: 0 };
    cursor.skip_spaces();
    if cursor.peek().is_none() {
        return Err(ConditionError::Empty);
    }
    let subject = subject(&mut cursor)?;
    cursor.skip_spaces();
    let test = if cursor.peek().is_some() {
        Some(test(&mut cursor)?)
    } else {
        None
    };
    cursor.skip_spaces();
    if cursor.peek().is_some() {
        return Err(cursor.expected("the end"));
    }
    Ok(Condition { subject, test })
}

pub(crate) fn quantity_alone(text: &str) -> Result<Quantity, ConditionError> {
    let mut cursor = Cursor { text, at: 0 };
    cursor.skip_spaces();
    if cursor.peek().is_none() {
        return Err(ConditionError::Empty);
    }
    let quantity = quantity(&mut cursor)?;
    cursor.skip_spaces();
    if cursor.peek().is_some() {
        return Err(cursor.expected("the end"));
    }
    Ok(quantity)
}

fn subject(cursor: &mut Cursor<'_>) -> Result<Subject, ConditionError> {
    let at = cursor.at;
    if !cursor.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
        return Err(cursor.expected("a word (tick, span, gauge, ...)"));
    }
    let word = cursor
        .take_while(|c| c.is_ascii_alphanumeric() || c == '_')
        .to_string();
    cursor.skip_spaces();
    let argument = if cursor.peek() == Some('(') {
        Some(name(cursor)?)
    } else {
        None
    };
    Ok(Subject { word, argument, at })
}

/// `( name )`, the cursor on the parenthesis.
fn name(cursor: &mut Cursor<'_>) -> Result<String, ConditionError> {
    let open = cursor.at;
    cursor.at += 1;
    cursor.skip_spaces();
    let name = if cursor.peek() == Some('"') {
        let quote = cursor.at;
        cursor.at += 1;
        let mut name = String::new();
        let mut escaped = false;
        loop {
            let Some(c) = cursor.peek() else {
                return Err(ConditionError::Unclosed { at: quote });
            };
            cursor.at += c.len_utf8();
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => break,
                _ => {
                    name.push(c);
                    escaped = false;
                }
            }
        }
        cursor.skip_spaces();
        name
    } else {
        cursor.take_while(|c| c != ')').trim_end().to_string()
    };
    if !cursor.eat(")") {
        return Err(if cursor.peek().is_none() {
            ConditionError::Unclosed { at: open }
        } else {
            cursor.expected("\")\"")
        });
    }
    if name.is_empty() {
        return Err(ConditionError::Expected {
            at: open + 1,
            expected: "a name",
            found: "\")\"".to_string(),
        });
    }
    Ok(name)
}

fn test(cursor: &mut Cursor<'_>) -> Result<Test, ConditionError> {
    let comparison_at = cursor.at;
    // Two-character operators first.
    let comparison = [
        ("<=", Comparison::LessOrEqual),
        (">=", Comparison::GreaterOrEqual),
        ("==", Comparison::Equal),
        ("!=", Comparison::NotEqual),
        ("<", Comparison::Less),
        (">", Comparison::Greater),
    ]
    .into_iter()
    .find(|(symbol, _)| cursor.eat(symbol))
    .map(|(_, comparison)| comparison)
    .ok_or_else(|| cursor.expected("a comparison (<, <=, >, >=, ==, !=)"))?;
    cursor.skip_spaces();
    let at = cursor.at;
    let quantity = quantity(cursor)?;
    Ok(Test {
        comparison,
        comparison_at,
        quantity,
        at,
    })
}

fn quantity(cursor: &mut Cursor<'_>) -> Result<Quantity, ConditionError> {
    let at = cursor.at;
    let negative = cursor.eat("-");
    if !cursor.peek().is_some_and(|c| c.is_ascii_digit()) {
        return Err(cursor.expected("a number"));
    }
    let digits = cursor.take_while(|c| c.is_ascii_digit() || c == '.');
    let number: f64 = match digits.parse::<f64>() {
        Ok(n) if n.is_finite() && !digits.ends_with('.') => n,
        _ => return Err(ConditionError::BadNumber { at }),
    };
    let number = if negative { -number } else { number };
    cursor.skip_spaces();
    let unit_at = cursor.at;
    let unit = cursor.take_while(|c| c.is_alphabetic() || c == '%');
    let (scale, unit) = match unit {
        "" => (1.0, Unit::Number),
        "ns" => (1.0, Unit::Duration),
        "us" | "µs" => (1e3, Unit::Duration),
        "ms" => (1e6, Unit::Duration),
        "s" => (1e9, Unit::Duration),
        "min" => (60e9, Unit::Duration),
        "h" => (3600e9, Unit::Duration),
        "B" => (1.0, Unit::Bytes),
        "KB" => (1e3, Unit::Bytes),
        "MB" => (1e6, Unit::Bytes),
        "GB" => (1e9, Unit::Bytes),
        "KiB" => (1024.0, Unit::Bytes),
        "MiB" => (1024.0 * 1024.0, Unit::Bytes),
        "GiB" => (1024.0 * 1024.0 * 1024.0, Unit::Bytes),
        "%" => (0.01, Unit::Share),
        other => {
            return Err(ConditionError::UnknownUnit {
                at: unit_at,
                unit: other.to_string(),
            })
        }
    };
    let value = number * scale;
    if !value.is_finite() {
        return Err(ConditionError::BadNumber { at });
    }
    Ok(Quantity { value, unit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    fn parse(text: &str) -> Result<Condition, ConditionError> {
        text.parse()
    }

    #[test]
    fn every_form_parses() {
        let c = parse("tick > 100ms").unwrap();
        assert_eq!(
            (c.subject.word.as_str(), c.subject.argument),
            ("tick", None)
        );
        let t = c.test.unwrap();
        assert_eq!(t.comparison, Comparison::Greater);
        assert_eq!(
            t.quantity,
            Quantity {
                value: 1e8,
                unit: Unit::Duration
            }
        );
        assert_eq!(t.at, 7);

        let c = parse("  overrun ").unwrap();
        assert_eq!((c.subject.word.as_str(), c.test), ("overrun", None));
        assert_eq!(c.subject.at, 2);

        let c = parse("gauge(memory.bytes)>=1.5GiB").unwrap();
        assert_eq!(c.subject.argument.as_deref(), Some("memory.bytes"));
        let t = c.test.unwrap();
        assert_eq!(t.comparison, Comparison::GreaterOrEqual);
        assert_eq!(t.quantity.value, 1.5 * 1024.0 * 1024.0 * 1024.0);

        let c = parse(r#"p99( "f(x) \"y\"" ) != -2"#).unwrap();
        assert_eq!(c.subject.argument.as_deref(), Some(r#"f(x) "y""#));
        assert_eq!(
            c.test.unwrap().quantity,
            Quantity {
                value: -2.0,
                unit: Unit::Number
            }
        );

        for (text, ns) in [
            ("1ns", 1.0),
            ("2us", 2e3),
            ("2µs", 2e3),
            ("3s", 3e9),
            ("1min", 60e9),
            ("2h", 7200e9),
        ] {
            let c = parse(&["max(Tick) < ", text].concat()).unwrap();
            assert_eq!(c.test.unwrap().quantity.value, ns, "{text}");
        }
        assert_eq!(
            parse("dropped == 5%").unwrap().test.unwrap().quantity.unit,
            Unit::Share
        );
    }

    #[test]
    fn every_error_names_its_position() {
        let cases: Vec<(&str, usize, &str)> = alloc::vec![
            ("", 0, "empty condition"),
            ("   ", 0, "empty condition"),
            (
                "> 5",
                0,
                "expected a word (tick, span, gauge, ...), found \">\""
            ),
            ("tick >", 6, "expected a number, found the end"),
            (
                "tick = 5",
                5,
                "expected a comparison (<, <=, >, >=, ==, !=), found \"=\""
            ),
            ("tick > 100 xs", 11, "unknown unit \"xs\""),
            ("tick > 1.2.3ms", 7, "not a number"),
            ("tick > 5.ms", 7, "not a number"),
            ("span(Sim", 4, "not closed"),
            ("span(\"Sim)", 5, "not closed"),
            ("span(\"Sim\" x)", 11, "expected \")\", found \"x\""),
            ("span() > 1ms", 5, "expected a name, found \")\""),
            ("tick > 5ms and", 11, "expected the end, found \"a\""),
        ];
        for (text, at, message) in cases {
            let error = parse(text).unwrap_err();
            assert_eq!(
                (error.at(), error.to_string().as_str()),
                (at, message),
                "{text:?}"
            );
        }
        let error = parse("tick > 100 xs").unwrap_err();
        assert_eq!(
            error.pointed("tick > 100 xs"),
            "tick > 100 xs\n           ^ unknown unit \"xs\""
        );
    }

    #[test]
    fn a_quantity_alone_reads_by_the_same_rule() {
        let q: Quantity = " 30s ".parse().unwrap();
        assert_eq!(
            q,
            Quantity {
                value: 30e9,
                unit: Unit::Duration
            }
        );
        let q: Quantity = "64MiB".parse().unwrap();
        assert_eq!(
            q,
            Quantity {
                value: 64.0 * 1024.0 * 1024.0,
                unit: Unit::Bytes
            }
        );
        assert_eq!("30 x".parse::<Quantity>().unwrap_err().at(), 3);
        assert_eq!("30s 4".parse::<Quantity>().unwrap_err().at(), 4);
    }

    #[test]
    fn consumers_refuse_with_positions() {
        let c = parse("span > 5ms").unwrap();
        assert_eq!(c.argument().unwrap_err().at(), 4);
        let c = parse("tick").unwrap();
        assert_eq!(
            c.comparison().unwrap_err().to_string(),
            "\"tick\" needs a comparison, as in tick > 100ms"
        );
        let c = parse("tick > 5MB").unwrap();
        let error = c.quantity_in(Unit::Duration).unwrap_err();
        assert_eq!(error.at(), 7);
        let c = parse("tick > 5").unwrap();
        assert!(
            c.quantity_in(Unit::Duration).is_err(),
            "a duration needs its unit"
        );
        let c = parse("gauge(x) > 5").unwrap();
        assert!(
            c.quantity_in(Unit::Bytes).is_ok(),
            "a plain number passes for a size"
        );
    }

    #[test]
    fn display_parses_back_the_same() {
        for text in [
            "tick > 100ms",
            "overrun",
            "span(GET /checkout) >= 2.5us",
            r#"span("a)b") < 1s"#,
            r#"span(" padded ") < 1s"#,
            "gauge(memory.bytes) != 3GiB",
            "count(x) == 0",
        ] {
            let c = parse(text).unwrap();
            let shown = c.to_string();
            assert_eq!(parse(&shown).unwrap(), c, "{text} shown as {shown}");
        }
    }

    proptest::proptest! {
        /// Any text: an answer, never a panic, and an error's position is
        /// in the text, on a character's boundary (the caret lands).
        #[test]
        fn any_text_is_answered(text in "\\PC{0,40}|[a-z( )\"<>=!.0-9µ%-]{0,30}") {
            if let Err(error) = parse(&text) {
                proptest::prop_assert!(error.at() <= text.len());
                proptest::prop_assert!(text.is_char_boundary(error.at()));
                let _ = error.pointed(&text);
            }
        }
    }
}
