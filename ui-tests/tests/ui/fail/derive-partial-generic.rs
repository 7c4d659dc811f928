use intent_runtime::Partial;

#[derive(Partial)]
struct Page<T> {
    items: Vec<T>,
}

fn main() {}
