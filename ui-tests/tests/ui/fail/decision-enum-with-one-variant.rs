use intent_runtime::DecisionEnum;

#[derive(DecisionEnum)]
enum Route {
    Billing,
}

fn main() {}
