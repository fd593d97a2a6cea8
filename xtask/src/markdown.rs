//! What the docs' checks and generators need to know of Markdown: the anchors a page's
//! headings get, and the links a page holds. Pages are read with `pulldown-cmark`, the
//! parser mdBook uses, with mdBook's options (`mdbook-markdown`'s `new_cmark_parser`).
//!
//! Anchors follow mdBook's rules (`mdbook-html`'s `id_from_content` and `unique_id`), which
//! GitHub's README rendering shares for the headings these docs use: the text a reader sees
//! of the heading (code spans' content, links' text, no markup), trimmed and lowercased;
//! whitespace becomes `-`; letters, digits, `-` and `_` stay; everything else is dropped; a
//! repeated anchor gets `-1`, `-2`, ... in page order. A heading ending in `{#id}` has that
//! anchor instead (and, as in mdBook, does not take part in the numbering). Definition-list
//! terms get anchors the same way.

use std::collections::HashSet;
use std::ops::Range;

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// A link of a page: its target as written and the line it is on (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// `path`, `path#anchor`, `#anchor` or a URL.
    pub target: String,
    /// The line of the page it is on, from 1.
    pub line: usize,
}

/// A parser of `text` with the options mdBook reads pages with.
fn parser(text: &str) -> Parser<'_> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_SMART_PUNCTUATION
        | Options::ENABLE_DEFINITION_LIST
        | Options::ENABLE_GFM;
    Parser::new_ext(text, options)
}

/// The anchor of a heading whose text (inline Markdown) is `text`, before deduplication.
pub fn heading_id(text: &str) -> String {
    let heading = format!("# {text}");
    headings(&heading).into_iter().next().map(|(_, text)| id_from_content(&text)).unwrap_or_default()
}

/// mdBook's anchor of a heading's plain text.
fn id_from_content(text: &str) -> String {
    text.trim()
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

/// The anchors of every heading (and definition-list term) of `page`, in order.
pub fn heading_ids(page: &str) -> Vec<String> {
    let mut used = HashSet::new();
    headings(page)
        .into_iter()
        .map(|(explicit, text)| explicit.unwrap_or_else(|| unique_id(&id_from_content(&text), &mut used)))
        .collect()
}

/// Every heading and definition-list term of `page`: its `{#id}`, if any, and the text a
/// reader sees (text and code spans; markup and HTML tags left out).
fn headings(page: &str) -> Vec<(Option<String>, String)> {
    let mut found = Vec::new();
    let mut open: Option<(Option<String>, String)> = None;
    for event in parser(page) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => open = Some((id.map(|id| id.to_string()), String::new())),
            Event::Start(Tag::DefinitionListTitle) => open = Some((None, String::new())),
            Event::End(TagEnd::Heading(_) | TagEnd::DefinitionListTitle) => found.extend(open.take()),
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, heading)) = &mut open {
                    heading.push_str(&text);
                }
            }
            _ => {}
        }
    }
    found
}

/// Every link of `page`, in page order: inline links and images `[text](target)`,
/// reference definitions `[label]: target` (a reference link's target is its
/// definition's), autolinks, and the `href` and `src` attributes of HTML, outside code
/// spans and code blocks.
pub fn links(page: &str) -> Vec<Link> {
    let parser = parser(page).into_offset_iter();
    let mut found: Vec<(usize, String)> =
        parser.reference_definitions().iter().map(|(_, def)| (def.span.start, def.dest.to_string())).collect();
    for (event, range) in parser {
        match event {
            Event::Start(Tag::Link { link_type, dest_url, .. } | Tag::Image { link_type, dest_url, .. }) => {
                if let Some(target) = written_target(link_type, dest_url) {
                    found.push((range.start, target));
                }
            }
            Event::Html(_) | Event::InlineHtml(_) => found.extend(html_targets(page, range)),
            _ => {}
        }
    }
    found.sort_by_key(|(offset, _)| *offset);
    let line_starts: Vec<usize> = std::iter::once(0).chain(page.match_indices('\n').map(|(at, _)| at + 1)).collect();
    found
        .into_iter()
        .map(|(offset, target)| Link { line: line_starts.partition_point(|&start| start <= offset), target })
        .collect()
}

/// The target of a link written on the page itself: not one that takes its target from a
/// reference definition (the definition is the link), nor an email address.
fn written_target(link_type: LinkType, dest: CowStr<'_>) -> Option<String> {
    match link_type {
        LinkType::Inline | LinkType::Autolink => Some(dest.to_string()),
        _ => None,
    }
}

/// The `href="..."` and `src="..."` values in the HTML at `range` of `page`, with their
/// offsets.
fn html_targets(page: &str, range: Range<usize>) -> Vec<(usize, String)> {
    let html = &page[range.clone()];
    let mut found = Vec::new();
    for attribute in ["href=\"", "src=\""] {
        for (at, _) in html.match_indices(attribute) {
            let value = &html[at + attribute.len()..];
            if let Some(end) = value.find('"') {
                found.push((range.start + at, value[..end].to_owned()));
            }
        }
    }
    found
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
        // mdBook's smart punctuation: `--` is an en dash, which the anchor drops.
        assert_eq!(heading_id("Before -- after <small>HTML</small>"), "before--after-html");
        let page = "# Title\n\n## Usage\n```\n# not a heading\n```\nUsage\n-----\n## Usage ##\n## Custom {#mine}\n\
                    \n    # indented code\n\nA term\n: its definition\n";
        assert_eq!(heading_ids(page), ["title", "usage", "usage-1", "usage-2", "mine", "a-term"]);
    }

    #[test]
    fn finds_links_outside_code() {
        let page = "See [a](a.md#x) and ![img](i.png \"t\") `[no](code.md)`.\n\
                    ```\n[no](fenced.md)\n```\n[ref]: docs/r.md\n<a href=\"h.md\">h</a> [p](f(x).md) [used][ref]\n\
                    <div>\n<img src=\"pic.png\">\n</div>\n\n<https://example.com> <me@example.com>\n";
        let targets: Vec<(String, usize)> = links(page).into_iter().map(|l| (l.target, l.line)).collect();
        let expected = [
            ("a.md#x", 1),
            ("i.png", 1),
            ("docs/r.md", 5),
            ("h.md", 6),
            ("f(x).md", 6),
            ("pic.png", 8),
            ("https://example.com", 11),
        ];
        assert_eq!(targets, expected.map(|(t, l)| (t.to_owned(), l)));
    }
}
