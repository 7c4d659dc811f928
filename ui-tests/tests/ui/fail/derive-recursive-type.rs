use intent_rs::StrictCompatible;

#[derive(StrictCompatible)]
struct Comment {
    text: String,
    replies: Vec<Comment>,
}

#[derive(StrictCompatible)]
enum Expr {
    Number(f64),
    Negate(Box<Expr>),
}

fn main() {}
