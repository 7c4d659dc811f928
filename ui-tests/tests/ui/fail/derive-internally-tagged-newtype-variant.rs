use intent_rs::StrictCompatible;
use serde::Deserialize;

#[derive(Deserialize, StrictCompatible)]
struct Circle {
    radius: f64,
}

#[derive(Deserialize, StrictCompatible)]
#[serde(tag = "kind")]
enum Shape {
    Circle(Circle),
    Square { side: f64 },
}

fn main() {}
