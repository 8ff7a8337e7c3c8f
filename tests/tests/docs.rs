//! README.md and docs/ as a reader meets them: every relative link
//! resolves (to a file that exists, and to a heading that exists where it
//! names one), every code block says its language (a bare one would be
//! compiled as Rust, or look like it), and every page with a Rust snippet
//! is compiled by `src/snippets.rs`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    pages
}

/// A page's lines outside code blocks, and the info strings of the code
/// blocks it opens.
fn split(text: &str) -> (Vec<&str>, Vec<&str>) {
    let (mut prose, mut fences, mut inside) = (Vec::new(), Vec::new(), false);
    for line in text.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            if !inside {
                fences.push(info.trim());
            }
            inside = !inside;
        } else if !inside {
            prose.push(line);
        }
    }
    (prose, fences)
}

/// `line` without its inline code spans.
fn without_code(line: &str) -> String {
    line.split('`').step_by(2).collect()
}

/// The targets of the inline links and images of `lines`.
fn links(lines: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for line in lines {
        let line = without_code(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    found
}

/// The anchors GitHub gives a page's headings: lower case, punctuation
/// but `-` and `_` dropped, spaces as `-`; a repeated one gets `-1`, `-2`.
fn anchors(text: &str) -> HashSet<String> {
    let (prose, _) = split(text);
    let mut anchors = HashSet::new();
    for line in prose {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while !anchors.insert(unique.clone()) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
    }
    anchors
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let (prose, _) = split(&text);
        for link in links(&prose) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", page.display()));
            } else if !anchor.is_empty() {
                let text = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    broken.push(format!("{}: {link}: no such heading", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 20,
        "only {checked} links found: is the parser blind?"
    );
}

#[test]
fn a_broken_link_and_a_missing_heading_are_found() {
    let text = "# Using it\n\n[a](#using-it) [b](#nowhere) `[c](d)`\n```sh\n[e](f)\n```\n";
    let (prose, fences) = split(text);
    assert_eq!(links(&prose), ["#using-it", "#nowhere"]);
    assert_eq!(fences, ["sh"]);
    let found = anchors(text);
    assert!(found.contains("using-it") && !found.contains("nowhere"));
    assert!(anchors("## The relay (issue 15)\n").contains("the-relay-issue-15"));
}

#[test]
fn every_code_block_names_its_language() {
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let (_, fences) = split(&text);
        assert!(
            fences.iter().all(|info| !info.is_empty()),
            "{}: a code block without a language",
            page.display()
        );
    }
}

#[test]
fn every_page_with_rust_is_compiled() {
    let snippets = include_str!("../src/snippets.rs");
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let (_, fences) = split(&text);
        if fences.iter().any(|info| info.starts_with("rust")) {
            let name = page.strip_prefix(root()).unwrap().display().to_string();
            let included = format!("include_str!(\"../../{}\")", name.replace('\\', "/"));
            assert!(
                snippets.contains(&included),
                "{name} has Rust snippets that src/snippets.rs does not compile"
            );
        }
    }
}
