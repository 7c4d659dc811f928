use intent_runtime::DecisionEnum;

#[derive(DecisionEnum)]
struct Route {
    team: String,
}

fn main() {}
