//! What the docs' checks and generators need to know of Markdown: the anchors a page's
//! headings get, and the links a page holds.
//!
//! Anchors follow mdBook's rules (`mdbook-html`'s `id_from_content` and `unique_id`), which
//! GitHub's README rendering shares for the headings these docs use: the heading's text
//! without its inline markup, lowercased; whitespace becomes `-`; letters, digits, `-` and
//! `_` stay; everything else is dropped; a repeated anchor gets `-1`, `-2`, ... in page
//! order. A heading ending in `{#id}` has that anchor instead.

use std::collections::HashSet;

/// A link of a page: its target as written and the line it is on (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// `path`, `path#anchor`, `#anchor` or a URL.
    pub target: String,
    /// The line of the page it is on, from 1.
    pub line: usize,
}

/// The anchor of a heading whose text (inline Markdown) is `text`, before deduplication.
pub fn heading_id(text: &str) -> String {
    plain_text(text)
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// `id` made unique among `used` (and added to it): `id`, else `id-1`, `id-2`, ...
pub fn unique_id(id: &str, used: &mut HashSet<String>) -> String {
    if used.insert(id.to_owned()) {
        return id.to_owned();
    }
    (1..).map(|n| format!("{id}-{n}")).find(|candidate| used.insert(candidate.clone())).unwrap_or_else(|| id.to_owned())
}

/// The anchors of every heading of `page`, in order.
pub fn heading_ids(page: &str) -> Vec<String> {
    let mut used = HashSet::new();
    headings(page)
        .into_iter()
        .map(|text| match explicit_id(&text) {
            Some(id) => {
                used.insert(id.clone());
                id
            }
            None => unique_id(&heading_id(&text), &mut used),
        })
        .collect()
}

/// The `{#id}` at the end of a heading, if any.
fn explicit_id(text: &str) -> Option<String> {
    let attrs = text.trim_end().strip_suffix('}')?;
    let open = attrs.rfind('{')?;
    attrs[open + 1..].split_whitespace().find_map(|a| a.strip_prefix('#')).map(str::to_owned)
}

/// The text of every heading of `page` (ATX `# ...` and setext underlined), outside fenced
/// code blocks.
fn headings(page: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut previous: Option<&str> = None;
    for line in prose_lines(page) {
        let Some(line) = line else {
            previous = None;
            continue;
        };
        let trimmed = line.trim_start();
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        let indent = line.len() - trimmed.len();
        if indent < 4 && (1..=6).contains(&hashes) && trimmed[hashes..].chars().next().is_none_or(char::is_whitespace) {
            let mut text = trimmed[hashes..].trim();
            // A closing sequence of #s is not part of the text.
            let unclosed = text.trim_end_matches('#');
            if unclosed.is_empty() || unclosed.ends_with(' ') {
                text = unclosed.trim_end();
            }
            found.push(text.to_owned());
            previous = None;
            continue;
        }
        let underline = line.trim();
        let is_underline = !underline.is_empty()
            && (underline.chars().all(|c| c == '=') || underline.chars().all(|c| c == '-') && underline.len() >= 2);
        match previous {
            Some(text) if is_underline && indent < 4 && !text.trim().is_empty() && !is_list_item(text) => {
                found.push(text.trim().to_owned());
                previous = None;
            }
            _ => previous = Some(line),
        }
    }
    found
}

fn is_list_item(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") || t.starts_with('|')
}

/// The lines of `page`, with `None` for each line inside (or fencing) a fenced code block.
fn prose_lines(page: &str) -> impl Iterator<Item = Option<&str>> {
    let mut fence: Option<String> = None;
    page.lines().map(move |line| {
        let trimmed = line.trim_start();
        let marker: String = trimmed.chars().take_while(|c| *c == '`' || *c == '~').collect();
        let is_fence = marker.len() >= 3 && marker.chars().all(|c| c == marker.chars().next().unwrap_or('`'));
        match &fence {
            Some(open) => {
                if is_fence && marker.starts_with(open.as_str()) && trimmed[marker.len()..].trim().is_empty() {
                    fence = None;
                }
                None
            }
            None if is_fence => {
                fence = Some(marker);
                None
            }
            None => Some(line),
        }
    })
}

/// Inline Markdown as the text a reader sees: code spans keep their content, links their
/// text, HTML tags and emphasis markers go.
fn plain_text(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            if let Some(close) = find_run(&chars, i + run, run) {
                let code: String = chars[i + run..close].iter().collect();
                out.push_str(strip_one_space(&code));
                i = close + run;
                continue;
            }
            out.extend(&chars[i..i + run]);
            i += run;
        } else if c == '\\' && chars.get(i + 1).is_some_and(char::is_ascii_punctuation) {
            out.push(chars[i + 1]);
            i += 2;
        } else if c == '<'
            && let Some(close) = chars[i..].iter().position(|c| *c == '>')
        {
            let tag: String = chars[i + 1..i + close].iter().collect();
            if tag.starts_with('/') || tag.starts_with(|c: char| c.is_ascii_alphabetic()) {
                i += close + 1;
            } else {
                out.push(c);
                i += 1;
            }
        } else if c == ']' && chars.get(i + 1) == Some(&'(') {
            // The end of a link's text: skip its destination.
            let mut depth = 0;
            let mut j = i + 1;
            while j < chars.len() {
                match chars[j] {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            i = j + 1;
        } else if is_markup(&chars, i) {
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether the character at `i` is inline markup a reader does not see: link brackets,
/// emphasis markers, an image's `!`.
fn is_markup(chars: &[char], i: usize) -> bool {
    match chars[i] {
        '[' | ']' | '*' => true,
        '!' => chars.get(i + 1) == Some(&'['),
        '_' => !is_intraword(chars, i),
        _ => false,
    }
}

/// Whether the `_` at `i` is inside a word (`steps_per_frame`), so not emphasis.
fn is_intraword(chars: &[char], i: usize) -> bool {
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    word(i.checked_sub(1).and_then(|p| chars.get(p))) && word(chars.get(i + 1))
}

/// The start of the next run of exactly `len` backticks at or after `from`.
fn find_run(chars: &[char], from: usize, len: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == '`' {
            let run = chars[j..].iter().take_while(|c| **c == '`').count();
            if run == len {
                return Some(j);
            }
            j += run;
        } else {
            j += 1;
        }
    }
    None
}

/// A code span's content: one leading and trailing space go when both are there.
fn strip_one_space(code: &str) -> &str {
    match code.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
        Some(inner) if !inner.trim().is_empty() => inner,
        _ => code,
    }
}

/// Every link of `page`: inline links and images `[text](target)`, reference definitions
/// `[label]: target` and HTML `href="target"`, outside code spans and fenced code blocks.
pub fn links(page: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (n, line) in prose_lines(page).enumerate() {
        let Some(line) = line else { continue };
        let line_no = n + 1;
        let prose = without_code_spans(line);
        if let Some(target) = reference_definition(&prose) {
            found.push(Link { target, line: line_no });
            continue;
        }
        let chars: Vec<char> = prose.chars().collect();
        for i in 0..chars.len() {
            if chars[i] == ']'
                && chars.get(i + 1) == Some(&'(')
                && let Some(target) = inline_destination(&chars[i + 2..])
            {
                found.push(Link { target, line: line_no });
            }
        }
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("href=\"") {
            rest = &rest[at + 6..];
            if let Some(end) = rest.find('"') {
                found.push(Link { target: rest[..end].to_owned(), line: line_no });
                rest = &rest[end..];
            }
        }
    }
    found
}

/// `line` with the content of its code spans blanked out.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            if let Some(close) = find_run(&chars, i + run, run) {
                out.extend(std::iter::repeat_n(' ', close + run - i));
                i = close + run;
                continue;
            }
            out.extend(&chars[i..i + run]);
            i += run;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The target of a reference definition line `[label]: target "title"`.
fn reference_definition(line: &str) -> Option<String> {
    let t = line.trim_start();
    if line.len() - t.len() >= 4 || !t.starts_with('[') || t.starts_with("[^") {
        return None;
    }
    let close = t.find("]:")?;
    let target = t[close + 2..].split_whitespace().next()?;
    Some(target.trim_start_matches('<').trim_end_matches('>').to_owned())
}

/// The destination of an inline link, from the character after `](`.
fn inline_destination(chars: &[char]) -> Option<String> {
    let start = chars.iter().position(|c| !c.is_whitespace())?;
    if chars[start] == '<' {
        let end = chars[start..].iter().position(|c| *c == '>')? + start;
        return Some(chars[start + 1..end].iter().collect());
    }
    let mut depth = 0;
    for (j, c) in chars.iter().enumerate().skip(start) {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(chars[start..j].iter().collect()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(chars[start..j].iter().collect()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_follow_mdbooks_rules() {
        // mdbook-html's own test case.
        assert_eq!(heading_id("`--passes`: add more rustdoc passes"), "--passes-add-more-rustdoc-passes");
        assert_eq!(heading_id("`output.sink`"), "outputsink");
        assert_eq!(heading_id("`[[runs]]`"), "runs");
        assert_eq!(heading_id("Steps, *frames* & `io_buffer`"), "steps-frames--io_buffer");
        assert_eq!(heading_id("[Linked](other.md#x) Über"), "linked-über");
        assert_eq!(heading_id("_emphasis_ and snake_case"), "emphasis-and-snake_case");
        let page = "# Title\n\n## Usage\n```\n# not a heading\n```\nUsage\n-----\n## Usage ##\n## Custom {#mine}\n";
        assert_eq!(heading_ids(page), ["title", "usage", "usage-1", "usage-2", "mine"]);
    }

    #[test]
    fn finds_links_outside_code() {
        let page = "See [a](a.md#x) and ![img](i.png \"t\") `[no](code.md)`.\n\
                    ```\n[no](fenced.md)\n```\n[ref]: docs/r.md\n<a href=\"h.md\">h</a> [p](f(x).md)\n";
        let targets: Vec<(String, usize)> = links(page).into_iter().map(|l| (l.target, l.line)).collect();
        let expected = [("a.md#x", 1), ("i.png", 1), ("docs/r.md", 5), ("f(x).md", 6), ("h.md", 6)];
        assert_eq!(targets, expected.map(|(t, l)| (t.to_owned(), l)));
    }
}
