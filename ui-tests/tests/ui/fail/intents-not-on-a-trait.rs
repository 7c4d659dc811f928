use intent_rs::intents;

#[intents]
struct Docs;

fn main() {}
