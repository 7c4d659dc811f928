use intent_rs::Partial;

#[derive(Partial)]
struct Page<T> {
    items: Vec<T>,
}

fn main() {}
