//! Answer recovery through the client: off by default, on per client (builder), per call
//! (options) and per method (`#[intent(..., recover_answer)]`), a method's switch winning.

mod support;

use intent_rs::{AIResult, IntentError, IntentOptions, Repair, StrictCompatible, intents};
use schemars::JsonSchema;
use serde::Deserialize;
use support::{Person, scripted, scripted_with};

const CHATTY: &str = "Sure! Here is the person:\n```json\n{\"value\": {\"name\": \"Ann\", \"age\": 41, \"nickname\": null}}\n```\nAnything else?";
const CLEAN: &str = r#"{"value": {"name": "Ann", "age": 41, "nickname": null}}"#;
const TWO: &str = r#"Either {"name": "Ann", "age": 41, "nickname": null} or {"name": "Bo", "age": 7, "nickname": null}."#;

fn ann() -> Person {
    Person {
        name: "Ann".into(),
        age: 41,
        nickname: None,
    }
}

#[tokio::test]
async fn off_by_default_a_chatty_reply_costs_a_retry() {
    let (client, _) = scripted([CHATTY, CLEAN]);
    let result: AIResult<Person> = client
        .transform("text", "Extract the person", IntentOptions::new())
        .await;
    assert_eq!(result.attempts.len(), 2);
    let said = &result.attempts[0].issues[0].message;
    assert!(
        said.contains("prose or a code fence around the JSON"),
        "{said}"
    );
    assert_eq!(result.into_result().unwrap(), ann());
}

#[tokio::test]
async fn the_builder_switch_reads_the_answer_and_records_the_repair() {
    let (client, provider) = scripted_with([CHATTY], |builder| builder.recover_answer(true));
    let result: AIResult<Person> = client
        .transform("text", "Extract the person", IntentOptions::new())
        .await;
    assert_eq!(result.attempts.len(), 1);
    assert_eq!(
        result.attempts[0].repairs,
        vec![Repair::JsonExtractedFromProse]
    );
    assert_eq!(result.into_result().unwrap(), ann());
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn a_calls_option_overrides_the_client() {
    let (client, _) = scripted([CHATTY]);
    let on = IntentOptions::new().recover_answer(true);
    let result: AIResult<Person> = client.transform("text", "Extract", on).await;
    assert_eq!(result.into_result().unwrap(), ann());

    let (client, _) = scripted_with([CHATTY, CLEAN], |builder| builder.recover_answer(true));
    let off = IntentOptions::new().recover_answer(false);
    let result: AIResult<Person> = client.transform("text", "Extract", off).await;
    assert_eq!(result.attempts.len(), 2);
}

#[tokio::test]
async fn several_answers_fail_the_attempt_and_the_retry_asks_for_one() {
    let (client, provider) = scripted_with([TWO, CLEAN], |builder| builder.recover_answer(true));
    let result: AIResult<Person> = client
        .transform("text", "Extract the person", IntentOptions::new())
        .await;
    assert_eq!(result.attempts.len(), 2);
    let issue = &result.attempts[0].issues[0].message;
    assert!(issue.contains("2 different answers"), "{issue}");
    assert!(provider.requests()[1].last_user().contains(issue.as_str()));
    assert_eq!(result.into_result().unwrap(), ann());
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema, StrictCompatible)]
struct Contact {
    name: String,
    age: u32,
    nickname: Option<String>,
}

fn ann_contact() -> Contact {
    Contact {
        name: "Ann".into(),
        age: 41,
        nickname: None,
    }
}

#[intents]
trait People {
    #[intent("Extract the person", recover_answer)]
    async fn person(&self, text: &str) -> Result<Contact, IntentError>;

    #[intent("Extract the person strictly", recover_answer = false)]
    async fn strict_person(&self, text: &str) -> AIResult<Contact>;

    #[intent("Extract the person as the client says")]
    async fn default_person(&self, text: &str) -> AIResult<Contact>;
}

#[tokio::test]
async fn the_method_attribute_turns_it_on_or_off_whatever_the_client() {
    let (client, _) = scripted([CHATTY]);
    let people = PeopleClient::new(client);
    assert_eq!(people.person("text").await.unwrap(), ann_contact());

    let (client, _) = scripted_with([CHATTY, CLEAN, CHATTY], |builder| {
        builder.recover_answer(true)
    });
    let people = PeopleClient::new(client);
    let strict = people.strict_person("text").await;
    assert_eq!(strict.attempts.len(), 2);
    let default = people.default_person("text").await;
    assert_eq!(default.attempts.len(), 1);
    assert_eq!(default.into_result().unwrap(), ann_contact());
}
