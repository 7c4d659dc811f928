use intent_rs::StrictCompatible;
use serde::Deserialize;

// The ui-tests build intent-rs without its `uuid` feature.
#[derive(Deserialize, StrictCompatible)]
struct Ticket {
    title: String,
    id: uuid::Uuid,
}

fn main() {}
