use intent_rs::Partial;

#[derive(Partial)]
struct Point(i64, i64);

fn main() {}
