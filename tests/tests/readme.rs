//! What a newcomer copies from the README works as copied: the dependency block names
//! every crate the first program uses (with the versions and features that matter), the
//! first program hides no line, and the API documentation's entry points are linked.
//! (The README's Rust blocks are also compiled and run as doc tests of `intent-rs`.)

use std::path::Path;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// The fenced blocks of `text` tagged `tag`, in order.
fn blocks(text: &str, tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) if info.trim() == tag => current = Some(String::new()),
            (Some(_), Some("")) => found.extend(current.take()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    found
}

/// The dependency lines of the first `[dependencies]` block, by crate name.
fn dependencies(readme: &str) -> Vec<(String, String)> {
    let block = blocks(readme, "toml")
        .into_iter()
        .find(|b| b.trim_start().starts_with("[dependencies]"))
        .expect("a toml block starting with [dependencies]");
    block
        .lines()
        .skip(1)
        .filter(|line| !line.trim_start().starts_with('#') && line.contains('='))
        .filter_map(|line| line.split_once('='))
        .map(|(name, spec)| (name.trim().to_owned(), spec.trim().to_owned()))
        .collect()
}

#[test]
fn the_readme_lists_the_dependencies_a_program_needs() {
    let readme = readme();
    let deps = dependencies(&readme);
    let spec = |name: &str| {
        deps.iter()
            .find(|(dep, _)| dep == name)
            .map(|(_, spec)| spec.as_str())
            .unwrap_or_else(|| panic!("`{name}` missing from the [dependencies] block"))
    };
    assert_eq!(spec("schemars"), "\"1\"", "schemars must be 1.x");
    assert!(spec("serde").contains("\"derive\""));
    assert!(spec("tokio").contains("\"macros\""));
    assert!(spec("tokio").contains("\"rt-multi-thread\""));
    let runtime = spec("intent-rs");
    // Not on crates.io yet: the README must not send a reader to a version there.
    assert!(
        runtime.contains("path = "),
        "intent-rs is a path dependency until it is published: {runtime}"
    );

    // Every crate the first program imports is in the block.
    let program = &blocks(&readme, "rust")[0];
    for line in program.lines().filter(|l| l.starts_with("use ")) {
        let krate = line["use ".len()..].split("::").next().unwrap_or_default();
        let package = match krate {
            "intent_rs" => "intent-rs".to_owned(),
            other => other.replace('_', "-"),
        };
        spec(&package);
    }

    // The optional features are named, and are features of intent-rs.
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../intent-runtime/Cargo.toml"),
    )
    .expect("intent-runtime/Cargo.toml");
    assert!(readme.contains(r#"features = ["chrono", "uuid"] }`"#));
    for feature in ["chrono", "uuid"] {
        assert!(
            manifest.contains(&format!("\n{feature} = [")),
            "`{feature}` is a feature of intent-rs"
        );
    }
}

#[test]
fn every_rust_block_is_a_whole_program_a_reader_can_paste() {
    let readme = readme();
    let programs = blocks(&readme, "rust");
    assert!(
        programs.len() >= 5,
        "the README's Rust blocks: {}",
        programs.len()
    );
    assert!(
        blocks(&readme, "rust,ignore").is_empty(),
        "an ignored block is never compiled"
    );
    for program in programs {
        let hidden = program
            .lines()
            .any(|line| line.trim_start() == "#" || line.trim_start().starts_with("# "));
        assert!(!hidden, "hidden doctest lines:\n{program}");
        assert!(
            program.contains("fn main()"),
            "not a whole program:\n{program}"
        );
    }
}

#[test]
fn the_first_example_is_a_whole_program_with_no_hidden_line() {
    let program = &blocks(&readme(), "rust")[0];
    let hidden: Vec<&str> = program
        .lines()
        .filter(|line| line.trim_start() == "#" || line.trim_start().starts_with("# "))
        .collect();
    assert_eq!(
        hidden,
        Vec::<&str>::new(),
        "hidden lines in the first example"
    );
    assert!(
        program.contains("#[tokio::main]\nasync fn main()"),
        "{program}"
    );
    assert!(program.contains("use intent_rs::"), "{program}");
}

#[test]
fn the_readme_links_the_api_docs_entry_points() {
    let readme = readme();
    let docs = "https://docs.rs/intent-rs/latest/intent_rs/";
    for (name, page) in [
        ("intents", "attr.intents.html"),
        ("IntentClient", "struct.IntentClient.html"),
        ("AIResult", "struct.AIResult.html"),
        ("provider", "provider/index.html"),
    ] {
        let link = format!("[`{name}`]({docs}{page})");
        assert!(readme.contains(&link), "missing link {link}");
    }
}
