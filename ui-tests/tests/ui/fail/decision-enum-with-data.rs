use intent_rs::DecisionEnum;

#[derive(DecisionEnum)]
enum Route {
    Billing { account: u32 },
    Support(String),
    Sales,
}

fn main() {}
