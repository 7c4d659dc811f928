//! The public API of the three crates, written down: every item a user can name, each
//! public field, variant, method and trait item, every trait a public type implements,
//! and what a type derives. `docs/public-api/<crate>.txt` holds the list, and this test
//! fails when the code and the list differ, so every change of the surface is a reviewed
//! diff. After an intended change, rewrite the lists with
//!
//! ```sh
//! INTENT_BLESS_SURFACE=1 cargo test -p intent-tests --test public_surface
//! ```
//!
//! How the surface is read: each crate's non-test code is parsed with `syn` from `lib.rs`,
//! following `mod` declarations. A module is public when it and every module above it are
//! `pub` and not `#[doc(hidden)]`. An item is public when it is `pub` in a public module,
//! or when a public module re-exports it (`pub use`, globs included) from anywhere in the
//! crate. Methods come from the crate's inherent `impl` blocks of public types, and trait
//! implementations from its `impl Trait for Type` blocks. Items and modules marked
//! `#[doc(hidden)]` are outside the surface (they exist for generated code). Every feature
//! counts: an item behind a cargo feature is listed with it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use quote::ToTokens;

/// The variable that rewrites the lists instead of comparing them.
const BLESS: &str = "INTENT_BLESS_SURFACE";

/// A module's path from the crate root (`[]` is the root).
type ModPath = Vec<String>;

/// One module, as its non-test code shows it.
struct Module {
    /// Whether a user can name it (it and its parents are `pub`, none hidden).
    public: bool,
    /// Its items, test-only ones left out.
    items: Vec<syn::Item>,
}

fn parse_file(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn has_attr(attrs: &[syn::Attribute], name: &str, tokens: &str) -> bool {
    attrs.iter().any(|attr| match &attr.meta {
        syn::Meta::List(list) => list.path.is_ident(name) && list.tokens.to_string() == tokens,
        _ => false,
    })
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    has_attr(attrs, "cfg", "test")
        || attrs.iter().any(|attr| {
            attr.path().is_ident("cfg") && attr.to_token_stream().to_string().contains("doctest")
        })
}

fn is_hidden(attrs: &[syn::Attribute]) -> bool {
    has_attr(attrs, "doc", "hidden")
}

fn is_pub(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
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

/// Reads the module at `path` and its children; `dir` holds its children's files.
fn read_module(
    modules: &mut BTreeMap<ModPath, Module>,
    path: ModPath,
    items: Vec<syn::Item>,
    dir: &Path,
    public: bool,
) {
    let items: Vec<syn::Item> = items
        .into_iter()
        .filter(|item| !is_test_only(item_attrs(item)))
        .collect();
    let children: Vec<syn::ItemMod> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    modules.insert(path.clone(), Module { public, items });
    for child in children {
        let name = child.ident.to_string();
        let child_public = public && is_pub(&child.vis) && !is_hidden(&child.attrs);
        let mut child_path = path.clone();
        child_path.push(name.clone());
        let child_items = match child.content {
            Some((_, items)) => items,
            None => {
                let flat = dir.join(format!("{name}.rs"));
                let file = if flat.exists() {
                    flat
                } else {
                    dir.join(&name).join("mod.rs")
                };
                parse_file(&file).items
            }
        };
        read_module(
            modules,
            child_path,
            child_items,
            &dir.join(&name),
            child_public,
        );
    }
}

/// A named item of the crate: the module that defines it and its name there.
type ItemRef = (ModPath, String);

/// The name an item defines, when it defines one a `use` can reach.
fn item_name(item: &syn::Item) -> Option<(String, &syn::Visibility)> {
    use syn::Item;
    let (ident, vis) = match item {
        Item::Const(i) => (&i.ident, &i.vis),
        Item::Enum(i) => (&i.ident, &i.vis),
        Item::Fn(i) => (&i.sig.ident, &i.vis),
        Item::Static(i) => (&i.ident, &i.vis),
        Item::Struct(i) => (&i.ident, &i.vis),
        Item::Trait(i) => (&i.ident, &i.vis),
        Item::Type(i) => (&i.ident, &i.vis),
        Item::Union(i) => (&i.ident, &i.vis),
        _ => return None,
    };
    Some((ident.to_string(), vis))
}

/// The leaves of a `use` tree: the path each names and the name it binds (`None` for a
/// glob).
fn use_leaves(
    tree: &syn::UseTree,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut prefix = prefix.to_vec();
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, &prefix, out);
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.to_vec();
            path.push(n.ident.to_string());
            out.push((path, Some(n.ident.to_string())));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.to_vec();
            path.push(r.ident.to_string());
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.to_vec(), None)),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_leaves(tree, prefix, out);
            }
        }
    }
}

/// The crate: its modules, read from `src/lib.rs`.
struct Crate {
    name: String,
    modules: BTreeMap<ModPath, Module>,
}

/// What a path written in a module reaches.
enum Target {
    /// A module of this crate.
    Module(ModPath),
    /// An item of this crate.
    Item(ItemRef),
    /// Something outside the crate (written as it was).
    External(String),
}

impl Crate {
    fn read(name: &str, src: &Path) -> Crate {
        let mut modules = BTreeMap::new();
        read_module(
            &mut modules,
            Vec::new(),
            parse_file(&src.join("lib.rs")).items,
            src,
            true,
        );
        Crate {
            name: name.to_owned(),
            modules,
        }
    }

    /// What `segments`, written in the module `from`, reach.
    fn resolve(&self, from: &[String], segments: &[String], depth: usize) -> Target {
        let external = || Target::External(segments.join("::"));
        let Some(first) = segments.first() else {
            return external();
        };
        if depth > 16 {
            return external();
        }
        let (mut at, rest): (ModPath, &[String]) = match first.as_str() {
            "crate" => (Vec::new(), &segments[1..]),
            "self" => (from.to_vec(), &segments[1..]),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                match from.len().checked_sub(ups) {
                    Some(keep) => (from[..keep].to_vec(), &segments[ups..]),
                    None => return external(),
                }
            }
            name => {
                let mut child = from.to_vec();
                child.push(name.to_owned());
                if self.modules.contains_key(&child) || self.binding(from, name).is_some() {
                    (from.to_vec(), segments)
                } else {
                    return external();
                }
            }
        };
        for (i, segment) in rest.iter().enumerate() {
            let mut child = at.clone();
            child.push(segment.clone());
            if self.modules.contains_key(&child) {
                at = child;
                continue;
            }
            let last = i + 1 == rest.len();
            return match self.binding(&at, segment) {
                Some(Binding::Defined) if last => Target::Item((at, segment.clone())),
                Some(Binding::Imported(path)) => {
                    let reached = self.resolve(&at, &path, depth + 1);
                    if last {
                        reached
                    } else {
                        match reached {
                            Target::Module(module) => {
                                self.resolve(&module, &rest[i + 1..], depth + 1)
                            }
                            other => other,
                        }
                    }
                }
                _ => external(),
            };
        }
        Target::Module(at)
    }

    /// How the module `at` binds `name`, if it does.
    fn binding(&self, at: &[String], name: &str) -> Option<Binding> {
        let module = self.modules.get(at)?;
        for item in &module.items {
            if item_name(item).is_some_and(|(defined, _)| defined == name) {
                return Some(Binding::Defined);
            }
            if let syn::Item::Use(u) = item {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &[], &mut leaves);
                if let Some((path, _)) = leaves
                    .into_iter()
                    .find(|(_, bound)| bound.as_deref() == Some(name))
                {
                    return Some(Binding::Imported(path));
                }
            }
        }
        None
    }

    /// Every name a public module offers: its own `pub` items and what its `pub use`s
    /// bring in, each with the public path it is named by.
    fn exports(&self) -> Vec<(String, Target)> {
        let mut out = Vec::new();
        for (path, module) in &self.modules {
            if !module.public {
                continue;
            }
            let public_path = |name: &str| {
                let mut segments = vec![self.name.clone()];
                segments.extend(path.iter().cloned());
                segments.push(name.to_owned());
                segments.join("::")
            };
            for item in &module.items {
                if is_hidden(item_attrs(item)) {
                    continue;
                }
                if let Some((name, vis)) = item_name(item)
                    && is_pub(vis)
                {
                    out.push((public_path(&name), Target::Item((path.clone(), name))));
                }
                if let syn::Item::Macro(m) = item
                    && m.attrs.iter().any(|a| a.path().is_ident("macro_export"))
                    && let Some(ident) = &m.ident
                {
                    out.push((
                        format!("{}::{ident}", self.name),
                        Target::External("macro_rules!".to_owned()),
                    ));
                }
                let syn::Item::Use(u) = item else { continue };
                if !is_pub(&u.vis) {
                    continue;
                }
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &[], &mut leaves);
                for (written, bound) in leaves {
                    match bound {
                        Some(name) => {
                            out.push((public_path(&name), self.resolve(path, &written, 0)))
                        }
                        None => {
                            if let Target::Module(from) = self.resolve(path, &written, 0) {
                                for (name, target) in self.glob(&from) {
                                    out.push((public_path(&name), target));
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// What `pub use module::*` brings in: the module's `pub` items and `pub use`s.
    fn glob(&self, module: &ModPath) -> Vec<(String, Target)> {
        let Some(m) = self.modules.get(module) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in &m.items {
            if is_hidden(item_attrs(item)) {
                continue;
            }
            if let Some((name, vis)) = item_name(item)
                && is_pub(vis)
            {
                out.push((name.clone(), Target::Item((module.clone(), name))));
            }
            if let syn::Item::Use(u) = item
                && is_pub(&u.vis)
            {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &[], &mut leaves);
                for (written, bound) in leaves {
                    if let Some(name) = bound {
                        out.push((name, self.resolve(module, &written, 0)));
                    }
                }
            }
        }
        out
    }

    fn item(&self, (module, name): &ItemRef) -> Option<&syn::Item> {
        self.modules
            .get(module)?
            .items
            .iter()
            .find(|item| item_name(item).is_some_and(|(n, _)| &n == name))
    }

    /// The crate's `impl` blocks, each with the module it is written in.
    fn impls(&self) -> Vec<(&ModPath, &syn::ItemImpl)> {
        let mut out = Vec::new();
        for (path, module) in &self.modules {
            for item in &module.items {
                if let syn::Item::Impl(i) = item
                    && !is_hidden(&i.attrs)
                {
                    out.push((path, i));
                }
            }
        }
        out
    }

    /// The item an `impl` block's self type names, resolved from the block's module.
    fn self_type(&self, module: &ModPath, imp: &syn::ItemImpl) -> Option<ItemRef> {
        let syn::Type::Path(type_path) = imp.self_ty.as_ref() else {
            return None;
        };
        let segments: Vec<String> = type_path
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        match self.resolve(module, &segments, 0) {
            Target::Item(item) => Some(item),
            _ => None,
        }
    }
}

/// How a module binds a name.
enum Binding {
    Defined,
    Imported(Vec<String>),
}

/// Tokens as text, with the spaces `proc_macro2` puts around punctuation taken out where
/// Rust code has none (`Vec < T >` reads `Vec<T>`).
fn tokens(tokens: &impl ToTokens) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (spaced, tight) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" < ", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ,", ","),
        ("( ", "("),
        (" )", ")"),
        ("& ", "&"),
        (" : ", ": "),
        (",)", ")"),
        (" !", "!"),
        (" (", "("),
    ] {
        text = text.replace(spaced, tight);
    }
    text
}

/// What a type derives, and whether it is `#[non_exhaustive]`.
fn type_marks(attrs: &[syn::Attribute]) -> String {
    let mut marks = Vec::new();
    for attr in attrs {
        if attr.path().is_ident("derive") {
            if let syn::Meta::List(list) = &attr.meta {
                marks.push(format!("derive({})", tokens(&list.tokens)));
            }
        } else if attr.path().is_ident("non_exhaustive") {
            marks.push("non_exhaustive".to_owned());
        } else if attr.path().is_ident("proc_macro_derive")
            || attr.path().is_ident("proc_macro_attribute")
            || attr.path().is_ident("proc_macro")
        {
            marks.push(tokens(&attr.meta));
        }
    }
    if marks.is_empty() {
        String::new()
    } else {
        format!("  #[{}]", marks.join(", "))
    }
}

fn fields_lines(at: &str, fields: &syn::Fields, out: &mut BTreeSet<String>) {
    for (index, field) in fields.iter().enumerate() {
        if !is_pub(&field.vis) || is_hidden(&field.attrs) {
            continue;
        }
        let name = field
            .ident
            .as_ref()
            .map_or_else(|| index.to_string(), ToString::to_string);
        out.insert(format!("{at}.{name}: {}", tokens(&field.ty)));
    }
}

/// A variant's fields without their attributes: `(u8)`, `{ a: u8 }`, or nothing.
fn field_types(fields: &syn::Fields) -> String {
    match fields {
        syn::Fields::Unit => String::new(),
        syn::Fields::Unnamed(unnamed) => {
            let types: Vec<String> = unnamed.unnamed.iter().map(|f| tokens(&f.ty)).collect();
            format!("({})", types.join(", "))
        }
        syn::Fields::Named(named) => {
            let fields: Vec<String> = named
                .named
                .iter()
                .map(|f| {
                    let name = f
                        .ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    format!("{name}: {}", tokens(&f.ty))
                })
                .collect();
            format!(" {{ {} }}", fields.join(", "))
        }
    }
}

fn fn_line(at: &str, sig: &syn::Signature) -> String {
    format!("{at}::{}  {}", sig.ident, tokens(sig))
}

/// The lines that describe one public item named by `at`.
fn item_lines(at: &str, item: &syn::Item, out: &mut BTreeSet<String>) {
    use syn::Item;
    match item {
        Item::Struct(s) => {
            out.insert(format!(
                "{at}  struct{}{}",
                tokens(&s.generics),
                type_marks(&s.attrs)
            ));
            fields_lines(at, &s.fields, out);
        }
        Item::Union(u) => {
            out.insert(format!("{at}  union{}", tokens(&u.generics)));
        }
        Item::Enum(e) => {
            out.insert(format!(
                "{at}  enum{}{}",
                tokens(&e.generics),
                type_marks(&e.attrs)
            ));
            for variant in &e.variants {
                if is_hidden(&variant.attrs) {
                    continue;
                }
                let marks = type_marks(&variant.attrs);
                out.insert(format!(
                    "{at}::{}  variant{}{marks}",
                    variant.ident,
                    field_types(&variant.fields)
                ));
            }
        }
        Item::Trait(t) => {
            let supertraits = if t.supertraits.is_empty() {
                String::new()
            } else {
                format!(": {}", tokens(&t.supertraits))
            };
            out.insert(format!("{at}  trait{}{supertraits}", tokens(&t.generics)));
            for inner in &t.items {
                match inner {
                    syn::TraitItem::Fn(f) if !is_hidden(&f.attrs) => {
                        out.insert(fn_line(at, &f.sig));
                    }
                    syn::TraitItem::Type(ty) => {
                        out.insert(format!("{at}::{}  type", ty.ident));
                    }
                    syn::TraitItem::Const(c) => {
                        out.insert(format!("{at}::{}  const {}", c.ident, tokens(&c.ty)));
                    }
                    _ => {}
                }
            }
        }
        Item::Fn(f) => {
            out.insert(format!("{at}  {}{}", tokens(&f.sig), type_marks(&f.attrs)));
        }
        Item::Type(t) => {
            out.insert(format!("{at}  type = {}", tokens(&t.ty)));
        }
        Item::Const(c) => {
            out.insert(format!("{at}  const {}", tokens(&c.ty)));
        }
        Item::Static(s) => {
            out.insert(format!("{at}  static {}", tokens(&s.ty)));
        }
        _ => {}
    }
}

/// The crate's public surface, one sorted line per fact.
fn surface(name: &str, src: &Path) -> Vec<String> {
    let krate = Crate::read(name, src);
    let mut out = BTreeSet::new();
    // Each crate item, with every public path it is named by.
    let mut named: BTreeMap<ItemRef, Vec<String>> = BTreeMap::new();
    for (public_path, target) in krate.exports() {
        match target {
            Target::Item(item) => named.entry(item).or_default().push(public_path),
            Target::Module(module) => {
                out.insert(format!(
                    "{public_path}  re-export of module crate::{}",
                    module.join("::")
                ));
            }
            Target::External(written) => {
                out.insert(format!("{public_path}  re-export of {written}"));
            }
        }
    }
    for (item_ref, paths) in &named {
        let Some(item) = krate.item(item_ref) else {
            continue;
        };
        if is_hidden(item_attrs(item)) {
            continue;
        }
        for at in paths {
            item_lines(at, item, &mut out);
        }
    }
    for (module, imp) in krate.impls() {
        let Some(self_item) = krate.self_type(module, imp) else {
            continue;
        };
        let Some(paths) = named.get(&self_item) else {
            continue;
        };
        for at in paths {
            match &imp.trait_ {
                Some((negative, trait_path, _)) => {
                    let bang = if negative.is_some() { "!" } else { "" };
                    out.insert(format!(
                        "{at}  impl{} {bang}{} for {}",
                        tokens(&imp.generics),
                        tokens(trait_path),
                        tokens(&imp.self_ty)
                    ));
                }
                None => {
                    for inner in &imp.items {
                        if let syn::ImplItem::Fn(f) = inner
                            && is_pub(&f.vis)
                            && !is_hidden(&f.attrs)
                        {
                            out.insert(fn_line(at, &f.sig));
                        }
                        if let syn::ImplItem::Const(c) = inner
                            && is_pub(&c.vis)
                            && !is_hidden(&c.attrs)
                        {
                            out.insert(format!("{at}::{}  const {}", c.ident, tokens(&c.ty)));
                        }
                    }
                }
            }
        }
    }
    for (path, module) in &krate.modules {
        if module.public && !path.is_empty() {
            out.insert(format!("{}::{}  mod", name, path.join("::")));
        }
    }
    out.into_iter().collect()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn check_crate(package: &str, crate_name: &str, folder: &str) {
    let lines = surface(crate_name, &workspace().join(folder).join("src"));
    let text = format!(
        "# The public API of {package}, one fact a line; written by \
         tests/tests/public_surface.rs\n{}\n",
        lines.join("\n")
    );
    let file = workspace()
        .join("docs/public-api")
        .join(format!("{package}.txt"));
    if std::env::var_os(BLESS).is_some() {
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("docs/public-api");
        std::fs::write(&file, &text).expect("the surface file is written");
        return;
    }
    let recorded = std::fs::read_to_string(&file).unwrap_or_default();
    if recorded == text {
        return;
    }
    let old: BTreeSet<&str> = recorded.lines().collect();
    let new: BTreeSet<&str> = text.lines().collect();
    let mut diff = String::new();
    for line in new.difference(&old) {
        diff.push_str(&format!("+ {line}\n"));
    }
    for line in old.difference(&new) {
        diff.push_str(&format!("- {line}\n"));
    }
    panic!(
        "the public API of {package} differs from {}:\n{diff}\nIf the change is intended, \
         rewrite the list with `{BLESS}=1 cargo test -p intent-tests --test public_surface` \
         and commit it with the change.",
        file.display()
    );
}

#[test]
fn the_runtimes_public_api_is_the_recorded_one() {
    check_crate("intent-rs", "intent_rs", "intent-runtime");
}

#[test]
fn the_macros_public_api_is_the_recorded_one() {
    check_crate("intent-rs-macros", "intent_rs_macros", "intent-macros");
}

#[test]
fn the_evaluations_public_api_is_the_recorded_one() {
    check_crate("intent-rs-eval", "intent_rs_eval", "intent-eval");
}

#[test]
fn the_reader_finds_what_a_user_can_name_and_nothing_else() {
    let src = Path::new(env!("CARGO_TARGET_TMPDIR")).join("public_surface_sample");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(src.join("inner")).expect("a sample crate");
    std::fs::write(
        src.join("lib.rs"),
        "pub mod open;\nmod inner;\n#[doc(hidden)] pub mod __private { pub fn hidden() {} }\n\
         pub use inner::{Reexported, helpers::*};\n#[cfg(test)] mod tests { pub struct T; }\n",
    )
    .expect("lib.rs");
    std::fs::write(
        src.join("open.rs"),
        "#[derive(Clone)]\n#[non_exhaustive]\npub struct Open { pub field: u8, private: u8 }\n\
         impl Open { pub fn new() -> Self { todo!() } fn private(&self) {} }\n\
         impl std::fmt::Display for Open { fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) } }\n\
         pub(crate) struct CrateOnly;\n#[doc(hidden)] pub fn hidden_fn() {}\n\
         pub enum Kind { A, B(u8) }\n",
    )
    .expect("open.rs");
    std::fs::write(
        src.join("inner/mod.rs"),
        "pub mod helpers;\npub struct Reexported;\nimpl Reexported { pub fn get(&self) -> u8 { 1 } }\n\
         pub struct NotReexported;\n",
    )
    .expect("inner/mod.rs");
    std::fs::write(
        src.join("inner/helpers.rs"),
        "pub fn helper(x: u8) -> u8 { x }\n",
    )
    .expect("helpers.rs");

    let lines = surface("sample", &src);
    let expected = [
        "sample::Reexported  struct",
        "sample::Reexported::get  fn get(&self) -> u8",
        "sample::helper  fn helper(x: u8) -> u8",
        "sample::open  mod",
        "sample::open::Kind  enum",
        "sample::open::Kind::A  variant",
        "sample::open::Kind::B  variant(u8)",
        "sample::open::Open  impl std::fmt::Display for Open",
        "sample::open::Open  struct  #[derive(Clone), non_exhaustive]",
        "sample::open::Open.field: u8",
        "sample::open::Open::new  fn new() -> Self",
    ];
    assert_eq!(lines, expected, "{lines:#?}");
}
