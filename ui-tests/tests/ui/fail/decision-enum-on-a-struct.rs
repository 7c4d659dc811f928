use intent_rs::DecisionEnum;

#[derive(DecisionEnum)]
struct Route {
    team: String,
}

fn main() {}
