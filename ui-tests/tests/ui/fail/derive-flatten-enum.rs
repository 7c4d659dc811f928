use intent_rs::StrictCompatible;
use serde::Deserialize;

#[derive(Deserialize, StrictCompatible)]
enum Status {
    Open,
    Closed,
}

#[derive(Deserialize, StrictCompatible)]
struct Ticket {
    title: String,
    #[serde(flatten)]
    status: Status,
}

fn main() {}
