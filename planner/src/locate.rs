//! Where a problem's path points in the text of a document: the byte range of the value, and
//! its line and column, for the CLI's `FILE:LINE:COLUMN:` and the console's "show it in the
//! editor". A path the text lacks (a missing field) points at the closest value it has.

use crate::validate::Problem;

/// A place in a document's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Byte offset where the value starts.
    pub start: usize,
    /// Byte offset just past the value's end.
    pub end: usize,
    /// 1-based line of `start`.
    pub line: usize,
    /// 1-based column of `start`, in characters.
    pub column: usize,
}

/// One step of a path as [`crate::validate::push_key`] writes it.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of `pools[0].offers[1].quota.vcpu`, `env["PIP.INDEX"]`: `None` if malformed.
/// (Byte loops throughout this module, not `str` searches or serde_json: the console carries
/// this code, and every kilobyte of its download counts.)
fn steps(path: &str) -> Option<Vec<Step>> {
    let bytes = path.as_bytes();
    let mut steps = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'[' {
            at += 1;
            if bytes.get(at) == Some(&b'"') {
                // A JSON string: its end is the first quote no backslash escapes.
                let end = string_end(bytes, at)?;
                steps.push(Step::Key(unescape(&path[at..end])?));
                if bytes.get(end) != Some(&b']') {
                    return None;
                }
                at = end + 1;
            } else {
                let digits = bytes[at..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits == 0 || bytes.get(at + digits) != Some(&b']') {
                    return None;
                }
                steps.push(Step::Index(path[at..at + digits].parse().ok()?));
                at += digits + 1;
            }
        } else {
            if bytes[at] == b'.' && at > 0 {
                at += 1;
            }
            let len = bytes[at..]
                .iter()
                .take_while(|&&b| b != b'.' && b != b'[')
                .count();
            if len == 0 {
                return None;
            }
            steps.push(Step::Key(path[at..at + len].to_owned()));
            at += len;
        }
    }
    Some(steps)
}

/// The value of a JSON string literal (its quotes included); `None` if it is not one.
fn unescape(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    let hex4 = |chars: &mut std::str::Chars| -> Option<u32> {
        (0..4).try_fold(0, |n, _| Some(n * 16 + chars.next()?.to_digit(16)?))
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let unit = hex4(&mut chars)?;
                let code = if (0xD800..0xDC00).contains(&unit) {
                    // A surrogate pair: the low half follows as its own escape.
                    if (chars.next()?, chars.next()?) != ('\\', 'u') {
                        return None;
                    }
                    let low = hex4(&mut chars)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return None;
                    }
                    0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    unit
                };
                char::from_u32(code)?
            }
            c @ ('"' | '\\' | '/') => c,
            _ => return None,
        });
    }
    Some(out)
}

/// The offset of the last occurrence of `needle` in `haystack`.
fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    (0..=haystack.len().checked_sub(needle.len())?)
        .rev()
        .find(|&i| &haystack[i..i + needle.len()] == needle)
}

/// Where `path` points in `text` (a JSON document): the value it names, or the closest value
/// on its way when the text stops short of it. `None` when the text is not the JSON the path
/// walks through.
pub fn locate(text: &str, path: &str) -> Option<Location> {
    let steps = steps(path)?;
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    for step in &steps {
        let next = match (step, bytes.get(at)) {
            (Step::Key(key), Some(b'{')) => member(text, at, key)?,
            (Step::Index(index), Some(b'[')) => element(bytes, at, *index)?,
            _ => None,
        };
        match next {
            Some(next) => at = next,
            None => break,
        }
    }
    let end = value_end(bytes, at)?;
    Some(location(text, at, end))
}

/// Where `problem` points in `text`: its path's value, or, for text that is not JSON, the line
/// and column serde_json's message names.
pub fn locate_problem(text: &str, problem: &Problem) -> Option<Location> {
    if !problem.path.is_empty() {
        return locate(text, &problem.path);
    }
    // "... at line 3 column 5": serde_json's words.
    let message = problem.message.as_bytes();
    let at = rfind(message, b" at line ")? + b" at line ".len();
    let number = |from: usize| -> Option<(usize, usize)> {
        let digits = message[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        Some((
            problem.message[from..from + digits].parse().ok()?,
            from + digits,
        ))
    };
    let (line, after) = number(at)?;
    if !message[after..].starts_with(b" column ") {
        return None;
    }
    let (column, _) = number(after + b" column ".len())?;
    let bytes = text.as_bytes();
    let line_start = match line {
        0 | 1 => 0,
        n => {
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .nth(n - 2)?
                .0
                + 1
        }
    };
    let line_len = bytes[line_start..]
        .iter()
        .take_while(|&&b| b != b'\n')
        .count();
    let line_text = &text[line_start..line_start + line_len];
    // serde_json counts a column in bytes, 0 at the line's start; past the end means the end.
    let offset = column.saturating_sub(1).min(line_text.len());
    let start = (0..=offset)
        .rev()
        .map(|o| line_start + o)
        .find(|&o| text.is_char_boundary(o))
        .unwrap_or(line_start);
    Some(location(text, start, start))
}

fn location(text: &str, start: usize, end: usize) -> Location {
    let before = &text[..start];
    let line_start = before
        .bytes()
        .rposition(|b| b == b'\n')
        .map_or(0, |i| i + 1);
    Location {
        start,
        end,
        line: before.bytes().filter(|&b| b == b'\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The offset just past the string that opens at `at` (a `"`).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The offset just past the value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(bytes.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

/// In the object that opens at `open`: where the value of (the first) `key` starts.
/// `Some(None)` when the object has no such key.
fn member(text: &str, open: usize, key: &str) -> Option<Option<usize>> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, open + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(None);
    }
    loop {
        let key_end = string_end(bytes, at)?;
        let raw = &text[at + 1..key_end - 1];
        let same = if raw.as_bytes().contains(&b'\\') {
            unescape(&text[at..key_end])? == key
        } else {
            raw == key
        };
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        if same {
            return Some(Some(at));
        }
        at = skip_space(bytes, value_end(bytes, at)?);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return Some(None),
            _ => return None,
        }
    }
}

/// In the list that opens at `open`: where element `index` starts. `Some(None)` when the
/// list is shorter.
fn element(bytes: &[u8], open: usize, index: usize) -> Option<Option<usize>> {
    let mut at = skip_space(bytes, open + 1);
    if bytes.get(at) == Some(&b']') {
        return Some(None);
    }
    for _ in 0..index {
        at = skip_space(bytes, value_end(bytes, at)?);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b']' => return Some(None),
            _ => return None,
        }
    }
    Some(Some(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn text_at<'t>(text: &'t str, path: &str) -> &'t str {
        let at = locate(text, path).unwrap_or_else(|| panic!("{path} not found"));
        &text[at.start..at.end]
    }

    #[test]
    fn paths_point_at_their_values() {
        let text = r#"{
  "version": 2,
  "pools": [
    { "name": "a", "offers": [{ "tenant": "x", "quota": { "vcpu": 1 } }] },
    { "name": "b,]}", "env": { "PIP.INDEX": "secret://p", "a\"b": [1, 2] }, "offers": [
        { "tenant": "y", "quota": {} },
        { "tenant": "z", "quota": { "vcpu": -1 } }
    ] }
  ]
}"#;
        assert_eq!(text_at(text, "version"), "2");
        assert_eq!(text_at(text, "pools[1].name"), r#""b,]}""#);
        assert_eq!(text_at(text, "pools[1].offers[1].quota.vcpu"), "-1");
        assert_eq!(
            text_at(text, r#"pools[1].env["PIP.INDEX"]"#),
            r#""secret://p""#
        );
        assert_eq!(text_at(text, r#"pools[1].env["a\"b"][1]"#), "2");
        assert_eq!(text_at(text, "pools[0].offers[0]").len(), 41);
        let at = locate(text, "pools[1].offers[1].quota.vcpu").unwrap();
        assert_eq!((at.line, at.column), (7, 45));
    }

    #[test]
    fn a_path_the_text_lacks_points_at_the_closest_value() {
        let text = r#"{"pools": [{"name": "a"}]}"#;
        // A missing field: its object.
        assert_eq!(text_at(text, "pools[0].site"), r#"{"name": "a"}"#);
        // An index past the end: the list.
        assert_eq!(text_at(text, "pools[3].name"), r#"[{"name": "a"}]"#);
        // A key into a string: the string.
        assert_eq!(text_at(text, "pools[0].name.x"), r#""a""#);
        assert_eq!(text_at(text, ""), text);
        assert_eq!(locate(text, "pools[x]"), None);
        assert_eq!(locate(text, "pools..name"), None);
    }

    #[test]
    fn columns_count_characters() {
        let text = "{\"ä\": {\"ö\": 1, \"n\": true}}";
        let at = locate(text, "[\"ä\"].n").unwrap();
        assert_eq!(&text[at.start..at.end], "true");
        assert_eq!((at.line, at.column), (1, 21));
    }

    #[test]
    fn problems_of_text_that_is_not_json_use_serde_jsons_line_and_column() {
        let text = "{\n  \"version\": 1,\n  \"sites\": [x]\n}";
        let invalid = crate::validate(text.as_bytes()).unwrap_err();
        let at = locate_problem(text, &invalid.problems[0]).unwrap();
        assert_eq!((at.line, at.column), (3, 13), "{:?}", invalid.problems[0]);
        assert_eq!(&text[at.start..at.start + 1], "x");
    }

    #[test]
    fn every_problem_of_a_document_locates() {
        let doc = json!({
            "version": 2,
            "sites": [{ "name": "Fra!", "kind": "shared", "region": "eu-central", "extra": 1 }],
            "pools": [{ "name": "p", "class": "vps-host",
                        "offers": [{ "tenant": "acme", "quota": { "vcpu": -1 } }] }]
        });
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let invalid = crate::validate(text.as_bytes()).unwrap_err();
        for problem in &invalid.problems {
            let at = locate_problem(&text, problem).unwrap();
            let value: Value = serde_json::from_str(&text[at.start..at.end]).unwrap();
            assert_ne!(value, Value::Null, "{problem:?}");
        }
        let vcpu = invalid
            .problems
            .iter()
            .find(|p| p.path == "pools[0].offers[0].quota.vcpu")
            .unwrap();
        let at = locate_problem(&text, vcpu).unwrap();
        assert_eq!(&text[at.start..at.end], "-1");
    }
}
