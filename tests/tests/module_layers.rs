//! The modules of each crate read top-down, at every depth: within each folder (the crate
//! root, `verify/`, `decision/systemone/`, ...) no two sibling modules import each other,
//! directly or through other siblings. A circle means one part reaches into another's
//! insides; move what both need into a lower module instead.
//!
//! The scan parses each crate's non-test code with `syn`, following the `mod` declarations
//! from `lib.rs` (anything under `#[cfg(test)]` is skipped), and resolves every path that
//! names the crate's own modules: `crate::a::b`, `super::x`, `self::x`, a child module's
//! name, and a name brought in by `use` (so an import through a parent's re-export is an
//! import of the module that defines it). A path from `a/b.rs` to `a/c/d.rs` is the edge
//! `b -> c` in the folder `a`; a module naming its own parent or children is no sibling
//! edge. Comments and strings are not code: a doc link is no import.
//!
//! The layer order of every folder is written in `docs/architecture.md`, and
//! [`the_architecture_doc_shows_the_layers_the_code_has`] keeps it true.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// Import circles the provider subtree was allowed while it was restructured into one
/// folder per wire API (issue #29). The restructure merged with none left, so the list is
/// empty and every circle fails; an entry names a folder (`::`-separated from the crate
/// root) and the sorted modules of one circle there.
const PROVIDER_CIRCLES_BEING_REMOVED: &[(&str, &[&str])] = &[];

/// The one-line hint every failure ends with.
const HINT: &str = "hint: move what both sides need into a lower module (or define the \
                    method in the module that needs the other side) so the imports run one way";

/// A module's path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// One module of a crate, as its non-test code shows it.
#[derive(Debug, Default)]
struct Module {
    /// The file that holds it (for messages), relative to the crate's `src`.
    file: String,
    /// Its child modules.
    children: BTreeSet<String>,
    /// The names its `use` items bring in, each with the path it names (as written).
    aliases: BTreeMap<String, Vec<String>>,
    /// Every path its code names, as written.
    paths: Vec<Vec<String>>,
    /// Whether it is written inside its parent's file (`mod name { ... }`).
    inline: bool,
}

/// The modules of one crate.
#[derive(Debug, Default)]
struct Tree {
    modules: BTreeMap<ModPath, Module>,
}

/// Whether the attributes include `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| match &attr.meta {
        syn::Meta::List(list) => list.path.is_ident("cfg") && list.tokens.to_string() == "test",
        _ => false,
    })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item;
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The leaves of a `use` tree: each path, with the name it binds (`None` for a glob or
/// `_`).
fn use_leaves(
    tree: &syn::UseTree,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let with = |name: &syn::Ident| {
        let mut path = prefix.to_vec();
        if name != "self" {
            path.push(name.to_string());
        }
        path
    };
    match tree {
        syn::UseTree::Path(p) => use_leaves(&p.tree, &with(&p.ident), out),
        syn::UseTree::Name(n) => {
            let path = with(&n.ident);
            let name = path.last().cloned();
            out.push((path, name));
        }
        syn::UseTree::Rename(r) => {
            let name = (r.rename != "_").then(|| r.rename.to_string());
            out.push((with(&r.ident), name));
        }
        syn::UseTree::Glob(_) => out.push((prefix.to_vec(), None)),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_leaves(tree, prefix, out);
            }
        }
    }
}

/// Collects the paths of code outside `#[cfg(test)]`, including `crate::`, `super::` and
/// `self::` paths inside macro calls (other than `quote!`, whose paths are another
/// crate's).
struct Paths<'m> {
    module: &'m mut Module,
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs[..],
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => &[],
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !is_test_only(&field.attrs) {
            visit::visit_field(self, field);
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        let test_only = match stmt {
            syn::Stmt::Local(local) => is_test_only(&local.attrs),
            syn::Stmt::Macro(mac) => is_test_only(&mac.attrs),
            _ => false,
        };
        if !test_only {
            visit::visit_stmt(self, stmt);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_none() {
            let mut leaves = Vec::new();
            use_leaves(&item.tree, &[], &mut leaves);
            self.module
                .paths
                .extend(leaves.into_iter().map(|(path, _)| path));
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.module.paths.push(segments);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        let generates_code = matches!(
            name.as_deref(),
            Some("quote" | "quote_spanned" | "parse_quote" | "parse_quote_spanned")
        );
        if !generates_code {
            macro_paths(mac.tokens.clone(), &mut self.module.paths);
        }
        visit::visit_macro(self, mac);
    }
}

/// The `crate::`, `super::` and `self::` paths in a macro's tokens (not `$crate::`).
fn macro_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        if let TokenTree::Group(group) = &tokens[i] {
            macro_paths(group.stream(), out);
            i += 1;
            continue;
        }
        let starts = matches!(&tokens[i], TokenTree::Ident(id) if id == "crate" || id == "super" || id == "self");
        let after_dollar =
            i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
        if !starts || after_dollar {
            i += 1;
            continue;
        }
        let mut path = vec![tokens[i].to_string()];
        let mut j = i + 1;
        loop {
            let colons = matches!(tokens.get(j), Some(TokenTree::Punct(p)) if p.as_char() == ':')
                && matches!(tokens.get(j + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':');
            match tokens.get(j + 2) {
                Some(TokenTree::Ident(id)) if colons => {
                    path.push(id.to_string());
                    j += 3;
                }
                _ => break,
            }
        }
        if path.len() > 1 {
            out.push(path);
        }
        i = j.max(i + 1);
    }
}

/// Reads the module at `path` from `items` (a file's or an inline `mod`'s), and its
/// children; `dir` is where its child modules' files are.
fn read_module(
    tree: &mut Tree,
    src: &Path,
    path: ModPath,
    items: &[syn::Item],
    dir: &Path,
    file: &Path,
    inline: bool,
) {
    let mut module = Module {
        inline,
        file: file.strip_prefix(src).unwrap_or(file).display().to_string(),
        ..Module::default()
    };
    let mut inner = Vec::new();
    for item in items {
        if is_test_only(item_attrs(item)) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                let name = m.ident.to_string();
                module.children.insert(name.clone());
                inner.push((name, m));
            }
            syn::Item::Use(u) if u.leading_colon.is_none() => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &[], &mut leaves);
                for (target, name) in leaves {
                    if let Some(name) = name {
                        module.aliases.insert(name, target.clone());
                    }
                    module.paths.push(target);
                }
            }
            other => Paths {
                module: &mut module,
            }
            .visit_item(other),
        }
    }
    tree.modules.insert(path.clone(), module);
    for (name, m) in inner {
        let mut child = path.clone();
        child.push(name.clone());
        let child_dir = dir.join(&name);
        match &m.content {
            Some((_, items)) => read_module(tree, src, child, items, &child_dir, file, true),
            None => {
                assert!(
                    !m.attrs.iter().any(|a| a.path().is_ident("path")),
                    "{}: `#[path]` on `mod {name}` is not followed by this test",
                    file.display()
                );
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(&name).join("mod.rs");
                let child_file = if flat.exists() { flat } else { nested };
                let parsed = parse_file(&child_file);
                read_module(
                    tree,
                    src,
                    child,
                    &parsed.items,
                    &child_dir,
                    &child_file,
                    false,
                );
            }
        }
    }
}

fn parse_file(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The modules of the crate whose sources are in `src` (from `src/lib.rs`).
fn read_crate(src: &Path) -> Tree {
    let lib = src.join("lib.rs");
    let parsed = parse_file(&lib);
    let mut tree = Tree::default();
    read_module(&mut tree, src, Vec::new(), &parsed.items, src, &lib, false);
    tree
}

impl Tree {
    /// The module `segments` name when written in the module `from`, or `None` when they
    /// name no module of this crate (another crate, a local item). A path that goes on
    /// past a module into an item (`crate::a::Item::new`) names that module.
    fn resolve(&self, from: &[String], segments: &[String]) -> Option<ModPath> {
        self.walk(from, segments, 0).map(|(at, _)| at)
    }

    /// The module `segments` reach from `from`, and whether every segment was a module
    /// (rather than the path going on into an item).
    fn walk(&self, from: &[String], segments: &[String], depth: usize) -> Option<(ModPath, bool)> {
        let first = segments.first()?;
        if depth > 16 {
            return None;
        }
        let (mut at, rest): (ModPath, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (from.to_vec(), &segments[1..]),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let keep = from.len().checked_sub(ups)?;
                (from[..keep].to_vec(), &segments[ups..])
            }
            name => {
                let module = self.modules.get(from)?;
                if !module.children.contains(name) && !module.aliases.contains_key(name) {
                    return None;
                }
                (from.to_vec(), segments)
            }
        };
        for segment in rest {
            let module = self.modules.get(&at)?;
            if module.children.contains(segment) {
                at.push(segment.clone());
            } else if let Some(target) = module.aliases.get(segment) {
                // A name a `use` brought in: follow it from the module that wrote it.
                let (reached, whole) = self.walk(&at, target, depth + 1)?;
                at = reached;
                if !whole {
                    return Some((at, false));
                }
            } else {
                return Some((at, false));
            }
        }
        Some((at, true))
    }

    /// Each folder's sibling graph: for every module with children, which of its children
    /// name which others, with one path as evidence for each edge.
    fn folder_graphs(&self) -> BTreeMap<ModPath, Graph> {
        let mut folders: BTreeMap<ModPath, Graph> = BTreeMap::new();
        for (path, module) in &self.modules {
            if !module.children.is_empty() {
                let graph = folders.entry(path.clone()).or_default();
                for child in &module.children {
                    graph.edges.entry(child.clone()).or_default();
                }
            }
        }
        for (from, module) in &self.modules {
            for written in &module.paths {
                let Some(to) = self.resolve(from, written) else {
                    continue;
                };
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                let (Some(a), Some(b)) = (from.get(common), to.get(common)) else {
                    continue;
                };
                let folder = from[..common].to_vec();
                let graph = folders.entry(folder).or_default();
                graph.edges.entry(a.clone()).or_default().insert(b.clone());
                graph
                    .evidence
                    .entry((a.clone(), b.clone()))
                    .or_insert_with(|| format!("{} names `{}`", module.file, written.join("::")));
            }
        }
        folders
    }
}

/// The sibling modules of one folder and which name which.
#[derive(Debug, Default)]
struct Graph {
    edges: BTreeMap<String, BTreeSet<String>>,
    /// For each edge, where it was seen.
    evidence: BTreeMap<(String, String), String>,
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
    walk.found.sort();
    walk.found
}

/// One shortest cycle through the first module of the circle `part`, as the modules on
/// it, the first repeated at the end.
fn one_cycle(graph: &BTreeMap<String, BTreeSet<String>>, part: &[String]) -> Vec<String> {
    let start = &part[0];
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(node).into_iter().flatten() {
            if !part.contains(next) {
                continue;
            }
            if next == start {
                let mut cycle = vec![node.clone()];
                let mut at = node;
                while at != start {
                    at = came_from[at];
                    cycle.push(at.clone());
                }
                cycle.reverse();
                cycle.push(start.clone());
                return cycle;
            }
            if !came_from.contains_key(next) && next != start {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    part.to_vec()
}

/// A circle found in a folder of a crate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Circle {
    /// The folder, `::`-separated (`crate` for the root).
    folder: String,
    /// The modules on it, sorted.
    modules: Vec<String>,
    /// The report: one cycle with each edge's evidence, and the hint.
    report: String,
}

fn folder_name(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// Every circle among sibling modules, in every folder of the crate in `src`.
fn find_circles(crate_name: &str, src: &Path) -> Vec<Circle> {
    let tree = read_crate(src);
    let mut found = Vec::new();
    for (folder, graph) in tree.folder_graphs() {
        for part in circles(&graph.edges) {
            let cycle = one_cycle(&graph.edges, &part);
            let prefix = if folder.is_empty() {
                String::new()
            } else {
                format!("{}::", folder.join("::"))
            };
            let shown: Vec<String> = cycle.iter().map(|m| format!("{prefix}{m}")).collect();
            let mut report = format!(
                "{crate_name}: import circle in `{}` among {}: {}\n",
                folder_name(&folder),
                part.join(", "),
                shown.join(" -> ")
            );
            for pair in cycle.windows(2) {
                let evidence = &graph.evidence[&(pair[0].clone(), pair[1].clone())];
                let _ = writeln!(report, "    {} -> {}: {evidence}", pair[0], pair[1]);
            }
            report.push_str("    ");
            report.push_str(HINT);
            found.push(Circle {
                folder: folder_name(&folder),
                modules: part,
                report,
            });
        }
    }
    found
}

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// Fails with every circle's report.
fn assert_no_circle(circles: &[Circle]) {
    let reports: Vec<&str> = circles.iter().map(|c| c.report.as_str()).collect();
    assert!(reports.is_empty(), "\n{}", reports.join("\n"));
}

#[test]
fn runtime_modules_import_no_circle() {
    let tree = read_crate(&crate_src("intent-runtime"));
    let root = &tree.modules[&Vec::new()];
    assert!(root.children.contains("attempt") && root.children.contains("client"));
    let found = find_circles("intent_rs", &crate_src("intent-runtime"));
    let in_provider = |c: &Circle| c.folder == "provider" || c.folder.starts_with("provider::");
    let (provider, elsewhere): (Vec<Circle>, Vec<Circle>) =
        found.into_iter().partition(in_provider);
    assert_no_circle(&elsewhere);
    let known = |circle: &Circle| {
        PROVIDER_CIRCLES_BEING_REMOVED
            .iter()
            .any(|(folder, modules)| {
                *folder == circle.folder
                    && circle.modules.iter().all(|m| modules.contains(&m.as_str()))
            })
    };
    let new: Vec<Circle> = provider.iter().filter(|c| !known(c)).cloned().collect();
    assert_no_circle(&new);
    for (folder, modules) in PROVIDER_CIRCLES_BEING_REMOVED {
        let still = provider.iter().any(|c| {
            c.folder == *folder && modules.iter().all(|m| c.modules.contains(&m.to_string()))
        });
        if !still {
            eprintln!(
                "PROVIDER_CIRCLES_BEING_REMOVED: the circle {modules:?} in `{folder}` has shrunk \
                 or gone; update the entry"
            );
        }
    }
}

#[test]
fn macro_modules_import_no_circle() {
    let tree = read_crate(&crate_src("intent-macros"));
    let root = &tree.modules[&Vec::new()];
    assert!(root.children.contains("check") && root.children.contains("model"));
    assert_no_circle(&find_circles(
        "intent_rs_macros",
        &crate_src("intent-macros"),
    ));
}

#[test]
fn eval_modules_import_no_circle() {
    let tree = read_crate(&crate_src("intent-eval"));
    let root = &tree.modules[&Vec::new()];
    assert!(root.children.contains("report") && root.children.contains("harness"));
    assert_no_circle(&find_circles("intent_rs_eval", &crate_src("intent-eval")));
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

/// A crate with a circle at the root (through `crate::` and `super::` paths) and one
/// inside a folder (through `super::`, a parent's re-export and `self::`), and imports
/// that must not count: test code, comments, strings.
#[test]
fn the_checker_finds_circles_in_a_source_tree() {
    let dir = std::env::temp_dir().join(format!("intent-module-layers-{}", std::process::id()));
    let files: &[(&str, &str)] = &[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n"),
        (
            "a.rs",
            "use crate::b::B;\npub struct A;\npub fn d() { crate::d::h(); }\n",
        ),
        ("b.rs", "pub struct B;\npub fn f() { super::c::make(); }\n"),
        (
            "c/mod.rs",
            "mod x;\nmod y;\npub use x::make;\npub(crate) use self::y::Y;\n",
        ),
        (
            "c/x.rs",
            "use crate::a::A;\npub fn make() {}\npub fn uses() -> super::y::Y { todo!() }\n",
        ),
        ("c/y.rs", "pub struct Y;\nfn g() { super::make() }\n"),
        (
            "d.rs",
            "/// Names [`crate::a::A`] in a doc link only.\n\
             pub fn h() -> &'static str { \"crate::a::A\" }\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
        ),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let found = find_circles("synthetic", &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let parts: Vec<(&str, Vec<&str>)> = found
        .iter()
        .map(|c| {
            let modules = c.modules.iter().map(String::as_str).collect();
            (c.folder.as_str(), modules)
        })
        .collect();
    assert_eq!(
        parts,
        vec![("crate", vec!["a", "b", "c"]), ("c", vec!["x", "y"])],
        "{found:#?}"
    );
    let root = &found[0].report;
    assert!(
        root.contains("synthetic: import circle in `crate` among a, b, c: a -> b -> c -> a"),
        "{root}"
    );
    assert!(
        root.contains("b -> c: b.rs names `super::c::make`"),
        "{root}"
    );
    assert!(
        root.contains("c -> a: c/x.rs names `crate::a::A`"),
        "{root}"
    );
    assert!(root.contains(HINT), "{root}");
    let folder = &found[1].report;
    assert!(
        folder.contains("import circle in `c` among x, y: c::x -> c::y -> c::x"),
        "{folder}"
    );
    assert!(
        folder.contains("y -> x: c/y.rs names `super::make`"),
        "{folder}"
    );
}

/// The layers of a folder, lowest first: a module's layer is one above the highest
/// sibling it names (0 when it names none); the modules of a circle are one entry.
fn layers(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let parts = circles(graph);
    let entry = |module: &String| -> String {
        parts
            .iter()
            .find(|part| part.contains(module))
            .map_or_else(|| module.clone(), |part| format!("({})", part.join(" + ")))
    };
    // The graph of entries has no circle.
    let mut below: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in graph {
        let mine = below.entry(entry(from)).or_default();
        mine.extend(to.iter().map(entry).filter(|next| *next != entry(from)));
    }
    fn level(
        entry: &str,
        below: &BTreeMap<String, BTreeSet<String>>,
        known: &mut BTreeMap<String, usize>,
    ) -> usize {
        if let Some(&level) = known.get(entry) {
            return level;
        }
        let mine = below[entry]
            .iter()
            .map(|next| 1 + level(next, below, known))
            .max()
            .unwrap_or(0);
        known.insert(entry.to_owned(), mine);
        mine
    }
    let mut known = BTreeMap::new();
    for entry in below.keys() {
        level(entry, &below, &mut known);
    }
    let mut out = vec![Vec::new(); known.values().max().map_or(0, |top| top + 1)];
    for (entry, level) in known {
        out[level].push(entry);
    }
    out
}

/// The layer order of every folder of the three crates, as `docs/architecture.md` shows
/// it.
fn layer_text() -> String {
    let mut text = String::new();
    let crates = [
        ("intent_rs", "intent-runtime"),
        ("intent_rs_macros", "intent-macros"),
        ("intent_rs_eval", "intent-eval"),
    ];
    for (name, folder) in crates {
        let tree = read_crate(&crate_src(folder));
        let _ = writeln!(text, "\n`{name}` (`{folder}/src`):\n");
        for (path, graph) in tree.folder_graphs() {
            // A file whose modules are all written inline in it is no folder.
            let is_folder = graph.edges.keys().any(|child| {
                let mut child_path = path.clone();
                child_path.push(child.clone());
                !tree.modules[&child_path].inline
            });
            if !is_folder {
                continue;
            }
            let shown: Vec<String> = layers(&graph.edges)
                .iter()
                .map(|layer| layer.join(" "))
                .collect();
            let label = if path.is_empty() {
                "crate root".to_owned()
            } else {
                format!("`{}/`", path.join("/"))
            };
            let _ = writeln!(text, "- {label}: {}", shown.join(" < "));
        }
    }
    text
}

const DOC: &str = "docs/architecture.md";
const BEGIN: &str = "<!-- layers: begin (written by tests/tests/module_layers.rs) -->";
const END: &str = "<!-- layers: end -->";

/// `docs/architecture.md` lists each folder's modules in the layer order the code has.
/// After a change of imports, rerun with `INTENT_BLESS_LAYERS=1` to rewrite the list.
#[test]
fn the_architecture_doc_shows_the_layers_the_code_has() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(DOC);
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{DOC}: {e}"));
    let start = doc.find(BEGIN).expect("the doc's begin marker") + BEGIN.len();
    let end = doc.find(END).expect("the doc's end marker");
    let want = layer_text();
    if doc[start..end] == want {
        return;
    }
    if std::env::var_os("INTENT_BLESS_LAYERS").is_some() {
        let updated = format!("{}{want}{}", &doc[..start], &doc[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    panic!(
        "{DOC} does not show the layers the code has; the code's are:\n{want}\n\
         hint: rerun with INTENT_BLESS_LAYERS=1 to rewrite the list, and commit it"
    );
}
