//! The map of `docs/architecture.md` holds: `shared/src` shows its layers and nothing else, each
//! layer uses only the layers below it, every module uses only what the map says it may, the
//! domain does no I/O, paths inside the crate name their layer, no import cycles among the
//! modules, no file above 600 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir` with its module path (`store::dynamodb::keys`; `lib.rs` is "").
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            let mut inner = prefix.to_vec();
            inner.push(name);
            modules(&path, &inner, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut segments = prefix.to_vec();
            if name != "mod" && name != "lib" {
                segments.push(name);
            }
            out.insert(segments.join("::"), std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// The code a build without tests compiles, comments left out: unit-test modules stand at the
/// end of each file.
fn without_tests(text: &str) -> String {
    let code = text.find("#[cfg(test)]").map_or(text, |i| &text[..i]);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules `text` (of module `this`) refers to through `crate::` and `super::` paths,
/// resolved to the longest module path that exists.
fn references(this: &str, text: &str, known: &BTreeSet<String>) -> BTreeSet<String> {
    let resolve = |path: &[String]| -> Option<String> {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].join("::"))
            .find(|candidate| known.contains(candidate))
    };
    let this_path: Vec<String> = this
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let mut found = BTreeSet::new();
    // `use child::...` (and `pub use`) names a child module without `crate::` or `super::`.
    for line in text.lines().map(str::trim) {
        let Some(path) = line
            .strip_prefix("use ")
            .or_else(|| line.strip_prefix("pub use "))
            .or_else(|| line.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let first = path.split("::").next().unwrap_or("");
        let child = if this.is_empty() {
            first.to_string()
        } else {
            format!("{this}::{first}")
        };
        if known.contains(&child) {
            found.insert(child);
        }
    }
    let bytes: Vec<char> = text.chars().collect();
    let text_len = bytes.len();
    let mut i = 0;
    while i < text_len {
        let rest: String = bytes[i..text_len.min(i + 7)].iter().collect();
        let at_word_start = i == 0
            || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':');
        if !(at_word_start && (rest.starts_with("crate::") || rest.starts_with("super::"))) {
            i += 1;
            continue;
        }
        // Read a path: segments joined by `::`, possibly ending in a `{...}` group.
        let mut j = i;
        let mut segments: Vec<String> = Vec::new();
        let mut group: Option<String> = None;
        loop {
            let start = j;
            while j < text_len && (bytes[j].is_alphanumeric() || bytes[j] == '_') {
                j += 1;
            }
            if j > start {
                segments.push(bytes[start..j].iter().collect());
            }
            if j + 2 < text_len && bytes[j] == ':' && bytes[j + 1] == ':' {
                j += 2;
                if bytes[j] == '{' {
                    let end = (j..text_len).find(|&k| bytes[k] == '}').unwrap_or(text_len);
                    group = Some(bytes[j + 1..end].iter().collect());
                    j = end;
                    break;
                }
            } else {
                break;
            }
        }
        // Anchor: `crate` is the root; each `super` climbs from this file's module (a `mod.rs`
        // is its directory's module, so its `super` is the directory's parent).
        let mut base: Vec<String> = Vec::new();
        let mut rest = segments.as_slice();
        if rest.first().map(String::as_str) == Some("crate") {
            rest = &rest[1..];
        } else {
            base = this_path.clone();
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        // A `{...}` group refers to each of its items (the prefix itself when an item is not a
        // module), not to the prefix as such.
        let mut paths = Vec::new();
        if group.is_none() {
            paths.push([base.clone(), rest.to_vec()].concat());
        }
        if let Some(group) = group {
            for item in group.split(',') {
                let first = item
                    .trim()
                    .split("::")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                if !first.is_empty() && first != "self" {
                    paths.push([base.clone(), rest.to_vec(), vec![first]].concat());
                }
            }
        }
        for path in paths {
            if let Some(module) = resolve(&path) {
                if module != this {
                    found.insert(module);
                }
            }
        }
        i = j.max(i + 1);
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = BTreeMap::new();
    modules(&src(), &[], &mut files);
    let known: BTreeSet<String> = files.keys().cloned().collect();
    files
        .iter()
        .filter(|(module, _)| !module.is_empty())
        .map(|(module, text)| {
            (
                module.clone(),
                references(module, &without_tests(text), &known),
            )
        })
        .collect()
}

/// A cycle through `graph`, if any, as the modules along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|m| m == next).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(next, graph, state, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn the_module_graph_has_no_cycles() {
    let graph = graph();
    assert!(graph.len() > 20, "modules found: {:?}", graph.keys());
    assert_eq!(find_cycle(&graph), None);
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let edges = |pairs: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).is_some());
    assert!(find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])).is_none());
    let known: BTreeSet<String> = ["store", "store::traits", "store::memory"]
        .map(String::from)
        .into();
    let refs = references(
        "store::memory",
        "use super::traits::{Market, PositionStore};",
        &known,
    );
    assert_eq!(refs, BTreeSet::from(["store::traits".to_string()]));
    let refs = references(
        "store",
        "pub use memory::X;\nuse crate::store::traits::{A, B};",
        &known,
    );
    assert_eq!(
        refs,
        BTreeSet::from(["store::memory".to_string(), "store::traits".to_string()])
    );
}

#[test]
fn no_source_file_is_above_six_hundred_lines() {
    let mut files = BTreeMap::new();
    modules(&src(), &[], &mut files);
    for (module, text) in files {
        let lines = text.lines().count();
        assert!(lines <= MAX_LINES, "{module}: {lines} lines");
    }
}

fn architecture_doc() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/architecture.md"))
        .expect("docs/architecture.md exists")
}

/// The text of the doc's `## {title}` section.
fn section(doc: &str, title: &str) -> String {
    doc.split(&format!("\n## {title}"))
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("a \"{title}\" section"))
        .to_string()
}

/// A table row's first cell (a name in backticks) and its last cell's names (`—` for none).
fn row(line: &str) -> Option<(String, Vec<String>)> {
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
    let may_use = cells.get(3)?;
    let names = may_use
        .split(',')
        .map(|m| m.trim().trim_matches('`').to_string())
        .filter(|m| !m.is_empty() && m != "—" && m != "-")
        .collect();
    Some((name.to_string(), names))
}

/// The `| group | owns | may use |` rows of the doc's "Layers" table, top layer first.
fn layers() -> Vec<(String, BTreeSet<String>)> {
    section(&architecture_doc(), "Layers")
        .lines()
        .filter_map(row)
        .map(|(name, uses)| (name, uses.into_iter().collect()))
        .collect()
}

/// The module rows of the "Module map" section, under a `### \`group\`` heading each: a module
/// is `group::name`; a name it may use is of its own group unless it says its group.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let map = section(&architecture_doc(), "Module map");
    let mut group = String::new();
    let mut rows = BTreeMap::new();
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            group = heading.trim().trim_matches('`').to_string();
        } else if let Some((name, uses)) = row(line) {
            assert!(!group.is_empty(), "{name} stands under a layer's heading");
            let qualify = |m: String| {
                if m.contains("::") {
                    m
                } else {
                    format!("{group}::{m}")
                }
            };
            let uses = uses.into_iter().map(qualify).collect();
            rows.insert(format!("{group}::{name}"), uses);
        }
    }
    rows
}

/// The first two segments of a module path: a layer's module (`adapters::store`).
fn layer_module(module: &str) -> String {
    module.split("::").take(2).collect::<Vec<_>>().join("::")
}

fn layer_of(module: &str) -> String {
    module.split("::").next().unwrap().to_string()
}

#[test]
fn shared_src_shows_its_layers_and_nothing_else() {
    let documented = layers();
    let layers: BTreeSet<String> = documented.iter().map(|(name, _)| name.clone()).collect();
    assert!(layers.len() >= 4, "layers documented: {layers:?}");
    let mut files = BTreeSet::new();
    let mut folders = BTreeSet::new();
    for entry in std::fs::read_dir(src()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            assert!(
                path.join("mod.rs").exists(),
                "{name}/mod.rs declares the layer"
            );
            folders.insert(name);
        } else {
            files.insert(name);
        }
    }
    assert_eq!(files, BTreeSet::from(["lib.rs".to_string()]));
    assert_eq!(
        folders, layers,
        "shared/src's folders are the documented layers"
    );
    // lib.rs says the layers first, in the doc's order.
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let head: String = lib.lines().take_while(|l| l.starts_with("//!")).collect();
    let order: Vec<usize> = documented
        .iter()
        .map(|(name, _)| {
            head.find(&format!("[`{name}`]"))
                .unwrap_or_else(|| panic!("lib.rs's first lines name the layer {name}"))
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "lib.rs names the layers in the doc's order"
    );
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let layers = layers();
    for (i, (layer, may_use)) in layers.iter().enumerate() {
        let below: BTreeSet<String> = layers[i + 1..].iter().map(|(n, _)| n.clone()).collect();
        let up: Vec<&String> = may_use.difference(&below).collect();
        assert!(
            up.is_empty(),
            "the doc lets {layer} use {up:?}, not below it"
        );
    }
    let allowed: BTreeMap<String, BTreeSet<String>> = layers.into_iter().collect();
    for (module, uses) in graph() {
        let layer = layer_of(&module);
        for used in uses.iter().map(|u| layer_of(u)).filter(|u| *u != layer) {
            assert!(
                allowed[&layer].contains(&used),
                "{module} ({layer}) uses {used}, which docs/architecture.md does not let {layer} use"
            );
        }
    }
}

#[test]
fn paths_inside_the_crate_name_their_layer() {
    let layers: BTreeSet<String> = layers().into_iter().map(|(name, _)| name).collect();
    let mut files = BTreeMap::new();
    modules(&src(), &[], &mut files);
    for (module, text) in files.iter().filter(|(m, _)| !m.is_empty()) {
        for (i, _) in text.match_indices("crate::") {
            if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let first: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            assert!(
                layers.contains(&first),
                "{module} names crate::{first}: inside the crate a path starts with its layer"
            );
        }
    }
}

#[test]
fn the_domain_does_no_io() {
    let mut files = BTreeMap::new();
    modules(&src(), &[], &mut files);
    let io = [
        "async ", ".await", "tokio", "aws_", "std::fs", "std::net", "hyper", "lambda_",
    ];
    for (module, text) in files.iter().filter(|(m, _)| layer_of(m) == "domain") {
        let code = without_tests(text);
        for word in io {
            assert!(
                !code.contains(word),
                "{module} holds {word:?}: the domain does no I/O"
            );
        }
    }
}

#[test]
fn every_module_uses_only_what_the_architecture_doc_allows() {
    let documented = documented();
    let mut actual: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, uses) in graph() {
        let this = layer_module(&module);
        let entry = actual.entry(this.clone()).or_default();
        entry.extend(
            uses.iter()
                .map(|u| layer_module(u))
                .filter(|u| *u != this && u.contains("::")),
        );
    }
    actual.retain(|module, _| module.contains("::"));
    let listed: BTreeSet<&String> = documented.keys().collect();
    let present: BTreeSet<&String> = actual.keys().collect();
    assert_eq!(
        listed, present,
        "docs/architecture.md lists every module of shared/src under its layer"
    );
    for (module, uses) in &actual {
        let allowed = &documented[module];
        let extra: Vec<&String> = uses.difference(allowed).collect();
        assert!(
            extra.is_empty(),
            "{module} uses {extra:?}, which docs/architecture.md does not allow"
        );
    }
}

/// The edge only reads requests, calls use cases and renders their answers: it names no port
/// (`application::ports`) and no adapter, and reaches no port through the app's fields.
#[test]
fn the_edge_calls_use_cases_never_the_ports() {
    let mut files = BTreeMap::new();
    modules(&src(), &[], &mut files);
    let ports = [
        "application::ports",
        "adapters::",
        "app.store",
        "app.market",
        "app.history",
        "app.wallets",
        "app.sync",
        "app.follow",
        "app.order_chain",
        "app.wallet_refresh",
    ];
    let mut edge = 0;
    for (module, text) in files.iter().filter(|(m, _)| layer_of(m) == "edge") {
        edge += 1;
        let code = without_tests(text);
        for port in ports {
            assert!(
                !code.contains(port),
                "{module} holds {port:?}: the edge calls a use case of `application` instead"
            );
        }
    }
    assert!(edge >= 8, "the edge's modules were found ({edge})");
}
