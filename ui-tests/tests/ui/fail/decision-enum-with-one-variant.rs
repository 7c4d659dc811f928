use intent_rs::DecisionEnum;

#[derive(DecisionEnum)]
enum Route {
    Billing,
}

fn main() {}
