use intent_runtime::DecisionEnum;

#[derive(DecisionEnum)]
enum Route {
    Billing { account: u32 },
    Support(String),
    Sales,
}

fn main() {}
