use intent_rs::{intents, Binary, Choice, DecisionEnum, DecisionError, Score};

/// A team.
#[derive(Debug, PartialEq, DecisionEnum)]
pub enum Team {
    /// Payments and refunds.
    Billing,
    /// Bugs,
    /// over two lines.
    Support,
}

#[derive(Debug, PartialEq, DecisionEnum)]
pub enum Level {
    Low,
    High,
}

#[intents]
pub trait Triage {
    #[intent("Is the ticket solved?")]
    async fn solved(&self, ticket: &str) -> Result<Binary, DecisionError>;

    #[intent("Which team should take it?", model = "small")]
    async fn team(&self, ticket: &str, customer: String) -> Result<Choice<Team>, DecisionError>;

    #[intent("How urgent is it?")]
    async fn urgency(&self, ticket: &str) -> Result<Score<Level>, DecisionError>;
}

fn main() {
    fn spawnable<T: Send>(_: T) {}
    let client = intent_rs::IntentClient::builder()
        .provider(intent_rs::provider::ScriptedProvider::new(Vec::<String>::new()))
        .build()
        .unwrap();
    let triage = TriageClient::new(client);
    spawnable(triage.team("x", "y".to_owned()));
    assert_eq!(<Team as DecisionEnum>::VARIANTS[1].description, Some("Bugs, over two lines."));
}
