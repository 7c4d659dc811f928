use intent_runtime::Partial;
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize, Partial)]
enum Mood {
    Happy,
    Sad,
}

fn main() {}
