use intent_runtime::intents;

#[intents]
struct Docs;

fn main() {}
