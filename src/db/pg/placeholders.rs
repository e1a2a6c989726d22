//! SQLite's placeholders (`?`, `?N`) rewritten to PostgreSQL's (`$N`), once
//! per statement text ([`super::Client`] caches the result).
//!
//! Numbering follows SQLite: `?N` is parameter N; a bare `?` is one more than
//! the largest number used so far in the text (so `?2, ?` is `$2, $3`). A `?`
//! is a placeholder only outside string literals (`'it''s ?'`, `E'\'?'`),
//! quoted identifiers (`"a?"`), dollar-quoted strings (`$$?$$`, `$t$?$t$`),
//! `--` comments and `/* */` comments (which nest, as PostgreSQL reads them).
//! The text around placeholders is copied byte for byte, `::` casts included
//! (`?::jsonb` becomes `$1::jsonb`). jsonb's `?` operators cannot be written in
//! a statement passed here: that `?` would be taken as a placeholder.

/// SQLite's largest parameter number (SQLITE_MAX_VARIABLE_NUMBER's default).
pub const MAX_PARAMETER: u32 = 32766;

/// A statement with `$N` placeholders, and how many parameters it takes (the
/// largest N; 0 for none).
#[derive(Debug, PartialEq, Eq)]
pub struct Rewritten {
    pub sql: String,
    pub parameters: u32,
}

/// Why a statement's placeholders could not be rewritten.
#[derive(Debug, PartialEq, Eq)]
pub enum PlaceholderError {
    /// `?0`, or a number above [`MAX_PARAMETER`], at this byte offset.
    OutOfRange { at: usize },
    /// A string literal, quoted identifier or comment that never ends.
    Unterminated { at: usize },
}

impl std::fmt::Display for PlaceholderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlaceholderError::OutOfRange { at } => write!(
                f,
                "placeholder at byte {at} is out of range (1 to {MAX_PARAMETER})"
            ),
            PlaceholderError::Unterminated { at } => {
                write!(f, "quoted text or comment starting at byte {at} never ends")
            }
        }
    }
}

impl std::error::Error for PlaceholderError {}

/// Rewrites `sql`'s placeholders; see the module documentation.
pub fn rewrite(sql: &str) -> Result<Rewritten, PlaceholderError> {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut largest = 0u32;
    // Start of the text not yet copied to `out`.
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => {
                let escapes = is_escape_string_prefix(bytes, i);
                i = end_of_quoted(bytes, i, b'\'', escapes)?;
            }
            b'"' => i = end_of_quoted(bytes, i, b'"', false)?,
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| i + n + 1);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = end_of_block_comment(bytes, i)?,
            b'$' => i = end_of_dollar_quoted(bytes, i)?,
            b'?' => {
                let digits = bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let number = if digits == 0 {
                    largest + 1
                } else {
                    sql[i + 1..i + 1 + digits]
                        .parse::<u32>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or(PlaceholderError::OutOfRange { at: i })?
                };
                if number > MAX_PARAMETER {
                    return Err(PlaceholderError::OutOfRange { at: i });
                }
                largest = largest.max(number);
                out.push_str(&sql[copied..i]);
                out.push('$');
                out.push_str(&number.to_string());
                i += 1 + digits;
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied..]);
    Ok(Rewritten {
        sql: out,
        parameters: largest,
    })
}

/// Whether the quote at `quote` opens an escape string (`E'…'`): an `E` just
/// before it that is not the end of a longer word.
fn is_escape_string_prefix(bytes: &[u8], quote: usize) -> bool {
    quote >= 1
        && matches!(bytes[quote - 1], b'E' | b'e')
        && (quote == 1 || !is_identifier_byte(bytes[quote - 2]))
}

fn is_identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The index just past the quoted text opening at `start` (a doubled quote
/// is one quote character; with `escapes`, a backslash escapes the next byte).
fn end_of_quoted(
    bytes: &[u8],
    start: usize,
    quote: u8,
    escapes: bool,
) -> Result<usize, PlaceholderError> {
    let mut i = start + 1;
    while i < bytes.len() {
        if escapes && bytes[i] == b'\\' {
            i += 2;
        } else if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return Ok(i + 1);
            }
        } else {
            i += 1;
        }
    }
    Err(PlaceholderError::Unterminated { at: start })
}

/// The index just past the `/* */` comment opening at `start`; comments nest.
fn end_of_block_comment(bytes: &[u8], start: usize) -> Result<usize, PlaceholderError> {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < bytes.len() {
        if bytes[i] == b'/' && bytes[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Ok(i);
            }
        } else {
            i += 1;
        }
    }
    Err(PlaceholderError::Unterminated { at: start })
}

/// At a `$`: past a dollar-quoted string (`$$…$$`, `$tag$…$tag$`) if one opens
/// here, else just past the `$` (a `$N` parameter, or a `$` inside a word).
fn end_of_dollar_quoted(bytes: &[u8], start: usize) -> Result<usize, PlaceholderError> {
    // `a$b$` is an identifier containing dollars, not a quote.
    if start > 0 && is_identifier_byte(bytes[start - 1]) {
        return Ok(start + 1);
    }
    let tag_len = bytes[start + 1..]
        .iter()
        .take_while(|&&b| b.is_ascii_alphabetic() || b == b'_' || b >= 0x80)
        .count();
    let tag_end = start + 1 + tag_len;
    if bytes.get(tag_end) != Some(&b'$') {
        return Ok(start + 1);
    }
    let tag = &bytes[start..=tag_end];
    let body = tag_end + 1;
    bytes[body..]
        .windows(tag.len())
        .position(|w| w == tag)
        .map(|n| body + n + tag.len())
        .ok_or(PlaceholderError::Unterminated { at: start })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sql(text: &str) -> String {
        rewrite(text).unwrap().sql
    }

    #[test]
    fn numbered_and_bare_placeholders_follow_sqlite() {
        assert_eq!(
            rewrite("SELECT ?1, ?2").unwrap(),
            Rewritten {
                sql: "SELECT $1, $2".into(),
                parameters: 2
            }
        );
        assert_eq!(sql("a = ? AND b = ?"), "a = $1 AND b = $2");
        // A bare `?` is one more than the largest so far.
        assert_eq!(sql("?3, ?, ?1, ?"), "$3, $4, $1, $5");
        assert_eq!(rewrite("?2 + ?2").unwrap().parameters, 2);
        assert_eq!(rewrite("SELECT 1").unwrap().parameters, 0);
        assert_eq!(sql("x IN (?,?,?)"), "x IN ($1,$2,$3)");
        assert_eq!(sql("?10"), "$10");
    }

    #[test]
    fn quoted_text_and_comments_are_left_alone() {
        assert_eq!(sql("SELECT 'it''s ?', ?"), "SELECT 'it''s ?', $1");
        assert_eq!(sql("SELECT '?1' || ?1"), "SELECT '?1' || $1");
        assert_eq!(sql(r"SELECT E'\'?', ?"), r"SELECT E'\'?', $1");
        // Not an escape string: `some` ends in e; the backslash is a character.
        assert_eq!(sql(r"SELECT some'\', ?"), r"SELECT some'\', $1");
        assert_eq!(
            sql(r#"SELECT "a?""b" FROM t WHERE c = ?"#),
            r#"SELECT "a?""b" FROM t WHERE c = $1"#
        );
        assert_eq!(sql("SELECT ? -- why?\n, ?"), "SELECT $1 -- why?\n, $2");
        assert_eq!(sql("SELECT ? -- why?"), "SELECT $1 -- why?");
        assert_eq!(
            sql("SELECT /* ? /* ? */ ? */ ?"),
            "SELECT /* ? /* ? */ ? */ $1"
        );
        assert_eq!(
            sql("SELECT $$?$$, $t$ ? $$ ? $t$, ?"),
            "SELECT $$?$$, $t$ ? $$ ? $t$, $1"
        );
        assert_eq!(sql("SELECT 1 - -?"), "SELECT 1 - -$1");
        assert_eq!(sql("SELECT 4/?"), "SELECT 4/$1");
    }

    #[test]
    fn casts_and_dollars_outside_quotes_are_kept() {
        assert_eq!(
            sql("SELECT ?::jsonb, ?2::text"),
            "SELECT $1::jsonb, $2::text"
        );
        assert_eq!(
            sql("SELECT a::int FROM t WHERE b = ?"),
            "SELECT a::int FROM t WHERE b = $1"
        );
        assert_eq!(sql("SELECT $1, a$b, ?"), "SELECT $1, a$b, $1");
        assert_eq!(sql("SELECT 'é?', ?"), "SELECT 'é?', $1");
    }

    #[test]
    fn malformed_statements_are_refused() {
        assert_eq!(
            rewrite("SELECT ?0"),
            Err(PlaceholderError::OutOfRange { at: 7 })
        );
        assert_eq!(
            rewrite("SELECT ?32767"),
            Err(PlaceholderError::OutOfRange { at: 7 })
        );
        assert_eq!(
            rewrite("SELECT ?99999999999999999999"),
            Err(PlaceholderError::OutOfRange { at: 7 })
        );
        assert_eq!(rewrite("SELECT ?32766").unwrap().parameters, 32766);
        assert_eq!(
            rewrite("SELECT 'x"),
            Err(PlaceholderError::Unterminated { at: 7 })
        );
        assert_eq!(
            rewrite("SELECT \"x"),
            Err(PlaceholderError::Unterminated { at: 7 })
        );
        assert_eq!(
            rewrite("SELECT /* /* */"),
            Err(PlaceholderError::Unterminated { at: 7 })
        );
        assert_eq!(
            rewrite("SELECT $a$ x"),
            Err(PlaceholderError::Unterminated { at: 7 })
        );
    }

    /// A piece of a statement and what the rewrite must make of it.
    #[derive(Clone, Debug)]
    enum Piece {
        Numbered(u32),
        Bare,
        /// Copied unchanged, whatever it contains.
        Verbatim(String),
    }

    fn noise() -> impl Strategy<Value = String> {
        // Text that may hold placeholders, quotes and comment starts.
        proptest::string::string_regex("[a-z?'\"$*/ -]{0,8}").unwrap()
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            (1u32..40).prop_map(Piece::Numbered),
            Just(Piece::Bare),
            proptest::string::string_regex("[a-z_][a-z0-9_]{0,6}")
                .unwrap()
                .prop_map(Piece::Verbatim),
            Just(Piece::Verbatim("::jsonb".into())),
            Just(Piece::Verbatim("=".into())),
            noise().prop_map(|s| Piece::Verbatim(format!("'{}'", s.replace('\'', "''")))),
            noise().prop_map(|s| Piece::Verbatim(format!("\"{}\"", s.replace('"', "\"\"")))),
            noise().prop_map(|s| Piece::Verbatim(format!("-- {}\n", s.replace('\n', " ")))),
            noise().prop_map(|s| Piece::Verbatim(format!(
                "/* {} */",
                s.replace("*/", "")
                    .replace("/*", "")
                    .replace(['*', '/'], "")
            ))),
            noise().prop_map(|s| Piece::Verbatim(format!("$q${}$q$", s.replace('$', "")))),
        ]
    }

    proptest! {
        /// Pieces joined by spaces: the rewrite turns exactly the placeholder
        /// pieces into `$N` by SQLite's numbering, and copies the rest.
        #[test]
        fn only_placeholders_outside_quotes_are_rewritten(
            pieces in proptest::collection::vec(piece(), 0..24)
        ) {
            let mut input = Vec::new();
            let mut expected = Vec::new();
            let mut largest = 0;
            for piece in &pieces {
                match piece {
                    Piece::Numbered(n) => {
                        largest = largest.max(*n);
                        input.push(format!("?{n}"));
                        expected.push(format!("${n}"));
                    }
                    Piece::Bare => {
                        largest += 1;
                        input.push("?".into());
                        expected.push(format!("${largest}"));
                    }
                    Piece::Verbatim(text) => {
                        input.push(text.clone());
                        expected.push(text.clone());
                    }
                }
            }
            let rewritten = rewrite(&input.join(" ")).unwrap();
            prop_assert_eq!(rewritten.sql, expected.join(" "));
            prop_assert_eq!(rewritten.parameters, largest);
        }
    }
}
