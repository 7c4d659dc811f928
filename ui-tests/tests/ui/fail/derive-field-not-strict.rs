use std::collections::HashMap;

use intent_rs::StrictCompatible;

#[derive(StrictCompatible)]
struct Report {
    title: String,
    counts: HashMap<String, u32>,
    extra: serde_json::Value,
    #[serde(skip)]
    cache: HashMap<String, String>,
}

fn main() {}
