use intent_runtime::Partial;

#[derive(Partial)]
struct Point(i64, i64);

fn main() {}
