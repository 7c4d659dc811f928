use intent_rs::StrictCompatible;

#[derive(StrictCompatible)]
struct Point(f64, f64);

fn main() {}
