//! The modules of each crate read top-down: no two top-level modules import each other,
//! directly or through others. A circle means one layer reaches into another's insides;
//! move what both need into a lower module instead.
//!
//! The scan reads `crate::<module>` paths in each module's non-test code, which is how the
//! crates name their own modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/verify/steps.rs` is in `verify`).
fn top_module(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("file under src");
    let first = relative.components().next().expect("a path component");
    let first = first.as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_owned()
}

/// The source without its unit tests: files that are test modules are skipped whole, and a
/// file's `#[cfg(test)] mod tests { ... }` (always its last item) is cut off.
fn non_test_source(file: &Path) -> Option<String> {
    let name = file.file_stem()?.to_string_lossy();
    if name == "tests" || name == "test_support" {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let mut kept = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines.peek().is_some_and(|next| {
                let next = next.trim_start();
                next.starts_with("mod tests {") || next.starts_with("pub(crate) mod tests {")
            })
        {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    Some(kept)
}

/// Which top-level modules each top-level module names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let from = top_module(src, &file);
        let Some(text) = non_test_source(&file) else {
            continue;
        };
        let edges = graph.entry(from.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            // `intent_rs::` and `$crate::` are other paths, not this crate's modules.
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                continue;
            }
            let to: String = text[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let is_module = to.chars().next().is_some_and(|c| c.is_ascii_lowercase());
            if is_module && to != from {
                edges.insert(to);
            }
        }
    }
    graph
}

/// The circles in `graph`, each as the modules on it (Tarjan's strongly connected parts).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut part = Vec::new();
                while let Some(top) = self.stack.pop() {
                    part.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

#[test]
fn runtime_modules_import_no_circle() {
    let graph = module_graph(&crate_src("intent-runtime"));
    assert!(graph.contains_key("attempt") && graph.contains_key("client"));
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "{graph:#?}");
}

#[test]
fn macro_modules_import_no_circle() {
    let graph = module_graph(&crate_src("intent-macros"));
    assert!(graph.contains_key("check") && graph.contains_key("model"));
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "{graph:#?}");
}

#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &["a"][..]),
        ("d", &["a"][..]),
    ]
    .into_iter()
    .map(|(from, to)| {
        let to = to.iter().map(|t| t.to_string()).collect();
        (from.to_owned(), to)
    })
    .collect();
    assert_eq!(circles(&graph), vec![vec!["a", "b", "c"]]);
}
