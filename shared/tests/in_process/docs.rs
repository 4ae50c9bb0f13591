//! The documents hold together: every relative link of the README and `docs/` resolves (its
//! file, and its heading where it names one), each decision is one record under
//! `docs/decisions/` with its context, decision and consequences, listed once in the index, and
//! `docs/api.md` lists exactly the routes of `openapi.yaml`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut files);
    files.sort();
    files
}

/// The text outside fenced code blocks, where links are links.
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The targets of `[label](target)` links.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        out.push(rest[..end].to_string());
        rest = &rest[end..];
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in links(&prose(&text)) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !resolved.exists() {
                broken.push(format!("{}: {target} (no such file)", file.display()));
                continue;
            }
            if !fragment.is_empty() && resolved.is_file() {
                let there = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&there).contains(fragment) {
                    broken.push(format!("{}: {target} (no such heading)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_sees_a_broken_link_and_a_missing_heading() {
    assert_eq!(links("a [b](c.md#d) e [f](g)"), ["c.md#d", "g"]);
    assert!(links(&prose("```\n[x](y)\n```\n")).is_empty());
    assert_eq!(anchor(" The two commands"), "the-two-commands");
    assert_eq!(
        anchor("Why a figure is what it is"),
        "why-a-figure-is-what-it-is"
    );
    assert!(!anchors("# One\n## Two `x`").contains("three"));
    assert!(anchors("# One\n## Two `x`").contains("two-x"));
}

fn decisions_dir() -> PathBuf {
    root().join("docs/decisions")
}

/// Each decision's number and its file name, from the records' names (`0041-….md`).
fn records() -> BTreeMap<u32, Vec<String>> {
    let mut out: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(decisions_dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name == "README.md" {
            continue;
        }
        let number: u32 = name
            .get(..4)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("docs/decisions/{name} does not start with its number"));
        out.entry(number).or_default().push(name);
    }
    out
}

#[test]
fn each_decision_is_one_record_in_the_adr_form_listed_once() {
    let records = records();
    let numbers: Vec<u32> = records.keys().copied().collect();
    let expected: Vec<u32> = (1..=numbers.len() as u32).collect();
    assert_eq!(
        numbers, expected,
        "decisions are numbered 1, 2, … without a gap"
    );
    let index = std::fs::read_to_string(decisions_dir().join("README.md")).unwrap();
    for (number, names) in &records {
        assert_eq!(
            names.len(),
            1,
            "decision {number} is defined twice: {names:?}"
        );
        let name = &names[0];
        let text = std::fs::read_to_string(decisions_dir().join(name)).unwrap();
        assert!(
            text.starts_with(&format!("# {number}. ")),
            "{name} opens with its number and title"
        );
        for section in ["## Context", "## Decision", "## Consequences"] {
            assert_eq!(
                text.lines().filter(|l| *l == section).count(),
                1,
                "{name} has one {section}"
            );
        }
        assert_eq!(
            index.matches(&format!("]({name})")).count(),
            1,
            "the index lists {name} once"
        );
    }
    // Nothing else defines a numbered decision: the README and the other documents link to them.
    for file in markdown_files() {
        if file.starts_with(decisions_dir()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            let numbered = line
                .split_once(". **")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            assert!(
                !numbered,
                "{} defines a decision outside docs/decisions: {line}",
                file.display()
            );
        }
    }
}

/// `(METHOD, path)` of every operation of `openapi.yaml`, read from its `paths:` block.
fn openapi_routes() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(root().join("openapi.yaml")).unwrap();
    let mut routes = BTreeSet::new();
    let mut in_paths = false;
    let mut path = String::new();
    for line in text.lines() {
        if !line.starts_with(' ') && !line.is_empty() {
            in_paths = line == "paths:";
            continue;
        }
        if !in_paths {
            continue;
        }
        if let Some(p) = line.strip_prefix("  /") {
            path = format!("/{}", p.trim_end_matches(':'));
        } else if let Some(method) = line.strip_prefix("    ").and_then(|m| m.strip_suffix(':')) {
            if ["get", "put", "post", "delete", "patch"].contains(&method) {
                routes.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    routes
}

/// `(METHOD, path)` of every row of `docs/api.md`'s route table (`` | `GET /pools` … ``).
fn documented_routes() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(root().join("docs/api.md")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| {
            let (method, rest) = l.split_once(' ')?;
            if !method.chars().all(|c| c.is_ascii_uppercase()) {
                return None;
            }
            let path: String = rest
                .chars()
                .take_while(|c| !matches!(c, '?' | '`' | ' '))
                .collect();
            Some((method.to_string(), path))
        })
        .collect()
}

#[test]
fn the_api_document_lists_exactly_the_routes_of_openapi() {
    let contract = openapi_routes();
    assert!(contract.len() >= 15, "{contract:?}");
    let documented = documented_routes();
    let missing: Vec<_> = contract.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&contract).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/api.md lacks {missing:?} and lists {extra:?}, which openapi.yaml does not have"
    );
}
