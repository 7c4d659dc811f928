use intent_rs::Partial;
use serde::Deserialize;

#[derive(Debug, PartialEq, Deserialize, Partial)]
enum Mood {
    Happy,
    Sad,
}

fn main() {}
