//! Where a problem's path points in the text of a document: the byte range of the value, and
//! its line and column, for the CLI's `FILE:LINE:COLUMN:` and the console's "show it in the
//! editor". A path the text lacks (a missing field) points at the closest value it has; a
//! problem of a key the object repeats, at the occurrence it is about.
//!
//! Lines count from 1, columns from 1 in characters, everywhere: here, in the CLI's prefix and
//! in the `at line L column C` that ends the message of text that is not JSON
//! ([`crate::validate::json_error`]; serde_json's own column counts bytes).

use crate::validate::{KeyProblem, Problem};
use std::collections::BTreeMap;

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
/// walks through. An object that repeats a key is walked through its first occurrence, as the
/// validator reads it.
pub fn locate(text: &str, path: &str) -> Option<Location> {
    locate_occurrence(text, path, 0)
}

/// Where `problem` points in `text`: its path's value (for a repeated key, its first repeat);
/// for a problem of the whole document, where the document starts (a missing field, a list
/// instead of an object: an empty range, the caret before it, not the whole text) or, for text
/// that is not JSON, the line and column its message ends with.
pub fn locate_problem(text: &str, problem: &Problem) -> Option<Location> {
    locate_problem_at(text, problem, 0)
}

/// Where each of `problems` (a document's, in their order) points in `text`, as
/// [`locate_problem`] says, except that the problems of a key its object repeats point at the
/// occurrence each is about: the second `duplicate key` problem at a path at the key's third
/// occurrence, the second `unknown field` at its second.
pub fn locate_problems(text: &str, problems: &[Problem]) -> Vec<Option<Location>> {
    let mut seen: BTreeMap<(&str, KeyProblem), usize> = BTreeMap::new();
    problems
        .iter()
        .map(|problem| {
            let earlier = match KeyProblem::of(&problem.message) {
                Some(kind) => {
                    let count = seen.entry((&problem.path, kind)).or_default();
                    *count += 1;
                    *count - 1
                }
                None => 0,
            };
            locate_problem_at(text, problem, earlier)
        })
        .collect()
}

/// Where `problems[index]` points in `text`, as [`locate_problems`] says (the one problem a
/// reader picked, without locating the others).
pub fn locate_problem_in(text: &str, problems: &[Problem], index: usize) -> Option<Location> {
    let problem = problems.get(index)?;
    let earlier = match KeyProblem::of(&problem.message) {
        Some(kind) => problems[..index]
            .iter()
            .filter(|p| p.path == problem.path && KeyProblem::of(&p.message) == Some(kind))
            .count(),
        None => 0,
    };
    locate_problem_at(text, problem, earlier)
}

/// [`locate_problem`] for a problem with `earlier` problems of the same kind about the same
/// key before it.
fn locate_problem_at(text: &str, problem: &Problem, earlier: usize) -> Option<Location> {
    if problem.path.is_empty() {
        return message_place(text, &problem.message).or_else(|| {
            let at = locate(text, "")?;
            Some(Location {
                end: at.start,
                ..at
            })
        });
    }
    // The key's first occurrence is read; a `duplicate key` is about a later one.
    let skip = match KeyProblem::of(&problem.message) {
        Some(KeyProblem::Duplicate) => earlier + 1,
        Some(KeyProblem::Unknown) => earlier,
        None => 0,
    };
    locate_occurrence(text, &problem.path, skip)
}

/// [`locate`], its last step (a key) taken at the occurrence after `skip` earlier ones.
fn locate_occurrence(text: &str, path: &str, skip: usize) -> Option<Location> {
    let steps = steps(path)?;
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    for (i, step) in steps.iter().enumerate() {
        let skip = if i + 1 == steps.len() { skip } else { 0 };
        let next = match (step, bytes.get(at)) {
            (Step::Key(key), Some(b'{')) => member(text, at, key, skip)?,
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

/// The place a message of text that is not JSON ends with, `... at line 3 column 5` (the
/// column in characters; one past the line's end is its end).
fn message_place(text: &str, message: &str) -> Option<Location> {
    let bytes = message.as_bytes();
    let at = rfind(bytes, b" at line ")? + b" at line ".len();
    let number = |from: usize| -> Option<(usize, usize)> {
        let digits = bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        Some((message[from..from + digits].parse().ok()?, from + digits))
    };
    let (line, after) = number(at)?;
    if !bytes[after..].starts_with(b" column ") {
        return None;
    }
    let (column, _) = number(after + b" column ".len())?;
    let line_start = line_start(text, line)?;
    let start = text[line_start..]
        .char_indices()
        .take_while(|(_, c)| *c != '\n')
        .nth(column.saturating_sub(1))
        .map_or_else(
            || line_start + line_len(text, line_start),
            |(offset, _)| line_start + offset,
        );
    Some(location(text, start, start))
}

/// The place serde_json names by its `line` (from 1) and `column` (in bytes from 1, 0 before
/// the line's first byte; past the line's end is its end), with the column in characters.
pub(crate) fn serde_place(text: &str, line: usize, column: usize) -> Option<Location> {
    let line_start = line_start(text, line)?;
    let offset = column.saturating_sub(1).min(line_len(text, line_start));
    let start = (0..=offset)
        .rev()
        .map(|o| line_start + o)
        .find(|&o| text.is_char_boundary(o))
        .unwrap_or(line_start);
    Some(location(text, start, start))
}

/// What a JSON reader was at when it stopped at a byte of the text: see [`stop_at`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Inside a value's token (a string it had not finished), or just past its end.
    Value,
    /// At the first byte of a value; `first` when it is a list's first element, `container`
    /// when it opens a list or an object.
    Start { first: bool, container: bool },
    /// Just past a key, or after it up to its `:`; the path names the key's value. (A stop
    /// inside a key is `Between`, naming its object: the key was not read.)
    Key,
    /// Between tokens. `pending` when the path names a value still to come (after `"key":`, or
    /// after a list's `[` or `,`: `in_list`), otherwise it names the object or list being read.
    Between { pending: bool, in_list: bool },
}

/// Where a JSON reader stopped: the path of the value it was reading when it reached byte
/// `at` of `text`, written as the validator writes paths, the length of its parent's path in
/// it, and what it was at. Only the text before `at` is read (and the byte at it), so text that
/// is not JSON past the stop does not matter; text that is not JSON before it stops the walk
/// there. serde_json names a place, not a path; the export reader turns one into the other
/// with this, where serde_path_to_error would read the text a second time through every type
/// (a second copy of the reader's code in the JS package's `.wasm`).
pub(crate) fn stop_at(text: &str, at: usize) -> (String, usize, Place) {
    #[derive(PartialEq)]
    enum Expect {
        Value,
        Key,
        Colon,
        Next,
    }
    /// A list or an object being read: where its own path ends, and a list's next index.
    struct Open {
        list: bool,
        base: usize,
        index: usize,
    }
    /// A value starts: in a list, its index is its path's last step (an object's key is
    /// there already).
    fn begin(path: &mut String, open: &[Open]) {
        if let Some(o) = open.last().filter(|o| o.list) {
            path.truncate(o.base);
            path.push_str(&format!("[{}]", o.index));
        }
    }
    /// Where the walk stops between tokens (or at text that is not JSON).
    fn between(mut path: String, open: &[Open], expect: &Expect) -> (String, usize, Place) {
        let base = open.last().map_or(0, |o| o.base);
        let in_list = open.last().is_some_and(|o| o.list);
        match expect {
            Expect::Colon => (path, base, Place::Key),
            Expect::Value if !open.is_empty() => {
                begin(&mut path, open);
                let pending = true;
                (path, base, Place::Between { pending, in_list })
            }
            _ => {
                path.truncate(base);
                let (pending, in_list) = (false, false);
                (path, parent_of(open), Place::Between { pending, in_list })
            }
        }
    }
    /// The length of the path of what holds the innermost open list or object.
    fn parent_of(open: &[Open]) -> usize {
        open.len().checked_sub(2).map_or(0, |i| open[i].base)
    }
    let bytes = text.as_bytes();
    let at = at.min(bytes.len());
    let mut path = String::new();
    let mut open: Vec<Open> = Vec::new();
    let mut expect = Expect::Value;
    let mut i = 0;
    loop {
        let base = open.last().map_or(0, |o| o.base);
        i = skip_space(bytes, i);
        if i >= at {
            if i == at
                && expect == Expect::Value
                && bytes.get(i).is_some_and(|b| !b"]},:".contains(b))
            {
                begin(&mut path, &open);
                let first = open.last().is_some_and(|o| o.list && o.index == 0);
                let container = matches!(bytes[i], b'{' | b'[');
                return (path, base, Place::Start { first, container });
            }
            return between(path, &open, &expect);
        }
        match (&expect, bytes[i]) {
            (Expect::Value, b'{' | b'[') => {
                begin(&mut path, &open);
                let list = bytes[i] == b'[';
                open.push(Open {
                    list,
                    base: path.len(),
                    index: 0,
                });
                expect = if list { Expect::Value } else { Expect::Key };
                i += 1;
            }
            // A list or an object that ends (empty, or after a value or a trailing comma).
            (_, b']' | b'}') if open.last().is_some_and(|o| o.list == (bytes[i] == b']')) => {
                let closed = open.pop().expect("checked");
                path.truncate(closed.base);
                i += 1;
                expect = Expect::Next;
                if i == at {
                    let parent = open.last().map_or(0, |o| o.base);
                    return (path, parent, Place::Value);
                }
            }
            (Expect::Value, b) if !b"]},:".contains(&b) => {
                begin(&mut path, &open);
                let end = match b {
                    b'"' => string_end(bytes, i).unwrap_or(bytes.len()),
                    _ => {
                        i + bytes[i..]
                            .iter()
                            .position(|b| b",]}: \t\n\r".contains(b))
                            .unwrap_or(bytes.len() - i)
                    }
                };
                if end >= at {
                    return (path, base, Place::Value);
                }
                i = end;
                expect = Expect::Next;
            }
            (Expect::Key, b'"') => {
                // A key the stop cuts (text that is not JSON in it) is not read.
                let end = string_end(bytes, i).filter(|&end| end <= at);
                let key = end.and_then(|end| unescape(&text[i..end]));
                path.truncate(base);
                match (end, key) {
                    (Some(end), Some(key)) => {
                        crate::validate::push_key(&mut path, &key);
                        if end >= at {
                            return (path, base, Place::Key);
                        }
                        i = end;
                        expect = Expect::Colon;
                    }
                    _ => return between(path, &open, &expect),
                }
            }
            (Expect::Colon, b':') => {
                i += 1;
                expect = Expect::Value;
            }
            (Expect::Next, b',') if !open.is_empty() => {
                let o = open.last_mut().expect("checked");
                path.truncate(o.base);
                o.index += 1;
                expect = if o.list { Expect::Value } else { Expect::Key };
                i += 1;
            }
            // Text that is not JSON: the reader stopped at it, or before.
            _ => return between(path, &open, &expect),
        }
    }
}

/// Where line `line` (from 1; 0 is the first) of `text` starts.
pub(crate) fn line_start(text: &str, line: usize) -> Option<usize> {
    match line {
        0 | 1 => Some(0),
        n => Some(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .nth(n - 2)?
                .0
                + 1,
        ),
    }
}

/// The length in bytes of the line that starts at `line_start`, without its `\n`.
fn line_len(text: &str, line_start: usize) -> usize {
    text.as_bytes()[line_start..]
        .iter()
        .take_while(|&&b| b != b'\n')
        .count()
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

/// In the object that opens at `open`: where the value of `key` starts, at its occurrence
/// after `skip` earlier ones (0: the first). `Some(None)` when the object has no such key
/// (or fewer occurrences).
fn member(text: &str, open: usize, key: &str, mut skip: usize) -> Option<Option<usize>> {
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
            if skip == 0 {
                return Some(Some(at));
            }
            skip -= 1;
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

    /// The value a located problem starts at, and its line.
    fn at(text: &str, at: Option<Location>) -> (&str, usize) {
        let at = at.expect("located");
        let end = value_end(text.as_bytes(), at.start).unwrap_or(at.start);
        (&text[at.start..end], at.line)
    }

    #[test]
    fn a_repeated_key_is_located_at_its_repeat() {
        let text = r#"{
  "version": 1,
  "sites": [{
    "name": "fra",
    "kind": "shared", "region": "eu",
    "name": "ber",
    "x": 1, "x": 2,
    "name": "muc"
  }],
  "providerAccounts": [{ "name": "cloud", "provider": "h",
    "config": { "location": "a", "location": "b" } }],
  "pools": [{ "name": "p", "site": "fra", "class": "vps-host",
    "ownerQuota": { "gpu": 1, "gpu": 2 },
    "offers": [{ "tenant": "acme", "quota": { "a/b": 1, "a\u002fb": 3 } }] }],
  "version": 1
}"#;
        let problems = crate::validate(text.as_bytes()).unwrap_err().problems;
        let places = locate_problems(text, &problems);
        let found: Vec<(&str, (&str, usize))> = problems
            .iter()
            .zip(&places)
            .filter(|(p, _)| KeyProblem::of(&p.message).is_some())
            .map(|(p, place)| (p.path.as_str(), at(text, *place)))
            .collect();
        assert_eq!(
            found,
            [
                ("sites[0].name", (r#""ber""#, 6)),
                // Each occurrence of an unknown field is a problem of its own.
                ("sites[0].x", ("1", 7)),
                ("sites[0].x", ("2", 7)),
                // A third occurrence: the second repeat.
                ("sites[0].name", (r#""muc""#, 8)),
                ("providerAccounts[0].config.location", (r#""b""#, 11)),
                ("pools[0].ownerQuota.gpu", ("2", 13)),
                // The same key written with an escape.
                (r#"pools[0].offers[0].quota["a/b"]"#, ("3", 14)),
                ("version", ("1", 15)),
            ]
        );
        // One problem picked among the others is where it is among them all.
        for (index, place) in places.iter().enumerate() {
            assert_eq!(locate_problem_in(text, &problems, index), *place);
        }
        // Alone, a repeated key's problem is at its first repeat.
        let muc = problems
            .iter()
            .rposition(|p| p.path == "sites[0].name")
            .unwrap();
        assert_eq!(
            at(text, locate_problem(text, &problems[muc])),
            (r#""ber""#, 6)
        );
    }

    #[test]
    fn a_problem_of_the_whole_document_is_at_the_document() {
        for (text, place) in [
            (r#"{"sites": []}"#, (1, 1)),
            ("\n  [1, 2]\n", (2, 3)),
            (" null", (1, 2)),
        ] {
            let problems = crate::validate(text.as_bytes()).unwrap_err().problems;
            assert_eq!(problems[0].path, "", "{problems:?}");
            let at = locate_problem(text, &problems[0]).unwrap();
            assert_eq!((at.line, at.column), place, "{text:?}: {problems:?}");
            // The caret before it, as for text that is not JSON.
            assert_eq!(at.start, at.end, "{text:?}");
            assert_eq!(at.start, text.len() - text.trim_start().len(), "{text:?}");
        }
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

    #[test]
    fn a_stop_names_the_value_read_there() {
        let text = r#"{"a": [1, {"b c": "x"}], "d": tru"#;
        let stop = |at: usize| stop_at(text, at);
        // Just past `1`: the list's first element, held by `a`.
        assert_eq!(stop(8), ("a[0]".into(), 1, Place::Value));
        // At `{`, the list's second element starts.
        let second = Place::Start {
            first: false,
            container: true,
        };
        assert_eq!(stop(10), ("a[1]".into(), 1, second));
        // Past a key that is no plain name: its path is written as the validator writes it.
        assert_eq!(stop(16), ("a[1][\"b c\"]".into(), 4, Place::Key));
        // Past the list's `]`: the list, held by the document.
        assert_eq!(stop(23), ("a".into(), 0, Place::Value));
        // After `"d":`, before a value; at its first byte; inside the unfinished `tru`.
        let pending = Place::Between {
            pending: true,
            in_list: false,
        };
        assert_eq!(stop(29), ("d".into(), 0, pending));
        let scalar = Place::Start {
            first: false,
            container: false,
        };
        assert_eq!(stop(30), ("d".into(), 0, scalar));
        assert_eq!(stop(text.len()), ("d".into(), 0, Place::Value));
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod stops {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text, any place (past its end too, or inside a character): a path, and a
        /// parent that is a part of it.
        #[test]
        fn a_stop_anywhere_in_any_text_has_a_path(
            text in r#"[\[\]{}",:\\ \t\r0-9a-zé€\n]{0,40}"#,
            at in 0usize..50,
        ) {
            let (path, parent, _) = stop_at(&text, at);
            prop_assert!(parent <= path.len());
            prop_assert!(path.is_char_boundary(parent));
        }
    }
}
